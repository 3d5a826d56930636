"""The Chat Completions chunks a provider's stream translator writes (pure): the one
envelope every translated stream's events have, the first one carrying the role."""

from __future__ import annotations

from typing import Any


class ChatChunks:
    """A stream translator's chunk writing. The translator sets the four fields (and may
    change ``_id`` and ``_model`` once the provider names them)."""

    _id: str
    _model: str
    _created: int
    _role_sent: bool

    def _chunk(self, delta: dict[str, Any], reason: str | None = None) -> dict[str, Any]:
        if not self._role_sent:
            delta = {"role": "assistant", **delta}
            self._role_sent = True
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": reason}
        return self._envelope([choice])

    def _envelope(self, choices: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "id": self._id,
            "object": "chat.completion.chunk",
            "created": self._created,
            "model": self._model,
            "choices": choices,
        }
