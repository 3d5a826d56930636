"""What a call runs and what it needs, from what the request contains
(docs/routing.md#operations-and-required-capabilities)."""

from __future__ import annotations

from gateway.domain.model import Capability, Endpoint, Operation


def classify(
    endpoint: Endpoint, *, stream: bool = False, has_tools: bool = False, has_image: bool = False
) -> tuple[Operation, frozenset[Capability]]:
    """The call's operation (it selects the history) and its required capabilities.

    The capabilities follow the content whatever the operation, so a streamed tool call
    runs ``stream`` and still needs ``tools``.
    """
    if endpoint is Endpoint.EMBEDDINGS:
        return Operation.EMBEDDING, frozenset({Capability.EMBEDDINGS})
    if endpoint is Endpoint.COMPLETIONS:
        return Operation.COMPLETION, frozenset({Capability.COMPLETION})
    required = {Capability.CHAT}
    if has_tools:
        required.add(Capability.TOOLS)
    if has_image:
        required.add(Capability.VISION)
    if endpoint is Endpoint.RESPONSES:  # its own operations: a history apart from chat's
        operation = Operation.RESPONSES_STREAM if stream else Operation.RESPONSES
    elif stream:
        operation = Operation.STREAM
    elif has_tools:
        operation = Operation.TOOLS
    elif has_image:
        operation = Operation.VISION
    else:
        operation = Operation.CHAT
    return operation, frozenset(required)


def required_for(operation: Operation) -> frozenset[Capability]:
    """The capabilities an operation needs when no request body says more (the readout).

    ``stream`` is taken as a plain streamed chat: a streamed tool call would need ``tools``
    too, which only its body can tell.
    """
    endpoint = Endpoint.CHAT
    if operation is Operation.EMBEDDING:
        endpoint = Endpoint.EMBEDDINGS
    elif operation is Operation.COMPLETION:
        endpoint = Endpoint.COMPLETIONS
    elif operation in (Operation.RESPONSES, Operation.RESPONSES_STREAM):
        endpoint = Endpoint.RESPONSES
    return classify(
        endpoint,
        stream=operation in (Operation.STREAM, Operation.RESPONSES_STREAM),
        has_tools=operation is Operation.TOOLS,
        has_image=operation is Operation.VISION,
    )[1]
