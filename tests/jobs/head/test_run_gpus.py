"""A supervised run's GPU request: asked once per supervisor, released at the end, and a release
that fails is recorded, never raised."""

from __future__ import annotations

from typing import Any

from jobs.head import events as ev
from jobs.head import scale_up
from jobs.head.run_gpus import RunGpus
from tests.jobs.head.memory_kv import DictKV
from tests.jobs.head.test_protocol import spec


class Records:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, dict[str, Any]]] = []

    def __call__(self, event: str, message: str, **fields: Any) -> None:
        self.events.append((event, message, fields))


def _requests(sent: list[list[scale_up.Bundle]]) -> scale_up.Requests:
    return scale_up.Requests(DictKV(), sent.append, lambda _sid: True)


def test_the_request_is_asked_once_and_released_at_the_end():
    sent: list[list[scale_up.Bundle]] = []
    records = Records()
    gpus = RunGpus(_requests(sent), spec(gpus_needed=16, gpus_per_node=8), "r-s1", records)
    gpus.ask()
    gpus.ask()
    assert sent == [scale_up.bundles(16, 8)]
    assert [e for e, _m, _f in records.events] == [ev.GPUS_REQUESTED]
    assert records.events[0][2]["cluster_bundles"] == 2
    gpus.release()
    assert sent[-1] == []
    assert records.events[-1][0] == ev.GPUS_RELEASED


def test_a_release_that_fails_is_recorded_not_raised():
    records = Records()

    def unreachable(_bundles: list[scale_up.Bundle]) -> None:
        raise ConnectionError("the GCS is away")

    requests = scale_up.Requests(DictKV(), unreachable, lambda _sid: True)
    RunGpus(requests, spec(gpus_needed=8), "r-s1", records).release()
    event, message, fields = records.events[-1]
    assert event == ev.ERROR and fields["error"] == "ConnectionError"
    assert "could not release" in message
