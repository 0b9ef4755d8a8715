"""The GPUs alive on the cluster, read from the source and by the rule the supervisor uses.

`submit`'s warning and the supervisor's capacity wait once read two different sources (the
dashboard's node summary and the state API's node table) and could disagree in the same second;
both now read Ray's node table through jobs/head/node_events.py.
"""

from __future__ import annotations

import http.client

from jobs.client.dashboard import Dashboard
from jobs.common.errors import JobsError
from jobs.head import node_events


def alive_gpus(dashboard: Dashboard) -> float | None:
    """GPUs on the cluster's alive nodes, or None when the dashboard does not say."""
    try:
        nodes = dashboard.nodes()
    except (JobsError, RuntimeError, OSError, ValueError, http.client.HTTPException):
        return None
    return node_events.alive_gpu_nodes(nodes)[1]
