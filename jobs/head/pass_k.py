"""pass@k by the unbiased estimator, from per-sample scores; the one place both frameworks' evals score.

Chen et al. 2021 ("Evaluating Large Language Models Trained on Code", eq. 1): with n samples of a
problem of which c are correct, pass@k = 1 - C(n-c, k) / C(n, k), averaged over problems. The
binomials overflow floats long before n is large, so the ratio is taken as the product
prod_{i=n-c+1..n} (1 - k/i) (the same identity NeMo RL v0.4.0 uses, nemo_rl/evals/eval.py
L187-191, there in float32 torch); here in float64, so it agrees with exact fractions to ~1e-15.
veRL's `best@N` is a bootstrap estimate of something else and is never used.
Runs on the cluster (the eval payload imports it): standard library only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

# A sample is solved when its score reaches 1: the GSM8K and math rewards both frameworks use
# give 1.0 for a right answer and 0.0 otherwise (verl/utils/reward_score/gsm8k.py @v0.6.0,
# nemo_rl/environments/math_environment.py @v0.4.0), and the code-contests reward is binary.
SOLVED = 1.0


def check(n: int, c: int, k: int) -> None:
    """ValueError naming the bad count: n >= 1, 0 <= c <= n, 1 <= k <= n."""
    if n < 1:
        raise ValueError(f"n (samples per problem) must be at least 1, got {n}")
    if not 0 <= c <= n:
        raise ValueError(f"c (correct samples) must be between 0 and n={n}, got {c}")
    if not 1 <= k <= n:
        raise ValueError(f"k must be between 1 and n={n} (samples per problem), got {k}")


def pass_at_k(n: int, c: int, k: int) -> float:
    """The probability that at least one of k samples drawn without replacement from n, of which
    c are correct, is correct: 1 - C(n-c, k) / C(n, k)."""
    check(n, c, k)
    if n - c < k:
        return 1.0  # every draw of k holds a correct sample
    # C(n-c, k) / C(n, k) = prod_{i=n-c+1..n} (i-k)/i: c factors, each in [0, 1).
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def solved(scores: Sequence[float]) -> int:
    """How many of one problem's samples are correct."""
    return sum(1 for s in scores if s >= SOLVED)


def grouped(scores: Sequence[float], n: int) -> list[list[float]]:
    """Per-sample scores laid out problem by problem (n consecutive samples each, the order both
    frameworks repeat a prompt in: NeMo RL `repeat_interleave`, veRL `repeat(interleave=True)`)."""
    if n < 1:
        raise ValueError(f"n (samples per problem) must be at least 1, got {n}")
    if len(scores) % n:
        raise ValueError(f"{len(scores)} scores do not split into problems of n={n} samples")
    return [list(scores[i : i + n]) for i in range(0, len(scores), n)]


def mean_pass_at_k(correct: Sequence[int], n: int, k: int) -> float:
    """pass@k of a set of problems: the mean over problems of each one's estimate."""
    if not correct:
        raise ValueError("no problems to score")
    return math.fsum(pass_at_k(n, c, k) for c in correct) / len(correct)
