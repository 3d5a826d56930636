"""Counting in pieces gives the count of the whole text (cuts only where that holds)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import tiktoken

from gateway.domain.usage import TokenCount
from gateway.usage.tally import (
    STREAM_BUFFER_CHARS,
    TokenTally,
    count_sliced,
    exact_cut,
    utf8_size,
)

# Words, punctuation, numbers, contractions, runs of spaces, tabs and line breaks,
# accents, CJK and emoji: what answers are made of.
_PIECES = [
    "the",
    "obligation",
    "Paris",
    "don't",
    "it's",
    "we'll",
    "3.14159",
    "2026-11-29",
    "1,000,000",
    "(see",
    "below)",
    "—",
    "...",
    "!!",
    "«bien»",
    "déjà",
    "naïve",
    "你好",
    "世界",
    "🙂",
    "👍🏽",
    "x=y+1;",
    '{"a":',
    "[1,2]}",
    "http://example.com/a?b=c",
    "CamelCaseWord",
    "ALLCAPS",
]
_SEPARATORS = [" ", " ", " ", " ", "  ", "\t", "\n", "\n\n", " \n", ".\n", ", ", "   "]


def _text(seed: int, size: int) -> str:
    rng = random.Random(seed)
    parts: list[str] = []
    length = 0
    while length < size:
        part = rng.choice(_PIECES) + rng.choice(_SEPARATORS)
        parts.append(part)
        length += len(part)
    return "".join(parts)


def _pieces(text: str, seed: int) -> list[str]:
    """``text`` in stream-like deltas of 1 to 40 characters."""
    rng = random.Random(seed)
    out: list[str] = []
    at = 0
    while at < len(text):
        step = rng.randint(1, 40)
        out.append(text[at : at + step])
        at += step
    return out


@pytest.fixture(params=["cl100k_base", "o200k_base"])
def encoding(request: pytest.FixtureRequest, tiktoken_encodings: Path) -> tiktoken.Encoding:
    return tiktoken.get_encoding(request.param)


@pytest.mark.parametrize("seed", range(6))
def test_a_streamed_text_counted_as_it_arrives_equals_the_whole_count(
    encoding: tiktoken.Encoding, seed: int
) -> None:
    def count(part: str) -> int:
        return len(encoding.encode_ordinary(part))

    text = _text(seed, 12 * STREAM_BUFFER_CHARS)  # many cuts
    tally = TokenTally(count)
    for piece in _pieces(text, seed):
        tally.add(piece)
        if tally.full:  # as the relay does, in a counting thread
            tally.add_counted(TokenCount(count(tally.take_backlog())))
        assert tally.backlog_chars <= STREAM_BUFFER_CHARS + 40  # the text is not kept
    assert tally.total() == count(text)
    assert not tally.upper_bound


@pytest.mark.parametrize("seed", range(4))
def test_a_long_text_counted_in_slices_equals_the_whole_count(
    encoding: tiktoken.Encoding, seed: int
) -> None:
    text = _text(seed, 40_000)
    counted = count_sliced(lambda part: len(encoding.encode_ordinary(part)), text, 1_000)
    assert counted == len(encoding.encode_ordinary(text))


def test_text_without_spaces_is_cut_anyway_within_a_tiny_tolerance(
    encoding: tiktoken.Encoding,
) -> None:
    text = "这是一个没有空格的很长的句子，它一直继续下去。" * 2_000  # ~46k characters, no space
    exact = len(encoding.encode_ordinary(text))
    counted = count_sliced(lambda part: len(encoding.encode_ordinary(part)), text, 4_096)
    assert abs(counted - exact) <= max(2, exact // 1000)


def test_exact_cut_falls_before_a_space_that_follows_a_word() -> None:
    text = "alpha beta  gamma delta"
    at = exact_cut(text, 17)
    assert text[at] == " " and not text[at - 1].isspace()
    assert at == 17  # "alpha beta  gamma| delta"
    assert exact_cut(text, 16) == 10  # not inside the double space: "alpha beta|  gamma"
    assert exact_cut("no-space-here-at-all", 10) == 10  # nothing fits: the limit itself
    assert exact_cut("short", 10) == 5


def test_text_gathers_up_to_a_buffer_and_is_then_handed_over_to_be_counted() -> None:
    counted: list[str] = []

    def count(part: str) -> int:
        counted.append(part)
        return len(part)

    tally = TokenTally(count, buffer_chars=1_000)
    for _ in range(150):
        tally.add("word ")
    assert not tally.full and tally.take_backlog() == "" and counted == []
    tally.add("word " * 60)
    assert tally.full
    backlog = tally.take_backlog()
    assert backlog.endswith("word") and tally.backlog_chars == 1  # the space stays
    assert counted == []  # the caller counts the backlog, not the tally
    tally.add_counted(TokenCount(len(backlog)))
    assert tally.total() == 210 * 5
    assert counted == [" "]
    assert not tally.upper_bound


def test_a_backlog_that_could_not_be_counted_is_bounded_by_its_size() -> None:
    tally = TokenTally(len, buffer_chars=1_000)
    tally.add("déjà vu " * 4_000)
    backlog = tally.take_backlog()
    tally.add_bound(backlog)
    assert tally.upper_bound
    assert tally.total() >= utf8_size(backlog)


@pytest.mark.parametrize(
    ("text", "size"), [("", 0), ("abc", 3), ("déjà", 6), ("你好", 6), ("🙂", 4), ("\ud800", 3)]
)
def test_utf8_size_counts_bytes_lone_surrogates_included(text: str, size: int) -> None:
    assert utf8_size(text) == size


def test_utf8_size_bounds_the_token_count(encoding: tiktoken.Encoding) -> None:
    text = _text(7, 5_000)
    assert utf8_size(text) >= len(encoding.encode_ordinary(text))


def test_a_backlog_of_many_small_pieces_holds_about_its_text_size() -> None:
    import tracemalloc

    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tally = TokenTally(len)  # the default buffer: nothing is taken before 32 KiB
        for index in range(3_000):
            tally.add(f" w{index % 10}")  # a token a piece, each its own str object
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert tally.backlog_chars == 9_000
    assert held < 2 * 9_000 + 8_000  # 3,000 str objects and list slots would be ~200 KB
    assert tally.total() == 9_000  # and the count is the same
