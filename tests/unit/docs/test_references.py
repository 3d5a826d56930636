"""The documentation stands on its own: it cites nothing outside the repository, and its
links between files and sections resolve."""

from __future__ import annotations

from pathlib import Path

import pytest

from .markdown import DOCS, ROOT, anchors, links

# Built from parts, so that this file does not match its own patterns.
SHARED = "shared" + "/"
OUTSIDE = ("../" + "shared", "/wo" + "rk/")
SPEC_NAMES = tuple(name + ".md" for name in ("ROUTING", "GATEWAY", "DESIGN", "PERFORMANCE"))
DECISION_RECORD = "AD" + "R-"


def _files(*roots: Path) -> list[Path]:
    found: list[Path] = []
    for root in roots:
        if root.is_file():
            found.append(root)
        else:
            found += [
                p
                for p in sorted(root.rglob("*"))
                if p.is_file() and p.suffix in (".md", ".py", ".yaml", ".txt", ".html")
            ]
    return found


def user_docs() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


def _hits(paths: list[Path], needles: tuple[str, ...]) -> list[str]:
    hits = []
    for path in paths:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if any(needle in line for needle in needles):
                hits.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    return hits


def test_the_docs_exist() -> None:
    names = {path.name for path in DOCS.glob("*.md")}
    expected = {"architecture.md", "configuration.md", "routing.md", "api.md", "telemetry.md"}
    assert expected | {"operations.md"} <= names


def test_readme_and_docs_cite_nothing_outside_the_repository() -> None:
    needles = (*OUTSIDE, SHARED, *SPEC_NAMES, DECISION_RECORD)
    hits = _hits(user_docs(), needles)
    assert not hits, "\n".join(hits)


def test_code_and_tests_point_at_no_folder_outside_the_repository() -> None:
    paths = _files(ROOT / "gateway", ROOT / "tests")
    hits = _hits(paths, (*OUTSIDE, SHARED))
    assert not hits, "\n".join(hits)


@pytest.mark.parametrize("doc", user_docs(), ids=lambda p: p.name)
def test_links_resolve_to_files_and_headings(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    broken = []
    for target in links(text):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        name, _, anchor = target.partition("#")
        path = (doc.parent / name).resolve() if name else doc
        if not path.is_file():
            broken.append(f"{target}: no such file")
        elif anchor and anchor not in anchors(path.read_text(encoding="utf-8")):
            broken.append(f"{target}: no such heading")
    assert not broken, f"{doc.name}: " + "; ".join(broken)
