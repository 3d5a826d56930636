"""The table ``gateway eval run`` prints (pure)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gateway.evals.runner import CaseOutcome, ModelScore
from gateway.pricing import format_usd

HEADER = ("run", "provider", "model", "cases", "passed", "score", "cost USD")


@dataclass(frozen=True, slots=True)
class RunReport:
    """What one target (a configuration, or one ``--model``) gave."""

    target: str  # "configuration ID" or "model ID"
    outcomes: Sequence[CaseOutcome]
    scores: Sequence[ModelScore]
    recorded: bool  # its rows were written (no call failed)

    @property
    def failed_calls(self) -> list[CaseOutcome]:
        return [o for o in self.outcomes if o.error is not None]


def render(set_id: str, case_count: int, reports: Sequence[RunReport]) -> str:
    lines = [f"eval set: {set_id} ({case_count} case{'s' if case_count != 1 else ''})", ""]
    rows: list[tuple[str, ...]] = [HEADER]
    for report in reports:
        for score in report.scores:
            cost = format_usd(score.cost) if score.cost is not None else "-"
            rows.append(
                (
                    report.target,
                    score.provider,
                    score.model,
                    str(score.prompt_count),
                    str(score.passed_count),
                    f"{score.mean_score:.3f}",
                    cost,
                )
            )
        if not report.scores:
            rows.append((report.target, "-", "-", "0", "0", "-", "-"))
    lines.extend(_table(rows))
    for report in reports:
        failures = [o for o in report.outcomes if o.grade is not None and not o.grade.passed]
        if failures:
            lines.append("")
            lines.append(f"failed cases ({report.target}):")
            for outcome in failures:
                assert outcome.grade is not None
                kind = outcome.case.kind.value
                lines.append(f"  {outcome.case.id} ({kind}): {outcome.grade.reason}")
        if report.failed_calls:
            lines.append("")
            lines.append(f"calls that failed ({report.target}), nothing recorded for it:")
            for outcome in report.failed_calls:
                lines.append(f"  {outcome.case.id}: {outcome.error}")
    return "\n".join(lines)


def _table(rows: Sequence[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    numeric = {3, 4, 5, 6}  # right-aligned
    out = []
    for row in rows:
        cells = [
            cell.rjust(widths[i]) if i in numeric else cell.ljust(widths[i])
            for i, cell in enumerate(row)
        ]
        out.append("  ".join(cells).rstrip())
    return out
