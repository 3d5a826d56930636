"""A ``POST /v1/responses`` body as a Chat Completions body (pure).

Each top-level field of the Responses request is translated, refused (``Unsupported``,
naming the parameter) when it asks for something Chat Completions cannot do, or left out
when leaving it out cannot change the answer's meaning: silently when nothing is lost
(``store: false``, ``metadata``), else named in ``ignored`` (the caller's list, which
becomes the ``x-gateway-ignored-params`` header): ``text.verbosity`` (style only),
``client_metadata`` (OpenAI-side metadata), an offered built-in tool the provider cannot
run, extra output ``include`` asks for that has no counterpart. Fields that are not the
Responses API's are passed on, as a chat call passes them on: the upstream judges them.
The gateway keeps no conversation state, so what needs stored state is refused
(docs/responses.md).

``namespace`` tools (function tools grouped under a name, run by the client) become
chat functions named ``<namespace>__<name>``; ``namespaced_names`` gives the way back.
With ``thinking`` (a provider whose reasoning blocks can be sent back: Anthropic), a
``reasoning`` input item that carries one of the gateway's ``encrypted_content`` values
becomes ``thinking_blocks`` on the assistant message it preceded.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from gateway.domain.errors import GatewayException
from gateway.responses import reasoning as reasoning_codec

# Copied to the chat body under the same name when not null.
_SAME_NAME = (
    "temperature",
    "top_p",
    "parallel_tool_calls",
    "user",
    "safety_identifier",
    "prompt_cache_key",
    "prompt_cache_retention",
    "service_tier",
)
# Read (translated, or checked and dropped) here: not passed on as they are.
_HANDLED = frozenset(
    {
        "model",
        "input",
        "instructions",
        "tools",
        "tool_choice",
        "text",
        "max_output_tokens",
        "stream",
        "stream_options",  # include_obfuscation only: nothing to obfuscate in a translation
        "reasoning",
        "metadata",  # the metadata of a stored response; nothing is stored (echoed back)
        "max_tool_calls",  # bounds built-in tool calls, which are never run
        "include",
        "client_metadata",  # OpenAI-side metadata of the client: left out, listed
        *_SAME_NAME,
    }
)
ENCRYPTED_REASONING = "reasoning.encrypted_content"
# ``include`` values refused: what they add would be the answer's content.
_INCLUDE_REFUSED = {"message.output_text.logprobs": "log probabilities are not translated"}
# Namespaced functions are offered to chat as ``<namespace>__<name>``.
NAMESPACE_SEPARATOR = "__"
# Refused unless null: they name state stored at the provider.
_NEED_STATE = ("previous_response_id", "conversation")
# Refused unless null or their default value (and why).
_REFUSED_UNLESS_DEFAULT: dict[str, tuple[Any, str]] = {
    "background": (
        False,
        "background mode keeps a response to fetch later; the gateway keeps none",
    ),
    "store": (False, "the gateway stores no response (send store: false or leave it out)"),
    "prompt": (None, "stored prompt templates live at OpenAI"),
    "truncation": ("disabled", "automatic truncation has no Chat Completions counterpart"),
    "top_logprobs": (0, "log probabilities are not translated"),
}
_ALL = frozenset({*_NEED_STATE, *_REFUSED_UNLESS_DEFAULT})
_MESSAGE_ROLES = frozenset({"user", "assistant", "system", "developer"})
_TEXT_PARTS = frozenset({"input_text", "output_text", "text"})


class Unsupported(GatewayException):
    """A parameter that cannot be translated: answered 400 ``unsupported_parameter``."""

    def __init__(self, param: str, message: str) -> None:
        super().__init__(message)
        self.param = param
        self.message = message


Note = Callable[[str], None]


def to_chat(
    body: Mapping[str, Any],
    provider: str,
    *,
    thinking: bool = False,
    ignored: list[str] | None = None,
) -> dict[str, Any]:
    """The chat body for ``body``; ``provider`` (an id) is named in refusals. ``thinking``:
    the provider takes reasoning blocks back (see the module). The names of what is left
    out without a counterpart are appended to ``ignored``."""
    seen: list[str] = ignored if ignored is not None else []

    def note(name: str) -> None:
        if name not in seen:
            seen.append(name)

    _refuse_stateful(body, provider)
    chat: dict[str, Any] = {
        name: value for name, value in body.items() if name not in _HANDLED and name not in _ALL
    }
    chat["model"] = body.get("model")
    chat["messages"] = messages_of(body, thinking=thinking)
    if body.get("stream"):
        chat["stream"] = True
    for name in _SAME_NAME:
        if body.get(name) is not None:
            chat[name] = body[name]
    if body.get("max_output_tokens") is not None:
        chat["max_tokens"] = body["max_output_tokens"]
    tools = _tools(body.get("tools"), provider, note)
    if tools:
        chat["tools"] = tools
    choice = _tool_choice(body.get("tool_choice"), provider)
    if choice == "required" and not tools:
        raise Unsupported(
            "tool_choice",
            f"'tool_choice' is 'required', but provider '{provider}' can run none of the "
            "offered tools (built-in tools run at OpenAI).",
        )
    if choice is not None and (tools or isinstance(choice, dict)):
        chat["tool_choice"] = choice  # without tools, chat APIs refuse auto and none
    chat.update(_text(body.get("text"), note))
    if body.get("client_metadata") is not None:
        note("client_metadata")
    _include(body.get("include"), thinking, note)
    reasoning = body.get("reasoning")
    effort = _reasoning_effort(reasoning)
    if effort is not None:
        chat["reasoning_effort"] = effort
    if summary_asked(body) and not (thinking and effort not in (None, "none")):
        note("reasoning.summary")  # nothing returns reasoning text to summarise
    return chat


def summary_asked(body: Mapping[str, Any]) -> bool:
    """``reasoning.summary`` (or its older name ``generate_summary``) is set."""
    reasoning = body.get("reasoning")
    if not isinstance(reasoning, dict):
        return False
    return any(reasoning.get(k) not in (None, "none") for k in ("summary", "generate_summary"))


def encrypted_reasoning_asked(body: Mapping[str, Any]) -> bool:
    include = body.get("include")
    return isinstance(include, list) and ENCRYPTED_REASONING in include


def _include(include: Any, thinking: bool, note: Note) -> None:
    """``include``: the encrypted reasoning is carried where the provider has reasoning
    blocks to carry (else listed); other extra output is listed, as the tools it is of
    are never run; log probabilities are refused."""
    if include is None:
        return
    if not isinstance(include, list):
        raise Unsupported("include", "'include' must be an array of strings.")
    for value in include:
        if value in _INCLUDE_REFUSED:
            raise Unsupported(
                "include",
                f"'include' asks for '{value}': {_INCLUDE_REFUSED[value]} by this translation.",
            )
        if value == ENCRYPTED_REASONING and thinking:
            continue
        note(f"include[{value}]")


def _refuse_stateful(body: Mapping[str, Any], provider: str) -> None:
    for name in _NEED_STATE:
        if body.get(name) is not None:
            raise Unsupported(
                name,
                f"'{name}' needs a stored conversation: the gateway keeps none, and provider "
                f"'{provider}' serves this model through Chat Completions. Send the whole "
                "conversation in 'input'.",
            )
    for name, (default, why) in _REFUSED_UNLESS_DEFAULT.items():
        value = body.get(name)
        if value is None or (value == default and type(value) is type(default)):
            continue
        raise Unsupported(name, f"'{name}' is not supported through provider '{provider}': {why}.")


def messages_of(body: Mapping[str, Any], *, thinking: bool = False) -> list[dict[str, Any]]:
    """``instructions`` as a system message, then ``input`` as chat messages."""
    messages: list[dict[str, Any]] = []
    instructions = body.get("instructions")
    if isinstance(instructions, str) and instructions:
        messages.append({"role": "system", "content": instructions})
    items = body.get("input")
    if isinstance(items, str):
        messages.append({"role": "user", "content": items})
        return messages
    if items is None:
        raise Unsupported("input", "'input' is required when nothing is stored.")
    if not isinstance(items, list):
        raise Unsupported("input", "'input' must be a string or an array of items.")
    turn: dict[str, Any] | None = None  # the assistant message that calls may still join
    pending: list[dict[str, Any]] = []  # thinking blocks for the next assistant message
    for index, item in enumerate(items):
        where = f"input[{index}]"
        if not isinstance(item, dict):
            raise Unsupported(where, f"'{where}' must be an object.")
        kind = item.get("type", "message")
        if kind == "function_call":
            if turn is None:
                turn = {"role": "assistant", "content": None}
                messages.append(turn)
            if pending:
                turn.setdefault("thinking_blocks", []).extend(pending)
                pending = []
            turn.setdefault("tool_calls", []).append(_function_call(item, where))
            continue
        if kind == "reasoning":
            # One of the gateway's own (a provider's reasoning block) goes back to a
            # provider that takes it; any other (a native provider's) cannot be sent.
            block = reasoning_codec.decode(item.get("encrypted_content")) if thinking else None
            if block is not None:
                pending.append(block)
            continue
        if kind == "message":
            message = _message(item, where)
            if message["role"] == "assistant" and pending:
                message["thinking_blocks"] = pending
            pending = []
        elif kind == "function_call_output":
            message = _function_output(item, where)
        else:
            raise Unsupported(
                f"{where}.type",
                f"Input items of type '{kind}' cannot be translated to Chat Completions "
                "(message, function_call, function_call_output can).",
            )
        if kind != "message":
            pending = []
        messages.append(message)
        # One assistant turn: its text and every call it made, until anything else follows.
        turn = message if message["role"] == "assistant" else None
    return messages


def _function_call(item: Mapping[str, Any], where: str) -> dict[str, Any]:
    name = _string(item, "name", where)
    namespace = item.get("namespace")
    if isinstance(namespace, str) and namespace:
        name = f"{namespace}{NAMESPACE_SEPARATOR}{name}"
    return {
        "id": _string(item, "call_id", where),
        "type": "function",
        "function": {"name": name, "arguments": _string(item, "arguments", where)},
    }


def _function_output(item: Mapping[str, Any], where: str) -> dict[str, Any]:
    output = item.get("output")
    content = output if isinstance(output, str) else _joined_text(output, f"{where}.output")
    return {"role": "tool", "tool_call_id": _string(item, "call_id", where), "content": content}


def _message(item: Mapping[str, Any], where: str) -> dict[str, Any]:
    role = item.get("role")
    if role not in _MESSAGE_ROLES:
        raise Unsupported(
            f"{where}.role", f"'{where}.role' must be one of {sorted(_MESSAGE_ROLES)}."
        )
    content = item.get("content")
    if role == "developer":
        role = "system"  # what every chat API knows
    if isinstance(content, str):
        return {"role": role, "content": content}
    if not isinstance(content, list):
        raise Unsupported(f"{where}.content", f"'{where}.content' must be a string or an array.")
    if role != "user":
        return {"role": role, "content": _joined_text(content, f"{where}.content")}
    return {
        "role": role,
        "content": [_user_part(p, f"{where}.content[{i}]") for i, p in enumerate(content)],
    }


def _user_part(part: Any, where: str) -> dict[str, Any]:
    kind = part.get("type") if isinstance(part, dict) else None
    if kind in _TEXT_PARTS and isinstance(part.get("text"), str):
        return {"type": "text", "text": part["text"]}
    if kind == "input_image" and isinstance(part.get("image_url"), str):
        image: dict[str, Any] = {"url": part["image_url"]}
        if part.get("detail") is not None:
            image["detail"] = part["detail"]
        return {"type": "image_url", "image_url": image}
    if kind == "input_image":
        raise Unsupported(
            where, "An image given by 'file_id' cannot be translated: use 'image_url'."
        )
    raise Unsupported(
        where, f"Content parts of type '{kind}' cannot be translated to Chat Completions."
    )


def _joined_text(parts: Any, where: str) -> str:
    """Text parts as one string (assistant, system and tool contents in chat)."""
    if not isinstance(parts, list):
        raise Unsupported(where, f"'{where}' must be a string or an array of text parts.")
    texts: list[str] = []
    for index, part in enumerate(parts):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in _TEXT_PARTS and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif kind == "refusal" and isinstance(part.get("refusal"), str):
            texts.append(part["refusal"])
        else:
            raise Unsupported(
                f"{where}[{index}]", f"Only text can be translated here, not '{kind}' parts."
            )
    return "".join(texts)


def _string(item: Mapping[str, Any], name: str, where: str) -> str:
    value = item.get(name)
    if not isinstance(value, str):
        raise Unsupported(f"{where}.{name}", f"'{where}.{name}' must be a string.")
    return value


def namespaced_names(tools: Any) -> dict[str, tuple[str, str]]:
    """The chat name of each function of the request's ``namespace`` tools, and the
    namespace and name it stands for."""
    names: dict[str, tuple[str, str]] = {}
    for tool in tools if isinstance(tools, list) else []:
        if not isinstance(tool, dict) or tool.get("type") != "namespace":
            continue
        namespace = tool.get("name")
        for inner in tool.get("tools") or []:
            name = inner.get("name") if isinstance(inner, dict) else None
            if isinstance(namespace, str) and isinstance(name, str):
                names[f"{namespace}{NAMESPACE_SEPARATOR}{name}"] = (namespace, name)
    return names


def _tools(tools: Any, provider: str, note: Note) -> list[dict[str, Any]]:
    """Function tools as they are, a namespace's functions flattened; an offered built-in
    tool (run at OpenAI) is left out and listed; a custom tool is refused (it runs at the
    client, but its free-form input has no chat counterpart)."""
    out: list[dict[str, Any]] = []
    for index, tool in enumerate(tools or []):
        where = f"tools[{index}]"
        kind = tool.get("type") if isinstance(tool, dict) else None
        if kind == "function":
            out.append(_function_tool(tool, where))
        elif kind == "namespace":
            out.extend(_namespace_tools(tool, where))
        elif kind == "custom" or not isinstance(kind, str):
            raise Unsupported(
                where,
                f"A tool of type '{kind}' cannot be translated to Chat Completions for "
                f"provider '{provider}'; function and namespace tools can.",
            )
        else:  # a built-in tool: offered, not required, so leaving it out is safe
            note(f"tools[{kind}]")
    seen: set[str] = set()
    for entry in out:
        name = entry["function"]["name"]
        if name in seen:
            raise Unsupported(
                "tools", f"Two tools are offered to the model as '{name}'; rename one."
            )
        seen.add(name)
    return out


def _function_tool(tool: Mapping[str, Any], where: str, prefix: str = "") -> dict[str, Any]:
    name = tool.get("name")
    if not isinstance(name, str) or not name:
        raise Unsupported(f"{where}.name", f"'{where}.name' must be a string.")
    function: dict[str, Any] = {"name": prefix + name}
    for key in ("description", "parameters", "strict"):
        if tool.get(key) is not None:
            function[key] = tool[key]
    return {"type": "function", "function": function}


def _namespace_tools(tool: Mapping[str, Any], where: str) -> list[dict[str, Any]]:
    namespace = tool.get("name")
    inner = tool.get("tools")
    if not isinstance(namespace, str) or not namespace or not isinstance(inner, list):
        raise Unsupported(where, f"'{where}' needs a 'name' and an array of 'tools'.")
    about = tool.get("description")
    out: list[dict[str, Any]] = []
    for index, function in enumerate(inner):
        at = f"{where}.tools[{index}]"
        kind = function.get("type") if isinstance(function, dict) else None
        if kind != "function":
            raise Unsupported(
                at,
                f"A namespace's tool of type '{kind}' cannot be translated; function tools can.",
            )
        entry = _function_tool(function, at, f"{namespace}{NAMESPACE_SEPARATOR}")
        if isinstance(about, str) and about:  # what the namespace is, for the model
            own = entry["function"].get("description")
            entry["function"]["description"] = f"[{namespace}: {about}] {own or ''}".strip()
        out.append(entry)
    return out


def _tool_choice(choice: Any, provider: str) -> Any:
    if choice is None or isinstance(choice, str):
        return choice
    kind = choice.get("type") if isinstance(choice, dict) else None
    if kind == "function" and isinstance(choice.get("name"), str):
        name = choice["name"]
        namespace = choice.get("namespace")
        if isinstance(namespace, str) and namespace:
            name = f"{namespace}{NAMESPACE_SEPARATOR}{name}"
        return {"type": "function", "function": {"name": name}}
    if kind in ("allowed_tools", "custom", None) or not isinstance(kind, str):
        raise Unsupported(
            "tool_choice",
            f"A tool_choice of type '{kind}' cannot be translated: use auto, none, required "
            "or a function.",
        )
    raise Unsupported(
        "tool_choice",
        f"'tool_choice' requires the built-in tool '{kind}', which runs at OpenAI: provider "
        f"'{provider}' cannot run it. Offer it without requiring it (it is then left out), "
        "or use a model whose provider offers the Responses API.",
    )


def _text(text: Any, note: Note) -> dict[str, Any]:
    """``text.format`` as ``response_format``; ``text.verbosity`` (style only, and a field
    many chat upstreams reject) is left out and listed."""
    if text is None:
        return {}
    if not isinstance(text, dict):
        raise Unsupported("text", "'text' must be an object.")
    out: dict[str, Any] = {}
    if text.get("verbosity") is not None:
        note("text.verbosity")
    fmt = text.get("format")
    kind = fmt.get("type") if isinstance(fmt, dict) else None
    if fmt is None or kind == "text":
        return out
    if kind == "json_object":
        out["response_format"] = {"type": "json_object"}
    elif kind == "json_schema":
        schema = {
            key: fmt[key]
            for key in ("name", "schema", "strict", "description")
            if fmt.get(key) is not None
        }
        out["response_format"] = {"type": "json_schema", "json_schema": schema}
    else:
        raise Unsupported("text.format", f"A text.format of type '{kind}' cannot be translated.")
    return out


def _reasoning_effort(reasoning: Any) -> Any:
    """``reasoning.effort`` is chat's ``reasoning_effort`` (the summary: see ``to_chat``)."""
    if isinstance(reasoning, dict):
        return reasoning.get("effort")
    return None
