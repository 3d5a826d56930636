"""Which reported usage figures can be true of a call."""

from __future__ import annotations

import json

from gateway.domain.model import Endpoint
from gateway.domain.usage import Usage
from gateway.inbound import InboundRequest, parse_inbound
from gateway.pipeline.accounting import believable
from gateway.usage.sanity import (
    MAX_REPORTED_TOKENS,
    UPSTREAM_ALLOWANCE,
    input_bound,
    plausible,
)


def test_figures_past_the_absolute_bound_or_negative_are_never_plausible() -> None:
    assert plausible(Usage(12, 7), None, None)
    assert not plausible(Usage(10**19, 7), None, None)
    assert not plausible(Usage(12, MAX_REPORTED_TOKENS + 1), None, None)
    assert not plausible(Usage(-1, 7), None, None)
    assert not plausible(Usage(12, 7, cache_read_tokens=-3), None, None)


def test_the_request_bounds_its_figures_with_an_allowance() -> None:
    assert plausible(Usage(1000 + UPSTREAM_ALLOWANCE, 0), 1000, None)
    assert not plausible(Usage(1001 + UPSTREAM_ALLOWANCE, 0), 1000, None)
    assert plausible(Usage(10, 100 + UPSTREAM_ALLOWANCE), None, 100)
    assert not plausible(Usage(10, 101 + UPSTREAM_ALLOWANCE), None, 100)


def test_a_body_naming_content_the_upstream_expands_has_no_input_bound() -> None:
    text = {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}
    assert input_bound(text, 80) == 80
    image = {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}
    assert input_bound({"messages": [{"role": "user", "content": [image]}]}, 80) is None
    file = {"type": "input_file", "file_id": "file-1"}
    assert input_bound({"input": [{"role": "user", "content": [file]}]}, 80) is None
    assert input_bound({"input": "hi", "tools": [{"type": "web_search"}]}, 80) is None
    assert input_bound({"input": "hi", "tools": [{"type": "function", "name": "f"}]}, 80) == 80


def _chat(content: object) -> InboundRequest:
    raw = json.dumps({"model": "c", "messages": [{"role": "user", "content": content}]})
    return parse_inbound(Endpoint.CHAT, raw.encode())


def test_a_call_is_believed_as_its_body_bounds_it_whether_or_not_the_walk_is_spared() -> None:
    """believable() looks for expanded content only past the body's size: a figure
    within it is believed either way, one past it only when the body names an image."""
    image = [{"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]
    plain, with_image = _chat("hi"), _chat(image)
    within = plain.body_bytes + UPSTREAM_ALLOWANCE
    assert believable(Usage(within, 1), plain) and believable(Usage(within, 1), with_image)
    assert not believable(Usage(within + 1, 1), plain)
    assert believable(Usage(with_image.body_bytes + UPSTREAM_ALLOWANCE + 1, 1), with_image)
    assert not believable(Usage(MAX_REPORTED_TOKENS + 1, 1), with_image)
