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

What it answers is in :mod:`tests.support.bedrock_answers`.
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from aiohttp import web
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.session import get_session
from botocore.validate import ParamValidator

from tests.support.bedrock_answers import (
    Answer,
    claude_count,
    claude_message,
    claude_stream,
    converse_body,
    converse_stream,
    embedding_answer,
    error_answer,
)
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
class Received:
    operation: str
    model_id: str
    raw_path: str
    headers: dict[str, str]
    body: dict[str, Any]


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
            return error_answer(answer.status, answer.exception, answer.retry_after)
        if operation == "count-tokens":
            inner = json.loads(base64.b64decode(body["input"]["invokeModel"]["body"]))
            return web.json_response({"inputTokens": claude_count(inner)})
        if "anthropic." in model_id and operation == "invoke":
            return web.json_response(claude_message(answer), headers={"x-amzn-requestid": "r3"})
        if "anthropic." in model_id and operation == "invoke-with-response-stream":
            return await claude_stream(request, answer)
        if operation == "invoke":
            return embedding_answer(model_id, body, answer)
        if operation == "converse":
            return web.json_response(converse_body(answer), headers={"x-amzn-requestid": "req-1"})
        return await converse_stream(request, answer)

    def _next(self, model_id: str) -> Answer:
        answers = self.scripts.get(model_id) or [Answer()]
        return answers.pop(0) if len(answers) > 1 else answers[0]

    def _refuse(self, status: int, exception: str, message: str) -> web.Response:
        self.refused.append(message)
        return error_answer(status, exception, None, message)

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
