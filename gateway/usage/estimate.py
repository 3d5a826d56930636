"""Token estimates that never hold the event loop: small inline, large in a worker thread.

Counting is CPU work: tiktoken counts ordinary text at 25-45 MB/s here and text
without spaces (base64, one long "word") at about 1 MB/s, so a 15 MB prompt held
every other call for seconds when it was counted on the loop. The rules:

- text up to ``INLINE_CHARS`` is counted on the spot (a hop to a thread costs
  more than counting it);
- larger text is counted in a worker thread of a small pool of our own (so many
  large prompts at once cannot take the loop's default executor, which resolves
  upstream host names);
- at most ``EXACT_CHARS`` of a text are counted exactly; the rest counts as its
  UTF-8 size, an upper bound (a byte-level BPE token is at least one byte), and
  the count says so (``TokenCount.upper_bound``);
- a request's prompt is counted once per encoding: the budget hold (for every model
  the call may end on) and the final estimate read the same memo on the request.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, TypeVar

from gateway.domain.model import Endpoint
from gateway.domain.usage import TokenCount
from gateway.usage.prompt import count_request_tokens
from gateway.usage.tally import exact_cut, utf8_size
from gateway.usage.tokens import TextCounter, TokenCounter

INLINE_CHARS = 16 * 1024
EXACT_CHARS = 1024 * 1024
# Counting releases the GIL: two threads use both cores of a small machine; more only queue.
COUNT_THREADS = 2

T = TypeVar("T")
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


class PromptSource(Protocol):
    """What a prompt estimate reads of a request (``InboundRequest`` is one)."""

    @property
    def body(self) -> Mapping[str, Any]: ...

    @property
    def endpoint(self) -> Endpoint: ...

    @property
    def body_bytes(self) -> int: ...

    @property
    def token_counts(self) -> dict[str, TokenCount]: ...


async def off_loop(work: Callable[..., T], *args: Any) -> T:
    """Run blocking counting work in the counting threads."""
    global _pool
    if _pool is None:
        with _pool_lock:
            if _pool is None:
                _pool = ThreadPoolExecutor(COUNT_THREADS, thread_name_prefix="token-count")
    return await asyncio.get_running_loop().run_in_executor(_pool, work, *args)


def known_prompt_tokens(
    counter: TokenCounter, request: PromptSource, model_name: str
) -> TokenCount | None:
    """The prompt's count if it is memoised or small enough to count now; else None."""
    key = counter.encoding_for(model_name)
    known = request.token_counts.get(key)
    if known is None and request.body_bytes <= INLINE_CHARS:
        # No text in a body is longer than the body: this one is counted on the spot.
        tokens = count_request_tokens(counter, request.body, request.endpoint, model_name)
        known = request.token_counts[key] = TokenCount(tokens)
    return known


async def prompt_tokens(
    counter: TokenCounter, request: PromptSource, model_name: str
) -> TokenCount:
    """The prompt's tokens for ``model_name``'s encoding, counted once per request."""
    known = known_prompt_tokens(counter, request, model_name)
    if known is not None:
        return known
    counted = await off_loop(count_prompt_bounded, counter, request, model_name)
    request.token_counts[counter.encoding_for(model_name)] = counted
    return counted


def count_prompt_bounded(
    counter: TextCounter, request: PromptSource, model_name: str, exact_chars: int = EXACT_CHARS
) -> TokenCount:
    """Blocking: the prompt counted exactly up to ``exact_chars`` of text, then by bytes."""
    bounded = _Bounded(counter, exact_chars)
    tokens = count_request_tokens(bounded, request.body, request.endpoint, model_name)
    return TokenCount(tokens, bounded.upper_bound)


def prompt_upper_bound(request: PromptSource) -> TokenCount:
    """The prompt's UTF-8 size as tokens: for when there is no time left to count it."""
    return count_prompt_bounded(_NEVER, request, "", exact_chars=0)


async def text_tokens(counter: TokenCounter, text: str, model_name: str) -> TokenCount:
    """One text's tokens (a whole answer's output), off the loop when it is large."""
    if len(text) <= INLINE_CHARS:
        return TokenCount(counter.count_text(text, model_name))
    return await off_loop(count_text_bounded, counter, text, model_name)


def count_text_bounded(
    counter: TextCounter, text: str, model_name: str, exact_chars: int = EXACT_CHARS
) -> TokenCount:
    """Blocking: ``text`` counted exactly up to ``exact_chars``, the rest by its UTF-8 size."""
    bounded = _Bounded(counter, exact_chars)
    return TokenCount(bounded.count_text(text, model_name), bounded.upper_bound)


class _Bounded:
    """Counts exactly until ``exact_chars`` characters are counted, then by UTF-8 size."""

    __slots__ = ("_counter", "_left", "upper_bound")

    def __init__(self, counter: TextCounter, exact_chars: int) -> None:
        self._counter = counter
        self._left = exact_chars
        self.upper_bound = False

    def count_text(self, text: str, model_name: str) -> int:
        if not text:
            return 0
        if len(text) <= self._left:
            self._left -= len(text)
            return self._counter.count_text(text, model_name)
        cut = exact_cut(text, self._left) if self._left > 0 else 0
        self._left = 0
        self.upper_bound = True
        head = self._counter.count_text(text[:cut], model_name) if cut else 0
        rest = len(text) - cut if text.isascii() else utf8_size(text[cut:])
        return head + rest


class _NeverCounter:
    def count_text(self, text: str, model_name: str) -> int:
        raise AssertionError("an upper bound counts nothing exactly")


_NEVER = _NeverCounter()
