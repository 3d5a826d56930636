"""What a serving process loads: no Alembic, no Redis client unless the cache uses Redis,
no httpx (nor the rich and pygments its command line brings), no pydantic (nor the price
catalog, read in a child), no SQLAlchemy dialect but its database's, and only the tiktoken
encodings its models need. Each runs in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CONFIG = """
server: {{port: 0}}
database: {{url: "sqlite+aiosqlite:///{db}"}}
auth: {{allowUnauthenticated: true}}
providers:
  - {{id: openai, adapter: openai, baseUrl: "http://127.0.0.1:9/v1", apiKey: sk-test}}
  - {{id: claude, adapter: anthropic, baseUrl: "http://127.0.0.1:9/v1", apiKey: sk-ant}}
models:
  - {{id: mini, provider: openai, name: gpt-4o-mini, capabilities: [chat]}}
  - {{id: haiku, provider: claude, name: claude-haiku, capabilities: [chat]}}
configurations:
  - {{id: chat, mode: fixed, model: mini}}
"""


def _python(script: str, tmp_path: Path) -> str:
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_serve_migrates_in_a_child_so_the_server_never_loads_alembic(tmp_path: Path) -> None:
    config = tmp_path / "gateway.yaml"
    config.write_text(CONFIG.format(db=tmp_path / "gateway.db"))
    out = _python(
        f"""
        import sys
        import uvicorn

        def serve(app, **options):  # stands in for the server: what has been loaded?
            loaded = {{name.split(".")[0] for name in sys.modules}}
            print("alembic loaded:", "alembic" in loaded)
            print("settles the collector:", app.settles_collector)
            for name in ("httpx", "rich", "pygments", "pydantic", "genai_prices", "botocore"):
                print(f"{{name}} loaded:", name in loaded)
            dialects = sorted(n for n in sys.modules if n.count(".") == 2
                              and n.startswith("sqlalchemy.dialects.") and "._" not in n)
            print("dialects:", ",".join(dialects))

        uvicorn.run = serve
        from gateway.cli import main
        sys.exit(main(["serve", "--config", {str(config)!r}]))
        """,
        tmp_path,
    )
    assert "alembic loaded: False" in out
    assert "settles the collector: True" in out  # gateway.allocator.settle_collector
    for name in ("httpx", "rich", "pygments", "pydantic"):  # about 17 MB resident together
        assert f"{name} loaded: False" in out
    # gpt-4o-mini has no YAML price: the catalog priced it in a child process.
    assert "genai_prices loaded: False" in out
    assert "botocore loaded: False" in out  # no bedrock provider: the extra stays unloaded
    assert "dialects: \n" in out  # the engine, made in the lifespan, loads its own
    import sqlite3

    # The child ran the migrations (its stdout is dropped: a server's output is its log).

    with sqlite3.connect(tmp_path / "gateway.db") as db:
        tables = {row[0] for row in db.execute("select name from sqlite_master")}
    assert {"telemetry", "usage_daily"} <= tables


def test_the_runtime_loads_no_redis_client_its_own_dialect_and_the_encodings_it_needs(
    tmp_path: Path,
) -> None:
    out = _python(
        f"""
        import sys
        from gateway.config.loader import load_config_text
        from gateway.runtime import Runtime

        text = {CONFIG.format(db=tmp_path / "gateway.db")!r}
        runtime = Runtime(load_config_text(text, {{}}))
        runtime.counter.warm()
        print("redis loaded:", any(name.split(".")[0] == "redis" for name in sys.modules))
        print("encodings:", ",".join(runtime.counter.loaded))
        dialects = sorted(n for n in sys.modules if n.count(".") == 2
                          and n.startswith("sqlalchemy.dialects.") and "._" not in n)
        print("dialects:", ",".join(dialects))
        print("claude counted with:", runtime.counter.encoding_for("claude-haiku"))
        """,
        tmp_path,
    )
    assert "redis loaded: False" in out
    assert "encodings: o200k_base\n" in out  # gpt-4o-mini's; claude shares it
    assert "claude counted with: o200k_base" in out
    # On SQLite, SQLAlchemy's PostgreSQL and MySQL dialects stay unloaded (about 3 MB).
    assert "dialects: sqlalchemy.dialects.sqlite\n" in out
