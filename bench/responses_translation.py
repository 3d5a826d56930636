"""What translating /v1/responses to Chat Completions costs per call, in process.

Times the three pure steps a translated call adds (gateway/responses/): the request
(a 6-turn tool conversation with instructions and two tools), the whole answer, and a
streamed answer of N text chunks plus a tool call, chunk dicts in, event dicts out (the
SSE encoding and decoding the bridge also does are timed with them). Prints
microseconds per call with the conditions.

    python bench/responses_translation.py [--calls 2000] [--chunks 200]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from collections.abc import Callable
from typing import Any

import msgspec

from gateway.domain.usage import Usage
from gateway.responses.answer import to_response
from gateway.responses.request import to_chat
from gateway.responses.stream import ResponsesStreamWriter
from gateway.streaming.sse import SSEDecoder, encode_event

TOOL = {
    "type": "function",
    "name": "lookup",
    "description": "Look a word up.",
    "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
    "strict": True,
}
REQUEST: dict[str, Any] = {
    "model": "smart-chat",
    "instructions": "You are a careful assistant. " * 10,
    "tools": [TOOL, {**TOOL, "name": "define"}],
    "input": [
        {"role": "user", "content": "What does x mean? " * 20},
        {"type": "function_call", "call_id": "c1", "name": "lookup", "arguments": '{"q":"x"}'},
        {"type": "function_call_output", "call_id": "c1", "output": "ex " * 50},
        {"role": "assistant", "content": [{"type": "output_text", "text": "It means ex."}]},
        {"role": "user", "content": [{"type": "input_text", "text": "And y?"}]},
        {"type": "function_call", "call_id": "c2", "name": "define", "arguments": '{"q":"y"}'},
    ],
    "max_output_tokens": 512,
    "temperature": 0.2,
}
ANSWER: dict[str, Any] = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "model": "gpt-4o-mini-2024-07-18",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "Y means why. " * 40},
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 400, "completion_tokens": 160},
}
_ENCODER = msgspec.json.Encoder()


def chat_stream(chunks: int) -> bytes:
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m"}
    parts = []
    for index in range(chunks):
        delta = {"content": f" word{index}"}
        parts.append({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
    call = {"index": 0, "id": "call_1", "function": {"name": "lookup", "arguments": '{"q":"z"}'}}
    parts.append({**base, "choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
    parts.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    parts.append({**base, "choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 9}})
    return b"".join(encode_event(_ENCODER.encode(p)) for p in parts) + encode_event(b"[DONE]")


def translate_stream(raw: bytes) -> int:
    writer = ResponsesStreamWriter(REQUEST, 0, "")
    out = writer.start()
    decoder = SSEDecoder()
    decode = msgspec.json.decode
    for event in decoder.feed(raw):
        if event.data == "[DONE]":
            out += writer.finish()
            break
        out += writer.feed(decode(event.data))
    encoded = b"".join(encode_event(_ENCODER.encode(e), e["type"]) for e in out)
    return len(encoded)


def per_call_us(work: Callable[[], object], calls: int) -> tuple[float, float]:
    """Median and p99 of ``calls`` timed runs, in microseconds."""
    for _ in range(min(calls, 200)):  # warm-up
        work()
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        work()
        samples.append((time.perf_counter() - started) * 1e6)
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.99) - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--chunks", type=int, default=200)
    args = parser.parse_args()
    raw = chat_stream(args.chunks)
    usage = Usage(400, 160)
    rows = [
        ("request (6 items, 2 tools)", lambda: to_chat(REQUEST, "compat")),
        ("whole answer", lambda: to_response(ANSWER, REQUEST, usage, 0)),
        (f"stream ({args.chunks} text chunks + a call)", lambda: translate_stream(raw)),
    ]
    print(f"python {platform.python_version()}, {platform.machine()}, {args.calls} calls each")
    for name, work in rows:
        median, p99 = per_call_us(work, args.calls)
        print(f"{name:40s} median {median:9.1f} µs   p99 {p99:9.1f} µs")
    median, _ = per_call_us(lambda: translate_stream(raw), args.calls)
    print(f"{'stream, per chunk':40s} median {median / (args.chunks + 3):9.2f} µs")


if __name__ == "__main__":
    main()
