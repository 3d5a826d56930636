"""Counting tokens piece by piece: long texts in slices, streamed text as it arrives (pure).

Both cut the text only where the cut cannot change the count: before a space
(or tab) that follows a non-space character. tiktoken's cl100k_base and o200k_base
split text into pieces by a regex before merging bytes, and no piece can hold a
non-space character followed by a space (a word's leading space belongs to the
next word), so the pieces on either side of such a cut are the pieces of the
whole text and the counts add up exactly. A text with no such place in the second
half of a slice (a long run without spaces: CJK prose, base64) is cut at the slice
end, which can move the count by a token or two per cut: within 0.1 % at the
slice sizes used here.
"""

from __future__ import annotations

from collections.abc import Callable

from gateway.domain.usage import TokenCount

# Streamed text is counted once this much has gathered; only the uncut tail stays.
STREAM_BUFFER_CHARS = 32 * 1024
# The pending pieces are joined into one string once this many have gathered.
COMPACT_PIECES = 16
# A long text is counted in slices of this size: a bounded list of token ids at a time.
TEXT_SLICE_CHARS = 64 * 1024

Count = Callable[[str], int]


def exact_cut(text: str, limit: int) -> int:
    """Where to cut ``text`` at or before ``limit`` so both sides count as the whole does.

    Searches the second half of ``[0, limit]``; ``limit`` itself when nothing fits there.
    """
    if limit >= len(text):
        return len(text)
    floor = limit // 2
    for separator in (" ", "\t"):
        at = limit + 1  # the cut may fall on ``limit`` itself (text[:limit] then text[limit:])
        while True:
            at = text.rfind(separator, floor + 1, at)
            if at <= floor:
                break
            if not text[at - 1].isspace():
                return at
    return limit


def count_sliced(count: Count, text: str, slice_chars: int = TEXT_SLICE_CHARS) -> int:
    """``count(text)`` for a long text, one slice at a time (see the module doc)."""
    if len(text) <= slice_chars:
        return count(text)
    total = 0
    start = 0
    while len(text) - start > slice_chars:
        cut = start + exact_cut(text[start : start + slice_chars + 1], slice_chars)
        total += count(text[start:cut])
        start = cut
    return total + count(text[start:])


def utf8_size(text: str) -> int:
    """An upper bound of the tokens of ``text``: each byte-level BPE token is one byte or more."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-8", "surrogatepass"))


class TokenTally:
    """Counts streamed text without keeping it.

    The text gathers up to ``buffer_chars``; then the caller takes it
    (``take_backlog``: up to the last exact cut, the tail stays), counts it, off
    the event loop, and hands the figure back (``add_counted``). ``total`` counts
    what is still pending, on the spot. So a stream holds at most about one
    buffer of its text, and a stream shorter than that is never counted unless
    its total is asked for (its upstream reported no usage).
    """

    __slots__ = ("_buffer", "_count", "_pending", "_pending_chars", "_tokens", "upper_bound")

    def __init__(self, count: Count, buffer_chars: int = STREAM_BUFFER_CHARS) -> None:
        self._count = count
        self._buffer = buffer_chars
        self._pending: list[str] = []
        self._pending_chars = 0
        self._tokens = 0
        self.upper_bound = False  # some text was counted by its UTF-8 size

    @property
    def backlog_chars(self) -> int:
        """Characters not counted yet."""
        return self._pending_chars

    @property
    def full(self) -> bool:
        """More than a buffer gathered: time to take the backlog and count it."""
        return self._pending_chars > self._buffer

    def add(self, text: str) -> None:
        if text:
            pending = self._pending
            pending.append(text)
            self._pending_chars += len(text)
            if len(pending) >= COMPACT_PIECES:
                # A model streams a token or a few an event: each piece is a str object of
                # its own (about 50 bytes over its text) and a list slot, several times the
                # text. Joined now and then, a stream's backlog holds about its text's size.
                self._pending = ["".join(pending)]

    def take_backlog(self) -> str:
        """The pending text up to its last exact cut, when the buffer is full; else ""."""
        return self._take(final=False) if self.full else ""

    def take_rest(self) -> str:
        """All the pending text (the stream has ended)."""
        return self._take(final=True)

    def add_counted(self, count: TokenCount) -> None:
        self._tokens += count.tokens
        self.upper_bound = self.upper_bound or count.upper_bound

    def add_bound(self, text: str) -> None:
        """Text that could not be counted (the call ended meanwhile): its UTF-8 size."""
        self._tokens += utf8_size(text)
        self.upper_bound = True

    def total(self) -> int:
        """Everything added so far; what is still pending is counted now."""
        rest = self.take_rest()
        if rest:
            self._tokens += self._count(rest)
        return self._tokens

    def _take(self, *, final: bool) -> str:
        """Detach the pending text up to an exact cut; the uncut tail stays pending."""
        text = "".join(self._pending)
        cut = len(text) if final else exact_cut(text, len(text) - 1)
        tail = text[cut:]
        self._pending = [tail] if tail else []
        self._pending_chars = len(tail)
        return text[:cut]
