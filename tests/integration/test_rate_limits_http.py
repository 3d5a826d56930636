"""Rate limits end to end on one real gateway (docs/operations.md, "Rate limits"): the 429
and its headers, tokens held then settled, concurrent slots (streams and hang-ups too),
the SDK's own retry, configuration limits, and models at their quota routed around."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import httpx
import openai
import pytest

from tests.integration.budget_support import (
    MESSAGES,
    budget_yaml,
    burst,
    chat_body,
    running,
    statuses,
)
from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import ADMIN_KEY, OTHER_KEY, TEST_KEY

KEY = {"authorization": f"Bearer {TEST_KEY}"}


def test_requests_per_minute_admits_exactly_the_limit_and_names_it(
    upstream: FakeUpstream, sqlite_url: str
) -> None:
    upstream.behave("small-model", latency_ms=100)
    yaml = budget_yaml(upstream.url, sqlite_url, alice="rateLimit: {requestsPerMinute: 5}")
    with running(yaml) as gateway:
        answers = burst([gateway.url], [chat_body()] * 12)
        assert statuses(answers) == {200: 5, 429: 7}
        assert upstream.calls["small-model"] == 5
        refused = next(a for a in answers if a.status_code == 429)
        error = refused.json()["error"]
        assert error["code"] == "rate_limit_exceeded" and error["type"] == "rate_limit_error"
        assert "key 'alice' 5 requests per minute" in error["message"]
        assert 1 <= int(refused.headers["retry-after"]) <= 60
        assert refused.headers["x-ratelimit-limit-requests"] == "5"
        assert refused.headers["x-ratelimit-remaining-requests"] == "0"
        served = sorted(
            int(a.headers["x-ratelimit-remaining-requests"])
            for a in answers
            if a.status_code == 200
        )
        assert served == [0, 1, 2, 3, 4]
        assert all(a.headers["x-ratelimit-reset-requests"].endswith("s") for a in answers)
        assert "x-ratelimit-limit-tokens" not in refused.headers  # no tokens limit
        # Bob has no limit: not limited, and no headers.
        other = httpx.post(
            f"{gateway.url}/v1/chat/completions",
            json=chat_body(),
            headers={"authorization": f"Bearer {OTHER_KEY}"},
        )
        assert other.status_code == 200
        assert "x-ratelimit-limit-requests" not in other.headers
        rows = gateway.rows(expect=13)
        limited = [r for r in rows if r["http_status"] == 429]
        assert {r["error_class"] for r in limited} == {"rate_limit_exceeded"}
        assert {r["provider"] for r in limited} == {None}


def test_tokens_per_minute_admits_no_call_that_would_pass_it_and_settles_to_usage(
    upstream: FakeUpstream, sqlite_url: str
) -> None:
    # Each call holds its prompt (about 10 tokens) + max_tokens 400; it uses 12 + 7.
    upstream.behave("small-model", latency_ms=300)
    yaml = budget_yaml(upstream.url, sqlite_url, alice="rateLimit: {tokensPerMinute: 1000}")
    with running(yaml) as gateway:
        answers = burst([gateway.url], [chat_body(max_tokens=400)] * 6)
        assert statuses(answers) == {200: 2, 429: 4}
        error = next(a for a in answers if a.status_code == 429).json()["error"]
        assert "key 'alice' 1000 tokens per minute" in error["message"]
        assert "this call may need up to" in error["message"]
        # Settled to 19 tokens each: now more fit.
        later = burst([gateway.url], [chat_body(max_tokens=400)] * 2)
        assert statuses(later) == {200: 2}
        remaining = sorted(int(a.headers["x-ratelimit-remaining-tokens"]) for a in later)
        assert remaining[-1] <= 1000 - 2 * 19 - 400
        assert later[0].headers["x-ratelimit-limit-tokens"] == "1000"
        # A call whose hold alone is over the limit is refused for good.
        huge = httpx.post(
            f"{gateway.url}/v1/chat/completions", json=chat_body(max_tokens=5000), headers=KEY
        )
        assert huge.status_code == 429
        assert "more than the limit itself" in huge.json()["error"]["message"]


def test_concurrent_never_has_one_more_in_flight_and_frees_slots_as_calls_end(
    upstream: FakeUpstream, sqlite_url: str
) -> None:
    upstream.behave("small-model", latency_ms=400)
    yaml = budget_yaml(upstream.url, sqlite_url, alice="rateLimit: {concurrent: 5}")
    with running(yaml) as gateway:
        answers = burst([gateway.url], [chat_body()] * 20)
        assert statuses(answers) == {200: 5, 429: 15}
        assert upstream.max_in_flight == 5
        error = next(a for a in answers if a.status_code == 429).json()["error"]
        assert "key 'alice' 5 concurrent calls" in error["message"]
        assert statuses(burst([gateway.url], [chat_body()] * 5)) == {200: 5}  # all freed


def test_a_stream_holds_its_slot_until_it_ends_or_its_client_hangs_up(
    upstream: FakeUpstream, sqlite_url: str
) -> None:
    upstream.behave("small-model", chunk_delay_ms=150)
    limit = "rateLimit: {concurrent: 1, requestsPerMinute: 100}"
    yaml = budget_yaml(upstream.url, sqlite_url, alice=limit)
    with running(yaml) as gateway:
        url = f"{gateway.url}/v1/chat/completions"
        body = chat_body(stream=True)
        with httpx.Client(timeout=10) as client:
            with client.stream("POST", url, json=body, headers=KEY) as stream:
                assert stream.status_code == 200
                assert stream.headers["x-ratelimit-limit-requests"] == "100"
                assert stream.headers["x-ratelimit-remaining-requests"] == "99"
                assert client.post(url, json=chat_body(), headers=KEY).status_code == 429
                for _ in stream.iter_bytes():
                    pass
            assert client.post(url, json=chat_body(), headers=KEY).status_code == 200
            with client.stream("POST", url, json=body, headers=KEY) as stream:
                next(stream.iter_bytes())  # the first bytes, then hang up
        # The hang-up frees the slot once the gateway sees it.
        deadline = time.monotonic() + 5
        while True:
            status = httpx.post(url, json=chat_body(), headers=KEY).status_code
            if status == 200 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert status == 200


def test_the_openai_sdk_retries_a_429_by_its_headers_and_then_succeeds(
    upstream: FakeUpstream, sqlite_url: str
) -> None:
    upstream.behave("small-model", latency_ms=700)
    yaml = budget_yaml(upstream.url, sqlite_url, alice="rateLimit: {concurrent: 1}")
    with running(yaml) as gateway:
        first = threading.Thread(
            target=lambda: gateway.client().chat.completions.create(model="chat", messages=MESSAGES)
        )
        first.start()
        deadline = time.monotonic() + 5
        while upstream.in_flight == 0:  # the first call holds the slot
            assert time.monotonic() < deadline, "the first call never reached the upstream"
            time.sleep(0.01)
        seen: list[tuple[int, str | None]] = []

        def note(response: httpx.Response) -> None:
            seen.append((response.status_code, response.headers.get("retry-after")))

        sdk = openai.OpenAI(
            base_url=f"{gateway.url}/v1",
            api_key=TEST_KEY,
            http_client=httpx.Client(event_hooks={"response": [note]}),
        )  # the SDK's default retries (2)
        answer = sdk.chat.completions.create(model="chat", messages=MESSAGES)
        first.join()
    assert answer.choices[0].message.content
    assert seen[0] == (429, "1")  # refused while the first call ran, told to wait 1 s
    assert seen[-1][0] == 200 and len(seen) >= 2  # the SDK's own retry succeeded


def test_a_configuration_limit_counts_every_key_together(
    upstream: FakeUpstream, sqlite_url: str
) -> None:
    configurations = (
        "  - {id: shared, mode: fixed, model: small, rateLimit: {requestsPerMinute: 2}}"
    )
    carol = '    - {id: carol, key: "sk-test-carol-0123456789"}'
    yaml = budget_yaml(upstream.url, sqlite_url, configurations=configurations, keys=carol)
    with running(yaml) as gateway:
        alice = gateway.client()
        for _ in range(2):
            alice.chat.completions.create(model="shared", messages=MESSAGES)
        other = gateway.client("sk-test-carol-0123456789")
        with pytest.raises(openai.RateLimitError) as caught:
            other.chat.completions.create(model="shared", messages=MESSAGES)
        assert "configuration 'shared' 2 requests per minute" in str(caught.value)
        alice.chat.completions.create(model="chat", messages=MESSAGES)  # other configuration


def _routed_yaml(upstream_url: str, sqlite_url: str) -> str:
    models = (
        "  - {id: quota, provider: first, name: quota-model, capabilities: [chat],\n"
        "     rateLimit: {requestsPerMinute: 1}}\n"
        "  - {id: spare, provider: fake, name: spare-model, capabilities: [chat]}\n"
    )
    configurations = (
        "  - {id: routed, mode: criteria}\n"
        "  - {id: pinned, mode: fixed, model: quota, fallback: [spare-only]}\n"
        "  - {id: alone, mode: fixed, model: quota}\n"
        "  - {id: spare-only, mode: fixed, model: spare}\n"
    )
    providers = (
        f'  - {{id: first, adapter: openai, baseUrl: "{upstream_url}/v1", priority: 90,\n'
        "     timeoutSeconds: 5, maxRetries: 0}\n"
    )
    return budget_yaml(
        upstream_url, sqlite_url, models=models, configurations=configurations
    ).replace("providers:\n", "providers:\n" + providers)


def test_a_model_at_its_quota_is_ineligible_in_criteria_mode_and_falls_back_when_fixed(
    upstream: FakeUpstream, sqlite_url: str
) -> None:
    with running(_routed_yaml(upstream.url, sqlite_url)) as gateway:
        client = gateway.client()
        body = chat_body("routed", max_tokens=10)
        first = httpx.post(f"{gateway.url}/v1/chat/completions", json=body, headers=KEY)
        second = httpx.post(f"{gateway.url}/v1/chat/completions", json=body, headers=KEY)
        assert first.headers["x-gateway-model"] == "quota"  # the first provider's priority
        assert second.status_code == 200 and second.headers["x-gateway-model"] != "quota"
        assert "x-ratelimit-limit-requests" not in second.headers  # a model quota is ours
        pinned = client.chat.completions.with_raw_response.create(model="pinned", messages=MESSAGES)
        assert pinned.headers["x-gateway-model"] == "spare"  # its fallback
        with pytest.raises(openai.RateLimitError) as caught:
            client.chat.completions.create(model="alone", messages=MESSAGES)
        assert caught.value.code == "rate_limit_exceeded"
        assert "model 'quota' 1 requests per minute" in str(caught.value)
        assert upstream.calls["quota-model"] == 1  # the provider never saw a call past it
        rows = gateway.rows(expect=5)
    routed = rows[1]
    assert "RATE_LIMITED" in routed["routing_rejections"].split(",")
    rejected = json.loads(routed["routing_detail"])["decision"]["rejected"]
    assert {"model": "quota", "provider": "first", "reason": "RATE_LIMITED"} in rejected
    assert rows[3]["error_class"] == "rate_limit_exceeded" and rows[3]["http_status"] == 429


def test_limits_need_no_extra_settings_and_a_file_without_them_adds_no_headers(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    yaml = budget_yaml(upstream.url, f"sqlite+aiosqlite:///{tmp_path / 'g.db'}")
    with running(yaml) as gateway:
        answer = httpx.post(f"{gateway.url}/v1/chat/completions", json=chat_body(), headers=KEY)
        assert answer.status_code == 200
        assert not [h for h in answer.headers if h.startswith("x-ratelimit")]


def test_a_team_limit_counts_all_its_keys_and_an_admin_made_key_is_limited_at_once(
    upstream: FakeUpstream, sqlite_url: str
) -> None:
    carol = '    - {id: carol, key: "sk-test-carol-0123456789", team: crew}'
    teams = "teams:\n  - {id: crew, rateLimit: {requestsPerMinute: 2}}"
    yaml = budget_yaml(upstream.url, sqlite_url, alice="team: crew", keys=carol, extra=teams)
    with running(yaml) as gateway:
        gateway.client().chat.completions.create(model="chat", messages=MESSAGES)
        other = gateway.client("sk-test-carol-0123456789")
        other.chat.completions.create(model="chat", messages=MESSAGES)
        with pytest.raises(openai.RateLimitError) as caught:
            other.chat.completions.create(model="chat", messages=MESSAGES)
        assert "team 'crew' 2 requests per minute" in str(caught.value)

        admin = {"authorization": f"Bearer {ADMIN_KEY}"}
        made = httpx.post(
            f"{gateway.url}/admin/keys",
            json={"id": "runtime", "rateLimit": {"requestsPerMinute": 1}},
            headers=admin,
        )
        assert made.status_code == 201, made.text
        runtime = gateway.client(made.json()["key"])
        raw = runtime.chat.completions.with_raw_response.create(model="chat", messages=MESSAGES)
        assert raw.headers["x-ratelimit-limit-requests"] == "1"
        assert raw.headers["x-ratelimit-remaining-requests"] == "0"
        with pytest.raises(openai.RateLimitError) as limited:
            runtime.chat.completions.create(model="chat", messages=MESSAGES)
        assert "key 'runtime' 1 requests per minute" in str(limited.value)
        # Raised through the API: in force from the next call.
        patched = httpx.patch(
            f"{gateway.url}/admin/keys/runtime",
            json={"rateLimit": {"requestsPerMinute": 5}},
            headers=admin,
        )
        assert patched.status_code == 200, patched.text
        raised = runtime.chat.completions.with_raw_response.create(model="chat", messages=MESSAGES)
        assert raised.headers["x-ratelimit-limit-requests"] == "5"
