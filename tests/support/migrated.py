"""A database at the schema's head for a test's gateway, cheaply.

Migrating a new SQLite file takes most of a second; hundreds of tests start a gateway on
one. The migrations run once per test process into a template file, and each new SQLite
database is a copy of it (milliseconds). Any other URL, or a file that exists already, is
migrated as ``gateway db upgrade`` would. The migrations themselves are tested in
tests/unit/db and by every ``gateway serve`` the suite starts.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import threading
from pathlib import Path

from sqlalchemy.engine import make_url

from gateway.db.migrate import upgrade

_lock = threading.Lock()
_template: Path | None = None


def migrate(url: str) -> None:
    """Bring the database at ``url`` to the schema's head."""
    path = _new_sqlite_file(url)
    if path is None:
        upgrade(url)
        return
    shutil.copyfile(_template_file(), path)


def _new_sqlite_file(url: str) -> Path | None:
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.query:
        return None
    if parsed.database in (None, "", ":memory:"):
        return None
    path = Path(parsed.database)
    if path.exists() or Path(f"{path}-wal").exists() or not path.parent.is_dir():
        return None
    return path


def _template_file() -> Path:
    global _template
    with _lock:
        if _template is None:
            folder = Path(tempfile.mkdtemp(prefix="gateway-test-schema-"))
            atexit.register(shutil.rmtree, folder, ignore_errors=True)
            template = folder / "head.db"
            upgrade(f"sqlite+aiosqlite:///{template}")
            # The migration's engine is disposed: WAL checkpointed into the file, no -wal left.
            assert not Path(f"{template}-wal").exists(), "the template is not self-contained"
            _template = template
        return _template
