"""Valid ids to show next to an unknown one: the closest few, by difflib's similarity."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

SHOWN = 5


def closest(name: str, valid: Iterable[str], limit: int = SHOWN) -> list[str]:
    """Up to ``limit`` valid ids, the most similar to ``name`` first (ties keep their order)."""
    matcher = difflib.SequenceMatcher(b=name)  # difflib caches what it learns about b

    def similarity(candidate: str) -> float:
        matcher.set_seq1(candidate)
        return matcher.ratio()

    return sorted(dict.fromkeys(valid), key=similarity, reverse=True)[:limit]


def valid_hint(name: str, valid: Iterable[str], kind: str) -> str:
    """``"Valid configurations: a, b."`` (the closest few of many), or a note there are none."""
    ids = list(dict.fromkeys(valid))
    if not ids:
        return f"There is no {kind} to use."
    shown = ", ".join(closest(name, ids))
    if len(ids) <= SHOWN:
        return f"Valid {kind}s: {shown}."
    return f"Closest valid {kind}s: {shown} ({len(ids)} in all)."


def _folded(name: str) -> str:
    return name.replace("_", "").replace("-", "").lower()


def did_you_mean(name: str, valid: Iterable[str]) -> str | None:
    """The one valid name ``name`` was most likely meant to be, or None when none is close:
    the same name in another case or spelling (``max_body_bytes`` for ``maxBodyBytes``),
    else difflib's closest match at a similarity of 0.75 or more (``contextLenght``)."""
    names = list(dict.fromkeys(valid))
    folded = _folded(name)
    for candidate in names:
        if _folded(candidate) == folded:
            return candidate
    matches = difflib.get_close_matches(name, names, n=1, cutoff=0.75)
    return matches[0] if matches else None
