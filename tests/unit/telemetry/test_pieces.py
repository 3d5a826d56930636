"""A batch's rows in statement pieces: every row once, in order, in few small sizes."""

from __future__ import annotations

from typing import Any

from gateway.telemetry.writer import MAX_PIECE, pieces


def _rows(count: int) -> list[dict[str, Any]]:
    return [{"n": n} for n in range(count)]


def test_every_row_goes_once_in_order_in_power_of_two_pieces_no_larger_than_the_cap() -> None:
    for count in range(0, 1100):
        found = pieces(_rows(count))
        assert [row["n"] for piece in found for row in piece] == list(range(count))
        for piece in found:
            size = len(piece)
            assert 0 < size <= MAX_PIECE and size & (size - 1) == 0


def test_any_batch_size_uses_only_a_few_statement_sizes() -> None:
    sizes = {len(piece) for count in range(1, 1100) for piece in pieces(_rows(count))}
    assert sizes == {1 << n for n in range(MAX_PIECE.bit_length())}  # 1, 2, 4, ..., 32


def test_a_full_batch_is_whole_pieces_and_the_rest_largest_first() -> None:
    assert [len(piece) for piece in pieces(_rows(75))] == [32, 32, 8, 2, 1]
    assert [len(piece) for piece in pieces(_rows(500))] == [32] * 15 + [16, 4]
