"""glibc's allocator and Python's cycle collector, tuned for a serving process.

- ``limit_arenas``: glibc gives each thread that allocates its own arena, up to eight
  per core, and an arena keeps the memory it once held. A serving process has a few
  threads (the log writer, SQLite's, the token counters, the encoding loader) whose
  arenas only add resident memory: two arenas are plenty (``M_ARENA_MAX``, what the
  ``MALLOC_ARENA_MAX`` variable sets; a value set there is left alone).
- ``trim``: after loading the tokenizer encodings (megabytes parsed into objects that are
  then freed) hand the free pages back to the system (``malloc_trim``).
- ``settle_collector``: once the process has started, the objects alive then (the
  modules, the configuration, the encodings: about 100,000 of them) are moved out of the
  cycle collector's sight (``gc.freeze``), and its youngest generation is collected every
  ``YOUNG_THRESHOLD`` net allocations instead of every 700. Under load the collector
  otherwise walked that whole heap several times a second: about a quarter of a call's
  CPU. What a call allocates is freed by reference counting; what the collector is for
  (reference cycles) is still collected, a little later.

The first two are glibc's (Linux; elsewhere they do nothing). See docs/performance.md for
what each saves.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import os
import sys

M_ARENA_MAX = -8  # glibc's mallopt parameter
SERVING_ARENAS = 2
YOUNG_THRESHOLD = 10_000  # net allocations between two collections of the youngest generation


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


def settle_collector(young: int = YOUNG_THRESHOLD) -> None:
    """After start-up: collect once, freeze what is alive (never scanned again, still freed
    when its references go) and collect the youngest generation less often."""
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(young, older, oldest)
