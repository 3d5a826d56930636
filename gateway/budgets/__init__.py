"""Budgets held exactly in the database: reservation at admission, settlement at the end."""

from gateway.budgets.gate import DatabaseBudgets, hold_seconds_for

__all__ = ["DatabaseBudgets", "hold_seconds_for"]
