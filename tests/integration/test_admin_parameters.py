"""Admin and console parameters out of every range a database holds: a 400 naming the
parameter, never a 500, on SQLite, PostgreSQL and MariaDB (docs/api.md, "Admin API").

Ids beyond a signed 64-bit integer, date-times whose conversion to UTC leaves the
calendar, and text no database column can hold (a NUL character) are refused before
any query; values inside the ranges still answer (an empty page, a 404).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.integration.budget_support import HTTP_BACKENDS, database
from tests.support.console import console_yaml
from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import ADMIN_KEY, TEST_KEY, RunningGateway

BEYOND_INT64 = "9223372036854775808"  # 2**63
TWENTY_DIGITS = "99999999999999999999"


@pytest.fixture(scope="module", params=HTTP_BACKENDS)
def gateway(
    request: pytest.FixtureRequest,
    upstream: FakeUpstream,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[RunningGateway]:
    with database(request.param, tmp_path_factory.mktemp("db")) as url:
        running = RunningGateway(console_yaml(upstream.url, url))
        try:
            running.client(TEST_KEY).chat.completions.create(
                model="steady", messages=[{"role": "user", "content": "hi"}]
            )
            running.flush()
            yield running
        finally:
            running.stop()


def get(gateway: RunningGateway, path: str, params: dict[str, str] | None = None) -> Any:
    headers = {"authorization": f"Bearer {ADMIN_KEY}"}
    return httpx.get(f"{gateway.url}{path}", params=params, headers=headers, timeout=10)


REFUSED = [
    ("/admin/api/calls/" + TWENTY_DIGITS, {}, "call_id"),
    ("/admin/api/calls/" + BEYOND_INT64, {}, "call_id"),
    ("/admin/api/calls", {"before": TWENTY_DIGITS}, "before"),
    ("/admin/api/calls", {"before": "9999999999999999999"}, "before"),  # 19 digits
    ("/admin/api/calls", {"after": BEYOND_INT64}, "after"),
    ("/admin/api/calls", {"since": "0001-01-01T00:00:00+14:00"}, "since"),
    ("/admin/api/calls", {"until": "9999-12-31T23:59:59-14:00"}, "until"),
    ("/admin/api/calls", {"since": "9999-12-31T23:00:00-01:00"}, "since"),
    ("/admin/api/calls/-1", {}, "call_id"),
    ("/admin/api/calls", {"configuration": "chat\x00"}, "configuration"),
    ("/admin/api/calls", {"key": "\x00"}, "key"),
    ("/admin/api/calls", {"model": "a\x00b"}, "model"),
    ("/admin/api/calls", {"provider": "\x00"}, "provider"),
    ("/admin/routing/calls", {"days": TWENTY_DIGITS}, "days"),
    ("/admin/routing/calls", {"limit": TWENTY_DIGITS}, "limit"),
]


@pytest.mark.parametrize(("path", "params", "name"), REFUSED)
def test_an_out_of_range_parameter_is_a_400_naming_it(
    gateway: RunningGateway, path: str, params: dict[str, str], name: str
) -> None:
    answer = get(gateway, path, params)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["param"] == name
    assert error["code"] == "invalid_request"


def test_the_console_page_of_an_overflowing_call_id_is_a_400(gateway: RunningGateway) -> None:
    answer = get(gateway, "/admin/calls/" + TWENTY_DIGITS)
    assert answer.status_code == 400
    assert "call id" in answer.text


@pytest.mark.parametrize(
    ("path", "params", "status"),
    [
        ("/admin/api/calls/9223372036854775807", {}, 404),
        ("/admin/api/calls/0", {}, 404),
        ("/admin/api/calls", {"before": "9223372036854775807"}, 200),
        ("/admin/api/calls", {"after": "0"}, 200),
        ("/admin/api/calls", {"since": "1000-01-01T00:00:00"}, 200),
        ("/admin/api/calls", {"until": "9999-12-30T23:59:59+14:00"}, 200),
        ("/admin/api/calls", {"since": "0001-01-01T00:00:00"}, 200),
        ("/admin/api/calls", {"until": "9999-12-31T23:59:59.999999"}, 200),
        ("/admin/api/calls", {"configuration": "ünïcödé ✓ 😀"}, 200),
        ("/admin/api/calls", {"configuration": "x" * 30_000}, 200),
        ("/admin/api/calls?model=%FF%FE", None, 200),
        ("/admin/api/calls?provider=%ED%A0%80", None, 200),
    ],
)
def test_the_edges_of_the_ranges_still_answer(
    gateway: RunningGateway, path: str, params: dict[str, str] | None, status: int
) -> None:
    answer = get(gateway, path, params)
    assert answer.status_code == status, answer.text


def test_the_whole_range_finds_the_call(gateway: RunningGateway) -> None:
    params = {"since": "1000-01-01T00:00:00", "until": "9999-12-30T00:00:00", "after": "0"}
    answer = get(gateway, "/admin/api/calls", params)
    assert answer.status_code == 200, answer.text
    assert len(answer.json()["calls"]) == 1
