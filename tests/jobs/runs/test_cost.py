"""Node-hours and cost per run and the stack's idle GPU node-hours, from Ray's own record shapes.

Jobs are `JobDetails` as the Jobs API returns them (`start_time` / `end_time` in milliseconds since
the epoch, metadata str -> str as `rl-jobs submit` writes it); nodes are state-API rows
(`GET /api/v0/nodes?detail=1`: `start_time_ms`, `end_time_ms`, `state`, `is_head_node`,
`resources_total`).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from components.stack_outputs import StackOutputs
from jobs.client.types import JobDetails
from jobs.common.errors import UsageError
from jobs.runs import cost

H = cost.MS_PER_HOUR
T0 = 1_764_547_200_000  # 2025-12-01T00:00:00Z in ms, as Ray records times


def _attempt(run: str, n: int, start_h: float, end_h: float | None, nodes: int | None = 2):
    meta = {"run": run, "attempt": str(n), "kind": "recipe", "recipe": "nemo-rl-grpo-math"}
    if nodes is not None:
        meta["nodes"] = str(nodes)
    return JobDetails.model_validate(
        {
            "type": "SUBMISSION",
            "submission_id": f"{run}-a{n}",
            "job_id": None,
            "status": "RUNNING" if end_h is None else "SUCCEEDED",
            "entrypoint": "python -m nemo_rl ...",
            "start_time": T0 + int(start_h * H),
            "end_time": None if end_h is None else T0 + int(end_h * H),
            "metadata": meta,
            "runtime_env": {},
            "driver_info": None,
        }
    )


def _supervisor(run: str, start_h: float):
    return JobDetails.model_validate(
        {
            "submission_id": f"{run}-supervisor",
            "status": "RUNNING",
            "entrypoint": "python -m jobs.head.supervisor",
            "start_time": T0 + int(start_h * H),
            "metadata": {"run": run, "kind": "supervisor"},
        }
    )


def _node(start_h: float, end_h: float | None, gpus: float = 8.0, head: bool = False):
    return {
        "node_id": f"n{start_h}",
        "node_ip": "10.4.0.7",
        "is_head_node": head,
        "state": "ALIVE" if end_h is None else "DEAD",
        "state_message": None if end_h is None else "Terminated due to idle",
        "resources_total": {"CPU": 200.0, "memory": 3.0e12, **({"GPU": gpus} if gpus else {})},
        "start_time_ms": T0 + int(start_h * H),
        "end_time_ms": 0 if end_h is None else T0 + int(end_h * H),
    }


def _period(end_h: float, start_h: float = 0.0) -> cost.Interval:
    return cost.Interval(T0 + int(start_h * H), T0 + int(end_h * H))


def test_two_runs_and_an_idle_gap_are_priced_apart() -> None:
    jobs = [
        _supervisor("math-1", 1.0),
        _attempt("math-1", 1, 1.0, 2.0),  # 2 nodes x 1 h
        _attempt("math-1", 2, 2.1, 2.6),  # 2 nodes x 0.5 h
        _attempt("code-2", 1, 8.0, None, nodes=1),  # running: 1 node x 2 h so far
    ]
    nodes = [
        _node(0.0, None),  # a GPU node alive the whole 10 h
        _node(1.0, 3.0),  # a second GPU node that came for math-1 and went after 3 h
        _node(0.0, None, gpus=0, head=True),  # the head: never counted
        _node(0.0, None, gpus=0),  # a CPU worker: never counted
    ]
    report = cost.report(jobs, nodes, _period(10.0), 40.0, "stack config")
    runs = {r.run: r for r in report.runs}
    assert [r.run for r in report.runs] == ["code-2", "math-1"]  # newest first
    assert runs["math-1"].node_hours == pytest.approx(3.0)
    assert runs["code-2"].node_hours == pytest.approx(2.0)
    assert report.usd(runs["math-1"].node_hours) == pytest.approx(120.0)
    assert runs["math-1"].recipe == "nemo-rl-grpo-math"
    # Node 1 idles 10 h less the 3.5 h some attempt ran; node 2 idles 2 h less its 1.5 busy.
    assert report.idle_node_hours == pytest.approx(6.5 + 0.5)
    view = report.view()
    assert view["idle_usd"] == pytest.approx(280.0)
    assert view["total_node_hours"] == pytest.approx(3.0 + 2.0 + 7.0)
    assert [a["submission_id"] for a in view["runs"][1]["attempts"]] == ["math-1-a1", "math-1-a2"]


def test_the_period_clips_attempts_and_nodes() -> None:
    jobs = [_attempt("old", 1, 0.0, 4.0), _attempt("new", 1, 5.0, 7.0)]
    nodes = [_node(0.0, None)]
    report = cost.report(jobs, nodes, _period(8.0, start_h=3.0), 10.0, "x")
    runs = {r.run: r.node_hours for r in report.runs}
    assert runs == {"old": pytest.approx(2.0), "new": pytest.approx(4.0)}
    assert report.idle_node_hours == pytest.approx(5.0 - 1.0 - 2.0)


def test_a_job_with_no_node_count_is_unknown_not_guessed() -> None:
    report = cost.report(
        [_attempt("foreign", 1, 0.0, 1.0, nodes=None)], [], _period(2.0), 10.0, "x"
    )
    (run,) = report.runs
    assert run.node_hours is None and report.usd(run.node_hours) is None
    assert report.total_node_hours is None
    assert report.view()["runs"][0]["node_hours"] is None


def test_no_price_leaves_hours_and_says_why() -> None:
    price, source = cost.price_of(None, None)
    assert price is None and source == cost.NO_PRICE
    report = cost.report([_attempt("r", 1, 0.0, 1.0)], [], _period(1.0), price, source)
    assert report.view()["runs"][0]["node_hours"] == 2.0
    assert report.view()["runs"][0]["usd"] is None


def _outputs(**extra) -> StackOutputs:
    return StackOutputs.model_validate(
        {
            "clusterName": "c",
            "clusterLocation": "us-east1",
            "clusterProject": "p",
            "rayClusterName": "r",
            "rayNamespace": "rl",
            "rayHeadService": "r-head-svc",
            "rayDashboardPort": 8265,
            "rayFramework": "nemo-rl",
            "gpuNodeCount": 2,
            "gpusPerNode": 8,
            **extra,
        }
    )


def test_the_price_comes_from_the_flag_else_the_stack_outputs() -> None:
    outputs = _outputs(gpuNodeHourUsd=38.0, gpuNodeHourSource="estimate: components/prices.py")
    assert cost.price_of(outputs, None) == (38.0, "estimate: components/prices.py")
    assert cost.price_of(outputs, 50.0) == (50.0, "--node-hour-usd")
    assert cost.price_of(_outputs(), None) == (None, cost.NO_PRICE)
    with pytest.raises(UsageError, match="--node-hour-usd 0 is not a price"):
        cost.price_of(outputs, 0.0)


def test_since_takes_what_list_takes_and_refuses_anything_else() -> None:
    """`cost` refused `--since 30m` that `list` accepts: one reading of --since for both."""
    now = T0 + 100 * H
    assert cost.period_since("36h", now) == cost.Interval(now - 36 * H, now)
    assert cost.period_since("2d", now) == cost.Interval(now - 48 * H, now)
    assert cost.period_since("30m", now) == cost.Interval(now - H // 2, now)
    assert cost.period_since(None, now) == cost.Interval(0, now)
    for bad in ("3 weeks", "0h", "-1d", "h", "2099-01-01"):
        with pytest.raises(UsageError, match="--since"):
            cost.period_since(bad, now)


_spans = st.lists(
    st.tuples(st.integers(0, 100), st.integers(1, 50)).map(lambda t: (t[0], t[0] + t[1])),
    max_size=6,
)


@given(_spans)
def test_idle_and_busy_hours_of_an_always_alive_node_add_up_to_the_period(spans) -> None:
    jobs = [_attempt(f"r{i}", 1, s / 10, e / 10) for i, (s, e) in enumerate(spans)]
    period = _period(16.0)
    idle = cost.idle_node_hours([_node(0.0, None)], jobs, period)
    busy = sum(
        i.hours for i in cost._union(filter(None, (cost.attempt_interval(j, period) for j in jobs)))
    )
    assert idle + busy == pytest.approx(16.0)
    assert 0.0 <= idle <= 16.0
