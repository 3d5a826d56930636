"""`gateway tokenizer fetch`: the encodings downloaded once, checked, where tiktoken looks."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from gateway.cli import main
from gateway.usage.download import fetch_encodings
from gateway.usage.tokens import ENCODING_FILES, TiktokenCounter, cache_file_name, file_is_valid


class _Mirror:
    """A static HTTP server on loopback serving NAME.tiktoken files; counts its requests."""

    def __init__(self, folder: Path) -> None:
        self.requests: list[str] = []
        mirror = self

        class Handler(SimpleHTTPRequestHandler):
            def do_GET(self) -> None:
                mirror.requests.append(self.path)
                super().do_GET()

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self._server = ThreadingHTTPServer(
            ("127.0.0.1", 0), partial(Handler, directory=str(folder))
        )
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def mirror_folder(tiktoken_encodings: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "mirror"
    folder.mkdir()
    for name, spec in ENCODING_FILES.items():
        shutil.copy(tiktoken_encodings / cache_file_name(spec), folder / f"{name}.tiktoken")
    return folder


@pytest.fixture
def mirror(mirror_folder: Path) -> Iterator[_Mirror]:
    served = _Mirror(mirror_folder)
    yield served
    served.close()


def test_fetch_downloads_checks_and_keeps_the_files_where_tiktoken_looks(
    mirror: _Mirror,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cache = tmp_path / "cache"
    assert main(["tokenizer", "fetch", "--dir", str(cache), "--mirror", mirror.url]) == 0
    out = capsys.readouterr().out
    assert "cl100k_base: downloaded" in out and "o200k_base: downloaded" in out
    assert f"export TIKTOKEN_CACHE_DIR={cache.resolve()}" in out
    for spec in ENCODING_FILES.values():
        assert file_is_valid(cache / cache_file_name(spec), spec)
    assert sorted(mirror.requests) == ["/cl100k_base.tiktoken", "/o200k_base.tiktoken"]

    assert main(["tokenizer", "fetch", "--dir", str(cache), "--mirror", mirror.url]) == 0
    assert "already there" in capsys.readouterr().out
    assert len(mirror.requests) == 2  # nothing downloaded twice

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    counter = TiktokenCounter()
    assert counter.count_text("hello world", "gpt-4") == 2 and not counter.estimated


def test_a_file_that_fails_its_checksum_is_not_kept(
    mirror: _Mirror, mirror_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (mirror_folder / "o200k_base.tiktoken").write_bytes(b"not an encoding")
    cache = tmp_path / "cache"
    assert main(["tokenizer", "fetch", "--dir", str(cache), "--mirror", mirror.url]) == 1
    err = capsys.readouterr().err
    assert "SHA-256" in err and "o200k_base" in err
    assert not (cache / cache_file_name(ENCODING_FILES["o200k_base"])).exists()
    assert [p.name for p in cache.iterdir()] == [cache_file_name(ENCODING_FILES["cl100k_base"])]


def test_an_unreachable_source_fails_with_a_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    closed = _Mirror(tmp_path)
    closed.close()
    args = ["tokenizer", "fetch", "--dir", str(tmp_path / "c"), "--mirror", closed.url]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert f"could not fetch tiktoken's encodings: {closed.url}/cl100k_base.tiktoken: " in err
    folder = (tmp_path / "c").resolve()
    for name, spec in ENCODING_FILES.items():  # what to put where, by hand
        assert f"  {name}: {spec.url}\n" in err
        assert f"    save as {folder / cache_file_name(spec)}\n" in err
        assert f"    SHA-256 {spec.sha256} " in err
    assert f"then set TIKTOKEN_CACHE_DIR={folder} for gateway serve" in err


def test_offline_steps_list_only_the_files_still_missing(
    tiktoken_encodings: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    kept = cache_file_name(ENCODING_FILES["cl100k_base"])
    shutil.copy(tiktoken_encodings / kept, cache / kept)
    closed = _Mirror(tmp_path)
    closed.close()

    assert main(["tokenizer", "fetch", "--dir", str(cache), "--mirror", closed.url]) == 1

    err = capsys.readouterr().err
    assert f"{closed.url}/o200k_base.tiktoken: " in err
    assert f"save as {cache.resolve() / cache_file_name(ENCODING_FILES['o200k_base'])}" in err
    assert "cl100k_base" not in err


def test_without_a_mirror_the_files_come_from_tiktokens_own_urls(tmp_path: Path) -> None:
    asked: list[str] = []

    def refuse(url: str, timeout: float) -> bytes:
        asked.append(url)
        raise OSError("offline")

    with pytest.raises(OSError):
        fetch_encodings(tmp_path, fetch=refuse)
    assert asked == [ENCODING_FILES["cl100k_base"].url]
