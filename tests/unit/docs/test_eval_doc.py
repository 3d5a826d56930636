"""docs/routing.md's eval runs: the suite example parses, with one case per grader, and the
grader table lists exactly the graders there are."""

from __future__ import annotations

from gateway.evals.graders import GraderKind
from gateway.evals.suite import parse_suite
from tests.unit.docs.markdown import backticked, code_blocks, read_doc, section, table_rows

EVAL_RUNS = section(read_doc("routing.md"), "Eval runs")


def test_the_suite_example_parses_with_every_grader() -> None:
    block = next(b for b in code_blocks(EVAL_RUNS) if b.info == "json")
    cases = parse_suite(block.body.splitlines())
    assert {case.kind for case in cases} == set(GraderKind)


def test_the_grader_table_names_every_grader() -> None:
    names = {backticked(row[0])[0] for row in table_rows(EVAL_RUNS) if len(row) == 3}
    assert names == {kind.value for kind in GraderKind}
