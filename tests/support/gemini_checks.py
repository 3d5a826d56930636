"""What the fake Gemini (:mod:`tests.support.fake_gemini`) checks of a request body, by
the API reference (https://ai.google.dev/api): field names and types (an unknown field is
refused as the API refuses it), contents and parts, function declarations and calls (a
thinking model's calls signed, a function response answering a call before it), the
generation config, batchEmbedContents, Vertex's predict, and Vertex's Claude body.
A body that fails raises :class:`Invalid`, answered as a 400 in Google's shape.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Collection
from typing import Any

CLAUDE_FIELDS = {
    "anthropic_version": str,
    "messages": list,
    "system": (str, list),
    "max_tokens": int,
    "temperature": (int, float),
    "top_p": (int, float),
    "top_k": int,
    "stop_sequences": list,
    "stream": bool,
    "tools": list,
    "tool_choice": dict,
    "metadata": dict,
    "thinking": dict,
}


# The signatures Google documents as accepted for histories Gemini did not produce.
STAND_INS = ("skip_thought_signature_validator", "context_engineering_is_the_way_to_go")
_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$")


class Invalid(Exception):
    pass


def check_generate(body: Any, model: str, signatures: Collection[str]) -> None:
    """generateContent's body; a thinking model's calls must carry a signature it gave
    (``signatures``) or one of Google's stand-ins."""
    fields(
        body,
        "",
        {
            "contents": list,
            "systemInstruction": dict,
            "tools": list,
            "toolConfig": dict,
            "generationConfig": dict,
            "safetySettings": list,
            "cachedContent": str,
        },
    )
    contents = body.get("contents")
    if not contents:
        raise Invalid("contents is required")
    if "systemInstruction" in body:
        _check_content(body["systemInstruction"], "systemInstruction", role_required=False)
    previous_calls: set[str] = set()
    for i, content in enumerate(contents):
        _check_content(content, f"contents[{i}]", role_required=True)
        parts = content["parts"]
        for j, part in enumerate(parts):
            at = f"contents[{i}].parts[{j}]"
            if "functionResponse" in part:
                name = part["functionResponse"]["name"]
                if content["role"] != "user" or name not in previous_calls:
                    raise Invalid(f"{at}: a function response must answer a call before it")
        calls = [p for p in parts if "functionCall" in p]
        if content["role"] == "model" and calls and "thinking" in model:
            signature = calls[0].get("thoughtSignature")
            if signature not in signatures and signature not in STAND_INS:
                raise Invalid(
                    f"Function call `{calls[0]['functionCall']['name']}` in the {i}. "
                    "content block is missing a `thought_signature`."
                )
        if content["role"] == "model":
            previous_calls = {p["functionCall"]["name"] for p in calls}
    for i, tool in enumerate(body.get("tools", [])):
        fields(tool, f"tools[{i}]", {"functionDeclarations": list})
        for j, declaration in enumerate(tool["functionDeclarations"]):
            at = f"tools[{i}].functionDeclarations[{j}]"
            fields(
                declaration,
                at,
                {
                    "name": str,
                    "description": str,
                    "parameters": dict,
                    "parametersJsonSchema": dict,
                },
            )
            if not _NAME.match(declaration.get("name", "")):
                raise Invalid(f"{at}.name is not a valid function name")
            if "parameters" in declaration and "parametersJsonSchema" in declaration:
                raise Invalid(f"{at}: parameters and parametersJsonSchema are exclusive")
    if "toolConfig" in body:
        fields(body["toolConfig"], "toolConfig", {"functionCallingConfig": dict})
        config = body["toolConfig"].get("functionCallingConfig", {})
        fields(
            config,
            "toolConfig.functionCallingConfig",
            {"mode": str, "allowedFunctionNames": list},
        )
        if config.get("mode") not in ("AUTO", "ANY", "NONE", "VALIDATED"):
            raise Invalid("functionCallingConfig.mode is not a valid mode")
        if "allowedFunctionNames" in config and config.get("mode") != "ANY":
            raise Invalid("allowedFunctionNames is allowed with mode ANY only")
    if "generationConfig" in body:
        check_generation_config(body["generationConfig"])


def _check_content(content: Any, at: str, *, role_required: bool) -> None:
    fields(content, at, {"role": str, "parts": list})
    if role_required and content.get("role") not in ("user", "model"):
        raise Invalid(f"{at}.role must be 'user' or 'model'")
    parts = content.get("parts")
    if not parts:
        raise Invalid(f"{at}.parts must not be empty")
    for j, part in enumerate(parts):
        _check_part(part, f"{at}.parts[{j}]")


def _check_part(part: Any, at: str) -> None:
    data_fields: dict[str, type | tuple[type, ...]] = {
        "text": str,
        "inlineData": dict,
        "functionCall": dict,
        "functionResponse": dict,
        "fileData": dict,
    }
    fields(part, at, {**data_fields, "thought": bool, "thoughtSignature": str})
    present = [name for name in data_fields if name in part]
    if len(present) != 1:
        raise Invalid(f"{at} must hold exactly one of {', '.join(data_fields)}")
    if "thoughtSignature" in part and part["thoughtSignature"] not in STAND_INS:
        try:
            base64.b64decode(part["thoughtSignature"], validate=True)
        except ValueError as exc:
            raise Invalid(f"{at}.thoughtSignature is not base64") from exc
    if "inlineData" in part:
        fields(part["inlineData"], f"{at}.inlineData", {"mimeType": str, "data": str})
        try:
            base64.b64decode(part["inlineData"]["data"], validate=True)
        except (KeyError, ValueError) as exc:
            raise Invalid(f"{at}.inlineData.data is not base64") from exc
    if "functionCall" in part:
        fields(part["functionCall"], f"{at}.functionCall", {"name": str, "args": dict, "id": str})
    if "functionResponse" in part:
        fields(
            part["functionResponse"],
            f"{at}.functionResponse",
            {"name": str, "response": dict, "id": str},
        )
        if "response" not in part["functionResponse"]:
            raise Invalid(f"{at}.functionResponse.response is required")


def check_generation_config(config: Any) -> None:
    number = (int, float)
    fields(
        config,
        "generationConfig",
        {
            "stopSequences": list,
            "responseMimeType": str,
            "responseSchema": dict,
            "responseJsonSchema": dict,
            "candidateCount": int,
            "maxOutputTokens": int,
            "temperature": number,
            "topP": number,
            "topK": int,
            "seed": int,
            "presencePenalty": number,
            "frequencyPenalty": number,
            "thinkingConfig": dict,
        },
    )
    if "responseJsonSchema" in config and config.get("responseMimeType") != "application/json":
        raise Invalid("responseJsonSchema needs responseMimeType application/json")
    if len(config.get("stopSequences", [])) > 5:
        raise Invalid("at most 5 stopSequences")
    thinking = config.get("thinkingConfig")
    if thinking is not None:
        fields(
            thinking,
            "generationConfig.thinkingConfig",
            {"includeThoughts": bool, "thinkingBudget": int, "thinkingLevel": str},
        )
        if "thinkingBudget" in thinking and "thinkingLevel" in thinking:
            raise Invalid("thinkingBudget and thinkingLevel are exclusive")


def check_batch_embed(body: Any, model: str) -> None:
    fields(body, "", {"requests": list})
    for i, request in enumerate(body.get("requests") or []):
        at = f"requests[{i}]"
        fields(
            request,
            at,
            {
                "model": str,
                "content": dict,
                "taskType": str,
                "title": str,
                "outputDimensionality": int,
            },
        )
        if request.get("model") != f"models/{model}":
            raise Invalid(f"{at}.model must be models/{model}")
        _check_content(request.get("content"), f"{at}.content", role_required=False)
    if not body.get("requests"):
        raise Invalid("requests is required")


def check_predict(body: Any, model: str) -> None:
    fields(body, "", {"instances": list, "parameters": dict})
    if not body.get("instances"):
        raise Invalid("instances is required")
    for i, instance in enumerate(body["instances"]):
        fields(instance, f"instances[{i}]", {"content": str, "task_type": str, "title": str})
        if "content" not in instance:
            raise Invalid(f"instances[{i}].content is required")
    fields(
        body.get("parameters", {}),
        "parameters",
        {"outputDimensionality": int, "autoTruncate": bool},
    )


def fields(value: Any, at: str, allowed: dict[str, Any]) -> None:
    if not isinstance(value, dict):
        raise Invalid(f"{at or 'the body'} must be an object")
    for name, item in value.items():
        kind = allowed.get(name)
        if kind is None:
            raise Invalid(f"Unknown name \"{name}\" at '{at}': Cannot find field.")
        if isinstance(item, bool) and kind is not bool and bool not in _tuple(kind):
            raise Invalid(f"{at}.{name} has the wrong type")
        if not isinstance(item, kind):
            raise Invalid(f"{at}.{name} has the wrong type")


def _tuple(kind: Any) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)
