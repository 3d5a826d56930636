from gateway.routing.circuit import CircuitBreakers, CircuitState


def _opened(threshold: int = 5, cooldown: float = 30.0, at: float = 100.0) -> CircuitBreakers:
    breakers = CircuitBreakers(failure_threshold=threshold, cooldown_seconds=cooldown)
    for _ in range(threshold):
        breakers.record_failure("p1", at)
    return breakers


def test_circuit_opens_after_five_consecutive_failures() -> None:
    breakers = CircuitBreakers(failure_threshold=5, cooldown_seconds=30.0)
    for _ in range(4):
        breakers.record_failure("p1", 100.0)
    assert breakers.open_providers(100.0) == frozenset()
    assert breakers.try_acquire("p1", 100.0)
    breakers.record_failure("p1", 100.0)
    assert breakers.open_providers(100.0) == frozenset({"p1"})
    assert not breakers.try_acquire("p1", 100.0)


def test_circuit_success_resets_the_consecutive_count() -> None:
    breakers = CircuitBreakers(failure_threshold=5, cooldown_seconds=30.0)
    for _ in range(4):
        breakers.record_failure("p1", 100.0)
    breakers.record_success("p1")
    for _ in range(4):
        breakers.record_failure("p1", 100.0)
    assert breakers.try_acquire("p1", 100.0)
    assert breakers.state("p1", 100.0) is CircuitState.CLOSED


def test_circuit_refuses_during_cooldown() -> None:
    breakers = _opened()
    assert not breakers.try_acquire("p1", 129.9)
    assert breakers.open_providers(129.9) == frozenset({"p1"})
    assert breakers.state("p1", 129.9) is CircuitState.OPEN


def test_circuit_is_per_provider() -> None:
    breakers = _opened()
    assert breakers.try_acquire("p2", 101.0)
    assert breakers.open_providers(101.0) == frozenset({"p1"})


def test_circuit_admits_exactly_one_half_open_probe() -> None:
    breakers = _opened()
    assert breakers.open_providers(130.0) == frozenset()  # due: routing may pick it again
    assert breakers.try_acquire("p1", 130.0)  # the probe
    assert breakers.state("p1", 130.0) is CircuitState.HALF_OPEN
    assert not breakers.try_acquire("p1", 130.5)  # others are refused while it decides
    assert breakers.open_providers(130.5) == frozenset({"p1"})


def test_circuit_closes_on_probe_success() -> None:
    breakers = _opened()
    assert breakers.try_acquire("p1", 130.0)
    breakers.record_success("p1")
    assert breakers.state("p1", 130.0) is CircuitState.CLOSED
    assert breakers.try_acquire("p1", 130.0)
    assert breakers.try_acquire("p1", 130.0)


def test_circuit_reopens_on_probe_failure() -> None:
    breakers = _opened()
    assert breakers.try_acquire("p1", 130.0)
    breakers.record_failure("p1", 131.0)
    assert not breakers.try_acquire("p1", 131.0)
    assert not breakers.try_acquire("p1", 160.9)  # a fresh cooldown from the probe's failure
    assert breakers.try_acquire("p1", 161.0)


def test_circuit_probe_without_verdict_does_not_wedge_it() -> None:
    breakers = _opened()
    assert breakers.try_acquire("p1", 130.0)
    assert not breakers.try_acquire("p1", 159.0)
    assert breakers.try_acquire("p1", 160.0)  # the lost probe's slot is released after a cooldown


def test_record_failure_says_when_it_opened_the_circuit() -> None:
    breakers = CircuitBreakers(failure_threshold=3, cooldown_seconds=30.0)
    assert [breakers.record_failure("p1", 100.0) for _ in range(4)] == [False, False, True, False]
    assert breakers.try_acquire("p1", 130.0)  # the half-open probe
    assert breakers.record_failure("p1", 131.0) is True  # it failed: open again


def test_record_success_says_when_it_closed_an_open_circuit() -> None:
    breakers = _opened()
    assert breakers.try_acquire("p1", 130.0)  # the probe
    assert breakers.record_success("p1") is True
    assert breakers.record_success("p1") is False  # closed already
    assert CircuitBreakers(5, 30.0).record_success("never-seen") is False


def test_an_adopted_opening_refuses_for_a_cooldown_from_when_it_opened() -> None:
    breakers = CircuitBreakers(failure_threshold=5, cooldown_seconds=30.0)
    breakers.adopt_open("p1", 90.0)  # another process opened it at 90
    assert breakers.open_providers(100.0) == frozenset({"p1"})
    assert breakers.opened_at("p1") == 90.0 and breakers.opened() == {"p1": 90.0}
    assert not breakers.try_acquire("p1", 119.9)
    assert breakers.try_acquire("p1", 120.0)  # this process's own probe
    assert breakers.state("p1", 120.0) is CircuitState.HALF_OPEN


def test_adopting_a_newer_opening_frees_a_probe_slot_and_close_ends_it() -> None:
    breakers = _opened(at=100.0)
    assert breakers.try_acquire("p1", 130.0)  # our probe is in flight
    breakers.adopt_open("p1", 131.0)  # another process's probe failed: a fresh cooldown
    assert breakers.state("p1", 140.0) is CircuitState.OPEN
    assert not breakers.try_acquire("p1", 160.9)
    assert breakers.close("p1") is True  # another process's probe succeeded
    assert breakers.opened_at("p1") is None and breakers.opened() == {}
    assert breakers.try_acquire("p1", 161.0)
    for _ in range(4):
        breakers.record_failure("p1", 162.0)
    assert breakers.state("p1", 162.0) is CircuitState.CLOSED  # the count restarted
