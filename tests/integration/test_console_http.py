"""The console over HTTP: sign-in and its cookie, CSRF and Origin checks, the pages' headers,
the calls list and a call's decision detail against the telemetry row and the readout."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from gateway.domain.failures import ErrorClass
from gateway.routing.latency_buckets import bucket_of, bucket_value
from tests.support.console import console_yaml, csrf_of, signed_in
from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import ADMIN_KEY, TEST_KEY, RunningGateway
from tests.support.routed import MESSAGES, explain


@pytest.fixture
def gateway(upstream: FakeUpstream, sqlite_url: str) -> Iterator[RunningGateway]:
    running = RunningGateway(console_yaml(upstream.url, sqlite_url))
    yield running
    running.stop()


def test_every_page_and_data_endpoint_refuses_without_a_session(gateway: RunningGateway) -> None:
    with httpx.Client(base_url=gateway.url, timeout=10) as client:
        for path in (
            "/admin/",
            "/admin/calls",
            "/admin/calls/1",
            "/admin/why",
            "/admin/providers",
            "/admin/budgets",
            "/admin/manage/keys",
            "/admin/manage/teams",
        ):
            answer = client.get(path)
            assert answer.status_code == 303, path
            assert answer.headers["location"].startswith("/admin/sign-in?next=%2Fadmin")
        for path in (
            "/admin/api/overview",
            "/admin/api/calls",
            "/admin/api/calls/1",
            "/admin/api/providers",
            "/admin/api/budgets",
            "/admin/routing/calls",
        ):
            assert client.get(path).status_code == 401, path
            forged = client.get(path, cookies={"console_session": "9999999999.abc.00"})
            assert forged.status_code == 401, path
        # The admin key as a bearer still serves API use.
        bearer = {"authorization": f"Bearer {ADMIN_KEY}"}
        assert client.get("/admin/api/calls", headers=bearer).status_code == 200
        # A gateway key is not an admin key.
        assert (
            client.get(
                "/admin/api/calls", headers={"authorization": f"Bearer {TEST_KEY}"}
            ).status_code
            == 401
        )
        # The bare path redirects to the page, keeping the query.
        bare = client.get("/admin?range=30d")
        assert bare.status_code == 308 and bare.headers["location"] == "/admin/?range=30d"


def test_sign_in_sets_a_strict_httponly_expiring_cookie_and_sign_out_ends_it(
    gateway: RunningGateway,
) -> None:
    with httpx.Client(base_url=gateway.url, timeout=10) as client:
        form = client.get("/admin/sign-in")
        token = csrf_of(form.text)
        answer = client.post(
            "/admin/sign-in",
            data={"key": ADMIN_KEY, "csrf": token, "next": "/admin/providers"},
            headers={"origin": gateway.url},
        )
        assert answer.status_code == 303 and answer.headers["location"] == "/admin/providers"
        cookie = next(
            v for v in answer.headers.get_list("set-cookie") if v.startswith("console_session=")
        )
        attributes = {part.strip().split("=")[0].lower() for part in cookie.split(";")}
        assert {"httponly", "samesite", "max-age", "path"} <= attributes
        assert "samesite=strict" in cookie.lower() and "max-age=43200" in cookie.lower()
        assert "secure" not in attributes  # served over plain http here
        assert ADMIN_KEY not in cookie
        page = client.get("/admin/providers")
        assert page.status_code == 200 and "Sign out" in page.text
        # Sign-out needs the page's token: a form posted without it changes nothing.
        refused = client.post(
            "/admin/sign-out", data={"csrf": "0"}, headers={"origin": gateway.url}
        )
        assert refused.status_code == 303
        assert client.get("/admin/providers").status_code == 200
        out = client.post(
            "/admin/sign-out", data={"csrf": csrf_of(page.text)}, headers={"origin": gateway.url}
        )
        assert out.status_code == 303
        assert client.get("/admin/providers").status_code == 303


def test_sign_in_refuses_another_origin_a_missing_token_and_a_wrong_key(
    gateway: RunningGateway,
) -> None:
    with httpx.Client(base_url=gateway.url, timeout=10) as client:
        token = csrf_of(client.get("/admin/sign-in").text)
        cases = [
            ({"key": ADMIN_KEY, "csrf": token}, {"origin": "http://evil.example"}, 403),
            ({"key": ADMIN_KEY, "csrf": token}, {}, 403),  # no Origin at all
            ({"key": ADMIN_KEY, "csrf": "f" * 64}, {"origin": gateway.url}, 403),
            ({"key": TEST_KEY, "csrf": token}, {"origin": gateway.url}, 401),
        ]
        for data, headers, status in cases:
            answer = client.post("/admin/sign-in", data=data, headers=headers)
            assert answer.status_code == status, (data, headers)
            assert "console_session=" not in answer.headers.get("set-cookie", "").replace(
                "console_signin=", ""
            )
        # A next that leaves the console is replaced by the console's start page.
        answer = client.post(
            "/admin/sign-in",
            data={"key": ADMIN_KEY, "csrf": token, "next": "//evil.example/admin"},
            headers={"origin": gateway.url},
        )
        assert answer.status_code == 303 and answer.headers["location"] == "/admin/"


def test_pages_carry_the_security_headers_and_no_inline_script_or_style(
    gateway: RunningGateway,
) -> None:
    client = signed_in(gateway)
    for path in (
        "/admin/",
        "/admin/calls",
        "/admin/why",
        "/admin/providers",
        "/admin/budgets",
        "/admin/manage/keys",
        "/admin/manage/teams",
        "/admin/sign-in",
    ):
        page = client.get(path)
        assert page.status_code in (200, 303), path
        if page.status_code != 200:
            continue
        headers = page.headers
        assert headers["content-type"] == "text/html; charset=utf-8"
        assert headers["x-frame-options"] == "DENY"
        assert headers["x-content-type-options"] == "nosniff"
        policy = headers["content-security-policy"]
        assert "frame-ancestors 'none'" in policy and "script-src 'self'" in policy
        assert "unsafe-inline" not in policy
        assert "<script>" not in page.text and "style=" not in page.text
        assert '<meta name="viewport"' in page.text


def test_a_routed_call_opens_its_decision_agreeing_with_the_row_and_the_readout(
    gateway: RunningGateway,
) -> None:
    answer = gateway.client().chat.completions.create(model="smart", messages=MESSAGES)
    gateway.client().chat.completions.create(model="steady", messages=MESSAGES)
    rows = gateway.rows(expect=2)
    routed = rows[0]
    readout = explain(gateway, "smart", "chat")
    client = signed_in(gateway)
    listing = client.get("/admin/api/calls").json()
    assert [c["id"] for c in listing["calls"]] == [rows[1]["id"], routed["id"]]
    assert [c["mode"] for c in listing["calls"]] == ["fixed", "economy"]
    detail = client.get(f"/admin/api/calls/{routed['id']}").json()
    assert detail["servedModel"] == routed["served_model"] == readout["selected"]["model"]
    assert answer.model.startswith(readout["selected"]["model"])
    decision = detail["detail"]["decision"]
    assert decision["selected"] == readout["selected"]
    assert [c["model"] for c in decision["candidates"]] == [
        c["model"] for c in readout["candidates"]
    ]
    assert [c["score"] for c in decision["candidates"]] == [
        c["score"] for c in readout["candidates"]
    ]
    assert decision["signalsUsed"] == readout["signalsUsed"]
    assert decision["costBasis"] == routed["routing_cost_basis"]
    assert decision["weights"]["cost"] == 0.6  # economy
    stored = json.loads(routed["routing_detail"])
    assert stored["attempts"] == [
        {
            "configuration": "smart",
            "provider": routed["served_provider"],
            "model": routed["served_model"],
            "outcome": "served",
            "status": None,
            "retries": 0,
        }
    ]
    assert detail["cost"] == format(routed["actual_cost"].normalize(), "f")
    page = client.get(f"/admin/calls/{routed['id']}").text
    assert readout["selected"]["model"] in page and "Fallback chain" in page
    fixed = client.get(f"/admin/api/calls/{rows[1]['id']}").json()
    assert fixed["detail"]["kind"] == "fixed"
    assert fixed["detail"]["fixed"] == {"model": "model-a", "provider": "p-a"}


def test_behind_a_trusted_https_proxy_the_cookie_is_secure_and_origins_are_https(
    gateway: RunningGateway,
) -> None:
    # uvicorn honours X-Forwarded-Proto from 127.0.0.1 (its default trusted address), as a
    # TLS-terminating proxy on the same host sends it (docs/operations.md).
    https = {"x-forwarded-proto": "https"}
    host = gateway.url.removeprefix("http://")
    with httpx.Client(base_url=gateway.url, timeout=10, headers=https) as client:
        form = client.get("/admin/sign-in")
        token = csrf_of(form.text)
        (signin,) = form.headers.get_list("set-cookie")
        assert "secure" in {part.strip().lower() for part in signin.split(";")}
        # The client talks plain http to the "proxy" side: it sends the Secure cookie itself.
        seed = signin.split(";")[0]
        plain = client.post(
            "/admin/sign-in",
            data={"key": ADMIN_KEY, "csrf": token},
            headers={"origin": f"http://{host}", "cookie": seed},
        )
        assert plain.status_code == 403  # the page was served over https: so is its form
        answer = client.post(
            "/admin/sign-in",
            data={"key": ADMIN_KEY, "csrf": token},
            headers={"origin": f"https://{host}", "cookie": seed},
        )
        assert answer.status_code == 303
        cookie = next(
            v for v in answer.headers.get_list("set-cookie") if v.startswith("console_session=")
        )
        assert "secure" in {part.strip().lower() for part in cookie.split(";")}


def test_the_overview_counts_the_calls_their_cost_and_their_rates(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    client = gateway.client()
    for _ in range(3):
        client.chat.completions.create(model="steady", messages=MESSAGES)
    upstream.behave("model-a", fail_always=500)
    with pytest.raises(Exception):  # noqa: B017 - the upstream's 500 becomes a 502
        client.chat.completions.create(model="steady", messages=MESSAGES)
    rows = gateway.rows(expect=4)
    overview = signed_in(gateway).get("/admin/api/overview?range=today").json()
    served = [r for r in rows if r["success"]]
    assert overview["totals"]["calls"] == len(served) == 3  # usage_daily: answered calls
    assert overview["totals"]["inputTokens"] == sum(r["actual_input_tokens"] for r in served)
    cost = sum(r["actual_cost"] for r in served)
    assert overview["totals"]["cost"] == format(cost.normalize(), "f")
    rates = overview["rates"]
    assert (rates["calls"], rates["errors"], rates["cacheHits"], rates["fallbacks"]) == (4, 1, 0, 0)
    # Percentiles: the rollup's histogram of the first-attempt successes, as its buckets read.
    latency = overview["latency"]
    latencies = sorted(r["latency_ms"] for r in served)
    assert latency["calls"] == 3 and latency["streams"] == 0
    assert latency["p50Ms"] == bucket_value(bucket_of(latencies[1]))  # nearest rank: 2 of 3
    assert latency["p95Ms"] == bucket_value(bucket_of(latencies[2]))
    assert latency["ttftP50Ms"] is None  # no stream
    (today,) = overview["costPerDay"]
    assert today["cost"] == overview["totals"]["cost"]
    assert overview["top"]["configurations"][0]["name"] == "steady"


def test_the_calls_filter_offers_every_error_class_a_row_can_hold(
    gateway: RunningGateway,
) -> None:
    client = signed_in(gateway)
    page = client.get("/admin/calls").text
    for member in ErrorClass:
        assert f'value="{member}"' in page
        answer = client.get(f"/admin/api/calls?error={member}")
        assert answer.status_code == 200, (member, answer.text)
        assert answer.json()["calls"] == []


def test_the_keys_page_writes_need_its_csrf_token_and_the_consoles_origin(
    gateway: RunningGateway,
) -> None:
    import re

    client = signed_in(gateway)
    page = client.get("/admin/manage/keys")
    assert page.status_code == 200
    match = re.search(r'id="keys" data-csrf="([0-9a-f]+)"', page.text)
    assert match is not None
    token = match.group(1)
    origin = {"origin": gateway.url}
    refused = client.post("/admin/keys", json={"id": "no-token"}, headers=origin)
    assert refused.status_code == 403, refused.text
    wrong = client.post("/admin/keys", json={"id": "x"}, headers={**origin, "x-csrf-token": "0"})
    assert wrong.status_code == 403
    elsewhere = {"origin": "https://evil.example", "x-csrf-token": token}
    assert client.post("/admin/keys", json={"id": "x"}, headers=elsewhere).status_code == 403
    made = client.post("/admin/keys", json={"id": "ok"}, headers={**origin, "x-csrf-token": token})
    assert made.status_code == 201, made.text
    key = made.json()["key"]
    listed = client.get("/admin/manage/keys")
    assert "ok" in listed.text and key not in listed.text and made.json()["prefix"] in listed.text
    assert client.get("/admin/api/budgets").status_code == 200
