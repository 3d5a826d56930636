"""docs/operations.md's table of tiktoken's files is the gateway's own: the URL, the name
tiktoken caches the file under and its SHA-256, for each encoding it reads."""

from __future__ import annotations

from gateway.usage.tokens import ENCODING_FILES, cache_file_name

from .markdown import backticked, read_doc, table_rows

DOC = read_doc("operations.md")


def test_the_offline_table_names_each_encoding_file_as_tiktoken_caches_it() -> None:
    rows = {
        cells[0]: cells[1:]
        for cells in (
            [value for cell in row for value in backticked(cell)] for row in table_rows(DOC)
        )
        if cells and cells[0] in ENCODING_FILES and len(cells) == 4
    }

    assert rows == {
        name: [spec.url, cache_file_name(spec), spec.sha256]
        for name, spec in ENCODING_FILES.items()
    }
