"""The GPUs a run asks Ray's autoscaler for: requested while the run lives, released at its end.

On a stack whose GPUs scale on demand (`gpu.scaling: on-demand`, components/k8s/raycluster.py)
the GPU worker group starts at zero, and KubeRay's in-tree autoscaler adds workers only for
demand it can see: pending tasks, actors or placement groups. Neither framework creates any
while the GPUs are missing: NeMo RL v0.4.0 compares `ray.cluster_resources()` with what it needs
and raises `ResourceInsufficientError` (nemo_rl/distributed/virtual_cluster.py L278-302
`_create_placement_groups_internal`), veRL 0.6.0 raises `ValueError` the same way
(verl/trainer/ppo/ray_trainer.py L103-117 `ResourcePoolManager._check_resource_available`). So the
supervisor makes the demand itself with `ray.autoscaler.sdk.request_resources(bundles=...)`:
one bundle per GPU node, which the autoscaler fits by adding workers at once (it bypasses the
upscaling speed). The request holds the nodes between attempts (a preempted node is replaced
because the request is short of it again) and is released when the run ends, after which a
node idle for `gpu.idleMinutes` is removed.

Ray keeps one request per cluster: each call replaces the previous one ("This request is
persistent until another call to request_resources() is made to override", ray/autoscaler/sdk/
sdk.py `request_resources`, Ray 2.60; autoscaler v2 keeps it in the GCS as the cluster resource
constraint). Runs sharing a cluster therefore keep their own request in Ray's internal KV (the
GCS, which every supervisor reaches) and every call sends the union of the requests whose
supervisor is alive; a request left by a supervisor that died is dropped by the next call.
Standard library only at import: it runs in the supervisor on the head.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

Bundle = dict[str, float]
NAMESPACE = "rl-jobs-gpu-requests"


def bundles(gpus_needed: int, gpus_per_node: int) -> list[Bundle]:
    """One bundle per GPU node the run needs (the last one smaller when the count does not
    divide); without a node size, one bundle per GPU, which the autoscaler packs into nodes."""
    if gpus_needed <= 0:
        return []
    per = gpus_per_node if gpus_per_node > 0 else 1
    whole, rest = divmod(gpus_needed, per)
    return [{"GPU": float(per)} for _ in range(whole)] + ([{"GPU": float(rest)}] if rest else [])


def describe(asked: list[Bundle]) -> str:
    """`2 nodes of 8 GPUs` for the events and the CLI."""
    if not asked:
        return "no GPUs"
    sizes = sorted({b.get("GPU", 0.0) for b in asked})
    gpus = sum(b.get("GPU", 0.0) for b in asked)
    if len(sizes) == 1:
        noun = "node" if len(asked) == 1 else "nodes"
        return f"{len(asked)} {noun} of {sizes[0]:g} GPUs ({gpus:g} GPUs)"
    return f"{gpus:g} GPUs in {len(asked)} bundles"


class Store(Protocol):
    """Ray's internal KV in one namespace (the simulation and tests pass a dict-backed one)."""

    def put(self, key: str, value: str) -> None: ...
    def get(self, key: str) -> str | None: ...
    def keys(self) -> list[str]: ...
    def delete(self, key: str) -> None: ...


@dataclass
class Requests:
    """The cluster's GPU requests, one per run, and the union sent to the autoscaler."""

    store: Store
    send: Callable[[list[Bundle]], None]
    # Whether a supervisor job still runs; an unreadable answer counts as alive: an extra node
    # kept costs money for a while, a request dropped under a live run stalls it.
    supervisor_alive: Callable[[str], bool]

    def ask(self, run: str, supervisor: str, wanted: list[Bundle]) -> list[Bundle]:
        """Record this run's request and send the union; returns what was sent."""
        self.store.put(run, json.dumps({"supervisor": supervisor, "bundles": wanted}))
        return self._send_union()

    def release(self, run: str, supervisor: str) -> list[Bundle]:
        """Drop this run's request (only its own: a newer supervisor of the run keeps its
        request) and send what the other runs still ask for."""
        entry = self._entry(run)
        if entry is not None and entry.get("supervisor") == supervisor:
            self.store.delete(run)
        return self._send_union()

    def drop(self, run: str) -> list[Bundle]:
        """Drop the run's request whoever made it: for a run that ended with no supervisor to
        release it (`stop` of a run whose supervisor was killed, jobs/head/stop.py)."""
        self.store.delete(run)
        return self._send_union()

    def _entry(self, run: str) -> dict[str, Any] | None:
        raw = self.store.get(run)
        if raw is None:
            return None
        try:
            entry = json.loads(raw)
        except ValueError:
            return None
        return entry if isinstance(entry, dict) else None

    def _send_union(self) -> list[Bundle]:
        union: list[Bundle] = []
        for run in sorted(self.store.keys()):
            entry = self._entry(run)
            if entry is None or not self.supervisor_alive(str(entry.get("supervisor", ""))):
                self.store.delete(run)  # unreadable, or its supervisor is gone
                continue
            union.extend(_bundles_of(entry))
        self.send(union)
        return union


def _bundles_of(entry: dict[str, Any]) -> list[Bundle]:
    found = entry.get("bundles")
    if not isinstance(found, list):
        return []
    return [
        {str(k): float(v) for k, v in b.items() if isinstance(v, int | float)}
        for b in found
        if isinstance(b, dict)
    ]


class RayKV:
    """Ray's internal KV (the GCS) in NAMESPACE; needs `ray.init` first."""

    def __init__(self) -> None:
        from ray.experimental import internal_kv

        self._kv = internal_kv

    def put(self, key: str, value: str) -> None:
        self._kv._internal_kv_put(key, value, overwrite=True, namespace=NAMESPACE)

    def get(self, key: str) -> str | None:
        raw = self._kv._internal_kv_get(key, namespace=NAMESPACE)
        return None if raw is None else raw.decode()

    def keys(self) -> list[str]:
        return [k.decode() for k in self._kv._internal_kv_list("", namespace=NAMESPACE)]

    def delete(self, key: str) -> None:
        self._kv._internal_kv_del(key, namespace=NAMESPACE)


def on_ray() -> Requests:
    """The requests of the cluster this process is connected to (`ray.init` first), keeping
    every other run's request (this process cannot tell whose supervisor lives)."""
    return Requests(RayKV(), send_to_ray, lambda _supervisor: True)


def ray_bundles(asked: list[Bundle]) -> list[dict[str, int]]:
    """The bundles as every image's Ray takes them: Ray 2.46 (NeMo RL's image) refuses a value
    that is not an int ("each bundle key should be str and value as int", ray/autoscaler/sdk/
    sdk.py L250 at ray-2.46.0). A fraction is rounded up, never leaving a run short."""
    return [{key: math.ceil(value) for key, value in bundle.items()} for bundle in asked]


def send_to_ray(asked: list[Bundle]) -> None:
    """Ray's autoscaler request (an empty list clears the cluster's request)."""
    from ray.autoscaler.sdk import request_resources

    request_resources(bundles=ray_bundles(asked))
