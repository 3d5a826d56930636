"""A fake Gemini API (Google AI Studio) on loopback: a small real HTTP server.

It checks every request against the API reference (https://ai.google.dev/api): the URL
(``/v1beta/models/{model}:{method}``, ``alt=sse`` on ``streamGenerateContent``), the
``x-goog-api-key`` header (no key in the URL, no bearer), and the body's field names and
types, rejecting unknown fields with a 400 in Google's error shape, as the API does. Like a
thinking model of the gemini-3 series, a model whose name holds ``thinking`` signs its
function calls and refuses a history whose calls lack the signature it gave. A function
response must name a call of the model content before it.

It plays Vertex AI too: ``/v1/projects/{project}/locations/{location}/publishers/
{google|anthropic}/models/{model}:{method}`` with ``Authorization: Bearer`` holding a
token its OAuth endpoint (``/token``, named in the service-account JSON that
``service_account`` writes) issued after verifying the signed JWT with the account's
public key; Google models take the same bodies as AI Studio (embeddings through
``:predict``), Claude models Anthropic's Messages body without ``model`` and with
``anthropic_version`` (``:rawPredict``, ``:streamRawPredict``).

Tests script answers per model (``FakeGemini.script``): ``Turn`` (parts, finishReason,
usage; streamed as SSE with text split into words and each call whole), ``Blocked`` (a
prompt blocked by promptFeedback) or ``Failure`` (an error status, with RetryInfo or
Retry-After). Every request is recorded (``received``).
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from tests.support.servers import LoopThread, loopback_socket

API_KEY = "AIza-fake-gemini-key-0123"
PROJECT = "proj-1"
LOCATION = "us-central1"
SERVICE_ACCOUNT = "gateway@proj-1.iam.gserviceaccount.com"
SCOPE = "https://www.googleapis.com/auth/cloud-platform"
# The audience a service account's assertion names, whichever token_uri it is sent to.
GOOGLE_TOKEN_AUDIENCE = "https://oauth2.googleapis.com/token"
VERTEX_ANTHROPIC_VERSION = "vertex-2023-10-16"
_CLAUDE_FIELDS = {
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


@dataclass
class Turn:
    parts: list[dict[str, Any]] = field(default_factory=lambda: [{"text": "Hello from Gemini."}])
    finish: str = "STOP"
    usage: dict[str, int] = field(
        default_factory=lambda: {"promptTokenCount": 10, "candidatesTokenCount": 5}
    )
    safety_ratings: list[dict[str, Any]] | None = None


@dataclass
class Blocked:
    reason: str = "SAFETY"
    usage: dict[str, int] = field(default_factory=lambda: {"promptTokenCount": 7})


@dataclass
class Failure:
    status: int
    google_status: str
    message: str = "fake failure"
    retry_delay: str | None = None  # RetryInfo.retryDelay, e.g. "1s"
    retry_after: str | None = None  # the Retry-After header


Reply = Turn | Blocked | Failure


@dataclass
class Received:
    path: str
    method: str  # generateContent, streamGenerateContent, batchEmbedContents, ...
    model: str
    query: dict[str, str]
    headers: dict[str, str]
    body: dict[str, Any]


class Invalid(Exception):
    pass


class FakeGemini:
    def __init__(self) -> None:
        self.scripts: dict[str, list[Reply]] = {}
        self.received: list[Received] = []
        self.signatures: set[str] = set()  # signatures handed out
        self.tokens: set[str] = set()  # access tokens issued
        self.token_requests = 0
        self._public_key: Any = None
        self._thread = LoopThread("fake-gemini")
        self._sock = loopback_socket()
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self.base_url = f"{self.url}/v1beta"
        self._runner: web.AppRunner | None = None
        self._thread.run(self._start())

    def script(self, model: str, *replies: Reply) -> None:
        self.scripts[model] = list(replies)

    def reset(self) -> None:
        self.scripts.clear()
        self.received.clear()
        self.signatures.clear()
        self.tokens.clear()
        self.token_requests = 0

    def service_account(self, path: Any) -> None:
        """Write a service-account JSON whose key the token endpoint checks to ``path``."""
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self._public_key = key.public_key()
        pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode()
        account = {
            "type": "service_account",
            "project_id": PROJECT,
            "private_key_id": "key-1",
            "private_key": pem,
            "client_email": SERVICE_ACCOUNT,
            "client_id": "1234567890",
            "token_uri": f"{self.url}/token",
        }
        path.write_text(json.dumps(account))

    def close(self) -> None:
        if self._runner is not None:
            self._thread.run(self._runner.cleanup())
        self._thread.close()
        self._sock.close()

    def last(self, method: str | None = None) -> Received:
        found = [r for r in self.received if method is None or r.method == method]
        assert found, f"no {method or ''} request received"
        return found[-1]

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_post("/v1beta/models/{tail}", self._handle)
        app.router.add_post("/token", self._token)
        app.router.add_post(
            "/v1/projects/{project}/locations/{location}/publishers/{publisher}/models/{tail}",
            self._vertex,
        )
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.SockSite(self._runner, self._sock).start()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        model, _, method = request.match_info["tail"].partition(":")
        try:
            body = await request.json()
        except json.JSONDecodeError:
            return _error(400, "INVALID_ARGUMENT", "Invalid JSON payload received.")
        self.received.append(
            Received(
                request.path,
                method,
                model,
                dict(request.query),
                dict(request.headers),
                body if isinstance(body, dict) else {},
            )
        )
        key = request.headers.get("x-goog-api-key")
        if "key" in request.query or "authorization" in {h.lower() for h in request.headers}:
            return _error(400, "INVALID_ARGUMENT", "send the key in x-goog-api-key only")
        if key != API_KEY:  # as Google answers it: a 400 whose ErrorInfo names the key
            info = {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "API_KEY_INVALID",
                "domain": "googleapis.com",
                "metadata": {"service": "generativelanguage.googleapis.com"},
            }
            message = "API key not valid. Please pass a valid API key."
            return _error(400, "INVALID_ARGUMENT", message, details=[info])
        return await self._serve(request, model, method, body, vertex=False)

    async def _serve(
        self, request: web.Request, model: str, method: str, body: Any, *, vertex: bool
    ) -> web.StreamResponse:
        embed_method = "predict" if vertex else "batchEmbedContents"
        try:
            if method in ("generateContent", "streamGenerateContent"):
                stream = method == "streamGenerateContent"
                if stream and request.query.get("alt") != "sse":
                    raise Invalid("this fake serves streamGenerateContent with alt=sse only")
                if not stream and request.query:
                    raise Invalid(f"unexpected query {dict(request.query)}")
                self._check_generate(body, model)
            elif method == embed_method:
                (_check_predict if vertex else _check_batch_embed)(body, model)
            else:
                return _error(404, "NOT_FOUND", f"method {method} not found")
        except Invalid as exc:
            return _error(400, "INVALID_ARGUMENT", f"Invalid JSON payload received. {exc}")
        replies = self.scripts.get(model) or []
        reply = replies.pop(0) if replies else Turn()
        if isinstance(reply, Failure):
            return _failure(reply)
        if method == "batchEmbedContents":
            return web.json_response(_embeddings(body))
        if method == "predict":
            return web.json_response(_predictions(body))
        answer = self._answer(reply, model)
        if method == "generateContent":
            return web.json_response(answer)
        return await _sse(request, reply, answer)

    async def _token(self, request: web.Request) -> web.Response:
        """Google's OAuth token endpoint: a JWT bearer grant signed by the account's key."""
        self.token_requests += 1
        form = await request.post()
        if form.get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer":
            return web.json_response({"error": "unsupported_grant_type"}, status=400)
        try:
            claims = self._verified(str(form.get("assertion", "")))
        except (ValueError, KeyError) as exc:
            return web.json_response(
                {"error": "invalid_grant", "error_description": str(exc)}, status=400
            )
        if claims.get("iss") != SERVICE_ACCOUNT or claims.get("aud") != GOOGLE_TOKEN_AUDIENCE:
            return web.json_response({"error": "invalid_grant"}, status=400)
        if SCOPE not in str(claims.get("scope", "")).split():
            return web.json_response({"error": "invalid_scope"}, status=400)
        token = f"ya29.fake-{len(self.tokens)}"
        self.tokens.add(token)
        return web.json_response(
            {"access_token": token, "expires_in": 3600, "token_type": "Bearer"}
        )

    def _verified(self, assertion: str) -> dict[str, Any]:
        header, payload, signature = assertion.split(".")
        if json.loads(_b64url(header)).get("alg") != "RS256":
            raise ValueError("not RS256")
        if self._public_key is None:
            raise ValueError("no service account was written")
        try:
            self._public_key.verify(
                _b64url(signature),
                f"{header}.{payload}".encode(),
                padding.PKCS1v15(),
                hashes.SHA256(),
            )
        except Exception as exc:  # cryptography's InvalidSignature
            raise ValueError("bad signature") from exc
        claims: dict[str, Any] = json.loads(_b64url(payload))
        if not claims["exp"] > claims["iat"]:
            raise ValueError("expired")
        return claims

    async def _vertex(self, request: web.Request) -> web.StreamResponse:
        info = request.match_info
        model, _, method = info["tail"].partition(":")
        try:
            body = await request.json()
        except json.JSONDecodeError:
            return _error(400, "INVALID_ARGUMENT", "Invalid JSON payload received.")
        self.received.append(
            Received(
                request.path,
                method,
                model,
                dict(request.query),
                dict(request.headers),
                body if isinstance(body, dict) else {},
            )
        )
        if (info["project"], info["location"]) != (PROJECT, LOCATION):
            return _error(404, "NOT_FOUND", "no such project or location")
        auth = request.headers.get("authorization", "")
        if not auth.startswith("Bearer ") or auth.removeprefix("Bearer ") not in self.tokens:
            return _error(401, "UNAUTHENTICATED", "Request had invalid authentication credentials.")
        if "x-goog-api-key" in request.headers or "key" in request.query:
            return _error(400, "INVALID_ARGUMENT", "Vertex AI takes no API key here")
        if info["publisher"] == "anthropic":
            return await self._claude(request, model, method, body)
        if info["publisher"] != "google":
            return _error(404, "NOT_FOUND", "no such publisher")
        return await self._serve(request, model, method, body, vertex=True)

    async def _claude(
        self, request: web.Request, model: str, method: str, body: Any
    ) -> web.StreamResponse:
        if model == "count-tokens":  # Claude's token count: the model is named in the body
            return self._claude_count(method, body)
        try:
            _fields(body, "", _CLAUDE_FIELDS)
            if body.get("anthropic_version") != VERTEX_ANTHROPIC_VERSION:
                raise Invalid("anthropic_version must be vertex-2023-10-16")
            if "messages" not in body or "max_tokens" not in body:
                raise Invalid("messages and max_tokens are required")
            stream = method == "streamRawPredict"
            if (
                method not in ("rawPredict", "streamRawPredict")
                or bool(body.get("stream")) != stream
            ):
                raise Invalid("rawPredict without stream, streamRawPredict with stream: true")
        except Invalid as exc:
            error = {"type": "invalid_request_error", "message": str(exc)}
            return web.json_response({"type": "error", "error": error}, status=400)
        replies = self.scripts.get(model) or []
        reply = replies.pop(0) if replies else Turn()
        if isinstance(reply, Failure):
            return _failure(reply)
        text = "".join(p.get("text", "") for p in getattr(reply, "parts", []))
        usage = {
            "input_tokens": reply.usage.get("promptTokenCount", 0),
            "output_tokens": reply.usage.get("candidatesTokenCount", 0),
        }
        if not stream:
            return web.json_response(
                {
                    "id": "msg_vertex",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [{"type": "text", "text": text}],
                    "stop_reason": "end_turn",
                    "stop_sequence": None,
                    "usage": usage,
                }
            )
        response = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await response.prepare(request)
        start = {
            "id": "msg_vertex",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "usage": {"input_tokens": usage["input_tokens"], "output_tokens": 1},
        }
        events: list[tuple[str, dict[str, Any]]] = [
            ("message_start", {"type": "message_start", "message": start}),
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
            ),
            *[
                (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {"type": "text_delta", "text": w},
                    },
                )
                for w in re.findall(r"\S+\s*", text)
            ],
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn"},
                    "usage": {"output_tokens": usage["output_tokens"]},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
        for name, data in events:
            await response.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
        await response.write_eof()
        return response

    def _claude_count(self, method: str, body: Any) -> web.Response:
        problem = None
        if method != "rawPredict":
            problem = "count-tokens takes rawPredict"
        elif not str(body.get("model", "")).startswith("claude"):
            problem = "model must name a Claude model"
        elif body.get("anthropic_version") != VERTEX_ANTHROPIC_VERSION:
            problem = "anthropic_version must be vertex-2023-10-16"
        elif not isinstance(body.get("messages"), list) or "stream" in body:
            problem = "messages are required, stream is not taken"
        if problem is not None:
            error = {"type": "invalid_request_error", "message": problem}
            return web.json_response({"type": "error", "error": error}, status=400)
        count = len(json.dumps(body["messages"])) + len(json.dumps(body.get("system", "")))
        return web.json_response({"input_tokens": count})

    def _answer(self, reply: Turn | Blocked, model: str) -> dict[str, Any]:
        if isinstance(reply, Blocked):
            return {
                "promptFeedback": {
                    "blockReason": reply.reason,
                    "safetyRatings": [
                        {
                            "category": "HARM_CATEGORY_DANGEROUS_CONTENT",
                            "probability": "HIGH",
                            "blocked": True,
                        }
                    ],
                },
                "usageMetadata": {**reply.usage, "totalTokenCount": sum(reply.usage.values())},
                "modelVersion": model,
                "responseId": "resp-blocked",
            }
        parts = [dict(p) for p in reply.parts]
        if "thinking" in model:  # sign the first call, as gemini-3 models do
            calls = [p for p in parts if "functionCall" in p]
            if calls:
                signature = base64.b64encode(f"sig:{len(self.signatures)}:>>?".encode()).decode()
                calls[0]["thoughtSignature"] = signature
                self.signatures.add(signature)
        candidate: dict[str, Any] = {
            "content": {"role": "model", "parts": parts},
            "finishReason": reply.finish,
            "index": 0,
        }
        if reply.safety_ratings is not None:
            candidate["safetyRatings"] = reply.safety_ratings
        usage = dict(reply.usage)
        usage["totalTokenCount"] = sum(usage.values())
        return {
            "candidates": [candidate],
            "usageMetadata": usage,
            "modelVersion": f"{model}-001",
            "responseId": "resp-1",
        }

    def _check_generate(self, body: Any, model: str) -> None:
        _fields(
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
                if signature not in self.signatures and signature not in STAND_INS:
                    raise Invalid(
                        f"Function call `{calls[0]['functionCall']['name']}` in the {i}. "
                        "content block is missing a `thought_signature`."
                    )
            if content["role"] == "model":
                previous_calls = {p["functionCall"]["name"] for p in calls}
        for i, tool in enumerate(body.get("tools", [])):
            _fields(tool, f"tools[{i}]", {"functionDeclarations": list})
            for j, declaration in enumerate(tool["functionDeclarations"]):
                at = f"tools[{i}].functionDeclarations[{j}]"
                _fields(
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
            _fields(body["toolConfig"], "toolConfig", {"functionCallingConfig": dict})
            config = body["toolConfig"].get("functionCallingConfig", {})
            _fields(
                config,
                "toolConfig.functionCallingConfig",
                {"mode": str, "allowedFunctionNames": list},
            )
            if config.get("mode") not in ("AUTO", "ANY", "NONE", "VALIDATED"):
                raise Invalid("functionCallingConfig.mode is not a valid mode")
            if "allowedFunctionNames" in config and config.get("mode") != "ANY":
                raise Invalid("allowedFunctionNames is allowed with mode ANY only")
        if "generationConfig" in body:
            _check_generation_config(body["generationConfig"])


def _check_content(content: Any, at: str, *, role_required: bool) -> None:
    _fields(content, at, {"role": str, "parts": list})
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
    _fields(part, at, {**data_fields, "thought": bool, "thoughtSignature": str})
    present = [name for name in data_fields if name in part]
    if len(present) != 1:
        raise Invalid(f"{at} must hold exactly one of {', '.join(data_fields)}")
    if "thoughtSignature" in part and part["thoughtSignature"] not in STAND_INS:
        try:
            base64.b64decode(part["thoughtSignature"], validate=True)
        except ValueError as exc:
            raise Invalid(f"{at}.thoughtSignature is not base64") from exc
    if "inlineData" in part:
        _fields(part["inlineData"], f"{at}.inlineData", {"mimeType": str, "data": str})
        try:
            base64.b64decode(part["inlineData"]["data"], validate=True)
        except (KeyError, ValueError) as exc:
            raise Invalid(f"{at}.inlineData.data is not base64") from exc
    if "functionCall" in part:
        _fields(part["functionCall"], f"{at}.functionCall", {"name": str, "args": dict, "id": str})
    if "functionResponse" in part:
        _fields(
            part["functionResponse"],
            f"{at}.functionResponse",
            {"name": str, "response": dict, "id": str},
        )
        if "response" not in part["functionResponse"]:
            raise Invalid(f"{at}.functionResponse.response is required")


def _check_generation_config(config: Any) -> None:
    number = (int, float)
    _fields(
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
        _fields(
            thinking,
            "generationConfig.thinkingConfig",
            {"includeThoughts": bool, "thinkingBudget": int, "thinkingLevel": str},
        )
        if "thinkingBudget" in thinking and "thinkingLevel" in thinking:
            raise Invalid("thinkingBudget and thinkingLevel are exclusive")


def _check_batch_embed(body: Any, model: str) -> None:
    _fields(body, "", {"requests": list})
    for i, request in enumerate(body.get("requests") or []):
        at = f"requests[{i}]"
        _fields(
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


def _check_predict(body: Any, model: str) -> None:
    _fields(body, "", {"instances": list, "parameters": dict})
    if not body.get("instances"):
        raise Invalid("instances is required")
    for i, instance in enumerate(body["instances"]):
        _fields(instance, f"instances[{i}]", {"content": str, "task_type": str, "title": str})
        if "content" not in instance:
            raise Invalid(f"instances[{i}].content is required")
    _fields(
        body.get("parameters", {}),
        "parameters",
        {"outputDimensionality": int, "autoTruncate": bool},
    )


def _predictions(body: dict[str, Any]) -> dict[str, Any]:
    size = body.get("parameters", {}).get("outputDimensionality", 3)
    return {
        "predictions": [
            {
                "embeddings": {
                    "values": [round(len(i["content"]) / (k + 1), 3) for k in range(size)],
                    "statistics": {"token_count": len(i["content"]), "truncated": False},
                }
            }
            for i in body["instances"]
        ]
    }


def _b64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _fields(value: Any, at: str, allowed: dict[str, Any]) -> None:
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


def _error(status: int, google_status: str, message: str, **extra: Any) -> web.Response:
    error: dict[str, Any] = {"code": status, "message": message, "status": google_status}
    error.update(extra)
    return web.json_response({"error": error}, status=status)


def _failure(failure: Failure) -> web.Response:
    extra: dict[str, Any] = {}
    if failure.retry_delay is not None:
        extra["details"] = [
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": failure.retry_delay}
        ]
    response = _error(failure.status, failure.google_status, failure.message, **extra)
    if failure.retry_after is not None:
        response.headers["retry-after"] = failure.retry_after
    return response


def _embeddings(body: dict[str, Any]) -> dict[str, Any]:
    out = []
    for request in body["requests"]:
        text = "".join(p.get("text", "") for p in request["content"]["parts"])
        size = request.get("outputDimensionality", 3)
        out.append({"values": [round(len(text) / (k + 1), 3) for k in range(size)]})
    return {"embeddings": out}


async def _sse(
    request: web.Request, reply: Turn | Blocked, answer: dict[str, Any]
) -> web.StreamResponse:
    """The answer as Gemini streams it: text in word pieces, each call whole, the
    finishReason and the full usage on the last chunk (earlier ones carry the prompt's)."""
    response = web.StreamResponse(headers={"content-type": "text/event-stream"})
    await response.prepare(request)
    send: Callable[[dict[str, Any]], Any] = lambda chunk: response.write(  # noqa: E731
        b"data: " + json.dumps(chunk).encode() + b"\r\n\r\n"
    )
    if isinstance(reply, Blocked):
        await send(answer)
        await response.write_eof()
        return response
    candidate = answer["candidates"][0]
    pieces: list[dict[str, Any]] = []
    for part in candidate["content"]["parts"]:
        if "text" in part and "thoughtSignature" not in part and not part.get("thought"):
            words = re.findall(r"\S+\s*", part["text"]) or [part["text"]]
            pieces.extend({"text": w} for w in words)
        else:
            pieces.append(part)
    base = {"modelVersion": answer["modelVersion"], "responseId": answer["responseId"]}
    prompt_usage = {"promptTokenCount": answer["usageMetadata"].get("promptTokenCount", 0)}
    for index, piece in enumerate(pieces):
        last = index == len(pieces) - 1
        chunk_candidate: dict[str, Any] = {
            "content": {"role": "model", "parts": [piece]},
            "index": 0,
        }
        if last:
            chunk_candidate["finishReason"] = candidate["finishReason"]
            if "safetyRatings" in candidate:
                chunk_candidate["safetyRatings"] = candidate["safetyRatings"]
        usage = answer["usageMetadata"] if last else prompt_usage
        await send({"candidates": [chunk_candidate], "usageMetadata": usage, **base})
    if not pieces:
        ending = {
            "content": {"role": "model", "parts": []},
            "finishReason": candidate["finishReason"],
        }
        await send({"candidates": [ending], "usageMetadata": answer["usageMetadata"], **base})
    await response.write_eof()
    return response
