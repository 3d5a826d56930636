"""Gateway keys are held only as hex SHA-256 digests: the one hash of a key, for the config
loader, the key ring and ``gateway hash-key``."""

from __future__ import annotations

import hashlib
import re

KEY_HASH_PREFIX = "sha256:"
_HEX64 = re.compile(r"[0-9a-fA-F]{64}")


def hash_key(key: str) -> str:
    """The hex SHA-256 of a key, as stored and compared."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def parse_key_hash(value: str) -> str:
    """``sha256:<64 hex>`` -> the lower-case hex; ValueError otherwise.

    The error never quotes the value: it may be a key pasted by mistake.
    """
    if not value.startswith(KEY_HASH_PREFIX):
        raise ValueError(f"must be '{KEY_HASH_PREFIX}' followed by 64 hex digits")
    digest = value[len(KEY_HASH_PREFIX) :]
    if not _HEX64.fullmatch(digest):
        raise ValueError(f"must be '{KEY_HASH_PREFIX}' followed by 64 hex digits")
    return digest.lower()
