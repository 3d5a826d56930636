"""glibc's allocator, tuned for a serving process (Linux; elsewhere these do nothing).

- ``limit_arenas``: glibc gives each thread that allocates its own arena, up to eight
  per core, and an arena keeps the memory it once held. A serving process has a few
  threads (the log writer, SQLite's, the token counters, the encoding loader) whose
  arenas only add resident memory: two arenas are plenty (``M_ARENA_MAX``, what the
  ``MALLOC_ARENA_MAX`` variable sets; a value set there is left alone).
- ``trim``: after loading the tokenizer encodings (megabytes parsed into objects that are
  then freed) hand the free pages back to the system (``malloc_trim``).

See docs/performance.md for what each saves.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

M_ARENA_MAX = -8  # glibc's mallopt parameter
SERVING_ARENAS = 2


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None
    if not hasattr(libc, "mallopt") or not hasattr(libc, "malloc_trim"):
        return None  # not glibc (musl has neither)
    return libc


def limit_arenas(arenas: int = SERVING_ARENAS) -> bool:
    """Cap glibc's arenas (before threads start allocating); True when applied."""
    if "MALLOC_ARENA_MAX" in os.environ:
        return False
    libc = _libc()
    return libc is not None and libc.mallopt(M_ARENA_MAX, arenas) == 1


def trim() -> bool:
    """Return free heap pages to the system; True when some were."""
    libc = _libc()
    return libc is not None and libc.malloc_trim(0) == 1
