"""Circuit states behind one interface: this process's memory, or shared through Redis."""

from gateway.circuits.states import CircuitStates, InProcessCircuits

__all__ = ["CircuitStates", "InProcessCircuits"]
