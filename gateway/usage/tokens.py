"""Token counting for estimates: tiktoken behind a protocol, characters/4 as fallback.

tiktoken downloads its BPE files on first use; a gateway without internet access
would hang on that download. So ``TiktokenCounter`` never lets tiktoken fetch:
it looks for the file in tiktoken's own cache layout first (``TIKTOKEN_CACHE_DIR``,
else ``DATA_GYM_CACHE_DIR``, else ``<tmp>/data-gym-cache``; each file named by the
SHA-1 of its URL), checks its SHA-256 itself (tiktoken would delete a bad file and
download it again), and only then asks tiktoken for the encoding. If any of that
fails the counter counts characters/4 and reports ``estimated``; it never raises.
``gateway tokenizer fetch`` (``download.py``) puts the files where this looks.

Memory: an encoding costs tens of megabytes (o200k_base ~43 MB, cl100k_base ~25 MB
in tiktoken's Rust core). The counter loads only the encodings its models need,
builds each ``Encoding`` itself rather than through tiktoken's process-wide
registry, and then drops the Python dict of mergeable ranks the ``Encoding``
keeps beside the Rust core (another ~15 and ~28 MB): counting reads the Rust
core alone, and that dict only serves pickling, which nothing here does.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

import tiktoken
from tiktoken_ext import openai_public  # type: ignore[import-untyped]

from gateway.usage.tally import count_sliced

_O200K_PREFIXES = ("gpt-4o", "chatgpt-4o", "o1", "o3", "o4", "gpt-4.1", "gpt-4.5", "gpt-5")
# OpenAI's earlier models (checked after the prefixes above: "gpt-4o" starts with "gpt-4").
_CL100K_PREFIXES = ("gpt-4", "gpt-3", "gpt-35", "text-embedding-", "davinci", "babbage")


@dataclass(frozen=True, slots=True)
class EncodingFile:
    url: str
    sha256: str


# Copied from tiktoken_ext.openai_public: the URL names the cache file, the hash guards it.
ENCODING_FILES = {
    "cl100k_base": EncodingFile(
        "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
    "o200k_base": EncodingFile(
        "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
}


class TextCounter(Protocol):
    def count_text(self, text: str, model_name: str) -> int: ...


class TokenCounter(TextCounter, Protocol):
    @property
    def estimated(self) -> bool:
        """True when counts are characters/4 rather than a real tokenizer's."""
        ...

    def warm(self) -> None:
        """Load what counting needs now (blocking: call it off the event loop)."""
        ...

    def encoding_for(self, model_name: str) -> str:
        """What counts ``model_name``'s text: models that share it share their counts."""
        ...


class CharEstimateCounter:
    """ceil(len(text) / 4): the rule of thumb for English text."""

    estimated = True

    def warm(self) -> None:
        return None

    def encoding_for(self, model_name: str) -> str:
        return "characters"

    def count_text(self, text: str, model_name: str) -> int:
        return (len(text) + 3) // 4


def encoding_name_for(model_name: str) -> str:
    """o200k_base for the GPT-4o generation and later, cl100k_base otherwise."""
    return own_encoding(model_name) or "cl100k_base"


def own_encoding(model_name: str) -> str | None:
    """The encoding of an OpenAI model's own tokenizer; None for other makers' models,
    which no tiktoken encoding counts exactly (cl100k_base or another stands in)."""
    name = model_name.rsplit("/", 1)[-1].lower()  # "openai/gpt-4o" on aggregators
    name = name.removeprefix("ft:")
    if name.startswith(_O200K_PREFIXES):
        return "o200k_base"
    if name.startswith(_CL100K_PREFIXES):
        return "cl100k_base"
    return None


def tiktoken_cache_dir() -> str | None:
    """The directory tiktoken reads its cache from; None when caching is disabled."""
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        cache_dir = os.environ["TIKTOKEN_CACHE_DIR"]
    elif "DATA_GYM_CACHE_DIR" in os.environ:
        cache_dir = os.environ["DATA_GYM_CACHE_DIR"]
    else:
        cache_dir = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    return cache_dir or None  # "" makes tiktoken always download


def cache_file_name(spec: EncodingFile) -> str:
    """The name tiktoken gives the file in its cache: the SHA-1 of its URL."""
    return hashlib.sha1(spec.url.encode()).hexdigest()


def file_is_valid(path: str | os.PathLike[str], spec: EncodingFile) -> bool:
    try:
        with open(path, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest() == spec.sha256
    except OSError:
        return False


def _cached_file_is_valid(spec: EncodingFile) -> bool:
    cache_dir = tiktoken_cache_dir()
    if cache_dir is None:
        return False
    return file_is_valid(os.path.join(cache_dir, cache_file_name(spec)), spec)


def fallback_warning(missing: Iterable[str]) -> str:
    where = tiktoken_cache_dir()
    shown = f"TIKTOKEN_CACHE_DIR={where}" if where else "TIKTOKEN_CACHE_DIR is empty"
    return (
        f"tiktoken encodings not loaded ({', '.join(sorted(missing))}; {shown}): the token "
        "counts the gateway makes itself (calls whose upstream reports no usage, budget "
        "holds) are characters/4 estimates. "
        "Run `gateway tokenizer fetch` once, or set TIKTOKEN_CACHE_DIR to a folder that "
        "holds the encoding files."
    )


def _load_encoding(name: str) -> tiktoken.Encoding | None:
    spec = ENCODING_FILES.get(name)
    if spec is None or not _cached_file_is_valid(spec):
        return None
    try:
        encoding = tiktoken.Encoding(**openai_public.ENCODING_CONSTRUCTORS[name]())
    except Exception:  # a tokenizer that fails to load must not fail the call
        return None
    # The Rust core holds its own copy of the ranks; encode_ordinary reads only that.
    encoding._mergeable_ranks = {}
    return encoding


class TiktokenCounter:
    """Counts with tiktoken, loading each encoding once (see module doc).

    ``encodings`` names the encodings to load (those the configured models need); a
    model whose encoding is not among them (another maker's model when only GPT-4o
    generation models are configured) is counted with the first of them rather than
    loading another for it. None: every known encoding, each when first used.
    Loading parses a multi-megabyte file (a fraction of a second): call ``warm()``
    at startup, off the event loop, to keep that off the first request.
    """

    def __init__(self, encodings: Iterable[str] | None = None) -> None:
        self._encodings: dict[str, tiktoken.Encoding | None] = {}
        self._lock = threading.Lock()
        self._fallback = CharEstimateCounter()
        self._wanted: tuple[str, ...] | None = None
        if encodings is not None:
            self._wanted = tuple(sorted(set(encodings))) or ("cl100k_base",)

    def warm(self) -> None:
        for name in self._wanted or ENCODING_FILES:
            self._encoding(name)

    @property
    def estimated(self) -> bool:
        return bool(self.missing_encodings())

    def missing_encodings(self) -> list[str]:
        """The encodings that could not be loaded (their counts are characters/4)."""
        self.warm()
        return [name for name, encoding in self._encodings.items() if encoding is None]

    @property
    def loaded(self) -> tuple[str, ...]:
        """The encodings loaded so far."""
        return tuple(sorted(name for name, enc in self._encodings.items() if enc is not None))

    def encoding_for(self, model_name: str) -> str:
        name = encoding_name_for(model_name)
        if self._wanted is None or name in self._wanted:
            return name
        return self._wanted[0]

    def count_text(self, text: str, model_name: str) -> int:
        if not text:
            return 0
        encoding = self._encoding(self.encoding_for(model_name))
        if encoding is None:
            return self._fallback.count_text(text, model_name)
        # Special-token text in a prompt ("<|endoftext|>") is just text to the model.
        # Long texts go in slices: a bounded list of token ids, not one per token of it all.
        return count_sliced(lambda part: len(encoding.encode_ordinary(part)), text)

    def _encoding(self, name: str) -> tiktoken.Encoding | None:
        if name in self._encodings:
            return self._encodings[name]
        with self._lock:
            if name not in self._encodings:
                self._encodings[name] = _load_encoding(name)
            return self._encodings[name]


def make_default_counter(model_names: Iterable[str] | None = None) -> TokenCounter:
    """A tiktoken counter; given the configured models' names, it loads the encodings of the
    OpenAI models among them (cl100k_base when there are none): other makers' models share
    one of those rather than cost another."""
    if model_names is None:
        return TiktokenCounter()
    return TiktokenCounter({e for name in model_names if (e := own_encoding(name))})


def load_warning(counter: TokenCounter) -> str | None:
    """None when counts are exact, else the one start-up line naming what to do."""
    if not counter.estimated:
        return None
    if isinstance(counter, TiktokenCounter):
        return fallback_warning(counter.missing_encodings())
    return fallback_warning(ENCODING_FILES)
