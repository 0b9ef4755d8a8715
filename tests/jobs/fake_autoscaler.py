"""A local Ray head whose autoscaler (v2) adds and removes GPU raylets: Ray's fake multi-node provider.

Ray ships the provider for its own autoscaler tests (ray/autoscaler/_private/fake_multi_node/
node_provider.py `FakeMultiNodeProvider`): each node it "launches" is a raylet started on this
machine inside the head's autoscaler process, with the resources its node type declares. Ray's
`AutoscalingCluster` helper is not used: it stops every Ray process on the machine (`ray stop
--force`), reads a defaults file the 2.60 wheel does not ship (fake_multi_node/example.yaml), and
points the nodes at port 6379. The provider is loaded as an "external" one (the same class, no
defaults file needed), with every key the defaults would have filled in given here.
"""

from __future__ import annotations

from typing import Any

from tests import localray

HEAD_NODE_ID = localray.FAKE_AUTOSCALER_ENV["RAY_CLOUD_INSTANCE_ID"]
GPU_NODE_TYPE = "gpu-workers"


def config(gpus_per_node: int, max_nodes: int, idle_timeout_s: float) -> dict[str, Any]:
    """A Ray cluster config: a CPU head and a GPU worker type of 0..max_nodes, like the
    stack's RayCluster with `gpu.scaling: on-demand` (components/k8s/raycluster.py)."""
    return {
        "cluster_name": "rl-on-gke-test",
        "max_workers": max_nodes,
        "upscaling_speed": 1.0,
        "idle_timeout_minutes": idle_timeout_s / 60.0,
        "provider": {
            "type": "external",
            "module": "ray.autoscaler._private.fake_multi_node.node_provider.FakeMultiNodeProvider",
            "launch_multiple": True,
            "head_node_id": HEAD_NODE_ID,
            "use_node_id_as_ip": True,
            "disable_node_updaters": True,
            "disable_launch_config_check": True,
        },
        "head_node_type": "ray.head.default",
        "available_node_types": {
            "ray.head.default": {"resources": {"CPU": 2}, "node_config": {}, "max_workers": 0},
            GPU_NODE_TYPE: {
                "resources": {"CPU": 1, "GPU": gpus_per_node},
                "node_config": {},
                "min_workers": 0,
                "max_workers": max_nodes,
            },
        },
        "auth": {},
        "docker": {},
        "initialization_commands": [],
        "setup_commands": [],
        "head_setup_commands": [],
        "worker_setup_commands": [],
        "head_start_ray_commands": [],
        "worker_start_ray_commands": [],
        "file_mounts": {},
        "cluster_synced_files": [],
        "file_mounts_sync_continuously": False,
        "rsync_exclude": [],
        "rsync_filter": [],
    }


def start(
    gpus_per_node: int = 2, max_nodes: int = 1, idle_timeout_s: float = 6.0
) -> localray.LocalRay:
    return localray.start(num_cpus=2, autoscaling=config(gpus_per_node, max_nodes, idle_timeout_s))
