"""Download tiktoken's encoding files once, into the folder ``TIKTOKEN_CACHE_DIR`` names.

The gateway itself never downloads (see ``tokens``): this is the explicit step a user
runs (``gateway tokenizer fetch``) on a machine with internet access, or with a
mirror of the two files. Each file is checked against its SHA-256 before it is kept,
and written under the name tiktoken's cache gives it (the SHA-1 of its URL).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from gateway.usage.tokens import ENCODING_FILES, cache_file_name, file_is_valid

Fetcher = Callable[[str, float], bytes]  # url, timeout -> body
MAX_BYTES = 64 * 1024 * 1024  # the larger file is ~3.6 MB; anything far bigger is not it


@dataclass(frozen=True, slots=True)
class Fetched:
    encoding: str
    path: Path
    downloaded: bool  # False: a valid copy was there already


def _urlopen(url: str, timeout: float) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as answer:
        body: bytes = answer.read(MAX_BYTES + 1)
    if len(body) > MAX_BYTES:
        raise ValueError(f"{url}: more than {MAX_BYTES} bytes")
    return body


def fetch_encodings(
    directory: Path,
    *,
    mirror: str | None = None,
    fetch: Fetcher = _urlopen,
    timeout: float = 60.0,
) -> list[Fetched]:
    """Every encoding in ``directory``, downloading those missing or damaged.

    ``mirror`` replaces the download location's base (``{mirror}/cl100k_base.tiktoken``);
    the files keep their usual names, so tiktoken finds them. Raises ``OSError`` when a
    download fails and ``ValueError`` when a file is not the expected one; a file that
    fails its check is never written.
    """
    directory.mkdir(parents=True, exist_ok=True)
    results: list[Fetched] = []
    for name, spec in ENCODING_FILES.items():
        target = directory / cache_file_name(spec)
        if file_is_valid(target, spec):
            results.append(Fetched(name, target, downloaded=False))
            continue
        url = f"{mirror.rstrip('/')}/{name}.tiktoken" if mirror else spec.url
        try:
            body = fetch(url, timeout)
        except OSError as error:  # urllib says why, not what it was fetching
            raise OSError(f"{url}: {getattr(error, 'reason', None) or error}") from error
        digest = hashlib.sha256(body).hexdigest()
        if digest != spec.sha256:
            raise ValueError(f"{url}: SHA-256 {digest} is not {name}'s {spec.sha256}")
        _write_atomically(target, body)
        results.append(Fetched(name, target, downloaded=True))
    return results


def _write_atomically(target: Path, body: bytes) -> None:
    # A reader (a starting gateway) never sees half a file.
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=".partial-")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(body)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def missing_encodings(directory: Path) -> list[str]:
    """The encodings with no valid file in ``directory``."""
    return [
        name
        for name, spec in ENCODING_FILES.items()
        if not file_is_valid(directory / cache_file_name(spec), spec)
    ]


def offline_steps(directory: Path, names: list[str]) -> list[str]:
    """What to do by hand when the download fails: where each missing file comes from,
    the name tiktoken looks it up by in ``directory``, its SHA-256, and the variable
    that points the gateway at the folder."""
    folder = directory.resolve()
    lines = [
        f"To count tokens offline, copy these files into {folder} under these names "
        "(download them on a machine with internet access):"
    ]
    for name in names:
        spec = ENCODING_FILES[name]
        lines += [
            f"  {name}: {spec.url}",
            f"    save as {folder / cache_file_name(spec)}",
            f"    SHA-256 {spec.sha256} (check: sha256sum FILE)",
        ]
    lines += [
        f"then set TIKTOKEN_CACHE_DIR={folder} for gateway serve. Or serve the files as "
        "NAME.tiktoken from a host this machine reaches and run "
        f"gateway tokenizer fetch --dir {folder} --mirror URL.",
    ]
    return lines
