"""OpenAI tools, tool_choice, response_format and tool call ids for the Gemini API (pure).

Tools become ``tools: [{"functionDeclarations": [...]}]`` whose ``parametersJsonSchema``
is the function's JSON Schema as sent (Gemini's ``parameters`` takes only an OpenAPI
subset; ``parametersJsonSchema`` takes JSON Schema, ``additionalProperties`` included).
``tool_choice``: ``auto`` → ``AUTO``, ``none`` → ``NONE``, ``required`` → ``ANY``, a named
function → ``ANY`` with ``allowedFunctionNames: [name]``. ``strict`` has no counterpart and
is not sent (the SDK's ``parse`` validates the answer itself).

``response_format``: ``json_object`` → ``responseMimeType: application/json``;
``json_schema`` → that and ``responseJsonSchema`` (the schema as sent).

Tool call ids and thought signatures. Gemini matches a function's result to its call by
the function's name and order, and a thinking model signs its calls (``thoughtSignature``
on the ``functionCall`` part) and wants the signature back with the call in the next
request. OpenAI clients keep nothing but a tool call's ``id``, ``name`` and
``arguments``, so the signature travels inside the id:
``call_<24 hex>`` for a call without one, ``call_<24 hex>.sig.<signature>`` with one (the
signature's base64 with ``-``/``_`` for ``+``/``/``, reversed when the id comes back). A
call id Gemini set itself (``functionCall.id``) is kept as ``gid.<id>`` and sent back in
the call and its ``functionResponse``. Any other id (a call another provider made) is
sent as a call without id or signature (a gemini-3 model gets Google's stand-in signature
on it: translate.py). A signature in the field Google's own OpenAI
endpoint uses (``extra_content.google.thought_signature`` of the tool call) is read too.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from gateway.domain.errors import TranslationError
from gateway.upstream.chat_fields import function_tools, json_format

SIGNATURE_MARK = ".sig."
GEMINI_ID_PREFIX = "gid."
_JSON_MIME = "application/json"
_CHOICE_MODES = {"auto": "AUTO", "none": "NONE", "required": "ANY"}


@dataclass(frozen=True, slots=True)
class CallRef:
    """What a client's tool call id says for Gemini."""

    gemini_id: str | None  # functionCall.id Gemini set, to send back
    signature: str | None  # thoughtSignature to send back


def new_call_id(gemini_id: Any, signature: Any) -> str:
    """The OpenAI id of a call Gemini made (see the module)."""
    if isinstance(gemini_id, str) and gemini_id:
        base = f"{GEMINI_ID_PREFIX}{gemini_id}"
    else:
        base = f"call_{secrets.token_hex(12)}"
    if isinstance(signature, str) and signature:
        return f"{base}{SIGNATURE_MARK}{signature.replace('+', '-').replace('/', '_')}"
    return base


def parse_call_id(call_id: str) -> CallRef:
    base, mark, encoded = call_id.partition(SIGNATURE_MARK)
    signature = encoded.replace("-", "+").replace("_", "/") if mark and encoded else None
    gemini_id = base.removeprefix(GEMINI_ID_PREFIX) if base.startswith(GEMINI_ID_PREFIX) else None
    return CallRef(gemini_id or None, signature)


def function_declarations(tools: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i, function in function_tools(tools):
        entry: dict[str, Any] = {"name": function["name"]}
        if isinstance(function.get("description"), str):
            entry["description"] = function["description"]
        parameters = function.get("parameters")
        if parameters is not None:
            if not isinstance(parameters, dict):
                raise TranslationError(
                    "parameters must be a JSON Schema object", f"tools[{i}].function.parameters"
                )
            if not _takes_nothing(parameters):
                entry["parametersJsonSchema"] = parameters
        out.append(entry)
    return out


def _takes_nothing(schema: dict[str, Any]) -> bool:
    """``{}`` or an object schema without properties: a function without parameters."""
    rest = {k: v for k, v in schema.items() if k not in ("type", "properties")}
    return not rest and schema.get("type", "object") == "object" and not schema.get("properties")


def tool_config(choice: Any, declared: list[dict[str, Any]]) -> dict[str, Any] | None:
    if choice is None:
        return None
    if isinstance(choice, str) and choice in _CHOICE_MODES:
        return {"functionCallingConfig": {"mode": _CHOICE_MODES[choice]}}
    function = choice.get("function") if isinstance(choice, dict) else None
    name = function.get("name") if isinstance(function, dict) else None
    if not isinstance(name, str) or not name:
        raise TranslationError("unsupported tool_choice", "tool_choice")
    if not any(d["name"] == name for d in declared):
        raise TranslationError(f"tool_choice names '{name}', which is not a tool", "tool_choice")
    return {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": [name]}}


def response_format(value: Any) -> dict[str, Any]:
    """The generationConfig fields asking for JSON, if any."""
    asked = json_format(value)
    if asked is None:
        return {}
    schema = asked[1].get("schema")  # a json_object has none
    if schema is None:
        return {"responseMimeType": _JSON_MIME}
    if not isinstance(schema, dict):
        raise TranslationError(
            "the schema must be a JSON Schema object", "response_format.json_schema.schema"
        )
    return {"responseMimeType": _JSON_MIME, "responseJsonSchema": schema}
