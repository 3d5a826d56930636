"""Token estimates: exact with the shared tiktoken files, characters/4 without them."""

from __future__ import annotations

import hashlib
import socket
import time
from pathlib import Path
from typing import Any

import pytest
import tiktoken

from gateway.domain.model import Endpoint
from gateway.usage import tokens
from gateway.usage.prompt import count_request_tokens
from gateway.usage.tokens import (
    CharEstimateCounter,
    TiktokenCounter,
    TokenCounter,
    encoding_name_for,
    make_default_counter,
)
from gateway.usage.uncounted import IMAGE_TOKEN_BOUND


class _NoNetwork(Exception):
    pass


@pytest.fixture
def network_attempts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Refuses any connection and records the attempt (a caught error would hide it)."""
    attempts: list[str] = []

    def refuse(*args: Any, **kwargs: Any) -> None:
        attempts.append(repr(args[:2]))
        raise _NoNetwork("the tokenizer tried to reach the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    return attempts


class _WordCounter:
    """One token per word: makes the request-shape arithmetic easy to check."""

    estimated = True

    def count_text(self, text: str, model_name: str) -> int:
        return len(text.split())


def test_hello_world_is_two_tokens_in_cl100k(tiktoken_encodings: Path) -> None:
    counter = TiktokenCounter()
    assert counter.count_text("hello world", "gpt-4") == 2
    assert not counter.estimated


def test_o200k_models_use_o200k(tiktoken_encodings: Path) -> None:
    # "<|endoftext|>" is plain text in a prompt, never a special token.
    text = "Réponds en français: 你好世界 <|endoftext|>"
    counter = TiktokenCounter()
    o200k = tiktoken.get_encoding("o200k_base").encode_ordinary(text)
    cl100k = tiktoken.get_encoding("cl100k_base").encode_ordinary(text)
    assert len(o200k) != len(cl100k)
    assert counter.count_text(text, "gpt-4o-mini") == len(o200k)
    assert counter.count_text(text, "gpt-3.5-turbo") == len(cl100k)


@pytest.mark.parametrize(
    ("model", "encoding"),
    [
        ("gpt-4o", "o200k_base"),
        ("gpt-4o-mini-2024-07-18", "o200k_base"),
        ("o1-preview", "o200k_base"),
        ("o3-mini", "o200k_base"),
        ("gpt-4.1-nano", "o200k_base"),
        ("gpt-5", "o200k_base"),
        ("openai/gpt-4o", "o200k_base"),
        ("ft:gpt-4o-mini:acme::abc", "o200k_base"),
        ("GPT-4O", "o200k_base"),
        ("gpt-4", "cl100k_base"),
        ("gpt-3.5-turbo", "cl100k_base"),
        ("text-embedding-3-small", "cl100k_base"),
        ("llama-3.1-70b", "cl100k_base"),
        ("claude-3-5-sonnet", "cl100k_base"),
    ],
)
def test_encoding_is_chosen_by_model_name(model: str, encoding: str) -> None:
    assert encoding_name_for(model) == encoding


def test_missing_encoding_files_fall_back_to_characters_without_network(
    no_encodings: Path, network_attempts: list[str]
) -> None:
    counter = TiktokenCounter()
    started = time.monotonic()
    assert counter.count_text("hello world", "gpt-4o") == 3  # ceil(11 / 4)
    assert counter.count_text("hello world", "gpt-4") == 3
    assert counter.estimated
    assert time.monotonic() - started < 5  # no download attempt, no hang
    assert network_attempts == []


def test_corrupt_encoding_file_falls_back_without_network(
    no_encodings: Path, network_attempts: list[str]
) -> None:
    url = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
    (no_encodings / hashlib.sha1(url.encode()).hexdigest()).write_bytes(b"garbage")
    counter = TiktokenCounter()
    assert counter.count_text("hello world", "gpt-4") == 3
    assert counter.estimated
    assert network_attempts == []


def test_empty_cache_dir_setting_falls_back(
    monkeypatch: pytest.MonkeyPatch, network_attempts: list[str]
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")  # tiktoken would always download
    assert TiktokenCounter().count_text("abcd", "gpt-4") == 1
    assert network_attempts == []


def test_loader_errors_never_reach_the_caller(
    tiktoken_encodings: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("tiktoken broke")

    monkeypatch.setattr(tiktoken, "Encoding", broken)
    assert TiktokenCounter().count_text("abcdefgh", "gpt-4") == 2


def test_shared_files_are_named_as_tiktoken_names_its_cache(tiktoken_encodings: Path) -> None:
    for spec in tokens.ENCODING_FILES.values():
        assert (tiktoken_encodings / hashlib.sha1(spec.url.encode()).hexdigest()).is_file()


def test_empty_text_is_zero_tokens(no_encodings: Path) -> None:
    assert TiktokenCounter().count_text("", "gpt-4") == 0
    assert CharEstimateCounter().count_text("", "gpt-4") == 0


@pytest.mark.parametrize(("text", "count"), [("a", 1), ("abcd", 1), ("abcde", 2), ("x" * 9, 3)])
def test_char_estimate_is_ceiling_of_a_quarter(text: str, count: int) -> None:
    assert CharEstimateCounter().count_text(text, "any") == count
    assert CharEstimateCounter().estimated


def test_default_counter_is_tiktoken(tiktoken_encodings: Path) -> None:
    counter: TokenCounter = make_default_counter()
    assert isinstance(counter, TiktokenCounter)
    assert counter.count_text("hello world", "gpt-4") == 2


def test_chat_counts_messages_plus_cookbook_overhead() -> None:
    body = {
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "name": "bob", "content": "hi there"},
        ]
    }
    # (3 + system + 2 words) + (3 + user + bob + 2 words + 1 name) + 3 priming
    assert count_request_tokens(_WordCounter(), body, Endpoint.CHAT, "m") == 6 + 8 + 3


def test_chat_counts_text_parts_and_an_image_at_its_bound() -> None:
    body = {
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "what is this"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                ],
            }
        ]
    }
    expected = 3 + 1 + 3 + 3 + IMAGE_TOKEN_BOUND  # the image's bytes are not what is priced
    assert count_request_tokens(_WordCounter(), body, Endpoint.CHAT, "m") == expected


def test_chat_counts_assistant_tool_calls_and_tool_schemas() -> None:
    body = {
        "messages": [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"function": {"name": "lookup", "arguments": "{} x"}}],
            }
        ],
        "tools": [{"type": "function"}],
    }
    # 3 + assistant + lookup + 2 words of arguments + 3 priming + 1 word of tools JSON
    assert count_request_tokens(_WordCounter(), body, Endpoint.CHAT, "m") == 3 + 1 + 1 + 2 + 3 + 1


def test_chat_exact_count_with_tiktoken(tiktoken_encodings: Path) -> None:
    body = {"messages": [{"role": "user", "content": "hello world"}]}
    # 3 per message + "user" (1) + "hello world" (2) + 3 priming
    assert count_request_tokens(TiktokenCounter(), body, Endpoint.CHAT, "gpt-4") == 9


@pytest.mark.parametrize(
    ("value", "count"),
    [
        ("one two three", 3),
        (["one two", "three"], 3),
        ([101, 102, 103, 104], 4),
        ([[1, 2], [3, 4, 5]], 5),
        ([], 0),
        (None, 0),
        (42, 2),  # not text: counted by its size, the JSON `42`
    ],
)
def test_embeddings_input_shapes(value: Any, count: int) -> None:
    body = {"model": "e", "input": value}
    assert count_request_tokens(_WordCounter(), body, Endpoint.EMBEDDINGS, "m") == count


@pytest.mark.parametrize(("value", "count"), [("say this", 2), (["a b", "c"], 3), ([7, 8], 2)])
def test_completions_prompt_shapes(value: Any, count: int) -> None:
    body = {"model": "c", "prompt": value}
    assert count_request_tokens(_WordCounter(), body, Endpoint.COMPLETIONS, "m") == count


def test_a_null_prompt_counts_as_the_default_prompt_token() -> None:
    # OpenAI reads a null prompt as "<|endoftext|>", one special token.
    body = {"model": "c", "prompt": None}
    assert count_request_tokens(_WordCounter(), body, Endpoint.COMPLETIONS, "m") == 1


def test_malformed_chat_body_counts_what_it_can() -> None:
    # What is not text counts by the size of its JSON: `"messages":"nope"` is 17 bytes.
    assert count_request_tokens(_WordCounter(), {"messages": "nope"}, Endpoint.CHAT, "m") == 17
    body = {"messages": [None, "x", {"role": 5, "content": {"a": 1}}]}
    # priming 3; null 0; `"x"` 3; 3 + `"role":5` 8 + `"content":{"a":1}` 17
    assert count_request_tokens(_WordCounter(), body, Endpoint.CHAT, "m") == 3 + 3 + 3 + 8 + 17


SAMPLES = [
    "hello world",
    "Réponds en français: 你好世界 <|endoftext|> 🙂",
    "def f(x):\n    return x ** 2  # squared\n\n\n",
    "word " * 20_000,  # past one slice: counted in slices
    "nospace" * 12_000,
]


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_the_gateways_encodings_count_as_tiktokens_own_and_keep_no_rank_table(
    tiktoken_encodings: Path, name: str
) -> None:
    ours = tokens._load_encoding(name)
    assert ours is not None
    reference = tiktoken.get_encoding(name)
    assert ours is not reference  # tiktoken's process-wide registry is left alone
    assert ours._mergeable_ranks == {}  # the Python copy of the ranks is dropped
    assert len(reference._mergeable_ranks) > 100_000
    model = "gpt-4o" if name == "o200k_base" else "gpt-4"
    counter = TiktokenCounter([name])
    for text in SAMPLES[:4]:
        assert counter.count_text(text, model) == len(reference.encode_ordinary(text))
    spaceless = SAMPLES[4]  # cut without a space to cut at: within a token or two
    exact = len(reference.encode_ordinary(spaceless))
    assert abs(counter.count_text(spaceless, model) - exact) <= 2


@pytest.mark.parametrize(
    ("models", "loaded", "claude"),
    [
        (["gpt-4o-mini", "claude-3-5-sonnet"], ("o200k_base",), "o200k_base"),
        (["gpt-4", "claude-3-5-sonnet"], ("cl100k_base",), "cl100k_base"),
        (["gpt-4o", "text-embedding-3-small"], ("cl100k_base", "o200k_base"), "cl100k_base"),
        (["llama-3.1-70b", "mistral-small"], ("cl100k_base",), "cl100k_base"),
        ([], ("cl100k_base",), "cl100k_base"),
    ],
)
def test_only_the_encodings_the_configured_models_need_are_loaded(
    tiktoken_encodings: Path, models: list[str], loaded: tuple[str, ...], claude: str
) -> None:
    counter = make_default_counter(models)
    assert isinstance(counter, TiktokenCounter)
    counter.warm()
    assert counter.loaded == loaded
    assert counter.encoding_for("claude-3-5-sonnet") == claude
    for model in models:  # OpenAI's models keep their own encoding
        if tokens.own_encoding(model):
            assert counter.encoding_for(model) == encoding_name_for(model)


@pytest.mark.parametrize(
    ("model", "own"),
    [
        ("gpt-4o-mini", "o200k_base"),
        ("openai/gpt-5", "o200k_base"),
        ("gpt-4-turbo", "cl100k_base"),
        ("gpt-35-turbo", "cl100k_base"),
        ("text-embedding-3-large", "cl100k_base"),
        ("claude-3-5-sonnet", None),
        ("my-azure-deployment", None),
    ],
)
def test_own_encoding_is_known_for_openai_models_only(model: str, own: str | None) -> None:
    assert tokens.own_encoding(model) == own


def test_a_test_needing_exact_counts_fails_naming_tiktoken_and_the_variable(
    no_encodings: Path,
) -> None:
    from tests.support.encodings import require_encodings

    with pytest.raises(pytest.fail.Exception) as failed:
        require_encodings()
    message = str(failed.value)
    assert "tiktoken" in message and f"TIKTOKEN_CACHE_DIR={no_encodings}" in message
    assert "cl100k_base, o200k_base" in message and "gateway tokenizer fetch" in message


def test_responses_count_instructions_input_items_and_tools() -> None:
    counter = CharEstimateCounter()  # ceil(len / 4): easy to check by hand
    body = {
        "instructions": "abcdefgh",  # 2
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "abcd"}]},  # 1 + 1
            {"type": "function_call", "name": "look", "arguments": "{}"},  # 1 + 1
            {"type": "function_call_output", "call_id": "c", "output": "abcdefgh"},  # 2
        ],
        "tools": [{"type": "function", "name": "f"}],
    }
    tools = (len('[{"type":"function","name":"f"}]') + 3) // 4
    # Reply priming 3, and 3 per message: instructions and each item.
    call_id = len('"call_id":"c"')  # not text: counted by its size
    expected = 3 + (3 + 2) + (3 + 1 + 1) + (3 + 1 + 1) + (3 + 2 + call_id) + tools
    assert count_request_tokens(counter, body, Endpoint.RESPONSES, "m") == expected
    assert count_request_tokens(counter, {"input": "abcd"}, Endpoint.RESPONSES, "m") == 3 + 3 + 1
