from collections.abc import Sequence
from dataclasses import replace
from decimal import Decimal

from gateway.domain.model import (
    AdapterType,
    Capability,
    Criteria,
    Endpoint,
    Enforcement,
    Model,
    Operation,
    Provider,
    RoutingSettings,
)
from gateway.routing.decision import Decision
from gateway.routing.eligibility import RejectionReason
from gateway.routing.operation import classify, required_for
from gateway.routing.ranker import decide

from .builders import CHAT, config, model, price, provider, snapshot

R = RejectionReason


def _reasons(
    criteria: Criteria,
    *models_: Model,
    required: frozenset[Capability] = CHAT,
    open_circuits: Sequence[str] = (),
    providers: Sequence[Provider] | None = None,
) -> tuple[dict[str, RejectionReason], Decision]:
    snap = snapshot(models_, open_circuits=open_circuits, providers=providers)
    decision = decide(config(criteria=criteria), Operation.CHAT, required, snap)
    return {r.model.id: r.reason for r in decision.rejected}, decision


def test_inactive_models_are_not_candidates() -> None:
    reasons, decision = _reasons(Criteria(), model("a"), model("b", active=False))
    assert decision.candidate_count == 1
    assert [c.model.id for c in decision.candidates] == ["a"]
    assert reasons == {}


def test_capability_missing_when_criteria_capability_not_declared() -> None:
    criteria = Criteria(capabilities=frozenset({Capability.CHAT, Capability.TOOLS}))
    reasons, _ = _reasons(
        criteria,
        model("a", caps=[Capability.CHAT]),
        model("b", caps=[]),
        model("c", caps=[Capability.CHAT, Capability.TOOLS]),
    )
    assert reasons == {"a": R.CAPABILITY_MISSING, "b": R.CAPABILITY_MISSING}


def test_adapter_not_allowed() -> None:
    criteria = Criteria(adapter_types=frozenset({AdapterType.OLLAMA}))
    reasons, _ = _reasons(
        criteria,
        model("a", "cloud"),
        model("b", "local"),
        providers=[provider("cloud"), provider("local", adapter=AdapterType.OLLAMA)],
    )
    assert reasons == {"a": R.ADAPTER_NOT_ALLOWED}


def test_context_too_small_refuses_unknown_context() -> None:
    criteria = Criteria(min_context_length=8000)
    reasons, _ = _reasons(
        criteria, model("small", context=4096), model("unknown"), model("big", context=8000)
    )
    assert reasons == {"small": R.CONTEXT_TOO_SMALL, "unknown": R.CONTEXT_TOO_SMALL}


def test_cost_above_limit_passes_unknown_price() -> None:
    criteria = Criteria(max_cost_input=Decimal("1.00"))
    reasons, decision = _reasons(
        criteria,
        model("dear", price=price("1.01", "0")),
        model("unpriced"),
        model("at_limit", price=price("1.00", "50")),
    )
    assert reasons == {"dear": R.COST_ABOVE_LIMIT}
    assert {c.model.id for c in decision.candidates} == {"unpriced", "at_limit"}


def test_provider_unavailable_when_circuit_open() -> None:
    reasons, _ = _reasons(Criteria(), model("a", "down"), model("b", "up"), open_circuits=["down"])
    assert reasons == {"a": R.PROVIDER_UNAVAILABLE}


def test_first_failing_check_is_the_reason() -> None:
    criteria = Criteria(
        capabilities=frozenset({Capability.TOOLS}),
        adapter_types=frozenset({AdapterType.OLLAMA}),
        min_context_length=10,
        max_cost_input=Decimal("0.1"),
    )
    everything_wrong = model("x", "down", caps=[Capability.CHAT], price=price("9", "9"))
    no_tools_fixed = model("y", "down", caps=[Capability.TOOLS], price=price("9", "9"))
    reasons, _ = _reasons(
        criteria, everything_wrong, no_tools_fixed, open_circuits=["down"], required=CHAT
    )
    assert reasons == {"x": R.CAPABILITY_MISSING, "y": R.ADAPTER_NOT_ALLOWED}


def test_operation_capability_missing_is_checked_last() -> None:
    # Both refuse; the circuit (check 5) is named before the operation (check 6).
    reasons, _ = _reasons(
        Criteria(),
        model("a", "down", caps=[Capability.EMBEDDINGS]),
        model("b", "up", caps=[Capability.EMBEDDINGS]),
        open_circuits=["down"],
    )
    assert reasons == {"a": R.PROVIDER_UNAVAILABLE, "b": R.OPERATION_CAPABILITY_MISSING}


def test_undeclared_capabilities_pass_the_operation_check() -> None:
    reasons, decision = _reasons(
        Criteria(), model("bare", caps=[]), required=frozenset({Capability.CHAT, Capability.TOOLS})
    )
    assert reasons == {}
    assert decision.selected is not None and decision.selected.id == "bare"


def test_streamed_tool_call_needs_tools() -> None:
    operation, required = classify(Endpoint.CHAT, stream=True, has_tools=True)
    assert operation is Operation.STREAM
    assert required == {Capability.CHAT, Capability.TOOLS}
    chat_stream = model("streamer", caps=[Capability.CHAT, Capability.STREAMING])
    tool_user = model("tooler", caps=[Capability.CHAT, Capability.TOOLS, Capability.STREAMING])
    decision = decide(config(), operation, required, snapshot([chat_stream, tool_user]))
    assert [(r.model.id, r.reason) for r in decision.rejected] == [
        ("streamer", R.OPERATION_CAPABILITY_MISSING)
    ]
    assert decision.selected == tool_user


def test_operation_and_required_capabilities_follow_the_request() -> None:
    assert classify(Endpoint.CHAT) == (Operation.CHAT, CHAT)
    assert classify(Endpoint.CHAT, has_tools=True)[0] is Operation.TOOLS
    assert classify(Endpoint.CHAT, has_image=True) == (
        Operation.VISION,
        frozenset({Capability.CHAT, Capability.VISION}),
    )
    assert classify(Endpoint.EMBEDDINGS) == (
        Operation.EMBEDDING,
        frozenset({Capability.EMBEDDINGS}),
    )
    assert classify(Endpoint.COMPLETIONS, stream=True) == (
        Operation.COMPLETION,
        frozenset({Capability.COMPLETION}),
    )


def test_observe_mode_refuses_nothing_but_warns() -> None:
    routing = RoutingSettings(operation_capability_enforcement=Enforcement.OBSERVE)
    embedder = model("embedder", caps=[Capability.EMBEDDINGS])
    chatter = model("chatter", caps=[Capability.CHAT])
    required = frozenset({Capability.CHAT})
    decision = decide(
        config(), Operation.CHAT, required, snapshot([embedder, chatter], routing=routing)
    )
    assert decision.rejected == ()
    by_id = {c.model.id: c for c in decision.candidates}
    assert by_id["chatter"].warnings == ()
    assert len(by_id["embedder"].warnings) == 1
    assert by_id["embedder"].warnings[0].startswith("OPERATION_CAPABILITY_MISSING")
    assert "chat" in by_id["embedder"].warnings[0]


def test_a_configuration_overrides_the_routing_enforcement_both_ways() -> None:
    embedder = model("embedder", caps=[Capability.EMBEDDINGS])
    required = frozenset({Capability.CHAT})
    lenient = replace(config(), operation_capability_enforcement=Enforcement.OBSERVE)
    decision = decide(lenient, Operation.CHAT, required, snapshot([embedder]))
    assert decision.rejected == () and decision.selected == embedder

    strict = replace(config(), operation_capability_enforcement=Enforcement.ENFORCE)
    observing = RoutingSettings(operation_capability_enforcement=Enforcement.OBSERVE)
    decision = decide(strict, Operation.CHAT, required, snapshot([embedder], routing=observing))
    assert [r.reason for r in decision.rejected] == [R.OPERATION_CAPABILITY_MISSING]


def test_observe_mode_still_enforces_criteria() -> None:
    routing = RoutingSettings(operation_capability_enforcement=Enforcement.OBSERVE)
    criteria = Criteria(capabilities=frozenset({Capability.VISION}))
    decision = decide(
        config(criteria=criteria), Operation.CHAT, CHAT, snapshot([model("a")], routing=routing)
    )
    assert [r.reason for r in decision.rejected] == [R.CAPABILITY_MISSING]


def test_all_refusals_operation_capability_means_400() -> None:
    _, decision = _reasons(
        Criteria(),
        model("e1", caps=[Capability.EMBEDDINGS]),
        model("e2", caps=[Capability.EMBEDDINGS]),
    )
    assert decision.selected is None
    assert decision.all_refusals_operation_capability()


def test_mixed_refusals_mean_503() -> None:
    _, decision = _reasons(
        Criteria(min_context_length=100),
        model("e1", caps=[Capability.EMBEDDINGS], context=1000),
        model("small", context=10),
    )
    assert decision.selected is None
    assert not decision.all_refusals_operation_capability()


def test_no_active_models_is_not_an_operation_refusal() -> None:
    _, decision = _reasons(Criteria(), model("off", active=False))
    assert decision.candidate_count == 0
    assert decision.selected is None
    assert not decision.all_refusals_operation_capability()


def test_rejection_names_sorted_distinct() -> None:
    _, decision = _reasons(
        Criteria(min_context_length=100, capabilities=frozenset({Capability.CHAT})),
        model("a", caps=[]),
        model("b", context=10),
        model("c", caps=[Capability.EMBEDDINGS]),
        model("d", context=1),
    )
    assert decision.rejection_names() == "CAPABILITY_MISSING,CONTEXT_TOO_SMALL"


def test_refusal_reasons_name_each_refused_model_and_its_reason() -> None:
    _, decision = _reasons(
        Criteria(min_context_length=100),
        model("emb", caps=[Capability.EMBEDDINGS], context=1000),
        model("small", context=10),
    )
    assert decision.refusal_reasons() == (
        "emb: OPERATION_CAPABILITY_MISSING, small: CONTEXT_TOO_SMALL"
    )
    _, empty = _reasons(Criteria(), model("off", active=False))
    assert empty.refusal_reasons() == "no active models"


def test_cost_basis_column_is_empty_where_cost_is_not_collected() -> None:
    _, decision = _reasons(Criteria(), model("a"))
    assert decision.cost_basis is None
    assert decision.cost_basis_column == ""


def test_readout_operation_requires_its_plain_capabilities() -> None:
    assert required_for(Operation.CHAT) == CHAT
    assert required_for(Operation.STREAM) == CHAT
    assert required_for(Operation.TOOLS) == {Capability.CHAT, Capability.TOOLS}
    assert required_for(Operation.VISION) == {Capability.CHAT, Capability.VISION}
    assert required_for(Operation.EMBEDDING) == {Capability.EMBEDDINGS}
    assert required_for(Operation.COMPLETION) == {Capability.COMPLETION}
