"""An OpenAI Chat Completions request as the Gemini API's generateContent request (pure).

Dicts in, dicts out: no HTTP here. This is the request; the answer is read in
``answer``, a stream in ``stream``; the fields beside messages are in ``options``, tools
and call ids in ``tools``.

Messages: ``system``/``developer`` → ``systemInstruction``; ``user`` → a ``user`` content
(text, images and audio as ``inlineData``, files given as data URLs too; an http(s) image
URL is refused: the Gemini API fetches no URL); ``assistant`` → a ``model`` content (text,
``functionCall`` parts with their thought signatures); ``tool`` → a ``functionResponse``
part in a ``user`` content, named after the call it answers (``{"result": <content>}``).
Neighbours of one role merge, so parallel results go back in one content as Gemini wants.

A gemini-3 model refuses a history whose function calls lack the signature it gave
(tools.py carries signatures in call ids). A call whose signature is not known (one another
provider made, before a fallback or a change of model, or a client that rewrote the id)
gets the stand-in Google documents for histories it did not produce
(``skip_thought_signature_validator``) on the first call of its model content, the one
Gemini checks, so the conversation goes on instead of failing.
"""

from __future__ import annotations

import re
from typing import Any

from gateway.domain.errors import TranslationError
from gateway.upstream.chat_fields import part_text, text_parts, tool_call_of
from gateway.upstream.gemini.options import generation_config, levelled, refuse_unsupported
from gateway.upstream.gemini.tools import (
    function_declarations,
    parse_call_id,
    response_format,
    tool_config,
)

# Google's documented stand-in for a signature Gemini did not give (a transferred history).
STAND_IN_SIGNATURE = "skip_thought_signature_validator"
_DATA_URL = re.compile(r"^data:(?P<media>[^;,]+);base64,(?P<data>.*)$", re.DOTALL)
_AUDIO_TYPES = {"wav": "audio/wav", "mp3": "audio/mp3"}


# --- request -------------------------------------------------------------------------------


def translate_request(body: dict[str, Any], model_name: str) -> dict[str, Any]:
    """An OpenAI chat request as a Gemini ``GenerateContentRequest`` body."""
    refuse_unsupported(body)
    raw = body.get("messages")
    if not isinstance(raw, list) or not raw:
        raise TranslationError("messages must be a non-empty array", "messages")
    system, contents = _translate_messages(raw)
    if not contents:
        raise TranslationError("messages must hold at least one non-system message", "messages")
    if levelled(model_name):
        _stand_in_signatures(contents)
    out: dict[str, Any] = {"contents": contents}
    if system:
        out["systemInstruction"] = {"parts": [{"text": text} for text in system]}
    declared = function_declarations(body.get("tools"))
    if declared:
        out["tools"] = [{"functionDeclarations": declared}]
        config = tool_config(body.get("tool_choice"), declared)
        if config is not None:
            out["toolConfig"] = config
    generation = {
        **generation_config(body, model_name),
        **response_format(body.get("response_format")),
    }
    if generation:
        out["generationConfig"] = generation
    return out


def _translate_messages(raw: list[Any]) -> tuple[list[str], list[dict[str, Any]]]:
    system: list[str] = []
    contents: list[dict[str, Any]] = []
    names: dict[str, str] = {}  # tool call id -> function name, for the results
    for i, msg in enumerate(raw):
        param = f"messages[{i}]"
        if not isinstance(msg, dict):
            raise TranslationError("each message must be an object", param)
        role = msg.get("role")
        if role in ("system", "developer"):
            system.extend(text_parts(msg.get("content"), f"{param}.content"))
        elif role == "user":
            _append(contents, "user", _user_parts(msg.get("content"), f"{param}.content"))
        elif role == "assistant":
            _append(contents, "model", _model_parts(msg, param, names))
        elif role == "tool":
            _append(contents, "user", [_function_response(msg, param, names)])
        else:
            raise TranslationError(f"unsupported message role: {role!r}", f"{param}.role")
    return system, contents


def _stand_in_signatures(contents: list[dict[str, Any]]) -> None:
    for content in contents:
        if content["role"] != "model":
            continue
        calls = [part for part in content["parts"] if "functionCall" in part]
        if calls and "thoughtSignature" not in calls[0]:
            calls[0]["thoughtSignature"] = STAND_IN_SIGNATURE


def _append(contents: list[dict[str, Any]], role: str, parts: list[dict[str, Any]]) -> None:
    if not parts:
        return
    if contents and contents[-1]["role"] == role:
        contents[-1]["parts"].extend(parts)
    else:
        contents.append({"role": role, "parts": parts})


def _user_parts(content: Any, param: str) -> list[dict[str, Any]]:
    if not isinstance(content, list):
        return [{"text": t} for t in text_parts(content, param)]
    parts: list[dict[str, Any]] = []
    for j, part in enumerate(content):
        at = f"{param}[{j}]"
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            text = part_text(part, at)
            if text:
                parts.append({"text": text})
        elif kind == "image_url":
            parts.append(_image(part.get("image_url"), f"{at}.image_url"))
        elif kind == "input_audio":
            parts.append(_audio(part.get("input_audio"), f"{at}.input_audio"))
        elif kind == "file":
            parts.append(_file(part.get("file"), f"{at}.file"))
        else:
            raise TranslationError(f"unsupported content part type: {kind!r}", at)
    return parts


def _inline(url: str, param: str) -> dict[str, Any]:
    match = _DATA_URL.match(url)
    if match is None:
        raise TranslationError("expected a base64 data URL (data:<type>;base64,...)", param)
    return {"inlineData": {"mimeType": match.group("media").lower(), "data": match.group("data")}}


def _image(image: Any, param: str) -> dict[str, Any]:
    url = image.get("url") if isinstance(image, dict) else image
    if not isinstance(url, str):
        raise TranslationError("image_url needs a url", param)
    if url.startswith(("http://", "https://")):
        raise TranslationError(
            "this model (served by Gemini) cannot fetch images by URL; send the image "
            "inline as a base64 data URL (data:image/png;base64,...)",
            f"{param}.url",
        )
    return _inline(url, f"{param}.url")


def _audio(audio: Any, param: str) -> dict[str, Any]:
    if not isinstance(audio, dict) or not isinstance(audio.get("data"), str):
        raise TranslationError("input_audio needs base64 data", param)
    mime = _AUDIO_TYPES.get(str(audio.get("format")))
    if mime is None:
        raise TranslationError("input_audio.format must be 'wav' or 'mp3'", f"{param}.format")
    return {"inlineData": {"mimeType": mime, "data": audio["data"]}}


def _file(file: Any, param: str) -> dict[str, Any]:
    data = file.get("file_data") if isinstance(file, dict) else None
    if not isinstance(data, str):
        raise TranslationError(
            "a file part needs file_data as a base64 data URL (file ids are not supported "
            "for this model, served by Gemini)",
            param,
        )
    return _inline(data, f"{param}.file_data")


def _model_parts(msg: dict[str, Any], param: str, names: dict[str, str]) -> list[dict[str, Any]]:
    for key in ("function_call", "audio"):
        if msg.get(key) is not None:
            raise TranslationError(f"an assistant message's {key} is not supported here", param)
    parts: list[dict[str, Any]] = [
        {"text": t} for t in text_parts(msg.get("content"), f"{param}.content")
    ]
    refusal = msg.get("refusal")
    if isinstance(refusal, str) and refusal:
        parts.append({"text": refusal})
    calls = msg.get("tool_calls")
    if calls is None:
        return parts
    if not isinstance(calls, list):
        raise TranslationError("tool_calls must be an array", f"{param}.tool_calls")
    for j, call in enumerate(calls):
        parts.append(_function_call(call, f"{param}.tool_calls[{j}]", names))
    return parts


def _function_call(call: Any, param: str, names: dict[str, str]) -> dict[str, Any]:
    call_id, name, arguments = tool_call_of(call, param)
    names[call_id] = name
    ref = parse_call_id(call_id)
    payload: dict[str, Any] = {"name": name, "args": arguments}
    if ref.gemini_id:
        payload["id"] = ref.gemini_id
    part: dict[str, Any] = {"functionCall": payload}
    signature = ref.signature or _extra_signature(call)
    if signature:
        part["thoughtSignature"] = signature
    return part


def _extra_signature(call: dict[str, Any]) -> str | None:
    extra = call.get("extra_content")
    google = extra.get("google") if isinstance(extra, dict) else None
    value = google.get("thought_signature") if isinstance(google, dict) else None
    return value if isinstance(value, str) and value else None


def _function_response(msg: dict[str, Any], param: str, names: dict[str, str]) -> dict[str, Any]:
    call_id = msg.get("tool_call_id")
    if not isinstance(call_id, str) or not call_id:
        raise TranslationError("a tool message needs tool_call_id", f"{param}.tool_call_id")
    name = names.get(call_id) or msg.get("name")
    if not isinstance(name, str) or not name:
        raise TranslationError(
            "a tool message must answer a tool call of an earlier assistant message "
            "(Gemini matches results to calls by the function's name)",
            f"{param}.tool_call_id",
        )
    text = "".join(text_parts(msg.get("content"), f"{param}.content"))
    payload: dict[str, Any] = {"name": name, "response": {"result": text}}
    gemini_id = parse_call_id(call_id).gemini_id
    if gemini_id:
        payload["id"] = gemini_id
    return {"functionResponse": payload}
