"""A Job that finishes once the CRDs GKE installs after cluster creation are served.

GKE installs the `networking.gke.io` (Network, GKENetworkParamSet), `monitoring.googleapis.com`
(PodMonitoring) and Ray operator (`ray.io` RayCluster) CRDs asynchronously, after the cluster
reports ready (reference gcp-and-k8s.md 11). pulumi-kubernetes retries a create that fails with
"no matches for kind" only 5 times with 1-16 s backoff, about 31 s in all (pulumi-kubernetes
v4.32.0 provider/pkg/await/await.go `Creation`: `WithMaxRetries(5)`, `WithBackoffFactor(2)`),
and it has no setting that waits for a CRD to exist: `pulumi.com/waitFor` only judges the
annotated object itself.

So the wait is a Kubernetes object whose own readiness *is* the CRDs' existence: a Job, which
pulumi-kubernetes awaits until it completes (await/job.go, `batch/v1/Job` awaiter). Its init
container runs `kubectl wait --for=create` (kubectl >= 1.31, kubernetes#125868) and its container
`kubectl wait --for=condition=Established` on each CRD. Objects of those kinds depend on the
Job, so the first `pulumi up` creates them only once the API server serves their kinds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.contract import NODE_POOL_LABEL
from components.k8s.provider import KubeTarget

# CRD object names (<plural>.<group>) of every kind the layer creates that GKE installs itself.
GKE_INSTALLED_CRDS: tuple[str, ...] = (
    "gkenetworkparamsets.networking.gke.io",
    "networks.networking.gke.io",
    "podmonitorings.monitoring.googleapis.com",
    "rayclusters.ray.io",
)
# The Kubernetes project's own kubectl image (registry.k8s.io/kubectl, kubernetes#116672):
# ENTRYPOINT /bin/kubectl (build/server-image/kubectl/Dockerfile). 1.35 matches the cluster minor.
KUBECTL_IMAGE = "registry.k8s.io/kubectl:v1.35.0"
# How long GKE may take to install the CRDs; the Job (and Pulumi's await) give up after this.
CREATE_TIMEOUT_SECONDS = 1200
ESTABLISHED_TIMEOUT_SECONDS = 300


def _crd_args(verb: list[str], timeout: int, crds: Sequence[str]) -> list[str]:
    return ["wait", *verb, f"--timeout={timeout}s", *[f"crd/{name}" for name in crds]]


def cluster_role_manifest(name: str, crds: Sequence[str]) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name},
        # Read-only, and only these CRDs: kubectl wait lists/watches with a metadata.name field
        # selector, which RBAC matches against resourceNames.
        "rules": [
            {
                "apiGroups": ["apiextensions.k8s.io"],
                "resources": ["customresourcedefinitions"],
                "resourceNames": list(crds),
                "verbs": ["get", "list", "watch"],
            }
        ],
    }


def cluster_role_binding_manifest(name: str, namespace: str, service_account: str) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": service_account, "namespace": namespace}],
    }


def job_manifest(
    name: str, namespace: str, service_account: str, system_pool: str, crds: Sequence[str]
) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": namespace,
            # Pulumi's Job await defaults to 10 minutes; the CRDs may take longer on a new cluster.
            "annotations": {"pulumi.com/timeoutSeconds": str(CREATE_TIMEOUT_SECONDS + ESTABLISHED_TIMEOUT_SECONDS)},
        },
        "spec": {
            "backoffLimit": 3,
            "activeDeadlineSeconds": CREATE_TIMEOUT_SECONDS + ESTABLISHED_TIMEOUT_SECONDS,
            "template": {
                "spec": {
                    "serviceAccountName": service_account,
                    "restartPolicy": "OnFailure",
                    # The system pool exists before any CRD object is created; GPU nodes may not.
                    "nodeSelector": {NODE_POOL_LABEL: system_pool},
                    "initContainers": [
                        {
                            "name": "wait-for-create",
                            "image": KUBECTL_IMAGE,
                            "args": _crd_args(["--for=create"], CREATE_TIMEOUT_SECONDS, crds),
                            "resources": {"requests": {"cpu": "10m", "memory": "64Mi"}},
                        }
                    ],
                    "containers": [
                        {
                            "name": "wait-for-established",
                            "image": KUBECTL_IMAGE,
                            "args": _crd_args(
                                ["--for=condition=Established"], ESTABLISHED_TIMEOUT_SECONDS, crds
                            ),
                            "resources": {"requests": {"cpu": "10m", "memory": "64Mi"}},
                        }
                    ],
                }
            },
        },
    }


@dataclass(frozen=True)
class CrdGateArgs:
    target: KubeTarget
    name: str
    namespace: str
    system_pool_name: str
    namespace_resource: pulumi.Resource
    # The node pool the Job's pod runs on, when the caller has it as a resource.
    system_pool: pulumi.Resource | None = None
    crds: tuple[str, ...] = GKE_INSTALLED_CRDS


class CrdGate(pulumi.ComponentResource):
    """ServiceAccount + read-only ClusterRole on the CRDs + the Job; depend on `job`."""

    job: k8s.batch.v1.Job

    def __init__(self, name: str, args: CrdGateArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("rl-on-gke:k8s:CrdGate", name, None, opts)
        target = args.target
        account = k8s.core.v1.ServiceAccount(
            f"{name}-sa",
            metadata={"name": args.name, "namespace": args.namespace},
            opts=target.options(self, depends_on=[args.namespace_resource]),
        )
        role = cluster_role_manifest(args.name, args.crds)
        cluster_role = k8s.rbac.v1.ClusterRole(
            f"{name}-role", metadata=role["metadata"], rules=role["rules"], opts=target.options(self)
        )
        binding = cluster_role_binding_manifest(args.name, args.namespace, args.name)
        role_binding = k8s.rbac.v1.ClusterRoleBinding(
            f"{name}-binding",
            metadata=binding["metadata"],
            role_ref=binding["roleRef"],
            subjects=binding["subjects"],
            opts=target.options(self, depends_on=[cluster_role, account]),
        )
        job = job_manifest(args.name, args.namespace, args.name, args.system_pool_name, args.crds)
        prerequisites: list[pulumi.Resource] = [role_binding, account]
        if args.system_pool is not None:
            prerequisites.append(args.system_pool)
        self.job = k8s.batch.v1.Job(
            f"{name}-job",
            metadata=job["metadata"],
            spec=job["spec"],
            opts=target.options(self, depends_on=prerequisites),
        )
        self.register_outputs({"crds": list(args.crds)})
