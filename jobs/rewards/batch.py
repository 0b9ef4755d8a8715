"""Scoring a whole batch of code-contests solutions at once, for veRL's `batch` reward manager.

veRL 0.6.0's BatchRewardManager (verl/workers/reward_manager/batch.py, `verify`) calls the
custom reward once per batch as `fn(data_sources=, solution_strs=, ground_truths=, extra_infos=,
**reward_kwargs)` and takes one score per solution back. Each solution's work happens in child
processes (g++, the tests) or in the executor service, so threads are enough to overlap them.
`compute_score` never raises (a raise here stops the run after one retry): a broken
executor or an unreachable service scores FAULT with its reason logged, within the call's stated
bound. Only a call veRL never makes (lists of different lengths, concurrency < 1) is refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from jobs.rewards.code_contests import compute_score

DEFAULT_CONCURRENCY = 8


def compute_score_batch(
    data_sources: Sequence[str],
    solution_strs: Sequence[str],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[Any] | None = None,
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    **kwargs: Any,
) -> list[float]:
    """`compute_score` for every solution, `concurrency` at a time, in the batch's order."""
    if concurrency < 1:
        raise ValueError(f"concurrency: {concurrency} (expected at least 1)")
    if not (len(data_sources) == len(solution_strs) == len(ground_truths)):
        raise ValueError(
            f"batch lengths differ: {len(data_sources)} data sources, "
            f"{len(solution_strs)} solutions, {len(ground_truths)} ground truths"
        )
    extras = list(extra_infos) if extra_infos is not None else [None] * len(solution_strs)

    def one(i: int) -> float:
        return compute_score(
            data_sources[i], solution_strs[i], ground_truths[i], extras[i], **kwargs
        )

    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="reward") as pool:
        return list(pool.map(one, range(len(solution_strs))))
