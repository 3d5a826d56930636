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
