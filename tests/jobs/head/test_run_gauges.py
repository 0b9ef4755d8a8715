"""The run's gauges (the training dashboard's reward/KL/step time/tokens): the latest step's
figures from step lines as the frameworks print them, set with the run's name, nothing else set."""

from __future__ import annotations

import math

import numpy as np

from jobs.head import progress, run_gauges
from tests.jobs.runs.framework_lines import nemo_step_block, ray_actor_prefix, verl_step_line


class RecordedGauge:
    """Stands for ray.util.metrics.Gauge in unit tests (the real one is held to Ray's export in
    test_run_gauges_supervised.py): remembers each value set and its tags."""

    def __init__(self, name: str, description: str) -> None:
        self.name, self.description = name, description
        self.values: list[tuple[float, dict[str, str]]] = []

    def set(self, value: float, tags: dict[str, str] | None = None) -> None:
        self.values.append((value, dict(tags or {})))


def _publisher(run: str) -> tuple[run_gauges.Publisher, dict[str, RecordedGauge]]:
    made: dict[str, RecordedGauge] = {}

    def make(name: str, description: str) -> RecordedGauge:
        assert name not in made, f"gauge {name} made twice"
        made[name] = RecordedGauge(name, description)
        return made[name]

    return run_gauges.Publisher(run, make), made


def _verl(step: int, score: float, kl: float) -> str:
    metrics = {
        "critic/score/mean": np.float64(score),
        "actor/kl_loss": np.float64(kl),
        "timing_s/step": 12.5 + step,
        "perf/throughput": 1834.2,
        "response_length/mean": np.float64(200.0),
        "actor/pg_loss": np.float32(-0.25),
    }
    return ray_actor_prefix(verl_step_line(metrics, step))


def test_a_verl_runs_latest_step_sets_reward_kl_step_time_and_throughput_tagged_with_the_run():
    publisher, made = _publisher("grpo-7")
    log = "\n".join([_verl(1, 0.1, 0.001), _verl(2, 0.4, 0.003)])
    publisher.publish(progress.progress_lines(log))
    latest = {name: gauge.values[-1] for name, gauge in made.items()}
    assert latest == {
        "rl_run_step": (2.0, {"run": "grpo-7"}),
        "rl_run_reward_mean": (0.4, {"run": "grpo-7"}),
        "rl_run_kl": (0.003, {"run": "grpo-7"}),
        "rl_run_step_seconds": (14.5, {"run": "grpo-7"}),
        "rl_run_tokens_per_second_per_gpu": (1834.2, {"run": "grpo-7"}),
        "rl_run_response_length": (200.0, {"run": "grpo-7"}),
        "rl_run_loss": (-0.25, {"run": "grpo-7"}),
    }


def test_a_nemo_run_sets_no_kl_gauge_it_does_not_print():
    # NeMo RL v0.4.0 prints no KL to the console (jobs/head/step_lines.py docstring).
    publisher, made = _publisher("nemo")
    log = nemo_step_block(1, 10, 0.3, 0.25, 180.0, 60.0, 900.0) + nemo_step_block(
        2, 10, 0.2, 0.5, 190.0, 58.0, 950.0
    )
    figures = publisher.publish(log)
    assert "rl_run_kl" not in made and "kl" not in figures
    assert made["rl_run_reward_mean"].values[-1] == (0.5, {"run": "nemo"})
    assert made["rl_run_tokens_per_second_per_gpu"].values[-1][0] == 950.0
    assert made["rl_run_step"].values[-1][0] == 2.0


def test_each_gauge_is_made_once_and_a_nan_figure_is_not_published():
    publisher, made = _publisher("r")
    publisher.publish(_verl(1, 0.1, 0.001))
    publisher.publish(_verl(2, float("nan"), 0.002))
    assert len(made["rl_run_kl"].values) == 2
    # the NaN of step 2 is not drawable: the gauge keeps step 1's reward, set again
    assert all(math.isfinite(v) for v, _ in made["rl_run_reward_mean"].values)
    assert made["rl_run_reward_mean"].values[-1][0] == 0.1


def test_a_log_without_step_lines_makes_no_gauge():
    publisher, made = _publisher("r")
    assert publisher.publish("loading the model\nstill loading\n") == {}
    assert made == {}


def test_the_exported_names_carry_rays_prefix():
    assert run_gauges.PROMETHEUS_NAMES["reward"] == "ray_rl_run_reward_mean"
    assert set(run_gauges.PROMETHEUS_NAMES) == set(run_gauges.GAUGES)


def test_refresh_sets_the_last_figures_again_without_reading_the_log():
    publisher, made = _publisher("r")
    publisher.publish(_verl(3, 0.7, 0.002))
    publisher.refresh()
    assert [v for v, _ in made["rl_run_reward_mean"].values] == [0.7, 0.7]
