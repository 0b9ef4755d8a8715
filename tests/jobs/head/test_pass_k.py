"""pass@k: the unbiased estimator against exact fractions, and against NeMo RL v0.4.0's own
`eval_pass_k` run from its source (tests/jobs/head/upstream/nemo_rl_v0_4_0_eval.py, L175-200)."""

from __future__ import annotations

import ast
import random
from fractions import Fraction
from math import comb
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobs.head import pass_k

UPSTREAM = Path(__file__).resolve().parent / "upstream"


def exact(n: int, c: int, k: int) -> Fraction:
    return 1 - Fraction(comb(n - c, k), comb(n, k))


def triples(count: int, seed: int) -> list[tuple[int, int, int]]:
    """(n, c, k) with n up to 1,000: mostly small n (the usual 1..64 samples), some large, and
    every edge (c = 0, c = n, k = 1, k = n) drawn often."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        n = rng.choice([rng.randint(1, 16), rng.randint(1, 128), rng.randint(1, 1000)])
        c = rng.choice([0, n, rng.randint(0, n)])
        k = rng.choice([1, n, rng.randint(1, n)])
        out.append((n, c, k))
    return out


def test_pass_at_k_equals_the_exact_estimator_on_10000_triples():
    cases = triples(10_000, seed=44)
    assert len(set(cases)) > 5_000  # the sweep is broad, not one case repeated
    worst = max(abs(Fraction(pass_k.pass_at_k(n, c, k)) - exact(n, c, k)) for n, c, k in cases)
    assert worst <= Fraction(1, 10**12)


@given(
    st.integers(1, 400).flatmap(
        lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))
    )
)
def test_pass_at_k_is_exact_to_1e_12_and_a_probability(nck):
    n, c, k = nck
    got = pass_k.pass_at_k(n, c, k)
    assert 0.0 <= got <= 1.0
    assert abs(Fraction(got) - exact(n, c, k)) <= Fraction(1, 10**12)


def test_pass_at_k_edges():
    assert pass_k.pass_at_k(10, 0, 3) == 0.0  # nothing right: never
    assert pass_k.pass_at_k(10, 10, 3) == 1.0
    assert pass_k.pass_at_k(10, 8, 3) == 1.0  # only 2 wrong: any 3 hold a right one
    assert pass_k.pass_at_k(10, 3, 1) == pytest.approx(0.3, abs=1e-15)  # pass@1 = c/n


def test_pass_at_k_grows_with_k():
    n, c = 50, 7
    values = [pass_k.pass_at_k(n, c, k) for k in range(1, n + 1)]
    assert values == sorted(values)


@pytest.mark.parametrize(
    "n, c, k, named",
    [
        (0, 0, 1, "n (samples"),
        (4, 5, 1, "c (correct"),
        (4, -1, 1, "c (correct"),
        (4, 2, 5, "k must"),
        (4, 2, 0, "k must"),
    ],
)
def test_bad_counts_are_refused_by_name(n, c, k, named):
    with pytest.raises(ValueError, match=named.replace("(", r"\(")):
        pass_k.pass_at_k(n, c, k)


def test_scores_group_problem_by_problem_and_count_solved():
    scores = [1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0]
    groups = pass_k.grouped(scores, 3)
    assert [pass_k.solved(g) for g in groups] == [2, 0, 3]
    assert pass_k.mean_pass_at_k([2, 0, 3], 3, 1) == pytest.approx((2 / 3 + 0 + 1) / 3)
    with pytest.raises(ValueError, match="do not split"):
        pass_k.grouped(scores, 2)


def _nemo_rl_eval_pass_k() -> Any:
    """NeMo RL v0.4.0's `eval_pass_k`, compiled from its file as shipped (the module's other
    imports, Ray and the NeMo RL package, are not needed by this one function)."""
    path = UPSTREAM / "nemo_rl_v0_4_0_eval.py"
    tree = ast.parse(path.read_text())
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "eval_pass_k")
    assert fn.lineno == 175  # the cited line: the file is the tag's, unedited
    import torch

    namespace: dict[str, Any] = {"torch": torch}
    exec(compile(ast.Module(body=[fn], type_ignores=[]), str(path), "exec"), namespace)
    return namespace["eval_pass_k"]


@pytest.mark.frameworks
def test_mean_pass_at_k_equals_nemo_rl_eval_pass_k_on_the_same_rewards():
    import torch

    eval_pass_k = _nemo_rl_eval_pass_k()
    rng = random.Random(7)
    for _ in range(300):
        n = rng.randint(1, 64)
        k = rng.randint(1, n)
        problems = rng.randint(1, 40)
        rewards = [float(rng.random() < rng.random()) for _ in range(n * problems)]
        correct = [pass_k.solved(g) for g in pass_k.grouped(rewards, n)]
        ours = pass_k.mean_pass_at_k(correct, n, k)
        # NeMo RL returns the sum over problems; run_eval.py divides by the dataset size
        # (_print_results, L498). Its arithmetic is torch's default float32, so the two agree to
        # float32's precision, not float64's.
        theirs = eval_pass_k(torch.tensor(rewards), n, k) / problems
        assert theirs == pytest.approx(ours, abs=1e-5), (n, k, correct)
