"""The configuration every overhead benchmark serves: one fixed and one criteria-mode
configuration over two priced models on two providers, telemetry on, callHistory on,
and a fixed one under a (never reached) daily token budget, whose calls count tokens."""

from __future__ import annotations

KEY = "sk-bench-0123456789"

_CONFIG = """
server: {{host: 127.0.0.1, port: {port}, workers: {workers}, accessLog: {access_log}}}
database: {{url: "sqlite+aiosqlite:///{db}"}}
telemetry: {{enabled: {telemetry}, writer: {writer}}}
auth:
  adminKey: sk-bench-admin-000
  keys: [{{id: bench, key: "{key}"}}]
routing: {{policyMode: balanced, callHistory: true}}
providers:
  - {{id: up, adapter: openai, baseUrl: "{upstream}/v1", apiKey: sk-upstream}}
  - {{id: up2, adapter: openai, baseUrl: "{upstream}/v1", apiKey: sk-upstream}}
models:
  - {{id: a, provider: up, name: {name_a}, capabilities: [chat, streaming],
     price: {{input: 0.15, output: 0.60}}}}
  - {{id: b, provider: up2, name: {name_b}, capabilities: [chat, streaming],
     price: {{input: 0.30, output: 1.20}}}}
configurations:
  - {{id: fixed, mode: fixed, model: a}}
  - {{id: routed, mode: criteria, criteria: {{capabilities: [chat], preferLowestCost: true}}}}
  - {{id: budgeted, mode: fixed, model: a, budget: {{daily: {{tokens: 100000000000}}}}}}
"""


def bench_config(
    db: str,
    upstream: str,
    port: int = 4000,
    names: tuple[str, str] = ("bench-model",) * 2,
    workers: int = 1,
    *,
    access_log: bool = True,
    telemetry: bool = True,
    writer: str = "process",
) -> str:
    """``names``: what the two models are called upstream (their tokenizer follows the name);
    ``access_log`` and ``telemetry`` switch ``server.accessLog`` and ``telemetry.enabled``,
    ``writer`` is ``telemetry.writer`` (process | inline)."""
    return _CONFIG.format(
        db=db,
        upstream=upstream,
        port=port,
        key=KEY,
        name_a=names[0],
        name_b=names[1],
        workers=workers,
        access_log="true" if access_log else "false",
        telemetry="true" if telemetry else "false",
        writer=writer,
    )
