"""Twenty real problems through the data pipeline and the sandboxed reward, as the eval scores them.

The problems (tests/jobs/rewards/contest_problems.py, their source and what was rebuilt there)
go through `rl-jobs data code-contests`' converter to veRL rows, then every variant of every
problem through `compute_score_batch`, what veRL 0.6.0's batch reward manager calls during a
val-only run (verl/workers/reward_manager/batch.py `verify`), with the recipe's reward options
(binary). pass@1 is then the project's own (jobs/head/pass_k.py): 1 for the references, 0 for each
broken variant, and a mixed set's pass@k is the unbiased estimator of its known counts.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from fractions import Fraction
from math import comb
from typing import Any

import pyarrow.parquet as pq
import pytest

from jobs.data import code_contests as data
from jobs.head import pass_k
from jobs.rewards import code_contests as cc
from jobs.rewards.batch import compute_score_batch
from tests.jobs.rewards.contest_problems import PROBLEMS, VARIANTS, Problem

pytestmark = pytest.mark.compiler

# The recipe's reward options (verl-grpo-codecontests: binary=True, max_tests=100).
REWARD_OPTIONS: dict[str, Any] = {"binary": True, "max_tests": 100, "concurrency": 4}
# The verdict each broken variant must get for at least one test, so a variant that fails for
# another reason (a crash, a sandbox fault) does not pass as what it claims to be.
EXPECTED_REASON = {
    "reference": "passed {n}/{n}",
    "wrong_answer": "wrong_answer",
    "compile_error": "compile_error",
    "time_limit": "time_limit",
}


def answer(code: str) -> str:
    """A model's answer as the recipe's prompt asks for it."""
    return f"<think>\nsolved\n</think>\n<code>\n```cpp\n{code}```\n</code>"


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """The fixture's problems converted by the data pipeline, by problem name."""
    root = tmp_path_factory.mktemp("contests")
    (root / "in").mkdir()
    with (root / "in" / "problems.jsonl").open("w") as f:
        for problem in PROBLEMS:
            f.write(json.dumps(problem.record()) + "\n")
    summary = data.convert(root / "in", root / "out")
    assert not summary.dropped, summary.dropped
    converted = [r for path in summary.paths.values() for r in pq.read_table(path).to_pylist()]
    return {r["extra_info"]["name"]: r for r in converted}


@pytest.fixture(scope="module")
def judged(rows: dict[str, dict[str, Any]]) -> Iterator[dict[tuple[str, str], tuple[float, str]]]:
    """Every variant of every problem, scored in one batch: (problem, variant) -> (score, reason).
    The reason is read by wrapping the judge `compute_score` calls, leaving the path unchanged."""
    reasons: dict[tuple[str, str], str] = {}
    original = cc.judge_solution

    def recording(solution_str: Any, ground_truth: Any, **kwargs: Any) -> cc.Verdict:
        verdict = original(solution_str, ground_truth, **kwargs)
        reasons[(solution_str, ground_truth)] = verdict.reason
        return verdict

    keys = [(p.name, v) for p in PROBLEMS for v in VARIANTS]
    by_name = {p.name: p for p in PROBLEMS}
    texts = [answer(by_name[name].variants()[v]) for name, v in keys]
    truths = [rows[name]["reward_model"]["ground_truth"] for name, _ in keys]
    cc.judge_solution = recording
    try:
        scores = compute_score_batch(
            [rows[name]["data_source"] for name, _ in keys],
            texts,
            truths,
            [rows[name]["extra_info"] for name, _ in keys],
            **REWARD_OPTIONS,
        )
    finally:
        cc.judge_solution = original
    # Keyed by solution and problem: one problem's reference is another's wrong answer.
    found = zip(keys, scores, texts, truths, strict=True)
    yield {key: (score, reasons[(text, truth)]) for key, score, text, truth in found}


def test_the_fixture_holds_twenty_problems_each_with_four_distinct_solutions() -> None:
    assert len({p.name for p in PROBLEMS}) >= 20
    for problem in PROBLEMS:
        assert len(set(problem.variants().values())) == 4, problem.name


@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: p.name)
def test_each_oracle_gives_the_problems_published_sample_outputs(problem: Problem) -> None:
    for given, expected in problem.samples:
        assert problem.oracle(given) == expected


def test_the_pipeline_keeps_every_problem_with_its_tests_and_limits(
    rows: dict[str, dict[str, Any]],
) -> None:
    assert sorted(rows) == sorted(p.name for p in PROBLEMS)
    for problem in PROBLEMS:
        truth = json.loads(rows[problem.name]["reward_model"]["ground_truth"])
        assert truth["private_tests"]["input"] == list(problem.inputs)
        assert (truth["time_limit"], truth["memory_limit_bytes"]) == (1.0, 256 * 10**6)
        assert rows[problem.name]["data_source"] == data.DATA_SOURCE


# One test judges every variant: the batch behind `judged` compiles and runs 80 programs (about
# 50 s of CPU), and a module fixture is built once per xdist worker that runs a test needing it,
# so tests split by variant had both workers judge the whole batch.
def test_pass_at_1_is_one_for_references_and_zero_for_each_broken_variant_each_for_its_reason(
    judged: dict[tuple[str, str], tuple[float, str]],
    rows: dict[str, dict[str, Any]],
) -> None:
    for variant in VARIANTS:
        scores = [judged[(p.name, variant)][0] for p in PROBLEMS]
        correct = [pass_k.solved([s]) for s in scores]
        expected = 1.0 if variant == "reference" else 0.0
        assert pass_k.mean_pass_at_k(correct, n=1, k=1) == expected, {
            p.name: judged[(p.name, variant)] for p in PROBLEMS
        }
        wrong = {}
        for p in PROBLEMS:
            tests = len(
                json.loads(rows[p.name]["reward_model"]["ground_truth"])["private_tests"]["input"]
            )
            score, reason = judged[(p.name, variant)]
            if EXPECTED_REASON[variant].format(n=tests) not in reason:
                wrong[p.name] = (score, reason)
        assert not wrong, (variant, wrong)
        if variant == "compile_error":
            assert set(scores) == {cc.COMPILE_ERROR}


def exact_pass_at_k(correct: list[int], n: int, k: int) -> Fraction:
    """Chen et al. 2021, eq. 1, in exact fractions, averaged over problems."""
    return sum(
        (Fraction(1) - Fraction(comb(n - c, k), comb(n, k)) for c in correct), Fraction(0)
    ) / len(correct)


def test_a_mixed_set_scores_the_unbiased_estimator_of_its_counts(
    rows: dict[str, dict[str, Any]],
) -> None:
    # n = 5 samples a problem; problem i has i mod 6 references among them, the rest wrong
    # answers and compile errors (time limits are left out: each costs a whole second of CPU,
    # and the per-variant test above already judges them). Samples of a problem are
    # consecutive, as both frameworks lay them out.
    n = 5
    broken = ("wrong_answer", "compile_error")
    plan = []
    for i in range(len(PROBLEMS)):
        c = i % (n + 1)
        plan.append(["reference"] * c + [broken[j % 2] for j in range(n - c)])
    flat = [(p, v) for p, variants in zip(PROBLEMS, plan, strict=True) for v in variants]
    scores = compute_score_batch(
        [rows[p.name]["data_source"] for p, _ in flat],
        [answer(p.variants()[v]) for p, v in flat],
        [rows[p.name]["reward_model"]["ground_truth"] for p, _ in flat],
        [rows[p.name]["extra_info"] for p, _ in flat],
        **REWARD_OPTIONS,
    )
    correct = [pass_k.solved(group) for group in pass_k.grouped(scores, n)]
    assert correct == [i % (n + 1) for i in range(len(PROBLEMS))]
    for k in range(1, n + 1):
        expected = exact_pass_at_k(correct, n, k)
        assert abs(pass_k.mean_pass_at_k(correct, n, k) - float(expected)) <= 1e-12
