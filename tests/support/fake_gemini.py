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
Retry-After). Every request is recorded (``received``). What it checks of a body is in
:mod:`tests.support.gemini_checks`, what it answers in :mod:`tests.support.gemini_answers`.
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from tests.support.gemini_answers import (
    Blocked,
    Failure,
    Reply,
    Turn,
    embeddings,
    error_answer,
    failure_answer,
    predictions,
    sse_answer,
)
from tests.support.gemini_checks import (
    CLAUDE_FIELDS,
    Invalid,
    check_batch_embed,
    check_generate,
    check_predict,
    fields,
)
from tests.support.servers import LoopThread, loopback_socket

API_KEY = "AIza-fake-gemini-key-0123"
PROJECT = "proj-1"
LOCATION = "us-central1"
SERVICE_ACCOUNT = "gateway@proj-1.iam.gserviceaccount.com"
SCOPE = "https://www.googleapis.com/auth/cloud-platform"
# The audience a service account's assertion names, whichever token_uri it is sent to.
GOOGLE_TOKEN_AUDIENCE = "https://oauth2.googleapis.com/token"
VERTEX_ANTHROPIC_VERSION = "vertex-2023-10-16"


@dataclass
class Received:
    path: str
    method: str  # generateContent, streamGenerateContent, batchEmbedContents, ...
    model: str
    query: dict[str, str]
    headers: dict[str, str]
    body: dict[str, Any]


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
            return error_answer(400, "INVALID_ARGUMENT", "Invalid JSON payload received.")
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
            return error_answer(400, "INVALID_ARGUMENT", "send the key in x-goog-api-key only")
        if key != API_KEY:  # as Google answers it: a 400 whose ErrorInfo names the key
            info = {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "API_KEY_INVALID",
                "domain": "googleapis.com",
                "metadata": {"service": "generativelanguage.googleapis.com"},
            }
            message = "API key not valid. Please pass a valid API key."
            return error_answer(400, "INVALID_ARGUMENT", message, details=[info])
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
                check_generate(body, model, self.signatures)
            elif method == embed_method:
                (check_predict if vertex else check_batch_embed)(body, model)
            else:
                return error_answer(404, "NOT_FOUND", f"method {method} not found")
        except Invalid as exc:
            return error_answer(400, "INVALID_ARGUMENT", f"Invalid JSON payload received. {exc}")
        replies = self.scripts.get(model) or []
        reply = replies.pop(0) if replies else Turn()
        if isinstance(reply, Failure):
            return failure_answer(reply)
        if method == "batchEmbedContents":
            return web.json_response(embeddings(body))
        if method == "predict":
            return web.json_response(predictions(body))
        answer = self._answer(reply, model)
        if method == "generateContent":
            return web.json_response(answer)
        return await sse_answer(request, reply, answer)

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
            return error_answer(400, "INVALID_ARGUMENT", "Invalid JSON payload received.")
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
            return error_answer(404, "NOT_FOUND", "no such project or location")
        auth = request.headers.get("authorization", "")
        if not auth.startswith("Bearer ") or auth.removeprefix("Bearer ") not in self.tokens:
            return error_answer(
                401, "UNAUTHENTICATED", "Request had invalid authentication credentials."
            )
        if "x-goog-api-key" in request.headers or "key" in request.query:
            return error_answer(400, "INVALID_ARGUMENT", "Vertex AI takes no API key here")
        if info["publisher"] == "anthropic":
            return await self._claude(request, model, method, body)
        if info["publisher"] != "google":
            return error_answer(404, "NOT_FOUND", "no such publisher")
        return await self._serve(request, model, method, body, vertex=True)

    async def _claude(
        self, request: web.Request, model: str, method: str, body: Any
    ) -> web.StreamResponse:
        if model == "count-tokens":  # Claude's token count: the model is named in the body
            return self._claude_count(method, body)
        try:
            fields(body, "", CLAUDE_FIELDS)
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
            return failure_answer(reply)
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


def _b64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
