"""A run's training figures as Prometheus gauges: the supervisor publishes what its attempt's log says.

Neither framework exports its step metrics to Prometheus: NeMo RL v0.4.0 and veRL 0.6.0 send them
to the console, TensorBoard and W&B only (jobs/head/step_lines.py names the lines). The supervisor
already reads its attempt's log for the stall watchdog, so it parses the step lines there and sets
one Ray gauge per figure (`ray.util.metrics.Gauge`), tagged with the run's name. Ray's metrics
agent on the head exports a user gauge `NAME` as `ray_NAME` on the node's metrics port (seen on
Ray 2.60: tests/jobs/head/test_run_gauges_supervised.py scrapes it), which the stack's PodMonitoring
scrapes into Managed Prometheus (components/k8s/metrics.py) and the Grafana training dashboard
plots (components/k8s/grafana.py reads `PROMETHEUS_NAMES`).

Ray adds its own labels (the worker's id among them), so a supervisor that is replaced starts a
new series: dashboards take `max by (run)`. Ray drops a gauge from its export once it has not
been set for two report intervals (10 s each; seen on Ray 2.60: a gauge set once was gone from the
scrape ~20 s later), so the supervisor sets the last figures again at every poll (`refresh`) and
re-reads the log only every `JOBS_SUPERVISOR_GAUGES_S`; between attempts nothing is set, and the
figures leave the dashboard instead of standing stale.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Protocol

from jobs.head import step_lines

# Curve key (jobs/head/step_lines.py METRICS) -> (gauge name, description). The step is its own gauge.
GAUGES: Mapping[str, tuple[str, str]] = {
    "step": ("rl_run_step", "The last training step the run's attempt logged"),
    "reward": ("rl_run_reward_mean", "Mean reward of the last logged step"),
    "kl": ("rl_run_kl", "KL to the reference policy at the last logged step (veRL)"),
    "step_time": ("rl_run_step_seconds", "Seconds the last logged step took"),
    "throughput": ("rl_run_tokens_per_second_per_gpu", "Tokens per second per GPU, last step"),
    "response_length": ("rl_run_response_length", "Mean response length of the last step"),
    "loss": ("rl_run_loss", "Policy loss of the last logged step"),
}
TAG = "run"
# Ray prefixes every user metric with "ray_" in its Prometheus export.
EXPORT_PREFIX = "ray_"
PROMETHEUS_NAMES: Mapping[str, str] = {k: EXPORT_PREFIX + name for k, (name, _) in GAUGES.items()}


class Gauge(Protocol):
    def set(self, value: float, tags: dict[str, str]) -> object: ...


def latest(curves: step_lines.Curves) -> dict[str, float]:
    """Each published figure's value at the last step that logged it (finite values only)."""
    out: dict[str, float] = {}
    steps = sorted({s for points in curves.points.values() for s in points})
    if steps:
        out["step"] = float(steps[-1])
    for key in GAUGES:
        series = curves.series(key) if key != "step" else []
        if series:
            out[key] = series[-1][1]
    return out


def ray_gauge(name: str, description: str) -> Gauge:
    from ray.util.metrics import Gauge as RayGauge

    return RayGauge(name, description=description, tag_keys=(TAG,))


class Publisher:
    """The run's gauges, created on first use (a supervisor that never sees a step line makes none)."""

    def __init__(self, run: str, make: Callable[[str, str], Gauge] = ray_gauge) -> None:
        self.run = run
        self._make = make
        self._gauges: dict[str, Gauge] = {}
        self.published: dict[str, float] = {}

    def publish(self, log_text: str) -> dict[str, float]:
        """Set every gauge the log has a figure for; returns what was set."""
        figures = latest(step_lines.parse(log_text))
        for key, value in figures.items():
            if not math.isfinite(value):
                continue
            if key not in self._gauges:
                self._gauges[key] = self._make(*GAUGES[key])
            self._gauges[key].set(value, tags={TAG: self.run})
        self.published = figures
        return figures

    def refresh(self) -> None:
        """Set the last published figures again (keeps them in Ray's export)."""
        for key, value in self.published.items():
            if key in self._gauges and math.isfinite(value):
                self._gauges[key].set(value, tags={TAG: self.run})
