"""The run's gauges on a real local Ray: a supervised attempt printing veRL's step lines
has its reward, KL, step time and tokens/s on the head's Prometheus export under the names the
Grafana training dashboard queries, for as long as the attempt runs.

The attempt stands in for veRL's trainer: it prints lines made by veRL 0.6.0's own formatter
(tests/jobs/runs/framework_lines.py) behind Ray's actor prefix, one step a second.
"""

from __future__ import annotations

import json
import time
import urllib.request
import uuid
from pathlib import Path

import numpy as np
import psutil
import pytest
from prometheus_client.parser import text_string_to_metric_families

try:
    from components.k8s import grafana
except ModuleNotFoundError:  # the image-Ray venvs (`make venv-ray`) carry no Pulumi SDK
    grafana = None  # type: ignore[assignment]
from jobs.client.dashboard import Dashboard
from jobs.head import events as ev
from jobs.head import run_gauges, stop
from jobs.head.run_store import RunStore
from jobs.runs import handoff, plan
from tests.jobs.conftest import wait_until
from tests.jobs.fast_supervisor import set_fast
from tests.jobs.runs.framework_lines import verl_step_line

pytestmark = pytest.mark.ray


@pytest.fixture(autouse=True)
def fast_supervisor(monkeypatch) -> None:
    set_fast(monkeypatch, JOBS_SUPERVISOR_GAUGES_S="1")


def _trainer(steps: int) -> list[str]:
    lines = [
        verl_step_line(
            {
                "critic/score/mean": np.float64(0.1 * n),
                "actor/kl_loss": np.float64(0.001 * n),
                "timing_s/step": 1.0,
                "perf/throughput": 1500.0 + n,
            },
            n,
        )
        for n in range(1, steps + 1)
    ]
    code = (
        "import sys, time\n"
        f"for line in {lines!r}:\n"
        "    print(line, flush=True)\n"
        "    time.sleep(1)\n"
        "time.sleep(600)\n"  # holds the last figures until the test stops the run
    )
    return ["python", "-c", code]


def _run_series(metrics_url: str, run: str) -> dict[str, float]:
    with urllib.request.urlopen(metrics_url, timeout=10) as answer:
        text = answer.read().decode()
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.labels.get(run_gauges.TAG) == run:
                out[sample.name] = sample.value
    return out


def test_a_supervised_verl_attempt_has_its_figures_on_the_heads_export(ray_head, tmp_path):
    run = f"gauges-{uuid.uuid4().hex[:8]}"
    client = Dashboard(ray_head.dashboard_url)
    handoff.hand_off(
        client,
        plan.for_command(_trainer(5), run, None, None, "test"),
        max_restarts=0,
        gpus=0,
        checkpoint_dir="",
        hint_where="",
        options=handoff.Options(runs_root=str(tmp_path), max_preemptions=0),
    )
    store = RunStore(str(tmp_path), run)
    names = run_gauges.PROMETHEUS_NAMES
    seen: dict[str, float] = {}

    def at_step_5() -> bool:
        seen.clear()
        seen.update(_run_series(ray_head.metrics_url, run))
        return seen.get(names["step"]) == 5.0

    try:
        # Ray reports every 10 s; the attempt prints its last step after ~5 s.
        wait_until(at_step_5, timeout=90, what="step 5 of the run on the head's export")
        assert seen[names["reward"]] == pytest.approx(0.5)
        assert seen[names["kl"]] == pytest.approx(0.005)
        assert seen[names["step_time"]] == 1.0
        assert seen[names["throughput"]] == 1505.0
        # Ray drops a gauge not set for two report intervals: the supervisor keeps setting them,
        # so they stay on the export while the attempt runs.
        deadline = time.monotonic() + 25
        while time.monotonic() < deadline:
            assert _run_series(ray_head.metrics_url, run).get(names["step"]) == 5.0
            time.sleep(1)
        # Every series the training dashboard plots from the run is one Ray exported (checked
        # where the program's code is installed; the gauges above under every Ray).
        if grafana is not None:
            dashboard = json.dumps(grafana.training_dashboard())
            plotted = {n for n in names.values() if n in dashboard}
            wanted = {names["reward"], names["kl"], names["step_time"], names["throughput"]}
            assert wanted <= plotted
            assert plotted <= set(seen), f"plotted but not exported: {plotted - set(seen)}"
        # Setting gauges writes nothing: no folder named after the attempt where the head runs
        # (a name clash once made the watchdog publish the re-armer's code there).
        head_cwd = Path(psutil.Process(ray_head.process.pid).cwd())
        assert not (head_cwd / f"{run}-a1").exists()
    finally:
        # As `rl-jobs stop` does: the request on the runs root makes the SIGTERM a user's stop,
        # and the supervisor stops its attempt (a bare SIGTERM leaves the run to be re-armed).
        stop.request_stop(store, "test")
        client.stop(f"{run}-s1")
        wait_until(
            lambda: (ev.outcome(list(store.events())) or {}).get("event") == ev.STOPPED,
            timeout=60,
            what="the run's stop",
        )
        wait_until(lambda: client.status(f"{run}-a1").is_terminal(), timeout=60, what="a1's end")
