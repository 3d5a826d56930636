"""A streamed call read raw off the wire: the SSE events exactly as a client receives them."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.support.gateway import TEST_KEY


def sse_blocks(
    base_url: str, path: str, body: dict[str, Any], key: str = TEST_KEY
) -> tuple[int, list[str]]:
    """POST ``body`` with ``stream: true`` to ``base_url + /v1/ + path``: the status, and
    each event's text (its lines, the blank line between events dropped)."""
    with httpx.stream(
        "POST",
        f"{base_url}/v1/{path}",
        headers={"authorization": f"Bearer {key}"},
        json={**body, "stream": True},
        timeout=20,
    ) as response:
        text = response.read().decode()
    return response.status_code, [block for block in text.split("\n\n") if block.strip()]


def sse_data(base_url: str, path: str, body: dict[str, Any]) -> tuple[int, list[str]]:
    """The status and each event's data (``data: `` taken off), ``[DONE]`` included."""
    status, blocks = sse_blocks(base_url, path, body)
    return status, [block.removeprefix("data: ") for block in blocks]


def sse_json(base_url: str, path: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """A 200 stream's JSON payloads as sent, the closing ``[DONE]`` checked and dropped."""
    status, data = sse_data(base_url, path, body)
    assert status == 200, data
    assert data[-1] == "[DONE]"
    return [json.loads(d) for d in data[:-1]]
