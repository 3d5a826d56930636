"""What the fake Bedrock Runtime (:mod:`tests.support.fake_bedrock`) answers: the scripted
:class:`Answer`, Converse's body and ConverseStream's event frames, Anthropic's message
and events for InvokeModel to a Claude model (each event in a ``chunk`` frame as base64
``bytes``, the last with ``amazon-bedrock-invocationMetrics``), the embedding models'
bodies, and AWS's error answers.

Streams are AWS event-stream frames (prelude, headers, JSON payload, CRC32s), encoded
here by ``event_frame``; the gateway decodes them with botocore.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import struct
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web


@dataclass
class Answer:
    """What the fake answers one call with."""

    text: str = "Hello from Bedrock."
    tool_uses: list[dict[str, Any]] = field(default_factory=list)  # {toolUseId?, name, input}
    reasoning: str | None = None  # a reasoningContent block before the text
    stop_reason: str | None = None  # default: tool_use with tool uses, else end_turn
    input_tokens: int = 20
    output_tokens: int = 10
    cache_read: int = 0
    cache_write: int = 0
    status: int | None = None  # an error answer instead: its status and exception
    exception: str = "ThrottlingException"
    retry_after: str | None = None
    stream_exception: str | None = None  # a stream answered by this exception frame alone
    # ... or after this many event frames (messageStart counts)
    stream_exception_after: int | None = None
    embedding: list[float] = field(default_factory=lambda: [0.25, -0.5, 1.0])


def event_frame(headers: dict[str, str], payload: bytes) -> bytes:
    """One AWS event-stream message: prelude (total and headers length) and its CRC32,
    string headers (type 7), the payload, the message's CRC32."""
    encoded = b"".join(
        bytes([len(name)])
        + name.encode()
        + b"\x07"
        + struct.pack(">H", len(value))
        + value.encode()
        for name, value in headers.items()
    )
    total = 12 + len(encoded) + len(payload) + 4
    prelude = struct.pack(">II", total, len(encoded))
    message = prelude + struct.pack(">I", binascii.crc32(prelude)) + encoded + payload
    return message + struct.pack(">I", binascii.crc32(message))


def _event(name: str, payload: dict[str, Any]) -> bytes:
    headers = {":event-type": name, ":content-type": "application/json", ":message-type": "event"}
    return event_frame(headers, json.dumps({**payload, "p": "abcdefgh"}).encode())


def _exception(name: str, message: str) -> bytes:
    headers = {
        ":exception-type": name[:1].lower() + name[1:],
        ":content-type": "application/json",
        ":message-type": "exception",
    }
    return event_frame(headers, json.dumps({"message": message}).encode())


def claude_count(body: dict[str, Any]) -> int:
    """The fake's count of a Messages body's input tokens (a characters' measure)."""
    return len(json.dumps(body.get("messages"))) + len(json.dumps(body.get("system", "")))


def _claude_content(answer: Answer) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = []
    if answer.reasoning is not None:
        content.append({"type": "thinking", "thinking": answer.reasoning, "signature": "sig-1"})
    if answer.text:
        content.append({"type": "text", "text": answer.text})
    for use in _tool_uses(answer):
        content.append(
            {"type": "tool_use", "id": use["toolUseId"], "name": use["name"], "input": use["input"]}
        )
    return content


def _claude_usage(answer: Answer, output_tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": answer.input_tokens,
        "output_tokens": output_tokens,
        "cache_creation_input_tokens": answer.cache_write,
        "cache_read_input_tokens": answer.cache_read,
    }


def claude_message(answer: Answer) -> dict[str, Any]:
    return {
        "id": "msg_bdrk_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-3-5-haiku-20241022",
        "content": _claude_content(answer),
        "stop_reason": _stop_reason(answer),
        "stop_sequence": None,
        "usage": _claude_usage(answer, answer.output_tokens),
    }


def _chunk(event: dict[str, Any]) -> bytes:
    headers = {
        ":event-type": "chunk",
        ":content-type": "application/json",
        ":message-type": "event",
    }
    data = base64.b64encode(json.dumps(event).encode()).decode()
    return event_frame(headers, json.dumps({"bytes": data, "p": "abcd"}).encode())


def _claude_events(answer: Answer) -> list[dict[str, Any]]:
    start = {**claude_message(answer), "content": [], "stop_reason": None}
    start["usage"] = _claude_usage(answer, 1)
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}, {"type": "ping"}]
    for index, block in enumerate(_claude_content(answer)):
        deltas: list[dict[str, Any]]
        if block["type"] == "thinking":
            opened = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [
                {"type": "thinking_delta", "thinking": block["thinking"]},
                {"type": "signature_delta", "signature": block["signature"]},
            ]
        elif block["type"] == "text":
            opened = {"type": "text", "text": ""}
            pieces = re.findall(r"\S+\s*", block["text"])
            deltas = [{"type": "text_delta", "text": piece} for piece in pieces]
        else:
            opened = {**block, "input": {}}
            text = json.dumps(block["input"])
            deltas = [
                {"type": "input_json_delta", "partial_json": text[i : i + 7]}
                for i in range(0, len(text), 7)
            ]
        events.append({"type": "content_block_start", "index": index, "content_block": opened})
        events.extend({"type": "content_block_delta", "index": index, "delta": d} for d in deltas)
        events.append({"type": "content_block_stop", "index": index})
    delta = {"stop_reason": _stop_reason(answer), "stop_sequence": None}
    usage = {"output_tokens": answer.output_tokens}
    events.append({"type": "message_delta", "delta": delta, "usage": usage})
    metrics = {
        "inputTokenCount": answer.input_tokens,
        "outputTokenCount": answer.output_tokens,
        "invocationLatency": 120,
        "firstByteLatency": 40,
    }
    events.append({"type": "message_stop", "amazon-bedrock-invocationMetrics": metrics})
    return events


async def claude_stream(request: web.Request, answer: Answer) -> web.StreamResponse:
    response = web.StreamResponse(
        headers={"content-type": "application/vnd.amazon.eventstream", "x-amzn-requestid": "r4"}
    )
    await response.prepare(request)
    frames = [_chunk(event) for event in _claude_events(answer)]
    if answer.stream_exception is not None:
        frames = frames[: answer.stream_exception_after or 0]
        frames.append(_exception(answer.stream_exception, "fake stream failure"))
    data = b"".join(frames)
    for i in range(0, len(data), 50):  # frames split across reads, as TCP may
        await response.write(data[i : i + 50])
    await response.write_eof()
    return response


def error_answer(
    status: int, exception: str, retry_after: str | None, message: str = ""
) -> web.Response:
    headers = {
        "x-amzn-errortype": f"{exception}:http://internal.amazon.com/coral/com.amazon.bedrock/"
    }
    if retry_after is not None:
        headers["retry-after"] = retry_after
    text = message or f"fake {exception}"
    return web.json_response({"message": text}, status=status, headers=headers)


def _usage(answer: Answer) -> dict[str, Any]:
    usage = {
        "inputTokens": answer.input_tokens,
        "outputTokens": answer.output_tokens,
        "totalTokens": answer.input_tokens
        + answer.output_tokens
        + answer.cache_read
        + answer.cache_write,
    }
    if answer.cache_read or answer.cache_write:
        usage["cacheReadInputTokens"] = answer.cache_read
        usage["cacheWriteInputTokens"] = answer.cache_write
    return usage


def _tool_uses(answer: Answer) -> list[dict[str, Any]]:
    return [
        {
            "toolUseId": use.get("toolUseId", f"tooluse_{i}"),
            "name": use["name"],
            "input": use["input"],
        }
        for i, use in enumerate(answer.tool_uses)
    ]


def _stop_reason(answer: Answer) -> str:
    return answer.stop_reason or ("tool_use" if answer.tool_uses else "end_turn")


def converse_body(answer: Answer) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if answer.reasoning is not None:
        text = {"text": answer.reasoning, "signature": "sig-1"}
        content.append({"reasoningContent": {"reasoningText": text}})
    if answer.text:
        content.append({"text": answer.text})
    content.extend({"toolUse": use} for use in _tool_uses(answer))
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": _stop_reason(answer),
        "usage": _usage(answer),
        "metrics": {"latencyMs": 12},
    }


async def converse_stream(request: web.Request, answer: Answer) -> web.StreamResponse:
    response = web.StreamResponse(
        headers={"content-type": "application/vnd.amazon.eventstream", "x-amzn-requestid": "req-2"}
    )
    await response.prepare(request)
    if answer.stream_exception is not None and answer.stream_exception_after is None:
        await response.write(_exception(answer.stream_exception, "fake stream failure"))
        await response.write_eof()
        return response
    frames = [_event("messageStart", {"role": "assistant"})]
    index = 0
    if answer.reasoning is not None:
        for delta in ({"text": answer.reasoning}, {"signature": "sig-1"}):
            event = {"contentBlockIndex": 0, "delta": {"reasoningContent": delta}}
            frames.append(_event("contentBlockDelta", event))
        frames.append(_event("contentBlockStop", {"contentBlockIndex": 0}))
        index = 1
    if answer.text:
        for piece in re.findall(r"\S+\s*", answer.text):
            frames.append(
                _event("contentBlockDelta", {"contentBlockIndex": index, "delta": {"text": piece}})
            )
        frames.append(_event("contentBlockStop", {"contentBlockIndex": index}))
        index += 1
    for use in _tool_uses(answer):
        start = {"toolUse": {"toolUseId": use["toolUseId"], "name": use["name"]}}
        frames.append(_event("contentBlockStart", {"contentBlockIndex": index, "start": start}))
        text = json.dumps(use["input"])
        for i in range(0, len(text), 7):
            delta = {"toolUse": {"input": text[i : i + 7]}}
            frames.append(_event("contentBlockDelta", {"contentBlockIndex": index, "delta": delta}))
        frames.append(_event("contentBlockStop", {"contentBlockIndex": index}))
        index += 1
    frames.append(_event("messageStop", {"stopReason": _stop_reason(answer)}))
    frames.append(_event("metadata", {"usage": _usage(answer), "metrics": {"latencyMs": 12}}))
    if answer.stream_exception is not None and answer.stream_exception_after is not None:
        frames = frames[: answer.stream_exception_after]
        frames.append(_exception(answer.stream_exception, "fake stream failure"))
    data = b"".join(frames)
    for i in range(0, len(data), 50):  # frames split across reads, as TCP may
        await response.write(data[i : i + 50])
    await response.write_eof()
    return response


def embedding_answer(model_id: str, body: dict[str, Any], answer: Answer) -> web.Response:
    if "titan-embed" in model_id:
        tokens = len(body["inputText"].split())
        return web.json_response({"embedding": answer.embedding, "inputTextTokenCount": tokens})
    texts = body["texts"]
    tokens = sum(len(t.split()) for t in texts)
    payload = {
        "id": "emb-1",
        "embeddings": [answer.embedding for _ in texts],
        "texts": texts,
        "response_type": "embeddings_floats",
    }
    return web.json_response(payload, headers={"x-amzn-bedrock-input-token-count": str(tokens)})
