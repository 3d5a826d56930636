"""Code cites the repository's own docs, by sections that exist.

Comments and docstrings in gateway/, tests/, bench/, scripts/ and alembic/ point readers
at ``docs/<file>.md#<section>``. These tests fail when a citation of a document outside
the repository comes back (a reader of the repository cannot open it), and when a cited
file or section does not exist (a heading was renamed). Links inside the docs are
test_references.py's.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from .markdown import DOCS, ROOT, anchors

SOURCE_DIRS = ("gateway", "tests", "bench", "scripts", "alembic")
TEXT_SUFFIXES = {".py", ".js", ".css", ".html", ".yaml", ".yml", ".mako", ".ini", ".toml", ".md"}
# Built from parts, so that this file does not match itself.
_SPEC = "|".join(name + r"\.md" for name in ("ROUTING", "GATEWAY", "DESIGN", "PERFORMANCE"))
_ELSEWHERE = "|".join(("ADR" + "-[0-9]", "review" + " round", "shared" + "/spec"))
OUTSIDE = re.compile(rf"\b({_SPEC})\b|{_ELSEWHERE}")
CITATION = re.compile(r"docs/([A-Za-z0-9_./-]+\.md)#([A-Za-z0-9_-]+)")


def _source_files() -> list[Path]:
    found: list[Path] = []
    for directory in SOURCE_DIRS:
        for path in sorted((ROOT / directory).rglob("*")):
            if path.is_file() and path.suffix in TEXT_SUFFIXES and "__pycache__" not in path.parts:
                found.append(path)
    return found


@cache
def _anchors_of(document: Path) -> frozenset[str]:
    return frozenset(anchors(document.read_text(encoding="utf-8")))


def _where(path: Path, text: str, position: int) -> str:
    return f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, position) + 1}"


def test_code_cites_no_document_outside_the_repository() -> None:
    found = [
        f"{_where(path, text, match.start())}: {match.group(0)}"
        for path in _source_files()
        for text in [path.read_text(encoding="utf-8", errors="replace")]
        for match in OUTSIDE.finditer(text)
    ]
    assert not found, "cite docs/<file>.md#<section> instead:\n" + "\n".join(found)


def test_every_docs_section_cited_in_code_exists() -> None:
    cited = 0
    missing: list[str] = []
    for path in _source_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        for match in CITATION.finditer(text):
            cited += 1
            document = DOCS / match.group(1)
            if not document.is_file():
                missing.append(f"{_where(path, text, match.start())}: no {match.group(1)}")
            elif match.group(2) not in _anchors_of(document):
                missing.append(f"{_where(path, text, match.start())}: {match.group(0)}")
    assert cited > 20  # the scan does find the citations
    assert not missing, "no such section:\n" + "\n".join(missing)
