"""tiktoken's encoding files for the tests that need exact token counts.

They come from the folder ``TIKTOKEN_CACHE_DIR`` names (``./scripts/test`` downloads them
into the repository's ``.cache/tiktoken`` when the variable is unset). Without them a
count is characters/4 and such a test would fail on a bare number; it fails here instead,
saying what is missing and how to get it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gateway.usage.tokens import ENCODING_FILES, cache_file_name, file_is_valid


def require_encodings() -> Path:
    """The folder holding both encodings, or a test failure that names what to do."""
    where = os.environ.get("TIKTOKEN_CACHE_DIR", "")
    folder = Path(where) if where else None
    missing = [
        name
        for name, spec in ENCODING_FILES.items()
        if folder is None or not file_is_valid(folder / cache_file_name(spec), spec)
    ]
    if missing:
        shown = f"TIKTOKEN_CACHE_DIR={where}" if where else "TIKTOKEN_CACHE_DIR is not set"
        pytest.fail(
            f"this test needs exact token counts, but tiktoken's {', '.join(missing)} "
            f"encoding is not available ({shown}). Run ./scripts/test (it downloads them), "
            "or `gateway tokenizer fetch --dir DIR` and export TIKTOKEN_CACHE_DIR=DIR.",
            pytrace=False,
        )
    assert folder is not None
    return folder
