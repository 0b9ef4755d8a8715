"""GPUs on request, on a real local Ray whose autoscaler adds and removes GPU raylets.

The head runs Ray's autoscaler v2 with its fake multi-node provider (tests/jobs/fake_autoscaler.py),
configured like a stack with `gpu.scaling: on-demand`: no GPU node until something asks, a node
idle for the idle timeout removed. The supervisor asks for the run's GPUs, the attempt (a stand-in
trainer that holds the GPUs in an actor, as the frameworks' workers do) trains on the node the
request brought, and the run's end lets the node go.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from jobs.client.dashboard import Dashboard
from jobs.client.types import Submission
from jobs.head import events as ev
from jobs.head import node_events
from jobs.head.run_store import RunStore
from jobs.runs import handoff, plan
from tests import localray
from tests.jobs import fake_autoscaler
from tests.jobs.conftest import run_cli, wait_until
from tests.jobs.fast_supervisor import set_fast

pytestmark = pytest.mark.ray

GPUS = 2
IDLE_TIMEOUT_S = 6.0
# The attempt trains for several idle timeouts: a scale-down that ignored a busy node would end it.
TRAIN_S = 4 * IDLE_TIMEOUT_S


@pytest.fixture(scope="module")
def autoscaling_head() -> Iterator[localray.LocalRay]:
    head = fake_autoscaler.start(gpus_per_node=GPUS, max_nodes=1, idle_timeout_s=IDLE_TIMEOUT_S)
    try:
        yield head
    finally:
        head.stop()


@pytest.fixture(autouse=True)
def fast_supervisor(monkeypatch) -> None:
    set_fast(monkeypatch)


def _trainer(seconds: float) -> list[str]:
    """Holds the run's GPUs in an actor for `seconds`, printing a step line each second."""
    code = (
        "import time, ray\n"
        "ray.init()\n"
        f"@ray.remote(num_gpus={GPUS})\n"
        "class Worker:\n"
        "    def train(self, n):\n"
        "        time.sleep(1)\n"
        "        return n\n"
        "w = Worker.remote()\n"
        f"for step in range(1, {int(seconds)} + 1):\n"
        "    print(f'step:{ray.get(w.train.remote(step))} - actor/loss:0.1', flush=True)\n"
        "print('trained', flush=True)\n"
    )
    return ["python", "-c", code]


def _hand_off_on_demand(url: str, sub: Submission, runs_root: Path) -> Dashboard:
    """Hand the run to a supervisor as `rl-jobs` does on a stack whose GPUs scale on demand."""
    client = Dashboard(url)
    handoff.hand_off(
        client,
        sub,
        max_restarts=0,
        gpus=GPUS,
        checkpoint_dir="",
        hint_where="",
        options=handoff.Options(
            runs_root=str(runs_root), max_preemptions=1, request_gpus=True, gpus_per_node=GPUS
        ),
    )
    return client


def _gpu_nodes(url: str) -> set[str]:
    return node_events.alive_gpu_nodes(node_events.fetch(url))[0]


class NodeWatch:
    """Every alive GPU node set seen, read from Ray's node table twice a second."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.seen: list[tuple[str, frozenset[str]]] = []
        self.phase = "before"
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        while not self._done.wait(0.5):
            try:
                self.seen.append((self.phase, frozenset(_gpu_nodes(self.url))))
            except (OSError, ValueError):
                continue

    def __enter__(self) -> NodeWatch:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._done.set()
        self._thread.join(timeout=5)


def test_a_run_brings_its_gpu_node_and_its_end_lets_it_go(autoscaling_head, tmp_path):
    url = autoscaling_head.dashboard_url
    assert _gpu_nodes(url) == set(), "the cluster starts without GPU nodes"
    run = f"ondemand-{uuid.uuid4().hex[:8]}"
    sub = plan.for_command(_trainer(TRAIN_S), run, None, None, "test")
    store = RunStore(str(tmp_path), run)
    events = lambda: list(store.events())  # noqa: E731
    with NodeWatch(url) as watch:
        _hand_off_on_demand(url, sub, tmp_path)
        wait_until(
            lambda: any(r["event"] == ev.SUBMITTED for r in events()),
            timeout=120,
            what="the attempt to be submitted once the GPU node is up",
        )
        watch.phase = "attempt"
        wait_until(lambda: ev.outcome(events()) is not None, timeout=180, what="the run to end")
        watch.phase = "after"
        recs = events()
        assert ev.outcome(recs)["event"] == ev.FINISHED, json.dumps(recs, indent=1)
        wait_until(
            lambda: _gpu_nodes(url) == set(),
            timeout=IDLE_TIMEOUT_S + 60,
            what="the idle GPU node to be removed after the run's end",
        )
    kinds = [r["event"] for r in recs]
    # Asked for first, then "scaling up" (not "no capacity"), then the measured time to workers.
    assert kinds.index(ev.GPUS_REQUESTED) < kinds.index(ev.WAITING) < kinds.index(ev.GPUS_BACK)
    [asked] = [r for r in recs if r["event"] == ev.GPUS_REQUESTED]
    assert asked["bundles"] == [{"GPU": float(GPUS)}]
    [waiting] = [r for r in recs if r["event"] == ev.WAITING]
    assert waiting["scaling_up"] is True and waiting["message"].startswith("scaling up:")
    [back] = [r for r in recs if r["event"] == ev.GPUS_BACK]
    assert 0 < back["scale_up_s"] < 120 and "after scaling up began" in back["message"]
    print(f"time from the request to the GPU worker alive: {back['scale_up_s']} s")
    # Released before the final record, which stays the last: `list` shows it as the run's end.
    assert kinds[-2:] == [ev.GPUS_RELEASED, ev.FINISHED], kinds
    # The node the request brought stayed for the whole attempt: no scale-down while it trained.
    during = [nodes for phase, nodes in watch.seen if phase == "attempt"]
    assert during and len(set(during)) == 1 and len(during[0]) == 1, watch.seen
    ended = next(r for r in recs if r["event"] == ev.ATTEMPT_ENDED)
    assert ended["status"] == "SUCCEEDED", ended


def test_a_run_stopped_after_its_supervisor_died_releases_its_gpu_request(
    autoscaling_head, tmp_path
):
    """The supervisor is terminated as a head pod's deletion would (no stop request: the run is
    left for the re-armer, its request kept); the user then stops the run. With no supervisor to
    release the request, the stop job drops it, else the GPU node would stay up and billed."""
    url = autoscaling_head.dashboard_url
    run = f"ondemand-stop-{uuid.uuid4().hex[:8]}"
    sub = plan.for_command(_trainer(600), run, None, None, "test")
    store = RunStore(str(tmp_path), run)
    events = lambda: list(store.events())  # noqa: E731
    client = _hand_off_on_demand(url, sub, tmp_path)
    wait_until(
        lambda: any(r["event"] == ev.SUBMITTED for r in events()),
        timeout=120,
        what="the attempt to be submitted once the GPU node is up",
    )
    client.stop(f"{run}-s1")  # SIGTERM without a stop request: interrupted, not ended
    wait_until(
        lambda: any(r["event"] == ev.INTERRUPTED for r in events()),
        timeout=60,
        what="the supervisor to record its interruption",
    )
    assert ev.GPUS_RELEASED not in [r["event"] for r in events()]
    result = run_cli("stop", run, "--address", url, "--runs-root", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert ev.outcome(events())["event"] == ev.STOPPED
    wait_until(
        lambda: _gpu_nodes(url) == set(),
        timeout=IDLE_TIMEOUT_S + 60,
        what="the GPU node to be removed once the stopped run's request was dropped",
    )
