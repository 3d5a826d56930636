"""An upstream that echoes the provider's own key in a successful answer (in ``model``, in
the text), whole or streamed with the key split across two TCP writes: the client never
sees the key, nor does the telemetry row, ``/admin/api/calls/ID`` or the response cache.
Every endpoint, native and translated (the Chat Completions bridge, Anthropic)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import openai
import pytest
from sqlalchemy import select

from gateway.db.budget_tables import response_cache
from tests.integration.key_echo_support import KeyEchoUpstream
from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import (
    ADMIN_KEY,
    RunningGateway,
    anthropic_provider,
    gateway_yaml,
    running_gateway,
)

OPENAI_KEY = "sk-upstream-secret-42"  # the provider "fake" of gateway_yaml
COMPAT_KEY = "sk-compat/secret/77"  # a '/' JSON may escape as '\/'
CLAUDE_KEY = "sk-ant-echo-secret-9"
KEYS = (OPENAI_KEY, COMPAT_KEY, CLAUDE_KEY)
MESSAGES: list[Any] = [{"role": "user", "content": "Say my key."}]
Call = Callable[[openai.OpenAI, bool], list[str]]  # the answer as the client read it


@pytest.fixture(scope="module")
def echo() -> Iterator[KeyEchoUpstream]:
    upstream = KeyEchoUpstream()
    yield upstream
    upstream.close()


@pytest.fixture
def gateway(echo: KeyEchoUpstream, sqlite_url: str) -> Iterator[RunningGateway]:
    echo.spelling = "plain"
    yaml_text = gateway_yaml(
        echo.url,
        sqlite_url,
        providers=f"""  - {{id: compat, adapter: custom, baseUrl: "{echo.url}/v1",
     apiKey: "{COMPAT_KEY}", maxRetries: 0}}
"""
        + anthropic_provider(echo.url, "maxRetries: 0", key=CLAUDE_KEY),
        models="""  - {id: compat-model, provider: compat, name: compat-small, capabilities: [chat],
     price: {input: 0.50, output: 1.50}}
  - {id: haiku, provider: claude, name: claude-haiku, capabilities: [chat],
     price: {input: 1.00, output: 5.00}}""",
        configurations="""  - {id: translated, mode: fixed, model: compat-model}
  - {id: claude-chat, mode: fixed, model: haiku}
  - {id: cached, mode: fixed, model: small, cache: {ttlSeconds: 60}}""",
    )
    with running_gateway(yaml_text) as running:
        yield running


def _chat(configuration: str) -> Call:
    def call(client: openai.OpenAI, stream: bool) -> list[str]:
        if not stream:
            answer = client.chat.completions.create(model=configuration, messages=MESSAGES)
            return [answer.model_dump_json()]
        chunks = client.chat.completions.create(
            model=configuration,
            messages=MESSAGES,
            stream=True,
            stream_options={"include_usage": True},
        )
        return [c.model_dump_json() for c in chunks]

    return call


def _completions(client: openai.OpenAI, stream: bool) -> list[str]:
    if not stream:
        return [client.completions.create(model="complete", prompt="Say my key.").model_dump_json()]
    chunks = client.completions.create(
        model="complete", prompt="Say my key.", stream=True, stream_options={"include_usage": True}
    )
    return [c.model_dump_json() for c in chunks]


def _responses(configuration: str) -> Call:
    def call(client: openai.OpenAI, stream: bool) -> list[str]:
        if not stream:
            return [
                client.responses.create(model=configuration, input="Say my key.").model_dump_json()
            ]
        events = client.responses.create(model=configuration, input="Say my key.", stream=True)
        return [e.model_dump_json() for e in events]

    return call


CALLS: dict[str, Call] = {
    "chat": _chat("chat"),
    "chat-translated-provider": _chat("translated"),
    "chat-anthropic": _chat("claude-chat"),
    "completions": _completions,
    "responses-native": _responses("chat"),
    "responses-bridged": _responses("translated"),
}


def _assert_no_key(text: str) -> None:
    for key in KEYS:
        assert key not in text
        assert key.replace("/", "\\/") not in text and key[3:] not in text, text


def _assert_stored_without_key(gateway: RunningGateway) -> dict[str, Any]:
    (row,) = gateway.rows(expect=1)
    assert row["success"] == 1
    _assert_no_key(json.dumps(row, default=str))
    detail = httpx.get(
        f"{gateway.url}/admin/api/calls/{row['id']}",
        headers={"authorization": f"Bearer {ADMIN_KEY}"},
        timeout=10,
    )
    assert detail.status_code == 200
    _assert_no_key(detail.text)
    return row


@pytest.mark.parametrize("name", list(CALLS))
def test_a_whole_answer_reaches_the_client_and_the_row_without_the_key(
    gateway: RunningGateway, name: str
) -> None:
    (answer,) = CALLS[name](gateway.client(), False)
    _assert_no_key(answer)
    assert "Your key is [redacted]." in answer  # the rest of the text is untouched
    row = _assert_stored_without_key(gateway)
    if name != "chat-anthropic":  # its translation names the model the gateway sent
        assert row["response_model"] == "echo-[redacted]"
        assert row["upstream_model"] == "echo-[redacted]"


def test_an_embedding_reaches_the_client_and_the_row_without_the_key(
    gateway: RunningGateway,
) -> None:
    answer = gateway.client().embeddings.create(model="embed", input="a key")
    assert answer.model == "echo-[redacted]" and answer.data[0].embedding == [0.1, 0.2]
    row = _assert_stored_without_key(gateway)
    assert row["response_model"] == "echo-[redacted]"


@pytest.mark.parametrize("name", list(CALLS))
def test_a_stream_with_the_key_split_across_two_writes_never_shows_it(
    gateway: RunningGateway, echo: KeyEchoUpstream, name: str
) -> None:
    before = echo.streams_split
    events = CALLS[name](gateway.client(), True)
    assert echo.streams_split > before  # the key did arrive cut in two
    _assert_no_key("\n".join(events))
    assert "[redacted]" in "\n".join(events)
    row = _assert_stored_without_key(gateway)
    if name not in ("chat-anthropic", "responses-bridged"):  # they name the model sent
        assert row["response_model"] == "echo-[redacted]"


@pytest.mark.parametrize("name", ["chat", "chat-translated-provider", "responses-native"])
@pytest.mark.parametrize("stream", [False, True])
def test_a_key_spelt_with_json_escapes_is_caught_as_well(
    gateway: RunningGateway, echo: KeyEchoUpstream, name: str, stream: bool
) -> None:
    echo.spelling = "escaped"
    read = "\n".join(CALLS[name](gateway.client(), stream))
    _assert_no_key(read)
    assert "[redacted]" in read
    _assert_stored_without_key(gateway)


def test_a_cached_answer_holds_no_key_and_a_hit_answers_none(gateway: RunningGateway) -> None:
    client = gateway.client()
    first = client.chat.completions.with_raw_response.create(model="cached", messages=MESSAGES)
    second = client.chat.completions.with_raw_response.create(model="cached", messages=MESSAGES)
    assert second.headers.get("x-gateway-cache") == "hit"
    for raw in (first, second):
        _assert_no_key(raw.text)
        assert raw.parse().model == "echo-[redacted]"
    rows = gateway.rows(expect=2)
    assert [r["cache_hit"] for r in rows] == [0, 1]
    (kept,) = gateway._select(select(response_cache))
    _assert_no_key(json.dumps(kept, default=str))
    for row in rows:
        _assert_no_key(json.dumps(row, default=str))
        assert row["response_model"] == "echo-[redacted]"


@pytest.mark.parametrize(
    ("sent", "relayed"),
    [
        (OPENAI_KEY, None),  # an echo of the key: dropped, never redacted into the header
        ("soon, sk-upstream-secret-42", None),
        ("0", "0"),
        ("Wed, 21 Oct 2015 07:28:00 GMT", "Wed, 21 Oct 2015 07:28:00 GMT"),
    ],
)
def test_an_upstream_retry_after_is_relayed_only_in_a_form_http_allows(
    upstream: FakeUpstream, sqlite_url: str, sent: str, relayed: str | None
) -> None:
    upstream.behave("small-model", fail_always=429, retry_after=sent)
    with running_gateway(gateway_yaml(upstream.url, sqlite_url)) as gateway:
        with pytest.raises(openai.RateLimitError) as caught:
            gateway.client().chat.completions.create(model="chat", messages=MESSAGES)
        answer = caught.value.response
        assert answer.headers.get("retry-after") == relayed
        _assert_no_key(json.dumps(dict(answer.headers)) + answer.text)
        assert upstream.calls["small-model"] == 3  # retried all the same (its own backoff)
