from collections.abc import Sequence

import pytest

from gateway.routing.signals import FigureKind, differ, relative_scores


def _scores(figures: Sequence[float | None], kind: FigureKind, **kw: float | None) -> list[float]:
    scores = relative_scores(figures, kind, **kw)
    assert scores is not None
    return scores


def test_demo_latencies_score_5937_and_4063() -> None:
    fast, slow = _scores([4259.0, 9094.0], "latency")
    assert fast == pytest.approx(0.5937, abs=5e-5)
    assert slow == pytest.approx(0.4063, abs=5e-5)


def test_demo_costs_score_6237_and_3763() -> None:
    cheap, dear = _scores([0.0067, 0.0184], "cost")
    assert cheap == pytest.approx(0.6237, abs=5e-5)
    assert dear == pytest.approx(0.3763, abs=5e-5)


def test_factor_thirteen_is_bounded_to_two_thirds_and_one_third() -> None:
    assert relative_scores([1.0, 13.0], "latency") == pytest.approx([2 / 3, 1 / 3])


def test_factor_thirteen_unbounded_scores_783_and_217() -> None:
    fast, slow = _scores([1.0, 13.0], "latency", bound=None)
    assert fast == pytest.approx(0.783, abs=5e-4)
    assert slow == pytest.approx(0.217, abs=5e-4)


def test_relative_score_is_g_over_g_plus_x() -> None:
    figures = [100.0, 150.0, 300.0]
    g = (100 * 150 * 300) ** (1 / 3)
    assert relative_scores(figures, "cost") == pytest.approx([g / (g + x) for x in figures])


def test_signal_nobody_has_is_absent() -> None:
    assert relative_scores([None, None], "latency") is None
    assert relative_scores([], "cost") is None


def test_candidate_without_figure_scores_neutral() -> None:
    assert _scores([4259.0, None, 9094.0], "latency")[1] == 0.5


def test_sole_measured_candidate_scores_neutral() -> None:
    assert relative_scores([None, 120.0, None], "latency") == [0.5, 0.5, 0.5]
    assert relative_scores([0.0], "cost") == [0.5]  # rule 3 comes before rule 4


def test_zero_measured_cost_scores_one_and_does_not_flatten_others() -> None:
    free, cheap, dear = _scores([0.0, 0.01, 0.04], "cost")
    assert free == 1.0
    # g over the non-zero figures is 0.02: the others keep their spread.
    assert cheap == pytest.approx(2 / 3)
    assert dear == pytest.approx(1 / 3)


def test_zero_latency_is_only_fast() -> None:
    instant, other = _scores([0.0, 500.0], "latency")
    assert instant == pytest.approx(2 / 3)
    assert other == 0.5


def test_equal_figures_stand_exactly_at_the_mean() -> None:
    scores = relative_scores([4259.3, 4259.3, 4259.3, None], "latency")
    assert scores == [0.5, 0.5, 0.5, 0.5]
    assert not differ(scores)


def test_clamping_leaves_candidates_beyond_the_bound_equal() -> None:
    scores = relative_scores([1.0, 1000.0, 1e6, 2e6], "latency")
    assert scores is not None
    assert scores[2] == scores[3] == pytest.approx(1 / 3)
