"""A Job that finishes once the CRDs GKE installs after cluster creation are served.

GKE installs the `networking.gke.io` (Network, GKENetworkParamSet), `monitoring.googleapis.com`
(PodMonitoring) and Ray operator (`ray.io` RayCluster) CRDs asynchronously, after the cluster
reports ready (reference gcp-and-k8s.md 11). pulumi-kubernetes retries a create that fails with
"no matches for kind" only 5 times with 1-16 s backoff, about 31 s in all (pulumi-kubernetes
v4.32.0 provider/pkg/await/await.go `Creation`: `WithMaxRetries(5)`, `WithBackoffFactor(2)`),
and it has no setting that waits for a CRD to exist: `pulumi.com/waitFor` only judges the
annotated object itself.

So the wait is a Kubernetes object whose own readiness *is* the CRDs' existence: a Job, which
pulumi-kubernetes awaits until it completes (await/job.go). Objects of those kinds depend on it.

Its one container runs GATE_SCRIPT: every poll it reads each CRD on its own (`kubectl get`) and
counts it served once it exists and is Established, with one overall deadline; when the deadline
passes it fails once, naming every CRD still missing. A RayCluster CRD without `upgradeStrategy`
(KubeRay before v1.6.0) fails it at once, saying why (RAYCLUSTER_CRD below). Not
`kubectl wait --for=create` over all CRDs at once: it polls only while the lookup error is
NotFound, and with two or more CRDs missing the builder returns an aggregate error that is not
NotFound (kubectl wait.go "create" branch; cli-runtime ContinueOnError; apimachinery util/errors
aggregate has no Is/Unwrap), so it exited 1 at once, exactly when the CRDs were late. The Job
fails at most once (backoffLimit 0, restartPolicy Never), and `pulumi.com/replaceUnready` makes
the next `pulumi up` replace a failed Job instead of awaiting it again (pulumi-kubernetes
provider/pkg/provider/provider.go Diff, `ReplaceUnready` for kind Job; without it "Pulumi will
continue to wait for readiness on the next update", gen/additionalComments.go
replaceUnreadyComment). The script needs bash: the kubectl image is
built on debian-base with bash since kubernetes#119592.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.catalogue import KUBECTL_IMAGE as KUBECTL_PIN
from components.contract import NODE_POOL_LABEL
from components.k8s.provider import KubeTarget, typed_object

# CRD object names (<plural>.<group>) of every kind the layer creates that GKE installs itself.
GKE_INSTALLED_CRDS: tuple[str, ...] = (
    "gkenetworkparamsets.networking.gke.io",
    "networks.networking.gke.io",
    "podmonitorings.monitoring.googleapis.com",
    "rayclusters.ray.io",
)
# The Kubernetes project's own kubectl image (registry.k8s.io/kubectl, kubernetes#116672), bash
# included (kubernetes#119592). 1.35 matches the cluster minor. Pinned in the catalogue;
# The stack passes it by digest through its remote repository (components/registry.py).
KUBECTL_IMAGE = KUBECTL_PIN.upstream_ref
# How long GKE may take to install the CRDs: the script's one deadline for all of them.
DEADLINE_SECONDS = 1500
POLL_SECONDS = 5
# The Job's own deadline and Pulumi's await stay above the script's, so the script's message
# (which CRDs are missing) is what fails the Job, not a kill.
JOB_DEADLINE_SECONDS = DEADLINE_SECONDS + 120
PULUMI_TIMEOUT_SECONDS = JOB_DEADLINE_SECONDS + 180
CONTAINER = "wait-for-crds"

# The RayCluster CRD must offer `spec.upgradeStrategy.type: Recreate`, on which the program relies
# to bring a RayCluster change to the running head (components/k8s/raycluster.py UPGRADE_STRATEGY).
# KubeRay's CRD first has it in v1.6.0 (ray-operator/config/crd/bases/ray.io_rayclusters.yaml
# L4555 at v1.6.0, absent at v1.5.1), and an API server prunes a field its CRD does not declare,
# silently. Which KubeRay GKE's Ray Operator add-on runs is not published per GKE version, so the
# gate reads it from the served CRD and refuses, by name, a cluster whose add-on is older.
RAYCLUSTER_CRD = "rayclusters.ray.io"
UPGRADE_STRATEGY_JSONPATH = (
    '{.spec.versions[?(@.name=="v1")].schema.openAPIV3Schema.properties.spec.properties'
    ".upgradeStrategy.properties.type.enum[*]}"
)

# $@: CRD names. Env: GATE_DEADLINE_SECONDS, GATE_POLL_SECONDS. A lookup that fails for another
# reason than NotFound (an API hiccup, RBAC) is kept as that CRD's last error and retried; it is
# reported with the name if the deadline passes.
GATE_SCRIPT = (
    f"""set -u
RAYCLUSTER_CRD={shlex.quote(RAYCLUSTER_CRD)}
UPGRADE_STRATEGY_JSONPATH={shlex.quote(UPGRADE_STRATEGY_JSONPATH)}
"""
    + r"""# Microseconds from bash 5's EPOCHREALTIME, so the deadline is not rounded to a whole second.
now_us() { local t=${EPOCHREALTIME/[.,]/}; echo $((10#$t)); }
deadline=$(( $(now_us) + GATE_DEADLINE_SECONDS * 1000000 ))
declare -A last_error=()
pending=("$@")
while :; do
  still=()
  for crd in "${pending[@]}"; do
    if out=$(kubectl get "customresourcedefinitions.apiextensions.k8s.io/$crd" \
        -o 'jsonpath={.status.conditions[?(@.type=="Established")].status}' 2>&1); then
      if [ "$out" = "True" ]; then
        if [ "$crd" = "$RAYCLUSTER_CRD" ]; then
          if ! strategies=$(kubectl get "customresourcedefinitions.apiextensions.k8s.io/$crd" \
              -o "jsonpath=$UPGRADE_STRATEGY_JSONPATH" 2>&1); then
            last_error[$crd]="$(printf '%s' "$strategies" | tail -n 1)"
            still+=("$crd")
            continue
          fi
          case " $strategies " in
            *" Recreate "*) ;;
            *) echo "$crd is served without spec.upgradeStrategy Recreate (KubeRay older" \
                 "than v1.6.0): KubeRay would never recreate the Ray head on a RayCluster" \
                 "change, so a change of this stack would not reach a running head. Upgrade the" \
                 "cluster to a GKE version whose Ray Operator add-on runs KubeRay v1.6.0 or" \
                 "later, then run pulumi up again." >&2
               exit 1 ;;
          esac
        fi
        echo "served: $crd"
        continue
      fi
      last_error[$crd]="exists but is not Established yet"
    elif printf '%s' "$out" | grep -q 'NotFound\|not found'; then
      last_error[$crd]="not found"
    else
      last_error[$crd]="$(printf '%s' "$out" | tail -n 1)"
    fi
    still+=("$crd")
  done
  if [ "${#still[@]}" -eq 0 ]; then
    echo "all ${#} CRDs are served"
    exit 0
  fi
  pending=("${still[@]}")
  if [ "$(now_us)" -ge "$deadline" ]; then
    echo "CRDs still missing after ${GATE_DEADLINE_SECONDS}s: ${pending[*]}" >&2
    for crd in "${pending[@]}"; do echo "  $crd: ${last_error[$crd]}" >&2; done
    exit 1
  fi
  sleep "$GATE_POLL_SECONDS"
done
"""
)


def gate_command(crds: Sequence[str]) -> list[str]:
    """The container command: bash runs GATE_SCRIPT with the CRD names as its arguments."""
    return ["/bin/bash", "-c", GATE_SCRIPT, "crd-gate", *crds]


def cluster_role_manifest(name: str, crds: Sequence[str]) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name},
        # Read-only, and only these CRDs: the script only ever gets each one by name.
        "rules": [
            {
                "apiGroups": ["apiextensions.k8s.io"],
                "resources": ["customresourcedefinitions"],
                "resourceNames": list(crds),
                "verbs": ["get"],
            }
        ],
    }


def cluster_role_binding_manifest(
    name: str, namespace: str, service_account: str
) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": service_account, "namespace": namespace}],
    }


def job_manifest(
    name: str,
    namespace: str,
    service_account: str,
    system_pool: str,
    crds: Sequence[str],
    image: str = KUBECTL_IMAGE,
) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "annotations": {
                # Pulumi's Job await defaults to 10 minutes; the CRDs may take longer on a new cluster.
                "pulumi.com/timeoutSeconds": str(PULUMI_TIMEOUT_SECONDS),
                # A failed gate is replaced on the next `pulumi up`, never awaited again.
                "pulumi.com/replaceUnready": "true",
            },
        },
        "spec": {
            # The script fails once, by name, at its deadline; a retry would only wait again.
            "backoffLimit": 0,
            "activeDeadlineSeconds": JOB_DEADLINE_SECONDS,
            "template": {
                "spec": {
                    "serviceAccountName": service_account,
                    "restartPolicy": "Never",
                    # The system pool exists before any CRD object is created; GPU nodes may not.
                    "nodeSelector": {NODE_POOL_LABEL: system_pool},
                    "containers": [
                        {
                            "name": CONTAINER,
                            "image": image,
                            "command": gate_command(crds),
                            "env": [
                                {"name": "GATE_DEADLINE_SECONDS", "value": str(DEADLINE_SECONDS)},
                                {"name": "GATE_POLL_SECONDS", "value": str(POLL_SECONDS)},
                            ],
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
    image: str = KUBECTL_IMAGE


class CrdGate(pulumi.ComponentResource):
    """ServiceAccount + read-only ClusterRole on the CRDs + the Job; depend on `job`."""

    job: k8s.batch.v1.Job

    def __init__(
        self, name: str, args: CrdGateArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("rl-on-gke:k8s:CrdGate", name, None, opts)
        target = args.target
        account = k8s.core.v1.ServiceAccount(
            f"{name}-sa",
            metadata={"name": args.name, "namespace": args.namespace},
            opts=target.options(self, depends_on=[args.namespace_resource]),
        )
        role = cluster_role_manifest(args.name, args.crds)
        cluster_role = typed_object(
            k8s.rbac.v1.ClusterRole, f"{name}-role", role, target.options(self)
        )
        binding = cluster_role_binding_manifest(args.name, args.namespace, args.name)
        role_binding = typed_object(
            k8s.rbac.v1.ClusterRoleBinding,
            f"{name}-binding",
            binding,
            target.options(self, depends_on=[cluster_role, account]),
        )
        job = job_manifest(
            args.name, args.namespace, args.name, args.system_pool_name, args.crds, args.image
        )
        prerequisites: list[pulumi.Resource] = [role_binding, account]
        if args.system_pool is not None:
            prerequisites.append(args.system_pool)
        self.job = typed_object(
            k8s.batch.v1.Job, f"{name}-job", job, target.options(self, depends_on=prerequisites)
        )
        self.register_outputs({"crds": list(args.crds)})
