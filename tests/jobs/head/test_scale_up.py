"""The runs' GPU requests to Ray's autoscaler: bundles per node, one request per run, the union sent."""

from __future__ import annotations

import hypothesis.strategies as st
import pytest
from hypothesis import given

from jobs.head import scale_up
from tests.jobs.head.memory_kv import DictKV


class Cluster:
    """What the autoscaler was last asked for, and which supervisors are alive."""

    def __init__(self) -> None:
        self.kv = DictKV()
        self.sent: list[list[scale_up.Bundle]] = []
        self.alive: set[str] = set()

    def requests(self) -> scale_up.Requests:
        return scale_up.Requests(self.kv, self.sent.append, lambda sid: sid in self.alive)

    @property
    def last(self) -> list[scale_up.Bundle]:
        return self.sent[-1]


@pytest.mark.parametrize(
    ("gpus", "per_node", "expected"),
    [
        (16, 8, [{"GPU": 8.0}, {"GPU": 8.0}]),
        (8, 8, [{"GPU": 8.0}]),
        (12, 8, [{"GPU": 8.0}, {"GPU": 4.0}]),
        (3, 0, [{"GPU": 1.0}] * 3),
        (0, 8, []),
    ],
)
def test_bundles_are_one_per_gpu_node(
    gpus: int, per_node: int, expected: list[scale_up.Bundle]
) -> None:
    assert scale_up.bundles(gpus, per_node) == expected


@given(st.integers(min_value=0, max_value=512), st.integers(min_value=0, max_value=16))
def test_bundles_add_up_to_the_gpus_needed(gpus: int, per_node: int) -> None:
    asked = scale_up.bundles(gpus, per_node)
    assert sum(b["GPU"] for b in asked) == gpus
    assert all(0 < b["GPU"] <= max(per_node, 1) for b in asked)


def test_describe_names_nodes_and_gpus() -> None:
    assert scale_up.describe(scale_up.bundles(16, 8)) == "2 nodes of 8 GPUs (16 GPUs)"
    assert scale_up.describe(scale_up.bundles(8, 8)) == "1 node of 8 GPUs (8 GPUs)"
    assert scale_up.describe([]) == "no GPUs"


def test_two_runs_are_both_asked_for_and_one_release_keeps_the_other() -> None:
    cluster = Cluster()
    cluster.alive |= {"a-s1", "b-s1"}
    reqs = cluster.requests()
    reqs.ask("a", "a-s1", scale_up.bundles(16, 8))
    assert cluster.last == [{"GPU": 8.0}] * 2
    # Ray keeps one request per cluster: the second run's call must still carry the first's.
    reqs.ask("b", "b-s1", scale_up.bundles(8, 8))
    assert cluster.last == [{"GPU": 8.0}] * 3
    reqs.release("a", "a-s1")
    assert cluster.last == [{"GPU": 8.0}]
    reqs.release("b", "b-s1")
    assert cluster.last == []


def test_a_dead_supervisors_request_is_dropped_by_the_next_call() -> None:
    cluster = Cluster()
    cluster.alive |= {"a-s1", "b-s1"}
    reqs = cluster.requests()
    reqs.ask("a", "a-s1", scale_up.bundles(8, 8))
    cluster.alive.discard("a-s1")  # killed without releasing (its nodes would bill forever)
    reqs.ask("b", "b-s1", scale_up.bundles(8, 8))
    assert cluster.last == [{"GPU": 8.0}]
    assert "a" not in cluster.kv.data


def test_release_by_an_older_supervisor_keeps_the_newer_ones_request() -> None:
    cluster = Cluster()
    cluster.alive |= {"a-s1", "a-s2"}
    reqs = cluster.requests()
    reqs.ask("a", "a-s1", scale_up.bundles(8, 8))
    reqs.ask("a", "a-s2", scale_up.bundles(16, 8))  # re-armed: the newer supervisor's request
    reqs.release("a", "a-s1")  # the older one leaves late
    assert cluster.last == [{"GPU": 8.0}] * 2


def test_an_unreadable_entry_is_dropped_not_raised() -> None:
    cluster = Cluster()
    cluster.alive |= {"b-s1"}
    cluster.kv.put("a", "{not json")
    cluster.kv.put("c", '["a list"]')
    reqs = cluster.requests()
    assert reqs.ask("b", "b-s1", scale_up.bundles(8, 8)) == [{"GPU": 8.0}]
    assert set(cluster.kv.data) == {"b"}


@given(
    st.lists(
        st.dictionaries(
            st.sampled_from(["GPU", "CPU", "memory"]),
            st.floats(min_value=0, max_value=1e6, allow_nan=False),
            min_size=1,
        ),
        max_size=4,
    )
)
def test_what_ray_is_asked_is_whole_numbers_never_less_than_wanted(asked) -> None:
    """Ray 2.46's request_resources (the NeMo RL image) refuses a bundle whose values are not
    ints ("each bundle key should be str and value as int", ray/autoscaler/sdk/sdk.py L250 at
    ray-2.46.0); 2.60 takes floats. A fraction is rounded up: asking for a little more never
    leaves a run short."""
    sent = scale_up.ray_bundles(asked)
    assert len(sent) == len(asked)
    for want, bundle in zip(asked, sent, strict=True):
        assert set(bundle) == set(want)
        for key, value in bundle.items():
            assert type(value) is int and value - 1 < want[key] <= value


def test_a_request_lost_to_a_concurrent_ask_is_sent_again_by_the_waiting_run():
    """The interleaving forced: run A reads the requests (its own only) and,
    before its union reaches Ray, run B records its request and sends A + B; A's union then
    lands last, and Ray asks for A's 2 nodes while 4 are wanted. Each run asked once, so B
    waited until someone else asked. A run waiting for GPUs now sends the union again."""
    from jobs.head.protocol import Spec
    from jobs.head.run_gpus import RunGpus

    kv, sent = DictKV(), []
    reqs = {}

    def spec(run: str) -> Spec:
        return Spec(
            run=run, first_attempt=1, max_restarts=1, gpus_needed=16, checkpoint_dir="",
            entrypoint="python train.py", runtime_env={}, metadata={}, request_gpus=True,
            gpus_per_node=8,
        )  # fmt: skip

    def send_a(union: list) -> None:
        if not sent:  # B asks between A's read and A's send
            gpus["b"].ask()
        sent.append(("a", union))

    reqs["a"] = scale_up.Requests(kv, send_a, lambda _s: True)
    reqs["b"] = scale_up.Requests(kv, lambda u: sent.append(("b", u)), lambda _s: True)
    gpus = {r: RunGpus(reqs[r], spec(r), f"{r}-s1", lambda *a, **k: None) for r in "ab"}
    gpus["a"].ask()
    assert len(sent[-1][1]) == 2  # the lost update: A's stale union landed last
    gpus["b"].resend()  # B still waits for its GPUs
    assert len(sent[-1][1]) == 4
