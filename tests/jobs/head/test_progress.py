"""The step lines the supervisor keeps on the runs root carry everything the goodput and progress
parser reads from the whole log (jobs/head/progress.py `progress_lines`, jobs/head/step_lines.py)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from jobs.head import progress
from jobs.runs import metrics
from tests.jobs.runs.framework_lines import (
    nemo_epoch,
    nemo_step_block,
    nemo_validation,
    ray_actor_prefix,
    verl_step_line,
)

# What else a training log holds: vLLM's and Ray's chatter, a traceback, a tqdm bar.
NOISE = [
    "INFO 12-02 08:00:01 [llm_engine.py:402] init engine (profile, create kv cache) took 41.2 s",
    "(raylet) [2026-12-02 08:00:02] worker_pool.cc:123: Starting worker",
    "Traceback (most recent call last):",
    '  File "grpo.py", line 927, in grpo_train',
    "Loading safetensors checkpoint shards: 100%|██████████| 4/4 [00:12<00:00,  3.1s/it]",
    "▶ Preparing batch...",
    "",
]


def _same(a: metrics.Curves, b: metrics.Curves) -> None:
    assert a.points == b.points
    assert a.wandb_urls == b.wandb_urls
    assert a.position == b.position


def test_a_nemo_rl_log_over_two_epochs_parses_the_same_from_its_kept_lines() -> None:
    blocks = [nemo_epoch(1, 2)]
    blocks += [nemo_step_block(i, 3, 0.5, 0.1 * i, 200.0, 30.0, 900.0) for i in (1, 2, 3)]
    blocks += ["  • checkpointing: 4.20s (12.0%)", nemo_validation(0.61)]
    blocks += [nemo_epoch(2, 2), nemo_step_block(1, 3, 0.4, 0.5, 210.0, 31.0, 910.0)]
    blocks += ["wandb: 🚀 View run grpo-1 at: https://wandb.ai/t/p/runs/ab12"]
    log = "\n".join(NOISE + blocks + NOISE)
    kept = progress.progress_lines(log)
    _same(metrics.parse(kept), metrics.parse(log))
    assert metrics.parse(kept).series("save_time") == [(3, 4.2)]
    assert "Traceback" not in kept and "safetensors" not in kept


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(min_value=1, max_value=10**6),
            st.floats(min_value=0, max_value=1e4, allow_nan=False),
            st.sampled_from(NOISE),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_any_verl_log_behind_rays_actor_prefix_parses_the_same_from_its_kept_lines(
    steps: list[tuple[int, float, str]],
) -> None:
    lines = []
    for step, seconds, noise in steps:
        values = {"timing_s/step": np.float64(seconds), "critic/score/mean": np.float64(0.5)}
        values["timing_s/save_checkpoint"] = np.float64(seconds / 10)
        lines += [noise, ray_actor_prefix(verl_step_line(values, step), ip="10.0.0.7")]
    log = "\n".join(lines)
    _same(metrics.parse(progress.progress_lines(log)), metrics.parse(log))


def test_kept_lines_are_a_small_part_of_a_noisy_log() -> None:
    line = verl_step_line({"timing_s/step": np.float64(3.0)}, 1)
    log = "\n".join(NOISE * 50 + [line])
    assert progress.progress_lines(log) == line + "\n"


def test_completed_steps_are_read_from_either_frameworks_step_lines():
    """The crash rule's progress includes training steps, read from the log."""
    nemo = "loading...\n==== Step 11/500 ====\nloss 1\n==== Step 12/500 ====\n"
    verl = "step:7 - actor/loss:0.1\nstep:8 - actor/loss:0.09\nstep:8 - timing_s/gen:3\n"
    assert progress.completed_steps(nemo) == 1  # step 11 done once step 12 started
    assert progress.completed_steps(verl) == 1
    assert progress.completed_steps("==== Step 1/500 ====\nTraceback: CUDA OOM\n") == 0
    assert progress.completed_steps("no steps at all") == 0
