"""The models list in Anthropic's shape (pure): one entry per configuration id."""

from __future__ import annotations

from typing import Any

# Configurations have no creation date; the epoch says so without inventing one.
CREATED_AT = "1970-01-01T00:00:00Z"


def anthropic_model_list(ids: list[str]) -> dict[str, Any]:
    data = [
        {"type": "model", "id": cid, "display_name": cid, "created_at": CREATED_AT} for cid in ids
    ]
    return {
        "data": data,
        "has_more": False,
        "first_id": ids[0] if ids else None,
        "last_id": ids[-1] if ids else None,
    }
