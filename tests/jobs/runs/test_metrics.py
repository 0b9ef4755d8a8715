"""The step-line parser behind `rl-jobs report`, on lines as the frameworks print them."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobs.runs import metrics
from tests.jobs.runs.framework_lines import (
    nemo_epoch,
    nemo_step_block,
    nemo_validation,
    ray_actor_prefix,
    verl_step_line,
)


def _verl_metrics(step: int, score: float) -> dict[str, object]:
    # Keys and value types as veRL 0.6.0's trainer hands them to logger.log (numpy scalars from
    # its reductions, ints, a bool; non-numbers are dropped by concat_dict_to_str itself).
    return {
        "training/global_step": step,
        "critic/score/mean": np.float64(score),
        "critic/rewards/mean": np.float64(score - 0.01),
        "actor/kl_loss": 0.001 * step,
        "actor/pg_loss": np.float32(-0.25),
        "response_length/mean": np.float64(200.0 + step),
        "timing_s/step": 12.5,
        "perf/throughput": 1834.2,
        "actor/entropy": True,
        "note": "ignored",
    }


def test_a_verl_line_from_its_own_formatter_behind_rays_actor_prefix_gives_each_curve() -> None:
    log = "\n".join(
        ray_actor_prefix(verl_step_line(_verl_metrics(s, 0.1 * s), s), ip="10.0.0.7")
        for s in (1, 2, 3)
    )
    curves = metrics.parse(log)
    assert curves.series("reward") == [(1, 0.1), (2, 0.2), (3, 0.1 * 3)]
    assert [s for s, _ in curves.series("kl")] == [1, 2, 3]
    assert curves.series("response_length")[-1] == (3, 203.0)
    assert curves.series("step_time") == [(1, 12.5), (2, 12.5), (3, 12.5)]
    assert curves.series("throughput")[0] == (1, 1834.2)
    assert curves.series("loss")[0] == (1, -0.25)
    assert curves.present() == [
        "reward",
        "kl",
        "response_length",
        "step_time",
        "throughput",
        "loss",
    ]


def test_verl_validation_metrics_become_one_curve_per_data_source() -> None:
    line = verl_step_line(
        {
            "val-core/openai/gsm8k/reward/mean@1": np.float64(0.41),
            "val-aux/openai/gsm8k/reward/std@1": np.float64(0.2),
            "val-core/codecontests/acc/mean@4": 0.12,
        },
        0,
    )
    curves = metrics.parse(ray_actor_prefix(line))
    assert curves.series("val:openai/gsm8k") == [(0, 0.41)]
    assert curves.series("val:codecontests/acc") == [(0, 0.12)]
    assert "val:openai/gsm8k" in curves.present()


def test_nemo_blocks_across_epochs_count_global_steps_and_validation_joins_its_step() -> None:
    log = "\n".join(
        [
            nemo_validation(0.30),  # val_at_start: before any step
            nemo_epoch(1, 2),
            nemo_step_block(1, 2, 0.5, 0.25, 300.0, 40.0, 900.0),
            nemo_step_block(2, 2, 0.4, 0.35, 310.0, 41.0, 910.0),
            nemo_epoch(2, 2),
            nemo_step_block(1, 2, 0.3, 0.45, 320.0, 42.0, 920.0)
            + nemo_validation(0.50),  # inside step 3, printed after its block here
        ]
    )
    curves = metrics.parse(log)
    assert curves.series("reward") == [(1, 0.25), (2, 0.35), (3, 0.45)]
    assert curves.series("response_length") == [(1, 300.0), (2, 310.0), (3, 320.0)]
    assert curves.series("step_time") == [(1, 40.0), (2, 41.0), (3, 42.0)]
    assert curves.series("throughput") == [(1, 900.0), (2, 910.0), (3, 920.0)]
    assert curves.series("val:accuracy") == [(0, 0.30), (3, 0.50)]
    # NeMo RL prints no KL to the console: no KL curve is invented
    assert curves.series("kl") == []
    # the per-group tokens/s (x 8 GPUs) is not taken for the per-GPU figure
    assert all(v < 1000 for _, v in curves.series("throughput"))


def test_a_resumed_attempt_replaces_the_steps_it_reran() -> None:
    first = metrics.parse(
        "\n".join(verl_step_line({"critic/score/mean": 0.1 * s}, s) for s in (1, 2, 3))
    )
    second = metrics.parse(
        "\n".join(verl_step_line({"critic/score/mean": 1.0 + s}, s) for s in (3, 4))
    )
    first.merge(second)
    assert first.series("reward") == [(1, 0.1), (2, 0.2), (3, 4.0), (4, 5.0)]


def test_nan_and_inf_are_kept_out_of_the_drawn_series() -> None:
    curves = metrics.parse(
        "\n".join(
            [
                verl_step_line({"critic/score/mean": float("nan")}, 1),
                verl_step_line({"critic/score/mean": float("inf")}, 2),
                verl_step_line({"critic/score/mean": 0.5}, 3),
            ]
        )
    )
    assert curves.series("reward") == [(3, 0.5)]


def test_lines_that_only_look_like_steps_are_ignored() -> None:
    curves = metrics.parse(
        "\n".join(
            [
                "step:abc - critic/score/mean:1.0",
                "Training Progress:  10%|█         | step:1 - x",
                "(TaskRunner pid=1) progress step:2 - critic/score/mean:9.0",
                "  • Avg Reward: not-a-number",
            ]
        )
    )
    assert curves.present() == []


def test_the_wandb_run_page_is_found_in_the_log() -> None:
    url = "https://wandb.ai/team/rl-on-gke/runs/ab12cd34"
    curves = metrics.parse(ray_actor_prefix(f"wandb: 🚀 View run grpo-1 at: {url}"))
    assert curves.wandb_urls == [url]


_KEYS = st.sampled_from(
    [
        "critic/score/mean",
        "actor/kl_loss",
        "response_length/mean",
        "timing_s/step",
        "perf/throughput",
    ]
)
_VALUES = st.floats(allow_nan=False, allow_infinity=False, width=64)


@given(st.dictionaries(_KEYS, _VALUES, min_size=1), st.integers(min_value=0, max_value=10**7))
def test_any_verl_line_round_trips_through_the_parser(values: dict[str, float], step: int) -> None:
    wrapped = {k: np.float64(v) for k, v in values.items()}
    curves = metrics.parse(ray_actor_prefix(verl_step_line(wrapped, step)))
    names = {
        "critic/score/mean": "reward",
        "actor/kl_loss": "kl",
        "response_length/mean": "response_length",
        "timing_s/step": "step_time",
        "perf/throughput": "throughput",
    }
    for key, value in values.items():
        (point,) = curves.series(names[key])
        assert point[0] == step and math.isclose(point[1], value, rel_tol=0, abs_tol=0)


def _nemo_step(i: int, n: int, reward: float, seconds: float) -> str:
    # The block NeMo RL v0.4.0 prints per step (grpo.py L919, L1340, L1333, L1359).
    return (
        f"========================= Step {i}/{n} =========================\n"
        f"  • Loss: 0.25\n  • Avg Reward: {reward}\n  • Total step time: {seconds:.2f}s\n"
    )


def test_progress_of_a_nemo_run_names_its_step_of_n_and_an_eta_from_the_median_step() -> None:
    log = "".join(_nemo_step(i, 10, 0.1 * i, s) for i, s in [(1, 100.0), (2, 60.0), (3, 62.0)])
    p = metrics.progress(metrics.parse(log))
    assert p is not None
    assert (p["step"], p["of"], p["reward"], p["loss"]) == (3, 10, pytest.approx(0.3), 0.25)
    assert p["seconds_per_step"] == 62.0 and p["eta_s"] == 7 * 62.0
    line = metrics.progress_line(p)
    assert line == "step 3 of 10, reward 0.3, loss 0.25, 62 s/step, ETA 7 min"
    doc = (Path(__file__).resolve().parents[3] / "docs" / "jobs.md").read_text()
    assert f"progress: {line}\n" in doc  # the example docs/jobs.md shows


def test_progress_of_a_later_nemo_epoch_says_the_epoch_and_no_eta() -> None:
    log = "===== Epoch 2/3 =====\n" + _nemo_step(4, 10, 0.5, 30.0)
    p = metrics.progress(metrics.parse(log))
    assert p["step"] == 14 and p["of"] is None and "eta_s" not in p
    assert metrics.progress_line(p).startswith("step 14 (epoch 2/3, 4 of 10)")


def test_progress_of_a_verl_run_has_no_total_and_a_resumed_attempts_steps_win() -> None:
    first = metrics.parse("step:5 - critic/score/mean:0.2 - timing_s/step:40.0")
    second = metrics.parse("step:5 - critic/score/mean:0.4 - timing_s/step:50.0")
    first.merge(second)
    p = metrics.progress(first)
    assert (p["step"], p["of"], p["reward"]) == (5, None, 0.4)
    assert metrics.progress_line(p) == "step 5, reward 0.4, 50 s/step"
    assert metrics.progress(metrics.parse("no step lines here\n")) is None


def test_the_reward_sparkline_runs_lowest_to_highest_over_the_last_values() -> None:
    assert metrics.sparkline([(1, 0.0), (2, 0.5), (3, 1.0)]) == "▁▅█"
    assert metrics.sparkline([(n, 0.3) for n in range(5)]) == "▅▅▅▅▅"
    assert metrics.sparkline([(1, 0.3)]) == ""
    assert len(metrics.sparkline([(n, float(n)) for n in range(100)], width=40)) == 40
    log = "".join(_nemo_step(i, 10, r, 60.0) for i, r in [(1, 0.1), (2, 0.4), (3, 0.2)])
    p = metrics.progress(metrics.parse(log))
    assert p["reward_sparkline"] == "▁█▃" and p["reward_range"] == [0.1, 0.4]


def test_saves_are_read_from_both_frameworks_lines_and_complete_once_a_later_step_logged() -> None:
    from tests.jobs.runs.framework_lines import nemo_saving, verl_saving

    def with_save(block: str, step: int) -> str:  # the save prints before the step's results
        return block.replace("▶ Preparing batch...", "▶ Preparing batch...\n" + nemo_saving(step))

    nemo = "\n".join(
        [
            nemo_step_block(1, 10, 0.5, 0.1, 200, 60.0, 1500.0),
            with_save(nemo_step_block(2, 10, 0.5, 0.2, 200, 60.0, 1500.0), 2),
            nemo_step_block(3, 10, 0.5, 0.3, 200, 60.0, 1500.0),
            nemo_step_block(4, 10, 0.5, 0.3, 200, 60.0, 1500.0).split("📊")[0] + nemo_saving(4),
        ]
    )
    curves = metrics.parse(nemo)
    # step 4's save began, its results are not logged yet: in progress
    assert curves.saves == {2, 4} and curves.complete_saves() == [2]
    shown = metrics.progress(curves)
    assert (shown["checkpoint_step"], shown["saving_step"]) == (2, 4)
    assert "checkpoint step 2, saving step 4" in metrics.progress_line(shown)
    verl = "\n".join(
        ray_actor_prefix(line)
        for line in (
            verl_step_line(_verl_metrics(3, 0.3), 3),
            verl_saving("/lustre/runs/r/checkpoints", 4),  # saved in step 4, then its line
            verl_step_line(_verl_metrics(4, 0.4), 4),
        )
    )
    assert metrics.parse(verl).complete_saves() == [4]
    assert metrics.progress_line(metrics.progress(metrics.parse(verl))).count("checkpoint step 4")


def test_an_eta_under_a_minute_and_a_half_is_said_in_seconds():
    """`ETA 0 min` with 30 s left read as done."""
    line = metrics.progress_line({"step": 9, "of": 10, "eta_s": 30.0})
    assert line.endswith("ETA 30 s"), line
