"""The batch reward veRL's `batch` manager calls: order, kwargs, concurrency, errors propagate."""

from __future__ import annotations

import json
import threading
import time

import pytest

from jobs.rewards import batch
from jobs.rewards import code_contests as cc
from tests.jobs.rewards.test_code_contests import SUM, SUM_SMALL, answer, truth

pytestmark = pytest.mark.compiler


def test_scores_every_solution_in_order_with_the_real_compiler() -> None:
    gt = json.dumps(truth())  # as the parquet rows carry it
    scores = batch.compute_score_batch(
        data_sources=["code_contests"] * 4,
        solution_strs=[answer(SUM), answer(SUM_SMALL), "no code here", answer("int main( {")],
        ground_truths=[gt] * 4,
        extra_infos=[{}] * 4,
    )
    assert scores == [1.0, 0.5, cc.NO_CODE, cc.COMPILE_ERROR]


def test_reward_kwargs_reach_every_solution() -> None:
    # binary=True is the recipe's default: a half-right solution then scores 0.
    scores = batch.compute_score_batch(
        ["code_contests"] * 2,
        [answer(SUM), answer(SUM_SMALL)],
        [truth(), truth()],
        None,
        binary=True,
    )
    assert scores == [1.0, 0.0]


def test_solutions_are_scored_concurrently_up_to_the_limit(monkeypatch) -> None:
    running, peak, lock = 0, 0, threading.Lock()

    def slow(*args, **kwargs) -> float:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        time.sleep(0.2)
        with lock:
            running -= 1
        return 1.0

    monkeypatch.setattr(batch, "compute_score", slow)
    assert (
        batch.compute_score_batch(["d"] * 6, ["s"] * 6, ["g"] * 6, None, concurrency=3) == [1.0] * 6
    )
    assert peak == 3


def test_an_unreachable_service_scores_a_fault_within_the_budget_and_says_why(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A raise stopped the training run. Nothing listens on port 9 (discard) of
    loopback; with a 2 s budget every solution scores FAULT by the bound and the reason is logged."""
    start = time.monotonic()
    with caplog.at_level("WARNING", logger=cc.__name__):
        scores = batch.compute_score_batch(
            ["code_contests"] * 2,
            [answer(SUM), "no code here"],
            [truth()] * 2,
            None,
            sandbox_url="http://127.0.0.1:9",
            budget_s=2.0,
        )
    assert scores == [cc.FAULT, cc.NO_CODE]
    assert time.monotonic() - start <= cc.remote_bound_s(2.0)
    assert "CODE_SANDBOX_URL=http://127.0.0.1:9" in caplog.text


def test_a_concurrency_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="concurrency: 0"):
        batch.compute_score_batch(["d"], ["s"], ["g"], None, concurrency=0)


def test_batches_of_different_lengths_are_refused() -> None:
    with pytest.raises(ValueError, match="2 data sources, 1 solutions, 1 ground truths"):
        batch.compute_score_batch(["d", "d"], ["s"], ["g"], None)
