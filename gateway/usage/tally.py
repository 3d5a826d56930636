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

# Streamed text is counted once this much has gathered, and only the uncut tail stays.
STREAM_SLICE_CHARS = 8 * 1024
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
    """Counts text as it arrives, keeping no more than about one slice of it.

    ``add`` counts on the spot once a slice has gathered, while the uncounted text
    stays small (up to ``inline_chars``, at least two slices); text that arrives
    in one larger piece waits for the caller
    to take it (``take_backlog``), count it off the event loop and hand the figure
    back (``add_counted``). A caller that never takes the backlog leaves it to
    ``total``.
    """

    __slots__ = ("_count", "_inline", "_pending", "_pending_chars", "_tokens", "upper_bound")

    def __init__(self, count: Count, inline_chars: int) -> None:
        self._count = count
        self._pending: list[str] = []
        self._pending_chars = 0
        self._tokens = 0
        self._inline = max(inline_chars, 2 * STREAM_SLICE_CHARS)
        self.upper_bound = False  # some text was counted by its UTF-8 size

    @property
    def backlog_chars(self) -> int:
        """Characters not yet counted."""
        return self._pending_chars

    def add(self, text: str) -> None:
        if not text:
            return
        self._pending.append(text)
        self._pending_chars += len(text)
        if STREAM_SLICE_CHARS <= self._pending_chars <= self._inline:
            self._tokens += self._count_slices(self._take(final=False))

    def take_backlog(self) -> str:
        """The text to count off the loop when more gathered than is counted on the spot."""
        if self._pending_chars <= self._inline:
            return ""
        return self._take(final=False)

    def add_counted(self, count: TokenCount) -> None:
        self._tokens += count.tokens
        self.upper_bound = self.upper_bound or count.upper_bound

    def add_bound(self, text: str) -> None:
        """A backlog that could not be counted (the call ended meanwhile): its UTF-8 size."""
        self._tokens += utf8_size(text)
        self.upper_bound = True

    def total(self) -> int:
        """Everything added so far (counts what is still pending)."""
        if self._pending_chars:
            self._tokens += self._count_slices(self._take(final=True))
        return self._tokens

    def _take(self, *, final: bool) -> str:
        """Detach the pending text up to an exact cut; the uncut tail stays pending."""
        text = "".join(self._pending)
        cut = len(text) if final else exact_cut(text, len(text) - 1)
        tail = text[cut:]
        self._pending = [tail] if tail else []
        self._pending_chars = len(tail)
        return text[:cut]

    def _count_slices(self, text: str) -> int:
        return count_sliced(self._count, text, STREAM_SLICE_CHARS) if text else 0
