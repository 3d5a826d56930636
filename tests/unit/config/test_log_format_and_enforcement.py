"""server.logFormat, server.accessLog and a configuration's own
operationCapabilityEnforcement."""

from __future__ import annotations

from .support import MINIMAL, load, problems_of, with_minimal


def test_log_format_defaults_to_text_and_takes_json() -> None:
    assert load(MINIMAL).server.log_format == "text"
    assert load(with_minimal("server: {logFormat: json}")).server.log_format == "json"


def test_an_unknown_log_format_is_refused_with_its_path() -> None:
    (problem,) = problems_of(with_minimal("server: {logFormat: xml}"))
    assert problem.startswith("server.logFormat: ")
    assert "text" in problem and "json" in problem


def test_the_access_log_is_on_unless_turned_off() -> None:
    assert load(MINIMAL).server.access_log is True
    assert load(with_minimal("server: {accessLog: false}")).server.access_log is False


def test_an_access_log_that_is_not_a_boolean_is_refused_with_its_path() -> None:
    (problem,) = problems_of(with_minimal("server: {accessLog: sometimes}"))
    assert problem.startswith("server.accessLog: ")


def test_a_configuration_inherits_the_routing_enforcement_unless_it_sets_its_own() -> None:
    config = load(
        with_minimal(
            """
            routing: {operationCapabilityEnforcement: observe}
            configurations:
              - {id: inherits, mode: fixed, model: m1}
              - {id: strict, mode: fixed, model: m1, operationCapabilityEnforcement: enforce}
              - {id: lenient, mode: criteria, operationCapabilityEnforcement: observe}
            """
        )
    )
    assert config.configurations["inherits"].operation_capability_enforcement is None
    assert config.configurations["strict"].operation_capability_enforcement == "enforce"
    assert config.configurations["lenient"].operation_capability_enforcement == "observe"


def test_an_unknown_enforcement_is_refused_with_its_path() -> None:
    (problem,) = problems_of(
        with_minimal(
            "configurations: [{id: c, mode: fixed, model: m1, "
            "operationCapabilityEnforcement: warn}]"
        )
    )
    assert problem.startswith("configurations[0].operationCapabilityEnforcement: ")
