"""The configuration every overhead benchmark serves: one fixed and one criteria-mode
configuration over two priced models on two providers, telemetry on, callHistory on."""

from __future__ import annotations

KEY = "sk-bench-0123456789"

_CONFIG = """
server: {{host: 127.0.0.1, port: {port}}}
database: {{url: "sqlite+aiosqlite:///{db}"}}
telemetry: {{enabled: true}}
auth:
  adminKey: sk-bench-admin-000
  keys: [{{id: bench, key: "{key}"}}]
routing: {{policyMode: balanced, callHistory: true}}
providers:
  - {{id: up, adapter: openai, baseUrl: "{upstream}/v1", apiKey: sk-upstream}}
  - {{id: up2, adapter: openai, baseUrl: "{upstream}/v1", apiKey: sk-upstream}}
models:
  - {{id: a, provider: up, name: bench-model, capabilities: [chat, streaming],
     price: {{input: 0.15, output: 0.60}}}}
  - {{id: b, provider: up2, name: bench-model, capabilities: [chat, streaming],
     price: {{input: 0.30, output: 1.20}}}}
configurations:
  - {{id: fixed, mode: fixed, model: a}}
  - {{id: routed, mode: criteria, criteria: {{capabilities: [chat], preferLowestCost: true}}}}
"""


def bench_config(db: str, upstream: str, port: int = 4000) -> str:
    return _CONFIG.format(db=db, upstream=upstream, port=port, key=KEY)
