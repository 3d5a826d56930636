"""Reading the repository's Markdown documentation: sections, tables, code blocks, links."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
DOCS = ROOT / "docs"

_FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```\s*$", re.DOTALL | re.MULTILINE)
_HEADING = re.compile(r"^(#{1,6}) (.+?)\s*$", re.MULTILINE)
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_BACKTICKED = re.compile(r"`([^`]+)`")


def read_doc(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def without_code_blocks(text: str) -> str:
    """The text with fenced blocks blanked out, offsets kept (a ``#`` comment in a block
    is no heading, a ``|`` line in one no table row)."""
    return _FENCE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def section(text: str, heading: str) -> str:
    """The body under the heading whose text is exactly ``heading``, up to the next heading
    of the same or a higher level."""
    plain = without_code_blocks(text)
    for match in _HEADING.finditer(plain):
        if match.group(2) == heading:
            level = len(match.group(1))
            rest = text[match.end() :]
            ends = [
                m.start()
                for m in _HEADING.finditer(without_code_blocks(rest))
                if len(m.group(1)) <= level
            ]
            return rest[: ends[0]] if ends else rest
    raise AssertionError(f"no heading {heading!r}")


def table_rows(text: str) -> list[list[str]]:
    """The cells of every Markdown table row in ``text``, header and separator rows left out."""
    rows: list[list[str]] = []
    lines = without_code_blocks(text).splitlines()
    for index, line in enumerate(lines):
        if not line.startswith("|"):
            continue
        following = lines[index + 1] if index + 1 < len(lines) else ""
        if re.fullmatch(r"\|[\s:|-]+\|", following.strip()):
            continue  # a header row
        if re.fullmatch(r"\|[\s:|-]+\|", line.strip()):
            continue  # the separator
        cells = re.split(r"(?<!\\)\|", line.strip())[1:-1]
        rows.append([cell.strip() for cell in cells])
    return rows


def backticked(cell: str) -> list[str]:
    return _BACKTICKED.findall(cell)


@dataclass(frozen=True, slots=True)
class CodeBlock:
    info: str  # the fence's info string: "sql", "sql postgresql", ...
    body: str


def code_blocks(text: str) -> list[CodeBlock]:
    return [CodeBlock(m.group(1).strip(), m.group(2)) for m in _FENCE.finditer(text)]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    return {slug(m.group(2)) for m in _HEADING.finditer(without_code_blocks(text))}


def links(text: str) -> list[str]:
    return _LINK.findall(without_code_blocks(text))
