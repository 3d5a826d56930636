"""Gemini ``streamGenerateContent?alt=sse`` events turned into OpenAI chunk dicts.

Pure and stateful per stream: the adapter parses SSE frames (each ``data:`` a whole
``GenerateContentResponse``) and feeds each here; what comes back is relayed. Text parts
become content deltas as they arrive; a ``functionCall`` part (Gemini sends each whole)
becomes one tool call delta carrying its id, name and arguments; a thought summary a
``reasoning_content`` delta; the chunk with a
``finishReason`` ends the answer; ``usageMetadata`` is cumulative, the last one counts.
"""

from __future__ import annotations

from typing import Any

from gateway.domain.errors import envelope
from gateway.domain.usage import Usage
from gateway.upstream.chunks import ChatChunks
from gateway.upstream.gemini.answer import (
    answer_text,
    candidate_parts,
    finish_reason,
    first_candidate,
    is_blocked,
    openai_usage,
    refusal_text,
    thought_text,
    tool_call,
    usage_from_gemini,
)
from gateway.upstream.gemini.errors import parse_error


class StreamTranslator(ChatChunks):
    def __init__(self, model: str, created: int, single_call: bool = False) -> None:
        self._model = model
        self._created = created
        self._single_call = single_call
        self._id = "chatcmpl-gemini"
        self._role_sent = False
        self._calls = 0
        self._usage: dict[str, Any] | None = None
        self.done = False  # a chunk with a finishReason (or a blocked prompt) was seen
        # An in-stream error as an OpenAI envelope, and its HTTP status.
        self.error: dict[str, Any] | None = None
        self.error_status: int | None = None

    @property
    def usage(self) -> Usage | None:
        return None if self._usage is None else usage_from_gemini(self._usage)

    def feed(self, data: dict[str, Any]) -> list[dict[str, Any]]:
        if "error" in data and "candidates" not in data:
            self._on_error(data)
            return []
        if isinstance(data.get("responseId"), str):
            self._id = f"chatcmpl-{data['responseId']}"
        if isinstance(data.get("modelVersion"), str) and data["modelVersion"]:
            self._model = data["modelVersion"]
        if isinstance(data.get("usageMetadata"), dict):
            self._usage = data["usageMetadata"]
        out: list[dict[str, Any]] = []
        candidate = first_candidate(data)
        for part in candidate_parts(candidate):
            thought = thought_text(part)
            if thought:
                out.append(self._chunk({"reasoning_content": thought}))
                continue
            call = tool_call(part)
            if call is not None:
                if self._single_call and self._calls:
                    continue
                out.append(self._chunk({"tool_calls": [{"index": self._calls, **call}]}))
                self._calls += 1
                continue
            text = answer_text(part)
            if text:
                out.append(self._chunk({"content": text}))
        if is_blocked(data):
            reason: str | None = "content_filter"
        else:
            reason = finish_reason(candidate.get("finishReason"), self._calls > 0)
        if reason is not None:
            refusal = refusal_text(data)
            if refusal:
                out.append(self._chunk({"refusal": refusal}))
            out.append(self._chunk({}, reason))
            self.done = True
        if not out and not self._role_sent:
            out.append(self._chunk({"content": ""}))
        return out

    def usage_chunk(self) -> dict[str, Any]:
        chunk = self._envelope([])
        chunk["usage"] = openai_usage(self._usage or {})
        return chunk

    def _on_error(self, data: dict[str, Any]) -> None:
        code, status, message = parse_error(data)
        self.error_status = code if code is not None and code >= 400 else 500
        text = message or "the Gemini upstream reported an error mid-stream"
        self.error = envelope(self.error_status, text, code=status or "upstream_error")
