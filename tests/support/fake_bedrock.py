"""A fake AWS Bedrock Runtime on loopback: Converse, ConverseStream and InvokeModel.

Every request is checked as AWS would: the URL (``/model/{modelId}/{operation}``), the
body against the service's own model shipped with botocore (field names and types of
``Converse`` / ``ConverseStream`` input, validated by botocore's ``ParamValidator``),
and the authorization: a SigV4 signature recomputed with botocore from the test's
credentials over the request as received (method, path, signed headers, body), or a
Bedrock API key. A request that fails a check is answered as AWS answers it (a 400
``ValidationException`` or a 403 ``InvalidSignatureException``) and kept in
``refused`` so a test can assert there was none.

InvokeModel and InvokeModelWithResponseStream to a Claude model (an id holding
``anthropic.``) take Anthropic's Messages body as Bedrock documents it: no ``model`` or
``stream``, ``anthropic_version`` ``bedrock-2023-05-31``, betas as an ``anthropic_beta``
list; they answer Anthropic's message, or its events each in a ``chunk`` frame as base64
``bytes``, the last one with Bedrock's ``amazon-bedrock-invocationMetrics``.

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
from urllib.parse import unquote

from aiohttp import web
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.session import get_session
from botocore.validate import ParamValidator

from tests.support.servers import LoopThread, loopback_socket

ACCESS_KEY = "AKIDEXAMPLETEST00001"
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
SESSION_TOKEN = "FwoGZXIvYXdzEXAMPLESESSIONTOKEN"
REGION = "us-east-1"
API_KEY = "ABSKbedrock-api-key-example-0001"
_AUTH = re.compile(
    r"^AWS4-HMAC-SHA256 Credential=(?P<akid>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/"
    r"(?P<service>[^/]+)/aws4_request, SignedHeaders=(?P<signed>[^,]+), "
    r"Signature=(?P<signature>[0-9a-f]{64})$"
)
_OPERATIONS = {"converse": "Converse", "converse-stream": "ConverseStream"}
_CLAUDE_OPERATIONS = ("invoke", "invoke-with-response-stream")


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


@dataclass
class Received:
    operation: str
    model_id: str
    raw_path: str
    headers: dict[str, str]
    body: dict[str, Any]


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


class FakeBedrock:
    def __init__(self) -> None:
        self.scripts: dict[str, list[Answer]] = {}
        self.received: list[Received] = []
        self.refused: list[str] = []
        self.token: str | None = SESSION_TOKEN  # what a signed request must carry
        self._model = get_session().get_service_model("bedrock-runtime")
        self._thread = LoopThread("fake-bedrock")
        self._sock = loopback_socket()
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self._runner: web.AppRunner | None = None
        self._thread.run(self._start())

    def script(self, model_id: str, *answers: Answer) -> None:
        """The answers to the model's next calls, in order; the last one repeats."""
        self.scripts[model_id] = list(answers)

    def reset(self) -> None:
        self.scripts.clear()
        self.received.clear()
        self.refused.clear()

    def sent(self, operation: str) -> list[Received]:
        return [r for r in self.received if r.operation == operation]

    def close(self) -> None:
        if self._runner is not None:
            self._thread.run(self._runner.cleanup())
        self._thread.close()
        self._sock.close()

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_post("/model/{model_id}/{operation}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.SockSite(self._runner, self._sock).start()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        operation = request.match_info["operation"]
        model_id = unquote(request.match_info["model_id"])
        refusal = self._check_auth(request, raw)
        if refusal is not None:
            return self._refuse(403, "InvalidSignatureException", refusal)
        try:
            body = json.loads(raw)
        except ValueError:
            return self._refuse(400, "ValidationException", "the body is not JSON")
        if request.headers.get("content-type") != "application/json":
            return self._refuse(400, "ValidationException", "content-type must be JSON")
        problem = self._check_body(operation, model_id, body)
        if problem is not None:
            return self._refuse(400, "ValidationException", problem)
        self.received.append(
            Received(operation, model_id, request.raw_path, dict(request.headers), body)
        )
        answer = self._next(model_id)
        if answer.status is not None:
            return _error(answer.status, answer.exception, answer.retry_after)
        if operation == "count-tokens":
            inner = json.loads(base64.b64decode(body["input"]["invokeModel"]["body"]))
            return web.json_response({"inputTokens": claude_count(inner)})
        if "anthropic." in model_id and operation == "invoke":
            return web.json_response(_claude_message(answer), headers={"x-amzn-requestid": "r3"})
        if "anthropic." in model_id and operation == "invoke-with-response-stream":
            return await _claude_stream(request, answer)
        if operation == "invoke":
            return _embedding(model_id, body, answer)
        if operation == "converse":
            return web.json_response(_converse_body(answer), headers={"x-amzn-requestid": "req-1"})
        return await _stream(request, answer)

    def _next(self, model_id: str) -> Answer:
        answers = self.scripts.get(model_id) or [Answer()]
        return answers.pop(0) if len(answers) > 1 else answers[0]

    def _refuse(self, status: int, exception: str, message: str) -> web.Response:
        self.refused.append(message)
        return _error(status, exception, None, message)

    def _check_auth(self, request: web.Request, raw: bytes) -> str | None:
        authorization = request.headers.get("authorization", "")
        if authorization.startswith("Bearer "):
            return None if authorization == f"Bearer {API_KEY}" else "unknown API key"
        match = _AUTH.match(authorization)
        if match is None:
            return "no SigV4 authorization"
        if (match["akid"], match["region"], match["service"]) != (ACCESS_KEY, REGION, "bedrock"):
            return f"wrong credential scope {match['akid']}/{match['region']}/{match['service']}"
        if request.headers.get("x-amz-security-token") != self.token:
            return "wrong or missing session token"
        amz_date = request.headers.get("x-amz-date", "")
        if not amz_date.startswith(match["date"]):
            return "x-amz-date outside the credential's date"
        signed = match["signed"].split(";")
        if "host" not in signed or "x-amz-date" not in signed:
            return "host and x-amz-date must be signed"
        headers = {name: request.headers.get(name, "") for name in signed}
        url = f"http://{request.headers['host']}{request.raw_path}"
        again = AWSRequest(method=request.method, url=url, data=raw, headers=headers)
        again.context["timestamp"] = amz_date
        signer = SigV4Auth(Credentials(ACCESS_KEY, SECRET_KEY, self.token), "bedrock", REGION)
        canonical = signer.canonical_request(again)
        expected = signer.signature(signer.string_to_sign(again, canonical), again)
        if expected != match["signature"]:
            return "The request signature we calculated does not match the signature you provided"
        return None

    def _check_count_body(self, model_id: str, body: Any) -> str | None:
        """CountTokens' input by the service model, its InvokeModel body as Claude's."""
        if not isinstance(body, dict):
            return "the body must be an object"
        shape = self._model.operation_model("CountTokens").input_shape
        report = ParamValidator().validate({**body, "modelId": model_id}, shape)
        if report.has_errors():
            return str(report.generate_report())
        raw = body.get("input", {}).get("invokeModel", {}).get("body")
        try:
            inner = json.loads(base64.b64decode(raw, validate=True))
        except (TypeError, ValueError):
            return "input.invokeModel.body must be base64 of a JSON body"
        if "anthropic." not in model_id:
            return "The provided model doesn't support counting tokens"
        return _check_claude_body(inner)

    def _check_body(self, operation: str, model_id: str, body: Any) -> str | None:
        if operation == "count-tokens":
            return self._check_count_body(model_id, body)
        if "anthropic." in model_id and operation in _CLAUDE_OPERATIONS:
            return _check_claude_body(body)
        if operation == "invoke":
            return _check_embedding_body(model_id, body)
        name = _OPERATIONS.get(operation)
        if name is None:
            return f"unknown operation {operation}"
        if not isinstance(body, dict) or "modelId" in body:
            return "the body must be an object without modelId (it is in the URL)"
        shape = self._model.operation_model(name).input_shape
        report = ParamValidator().validate({**body, "modelId": model_id}, shape)
        return report.generate_report() if report.has_errors() else None


def claude_count(body: dict[str, Any]) -> int:
    """The fake's count of a Messages body's input tokens (a characters' measure)."""
    return len(json.dumps(body.get("messages"))) + len(json.dumps(body.get("system", "")))


def _check_claude_body(body: Any) -> str | None:
    """What Bedrock asks of an Anthropic Messages body."""
    if not isinstance(body, dict):
        return "the body must be an object"
    if body.get("anthropic_version") != "bedrock-2023-05-31":
        return "anthropic_version must be bedrock-2023-05-31"
    for name in ("model", "stream"):
        if name in body:
            return f"extraneous key [{name}] is not permitted"
    if not isinstance(body.get("max_tokens"), int):
        return "max_tokens is required"
    if not isinstance(body.get("messages"), list) or not body["messages"]:
        return "messages is required"
    betas = body.get("anthropic_beta", [])
    if not isinstance(betas, list) or not all(isinstance(b, str) for b in betas):
        return "anthropic_beta must be a list of strings"
    return None


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


def _claude_message(answer: Answer) -> dict[str, Any]:
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
    start = {**_claude_message(answer), "content": [], "stop_reason": None}
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


async def _claude_stream(request: web.Request, answer: Answer) -> web.StreamResponse:
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


def _check_embedding_body(model_id: str, body: Any) -> str | None:
    if not isinstance(body, dict):
        return "the body must be an object"
    if "titan-embed" in model_id:
        if set(body) - {"inputText", "dimensions", "normalize", "embeddingTypes"}:
            return f"unknown Titan fields {sorted(body)}"
        if not isinstance(body.get("inputText"), str):
            return "inputText must be a string"
        if "dimensions" in body and body["dimensions"] not in (256, 512, 1024):
            return "dimensions must be 256, 512 or 1024"
        return None
    if set(body) - {"texts", "input_type", "truncate", "embedding_types"}:
        return f"unknown Cohere fields {sorted(body)}"
    texts = body.get("texts")
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        return "texts must be an array of strings"
    if body.get("input_type") not in (
        "search_document",
        "search_query",
        "classification",
        "clustering",
    ):
        return "input_type is required"
    return None


def _error(status: int, exception: str, retry_after: str | None, message: str = "") -> web.Response:
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


def _converse_body(answer: Answer) -> dict[str, Any]:
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


async def _stream(request: web.Request, answer: Answer) -> web.StreamResponse:
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


def _embedding(model_id: str, body: dict[str, Any], answer: Answer) -> web.Response:
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
