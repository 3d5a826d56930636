"""The SSE decoder follows the WHATWG event-stream rules, whatever the chunking."""

from __future__ import annotations

import pytest

from gateway.streaming.sse import (
    EventTooLarge,
    RawEvent,
    SSEDecoder,
    SSEEvent,
    encode_event,
)

STREAM = (
    b"\xef\xbb\xbf"
    b": a comment to ignore\n"
    b'data: {"id":"1","choices":[{"delta":{"content":"h\xc3\xa9llo \xe2\x82\xac"}}]}\n'
    b"\n"
    b"event: update\r\n"
    b"id: 42\r\n"
    b"retry: 1500\r\n"
    b"data: line one\r\n"
    b"data:line two\r\n"
    b"\r\n"
    b": keep-alive\r\r"
    b"data: cr only\r"
    b"data\r"
    b"\r"
    b"data: \xf0\x9f\x98\x80 emoji\n\n"
    b"data: [DONE]\n\n"
)

EXPECTED = [
    SSEEvent(event=None, data='{"id":"1","choices":[{"delta":{"content":"héllo €"}}]}'),
    SSEEvent(event="update", data="line one\nline two", id="42", retry=1500),
    SSEEvent(event=None, data="cr only\n", id="42"),
    SSEEvent(event=None, data="😀 emoji", id="42"),
    SSEEvent(event=None, data="[DONE]", id="42"),
]


def _feed_all(chunks: list[bytes]) -> list[RawEvent]:
    decoder = SSEDecoder()
    out: list[RawEvent] = []
    for chunk in chunks:
        out += decoder.feed_raw(chunk)
    out += decoder.flush_raw()
    return out


def test_whole_stream_decodes_to_the_expected_events() -> None:
    events = [item.event for item in _feed_all([STREAM]) if item.event is not None]
    assert events == EXPECTED


@pytest.mark.parametrize("split", range(len(STREAM) + 1))
def test_split_at_any_byte_yields_identical_events_and_raw_bytes(split: int) -> None:
    whole = _feed_all([STREAM])
    assert _feed_all([STREAM[:split], STREAM[split:]]) == whole


def test_split_at_every_byte_at_once_yields_identical_events_and_raw_bytes() -> None:
    assert _feed_all([bytes([b]) for b in STREAM]) == _feed_all([STREAM])


def test_raw_blocks_concatenate_back_to_the_input() -> None:
    assert b"".join(item.raw for item in _feed_all([STREAM])) == STREAM


def test_raw_of_an_event_is_its_exact_bytes_with_the_blank_line() -> None:
    items = SSEDecoder().feed_raw(b"event: a\r\ndata: x\r\n\r\ndata: y\n\n")
    assert items == [
        RawEvent(SSEEvent(event="a", data="x"), b"event: a\r\ndata: x\r\n\r\n"),
        RawEvent(SSEEvent(event=None, data="y"), b"data: y\n\n"),
    ]


def test_comment_only_block_dispatches_nothing_but_keeps_its_raw_bytes() -> None:
    assert SSEDecoder().feed_raw(b": ping\n\n") == [RawEvent(None, b": ping\n\n")]
    assert SSEDecoder().feed(b": ping\n\n") == []


def test_block_without_data_lines_is_not_dispatched() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"event: nothing\nid: 7\n\n") == []
    # ...but its id persists as the last event id, and its event name does not.
    assert decoder.feed(b"data: x\n\n") == [SSEEvent(event=None, data="x", id="7")]


def test_crlf_split_across_feeds_is_one_line_end() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r") == []
    assert decoder.feed(b"\n\r") == []
    assert decoder.feed(b"\n") == [SSEEvent(event=None, data="a")]
    assert decoder.flush() == []


def test_crlf_event_dispatches_without_waiting_for_more_bytes() -> None:
    assert SSEDecoder().feed(b"data: a\r\n\r\n") == [SSEEvent(event=None, data="a")]


def test_crlf_events_dispatch_on_the_byte_that_completes_them() -> None:
    stream = b"data: a\r\n\r\nevent: e\r\ndata: b\r\n\r\n"
    decoder = SSEDecoder()
    dispatched_at = {}
    for index in range(len(stream)):
        for event in decoder.feed(stream[index : index + 1]):
            dispatched_at[event.data] = index
    assert dispatched_at == {"a": 10, "b": len(stream) - 1}


def test_bare_cr_line_ends_dispatch_once_the_next_byte_arrives() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r\r") == []  # the last \r may still be half of \r\n
    assert decoder.feed(b"d") == [SSEEvent(event=None, data="a")]


def test_trailing_cr_completes_the_event_at_end_of_stream() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r\r") == []
    assert decoder.flush() == [SSEEvent(event=None, data="a")]


def test_incomplete_event_at_end_of_stream_is_discarded() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: complete\n\ndata: cut off\n") == [
        SSEEvent(event=None, data="complete")
    ]
    assert decoder.flush() == []


def test_unterminated_last_line_is_discarded() -> None:
    decoder = SSEDecoder()
    decoder.feed(b"data: no line end")
    assert decoder.flush() == []


def test_multiline_data_is_joined_with_newlines() -> None:
    events = SSEDecoder().feed(b"data: a\ndata:\ndata:  b\n\n")
    assert events == [SSEEvent(event=None, data="a\n\n b")]


def test_field_without_colon_has_an_empty_value() -> None:
    assert SSEDecoder().feed(b"data\n\n") == [SSEEvent(event=None, data="")]


def test_unknown_fields_are_ignored() -> None:
    assert SSEDecoder().feed(b"foo: bar\ndata: x\n\n") == [SSEEvent(event=None, data="x")]


def test_non_numeric_retry_is_ignored() -> None:
    events = SSEDecoder().feed(b"retry: 10s\ndata: x\n\nretry: 20\ndata: y\n\ndata: z\n\n")
    assert [event.retry for event in events] == [None, 20, None]


def test_id_holding_nul_is_ignored() -> None:
    events = SSEDecoder().feed(b"id: 1\ndata: a\n\nid: 2\x00\ndata: b\n\nid\ndata: c\n\n")
    assert [event.id for event in events] == ["1", "1", ""]


def test_bom_is_stripped_only_at_the_start() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"\xef\xbb") == []
    assert decoder.feed(b"\xbfdata: x\n\n") == [SSEEvent(event=None, data="x")]
    # A second BOM is part of the field name, so the line is an unknown field.
    assert decoder.feed(b"\xef\xbb\xbfdata: y\n\ndata: z\n\n") == [SSEEvent(event=None, data="z")]


def test_multibyte_character_split_across_feeds_decodes_whole() -> None:
    decoder = SSEDecoder()
    encoded = "data: 日本\n\n".encode()
    assert decoder.feed(encoded[:7]) == []
    assert decoder.feed(encoded[7:]) == [SSEEvent(event=None, data="日本")]


def test_invalid_utf8_is_replaced_not_raised() -> None:
    assert SSEDecoder().feed(b"data: \xff\n\n") == [SSEEvent(event=None, data="\ufffd")]


def test_empty_event_name_means_the_default_type() -> None:
    assert SSEDecoder().feed(b"event:\ndata: x\n\n") == [SSEEvent(event=None, data="x")]


def test_encode_event_writes_event_name_and_one_data_line_per_line() -> None:
    assert encode_event("a\nb", event="update") == b"event: update\ndata: a\ndata: b\n\n"
    assert encode_event(b'{"x":1}') == b'data: {"x":1}\n\n'


def test_encode_event_refuses_a_line_break_in_the_event_name() -> None:
    with pytest.raises(ValueError):
        encode_event("x", event="a\nb")


@pytest.mark.parametrize(
    ("data", "event"),
    [
        ("plain", None),
        ("", None),
        ("two\nlines", "message"),
        ("trailing newline\n", None),
        ("\n\nleading", "e"),
        (" leading space", None),
        ("ünïcødé 😀", None),
        (": looks like a comment", None),
    ],
)
def test_encode_then_decode_round_trips(data: str, event: str | None) -> None:
    assert SSEDecoder().feed(encode_event(data, event)) == [SSEEvent(event=event, data=data)]


def test_encode_event_normalises_crlf_in_data_to_newline() -> None:
    assert SSEDecoder().feed(encode_event("a\r\nb\rc")) == [SSEEvent(event=None, data="a\nb\nc")]


def test_an_event_still_arriving_past_the_cap_raises_as_soon_as_it_is_too_large() -> None:
    decoder = SSEDecoder(max_event_bytes=1_000)
    assert decoder.feed(b"data: small\n\n") == [SSEEvent(None, "small")]
    decoder.feed(b"data: " + b"x" * 500)
    with pytest.raises(EventTooLarge) as caught:
        decoder.feed(b"x" * 600)  # no blank line yet: it would wait without limit
    assert caught.value.limit == 1_000


def test_a_complete_event_past_the_cap_raises_too() -> None:
    decoder = SSEDecoder(max_event_bytes=1_000)
    with pytest.raises(EventTooLarge):
        decoder.feed(b"data: " + b"y" * 2_000 + b"\n\n")


def test_events_up_to_the_cap_pass_and_many_small_ones_never_add_up() -> None:
    decoder = SSEDecoder(max_event_bytes=64)
    event = b"data: " + b"z" * 56 + b"\n\n"  # exactly 64 bytes
    assert len(event) == 64
    for _ in range(100):
        assert decoder.feed(event) == [SSEEvent(None, "z" * 56)]


# A model's stream: mostly one ``data:`` line a block, which the decoder dispatches without
# its line-by-line walk when a read starts at a block boundary; ids, names, comments and
# multi-line data in between take the walk. Whatever the reads, the same events and bytes.
MODEL_STREAM = (
    b'data: {"a":1}\n\n'
    b'data:{"b":2}\n\n'
    b": ping\n\n"
    b"id: 7\ndata: x\n\n"
    b"data: after the id\n\n"
    b"event: named\ndata: with a name\n\n"
    b"data: two\ndata: lines\n\n"
    b"data: \xc3\xa9t\xc3\xa9\n\n"
    b"data: \n\n"
    b"\n"
    b"data: [DONE]\n\n"
)


def test_a_model_stream_decodes_the_same_whole_or_byte_by_byte() -> None:
    whole = _feed_all([MODEL_STREAM])
    assert whole == _feed_all([bytes([b]) for b in MODEL_STREAM])
    events = [item.event for item in whole if item.event is not None]
    assert [event.data for event in events] == [
        '{"a":1}',
        '{"b":2}',
        "x",
        "after the id",
        "with a name",
        "two\nlines",
        "été",
        "",
        "[DONE]",
    ]
    assert [event.id for event in events][3:] == ["7"] * 6  # the id persists
    assert events[4].event == "named" and events[5].event is None


@pytest.mark.parametrize("first", range(0, len(MODEL_STREAM) + 1, 3))
def test_a_model_stream_split_in_three_reads_decodes_as_whole(first: int) -> None:
    whole = _feed_all([MODEL_STREAM])
    for second in range(first, len(MODEL_STREAM) + 1, 7):
        chunks = [MODEL_STREAM[:first], MODEL_STREAM[first:second], MODEL_STREAM[second:]]
        assert _feed_all(chunks) == whole


def test_one_line_events_past_the_cap_raise_on_the_fast_path_too() -> None:
    decoder = SSEDecoder(max_event_bytes=64)
    assert decoder.feed(b"data: " + b"z" * 56 + b"\n\n") == [SSEEvent(None, "z" * 56)]
    with pytest.raises(EventTooLarge):
        decoder.feed(b"data: ok\n\ndata: " + b"z" * 57 + b"\n\n")
