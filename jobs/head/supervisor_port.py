"""What the supervisor's collaborators may use of it: its facts, its record and its waits.

The collaborators (the attempt's watch, end, submit and restore, the capacity waits, the run's
end) carry out the supervisor's work beside it and are held by it; they name this protocol
rather than the `Supervisor` class, so the supervisor is the only module that knows them all and
no import runs back to it. Standard library only: it runs on the Ray head.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from jobs.head.clock import Clock
    from jobs.head.cluster_view import ClusterView
    from jobs.head.probes import Probes
    from jobs.head.protocol import Settings, Spec
    from jobs.head.run_gpus import RunGpus
    from jobs.head.run_store import RunStore


class SupervisorPort(Protocol):
    """The supervisor as its collaborators see it."""

    client: Any
    own_id: str
    spec: Spec
    probes: Probes
    config: Settings
    clock: Clock
    store: RunStore | None
    cluster: ClusterView
    gpus: RunGpus | None
    stopping: threading.Event
    lost: threading.Event

    def record(self, event: str, message: str, **fields: Any) -> None:
        """Write one decision to the job log and the run's record."""

    def pause(self, seconds: float) -> bool:
        """Wait `seconds`; True when a stop came meanwhile."""

    def retry(self, call: Callable[[], Any]) -> Any:
        """A Jobs API call retried while the dashboard restarts; None on a stop."""
