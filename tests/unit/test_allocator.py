"""glibc's arena cap and trim for a serving process (gateway.allocator)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from gateway import allocator

GLIBC = sys.platform.startswith("linux") and os.confstr("CS_GNU_LIBC_VERSION") is not None


def _run(code: str, **env: str) -> str:
    environ = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={**environ, **env}
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


@pytest.mark.skipif(not GLIBC, reason="glibc's mallopt and malloc_trim only")
def test_a_serving_process_caps_its_arenas_unless_the_operator_set_them() -> None:
    code = "from gateway import allocator; print(allocator.limit_arenas())"
    assert _run(code) == "True"
    assert _run(code, MALLOC_ARENA_MAX="4") == "False"  # the operator's value stands


@pytest.mark.skipif(not GLIBC, reason="glibc's mallopt and malloc_trim only")
def test_trim_hands_freed_heap_pages_back() -> None:
    code = (
        "from gateway import allocator\n"
        "def rss():\n"
        "    for line in open('/proc/self/status'):\n"
        "        if line.startswith('VmRSS:'):\n"
        "            return int(line.split()[1]) // 1024\n"
        # ~60 MB of heap blocks (under the mmap threshold), a block after them that
        # keeps the heap's top in use, then the blocks freed: free() cannot shrink it.
        "blocks = [bytearray(100_000) for _ in range(600)]\n"
        "pin = bytearray(100_000)\n"
        "del blocks\n"
        "before = rss()\n"
        "trimmed = allocator.trim()\n"
        "print(trimmed, before - rss())\n"
    )
    trimmed, released_mb = _run(code).split()
    assert trimmed == "True"
    assert int(released_mb) > 30


def test_the_arena_parameter_is_glibcs() -> None:
    assert allocator.M_ARENA_MAX == -8  # malloc.h: #define M_ARENA_MAX -8


def test_settling_the_collector_freezes_what_is_alive_and_collects_the_young_less_often() -> None:
    code = (
        "import gc\n"
        "from gateway import allocator\n"
        "before = gc.get_threshold()\n"
        "allocator.settle_collector()\n"
        "after = gc.get_threshold()\n"
        "print(gc.get_freeze_count() > 0, after[0], after[1:] == before[1:])\n"
    )
    assert _run(code) == f"True {allocator.YOUNG_THRESHOLD} True"


def test_a_serving_apps_lifespan_settles_the_collector_and_other_apps_leave_it() -> None:
    """``gateway serve`` and each worker ask for it (create_app(settle_collector=True));
    an app a test builds leaves the test process's collector as it is."""
    code = (
        "import asyncio, gc, sys, tempfile\n"
        "from pathlib import Path\n"
        "from litestar.testing import AsyncTestClient\n"
        "from gateway.api.app import create_app\n"
        "from gateway.config.loader import load_config_text\n"
        "from gateway.db.migrate import upgrade\n"
        "db = Path(tempfile.mkdtemp()) / 'g.db'\n"
        "config = load_config_text(f'''\n"
        'database: {{url: "sqlite+aiosqlite:///{db}"}}\n'
        "auth: {{allowUnauthenticated: true}}\n"
        'providers: [{{id: p, adapter: openai, baseUrl: "http://127.0.0.1:9/v1"}}]\n'
        "models: [{{id: m, provider: p, name: gpt-4o-mini}}]\n"
        "configurations: [{{id: c, mode: fixed, model: m}}]\n"
        "''')\n"
        "upgrade(config.database.url)\n"
        "default = gc.get_threshold()[0]\n"
        "async def main(settle):\n"
        "    async with AsyncTestClient(create_app(config, settle_collector=settle)):\n"
        "        young = gc.get_threshold()[0]\n"
        "        return gc.get_freeze_count() > 0, 'default' if young == default else young\n"
        "print(*asyncio.run(main(sys.argv[1] == 'yes')))\n"
    )
    for flag, expected in (("no", "False default"), ("yes", f"True {allocator.YOUNG_THRESHOLD}")):
        result = subprocess.run(
            [sys.executable, "-c", code, flag], capture_output=True, text=True, timeout=120
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout.split("\n")[-2] == expected
