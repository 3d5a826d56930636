"""The runner against a scripted pipeline: outcomes in suite order, failures kept apart,
one score per served model, and the table."""

from __future__ import annotations

import asyncio
import json
from decimal import Decimal
from typing import Any

from gateway.domain.settings import ApiKey
from gateway.evals.report import RunReport, render
from gateway.evals.runner import answer_text, run_cases, summarize
from gateway.evals.suite import parse_suite
from gateway.inbound import InboundRequest
from gateway.pipeline.answers import Answer
from gateway.pipeline.context import CallContext

SUITE = [
    json.dumps({"id": "a", "prompt": "slow", "grader": "exact", "expected": "A"}),
    json.dumps({"id": "b", "prompt": "fast", "grader": "exact", "expected": "B"}),
    json.dumps({"id": "c", "prompt": "wrong", "grader": "regex", "pattern": "^C$"}),
    json.dumps({"id": "d", "prompt": "broken", "grader": "exact", "expected": "D"}),
]


class ScriptedPipeline:
    """Answers by prompt: 'slow' after the others; 'broken' with a 503; 'fast' from m2."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.in_flight = 0
        self.most_in_flight = 0

    def context(self, request: InboundRequest, key: ApiKey | None, cid: str) -> CallContext:
        return CallContext(request, None, cid, 0.0)

    async def complete(self, ctx: CallContext) -> Answer:
        body = ctx.request.body
        self.sent.append(body)
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        prompt = body["messages"][-1]["content"]
        await asyncio.sleep(0.05 if prompt == "slow" else 0.0)
        self.in_flight -= 1
        if prompt == "broken":
            error = {"error": {"message": "The upstream failed (status)."}}
            return Answer(503, json.dumps(error).encode())
        text = {"slow": "A", "fast": "B", "wrong": "c"}[prompt]
        model = "m2" if prompt == "fast" else "m1"
        headers = {"x-gateway-provider": "p", "x-gateway-model": model}
        if model == "m1":
            headers["x-gateway-cost-usd"] = "0.000100"
        reply = {"choices": [{"message": {"role": "assistant", "content": text}}]}
        return Answer(200, json.dumps(reply).encode(), headers)


async def test_outcomes_keep_the_suite_order_and_failures_apart() -> None:
    pipeline = ScriptedPipeline()
    done: list[str] = []
    outcomes = await run_cases(
        pipeline,
        "chat",
        parse_suite(SUITE),
        concurrency=2,
        on_done=lambda o: done.append(o.case.id),
    )
    assert [o.case.id for o in outcomes] == ["a", "b", "c", "d"]
    assert done[0] == "b" and done.index("a") > 0  # a is slow: b, begun with it, ends first
    assert sorted(done) == ["a", "b", "c", "d"]
    assert pipeline.most_in_flight == 2
    assert all(body["model"] == "chat" and body["temperature"] == 0 for body in pipeline.sent)
    a, b, c, d = outcomes
    assert a.passed and b.passed and not c.passed
    assert c.grade is not None and c.grade.reason == '"c" does not match /^C$/'
    assert d.grade is None and d.error == "HTTP 503: The upstream failed (status)."
    assert a.cost == Decimal("0.000100") and b.cost is None

    scores = summarize(outcomes)
    assert [(s.model, s.prompt_count, s.passed_count) for s in scores] == [
        ("m1", 2, 1),
        ("m2", 1, 1),
    ]
    assert scores[0].mean_score == 0.5 and scores[0].cost == Decimal("0.000200")
    assert scores[1].cost is None

    table = render("demo", 4, [RunReport("configuration chat", outcomes, scores, False)])
    lines = table.splitlines()
    assert lines[0] == "eval set: demo (4 cases)"
    assert lines[2].split() == [
        "run",
        "provider",
        "model",
        "cases",
        "passed",
        "score",
        "cost",
        "USD",
    ]
    assert lines[3].split() == ["configuration", "chat", "p", "m1", "2", "1", "0.500", "0.0002"]
    assert lines[4].split() == ["configuration", "chat", "p", "m2", "1", "1", "1.000", "-"]
    assert "failed cases (configuration chat):" in lines
    assert '  c (regex): "c" does not match /^C$/' in lines
    assert "calls that failed (configuration chat), nothing recorded for it:" in lines
    assert "  d: HTTP 503: The upstream failed (status)." in lines


def test_answer_text_reads_the_first_choice_only_when_it_is_text() -> None:
    assert answer_text(b'{"choices": [{"message": {"content": "hi"}}]}') == "hi"
    assert answer_text(b'{"choices": [{"message": {"content": null}}]}') is None
    assert answer_text(b'{"choices": []}') is None
    assert answer_text(b"not json") is None
