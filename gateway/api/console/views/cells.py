"""Cells and choices the Calls, decision and Why pages share."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gateway.api.console.html import (
    esc,
)


def status_cell(call: dict[str, Any]) -> str:
    if call["success"]:
        return '<span class="good">ok</span>' + (" (cache)" if call["cacheHit"] else "")
    return (
        f'<span class="bad">{esc(call["httpStatus"])} {esc(call["errorClass"] or "error")}</span>'
    )


def served_cell(call: dict[str, Any]) -> str:
    if call["servedModel"]:
        return f"{esc(call['servedModel'])} <small>({esc(call['servedProvider'])})</small>"
    if call["model"]:
        return f"– <small>(tried {esc(call['model'])})</small>"
    return "–"


def choices(values: Sequence[str], everything: str = "any") -> list[tuple[str, str]]:
    return [("", everything), *((v, v) for v in values)]
