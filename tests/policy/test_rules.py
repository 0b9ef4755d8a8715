"""Each guard rail passes on both real stacks and fires, alone, on a resource bent to break it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import pytest

from policy.rules import POLICIES
from tests.policy.adapter import add_resource, k8s_resource, mutated, run_policies
from tests.policy.conftest import STACKS, rendered
from tools.render import Rendering

CLUSTER = "gcp:container/cluster:Cluster"
NODE_POOL = "gcp:container/nodePool:NodePool"
FIREWALL = "gcp:compute/firewall:Firewall"
LUSTRE = "gcp:lustre/instance:Instance"
RAY_CLUSTER = "kubernetes:ray.io/v1:RayCluster"
DEFAULT_SA = "123456789012-compute@developer.gserviceaccount.com"
FAKE_HF_TOKEN = "hf_" + "Abc123" * 6


def test_the_repository_has_the_dev_and_h200_stacks() -> None:
    assert {"dev", "h200"} <= set(STACKS)


@pytest.mark.plan
@pytest.mark.parametrize("stack", ["dev", "h200"])
def test_real_stack_breaks_no_rule(stack: str) -> None:
    violations = run_policies(rendered(stack))
    assert violations == [], "\n".join(f"{v.policy}: {v.message}" for v in violations)


def _rendered_with(stack: str, **changes: Any) -> Rendering:
    from tools.render import load_stack_file, render

    config, secret_keys = load_stack_file(stack)
    config.setdefault("gcp:project", "example-project")
    for change in changes.values():
        change(config)
    if "rl-on-gke:codeSandboxToken" in config:  # set by a change that enables the sandbox
        secret_keys = (*secret_keys, "rl-on-gke:codeSandboxToken")
    return render(config, stack=stack, secret_keys=secret_keys)


@pytest.mark.plan
def test_a_flex_start_stack_breaks_no_rule() -> None:
    def flex(config: dict[str, Any]) -> None:
        config["rl-on-gke:gpu"] = {**config["rl-on-gke:gpu"], "provisioning": "flex-start"}

    violations = run_policies(_rendered_with("dev", flex=flex))
    assert violations == [], "\n".join(f"{v.policy}: {v.message}" for v in violations)


@pytest.mark.plan
def test_a_parked_stack_breaks_no_rule() -> None:
    def park(config: dict[str, Any]) -> None:
        config["rl-on-gke:gpu"] = {**config["rl-on-gke:gpu"], "nodeCount": 0}

    violations = run_policies(_rendered_with("dev", park=park))
    assert violations == [], "\n".join(f"{v.policy}: {v.message}" for v in violations)


@pytest.mark.plan
def test_a_stack_whose_gpus_scale_on_demand_breaks_no_rule() -> None:
    """The autoscaled pool and RayCluster, running and parked."""

    def on_demand(config: dict[str, Any]) -> None:
        config["rl-on-gke:gpu"] = {**config["rl-on-gke:gpu"], "scaling": "on-demand"}

    def park(config: dict[str, Any]) -> None:
        config["rl-on-gke:gpu"] = {**config["rl-on-gke:gpu"], "nodeCount": 0}

    for changes in ({"on_demand": on_demand}, {"on_demand": on_demand, "park": park}):
        violations = run_policies(_rendered_with("dev", **changes))
        assert violations == [], "\n".join(f"{v.policy}: {v.message}" for v in violations)


@pytest.mark.plan
def test_a_stack_with_a_budget_breaks_no_rule() -> None:
    """The budget, its e-mail channels and its own provider."""

    def budget(config: dict[str, Any]) -> None:
        config["rl-on-gke:budget"] = {
            "billingAccount": "012345-6789AB-CDEF01",
            "monthlyAmount": 1000,
            "emails": ["ml-platform@example.com"],
        }

    violations = run_policies(_rendered_with("h200", budget=budget))
    assert violations == [], "\n".join(f"{v.policy}: {v.message}" for v in violations)


@pytest.mark.plan
def test_a_stack_with_alerts_breaks_no_rule() -> None:
    """The dashboard, the log-based metric, e-mail channels and alert policies."""

    def alerts(config: dict[str, Any]) -> None:
        config["rl-on-gke:monitoring"] = {"alertEmails": ["oncall@example.com"]}

    rendering = _rendered_with("dev", alerts=alerts)
    assert len(rendering.of_type("gcp:monitoring/alertPolicy:AlertPolicy")) == 2
    violations = run_policies(rendering)
    assert violations == [], "\n".join(f"{v.policy}: {v.message}" for v in violations)


@pytest.mark.plan
def test_a_stack_that_also_opens_the_ip_endpoint_to_its_networks_breaks_no_rule() -> None:
    # The stack files rely on the DNS endpoint alone; listing networks makes the IP endpoint public.
    def office(config: dict[str, Any]) -> None:
        config["rl-on-gke:authorizedNetworks"] = [
            {"cidrBlock": "203.0.113.0/24", "displayName": "office"}
        ]

    rendering = _rendered_with("dev", office=office)
    cluster = rendering.one("gcp:container/cluster:Cluster").inputs
    assert cluster["privateClusterConfig"]["enablePrivateEndpoint"] is False
    violations = run_policies(rendering)
    assert violations == [], "\n".join(f"{v.policy}: {v.message}" for v in violations)


# --- mutations -------------------------------------------------------------------------------


def _set(path: str, value: Any) -> Callable[[dict[str, Any], Any], None]:
    """A change that sets a dotted path (creating dicts on the way)."""

    def change(props: dict[str, Any], _resource: Any) -> None:
        *parents, last = path.split(".")
        node = props
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value

    return change


def _drop(path: str) -> Callable[[dict[str, Any], Any], None]:
    def change(props: dict[str, Any], _resource: Any) -> None:
        *parents, last = path.split(".")
        node = props
        for key in parents:
            node = node[key]
        node.pop(last)

    return change


def _head_spec(props: dict[str, Any]) -> dict[str, Any]:
    return props["spec"]["headGroupSpec"]["template"]["spec"]


def _worker_container(props: dict[str, Any]) -> dict[str, Any]:
    return props["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]


def _pool_name(stack: str, suffix: str) -> str:
    return rendered(stack).one(NODE_POOL, suffix).inputs["name"]


def _network(stack: str, suffix: str) -> dict[str, Any]:
    return rendered(stack).one("gcp:compute/network:Network", suffix).outputs


@dataclass(frozen=True)
class Breakage:
    """One way to break one rule: the rule, what to change, and a word the message must use."""

    rule: str
    id: str
    apply: Callable[[Rendering, str], Rendering]
    hint: str


def _on(
    type_: str, change: Callable[..., None], suffix: str = "", **kw: Any
) -> Callable[[Rendering, str], Rendering]:
    return lambda rendering, _stack: mutated(rendering, type_, change, suffix, **kw)


def _head_on(pool_suffix: str) -> Callable[[Rendering, str], Rendering]:
    def apply(rendering: Rendering, stack: str) -> Rendering:
        pool = _pool_name(stack, pool_suffix)
        return mutated(
            rendering,
            RAY_CLUSTER,
            lambda p, _r: _head_spec(p)["nodeSelector"].update(
                {"cloud.google.com/gke-nodepool": pool}
            ),
        )

    return apply


def _system_pool_on_spot(rendering: Rendering, stack: str) -> Rendering:
    def change(props: dict[str, Any], _r: Any) -> None:
        props["nodeConfig"]["spot"] = True
        props["nodeConfig"]["reservationAffinity"] = {"consumeReservationType": "NO_RESERVATION"}

    return mutated(rendering, NODE_POOL, change, "-system")


def _firewall_on_rdma(field: str) -> Callable[[Rendering, str], Rendering]:
    def apply(rendering: Rendering, stack: str) -> Rendering:
        reference = _network(stack, "-rdma")[field]
        return mutated(rendering, FIREWALL, _set("network", reference), "-gvnic-internal")

    return apply


def _add(type_: str, name: str, props: dict[str, Any]) -> Callable[[Rendering, str], Rendering]:
    return lambda rendering, stack: add_resource(rendering, k8s_resource(stack, type_, name, props))


_DASHBOARD_NODEPORT = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "ray-dashboard", "namespace": "rl"},
    "spec": {
        "type": "NodePort",
        "selector": {"app": "x"},
        "ports": [{"port": 80, "targetPort": 8265}],
    },
}
_GRAFANA_LOADBALANCER = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "grafana-public", "namespace": "rl"},
    "spec": {
        "type": "LoadBalancer",
        "selector": {"app.kubernetes.io/name": "grafana"},
        "ports": [{"port": 80, "targetPort": 3000}],
    },
}
_FRONTEND_NODEPORT = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "promql", "namespace": "rl"},
    "spec": {
        "type": "NodePort",
        "selector": {"app": "y"},
        "ports": [{"port": 80, "targetPort": 9090}],
    },
}
_HEAD_LOADBALANCER = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "ray-head-lb", "namespace": "rl"},
    "spec": {
        "type": "LoadBalancer",
        "selector": {"ray.io/node-type": "head"},
        "ports": [{"port": 10001}],
    },
}
_DAEMONSET_WITH_HF_TOKEN = {
    "apiVersion": "apps/v1",
    "kind": "DaemonSet",
    "metadata": {"name": "downloader", "namespace": "rl"},
    "spec": {
        "template": {
            "spec": {
                "containers": [
                    {
                        "name": "c",
                        "image": "busybox",
                        "env": [{"name": "EXTRA", "value": FAKE_HF_TOKEN}],
                    }
                ]
            }
        }
    },
}
_CONFIGMAP_WITH_KEY = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "settings", "namespace": "rl"},
    "data": {"WANDB_API_KEY": "0123456789abcdef"},
}

# The stacks reach the control plane only through the DNS endpoint (private IP endpoint), so the
# authorized-network breakages first make the IP endpoint public again.
_public_endpoint = _set("privateClusterConfig.enablePrivateEndpoint", False)

BREAKAGES = [
    Breakage(
        "gke-control-plane-not-public",
        "authorized-0.0.0.0/0",
        _on(
            CLUSTER,
            lambda p, r: (
                _public_endpoint(p, r),
                p["masterAuthorizedNetworksConfig"]["cidrBlocks"].append(
                    {"cidrBlock": "0.0.0.0/0"}
                ),
            ),
        ),
        "authorizedNetworks",
    ),
    Breakage(
        "gke-control-plane-not-public",
        "no-authorized-networks",
        _on(
            CLUSTER,
            lambda p, r: (_public_endpoint(p, r), _drop("masterAuthorizedNetworksConfig")(p, r)),
        ),
        "cidrBlocks",
    ),
    Breakage(
        "gke-control-plane-not-public",
        "gcp-public-cidrs",
        _on(
            CLUSTER,
            lambda p, r: (
                _public_endpoint(p, r),
                p["masterAuthorizedNetworksConfig"]["cidrBlocks"].append(
                    {"cidrBlock": "203.0.113.0/24"}
                ),
                _set("masterAuthorizedNetworksConfig.gcpPublicCidrsAccessEnabled", True)(p, r),
            ),
        ),
        "false",
    ),
    Breakage(
        "gke-private-nodes",
        "public-nodes",
        _on(CLUSTER, _set("privateClusterConfig.enablePrivateNodes", False)),
        "enablePrivateNodes",
    ),
    Breakage(
        "gke-private-nodes",
        "pool-override",
        _on(NODE_POOL, _set("networkConfig.enablePrivateNodes", False), "-gpu-pool"),
        "enablePrivateNodes",
    ),
    Breakage(
        "gke-workload-identity",
        "no-pool",
        _on(CLUSTER, _drop("workloadIdentityConfig")),
        "workloadPool",
    ),
    Breakage(
        "gke-workload-identity",
        "gce-metadata",
        _on(NODE_POOL, _set("nodeConfig.workloadMetadataConfig.mode", "GCE_METADATA"), "-gpu-pool"),
        "GKE_METADATA",
    ),
    Breakage(
        "gke-nodes-not-default-service-account",
        "default-compute-sa",
        _on(NODE_POOL, _set("nodeConfig.serviceAccount", DEFAULT_SA), "-gpu-pool"),
        "nodeConfig.serviceAccount",
    ),
    Breakage(
        "gke-nodes-not-default-service-account",
        "unset-sa",
        _on(NODE_POOL, _drop("nodeConfig.serviceAccount"), "-system"),
        "nodeConfig.serviceAccount",
    ),
    Breakage(
        "spot-pools-no-reservation",
        "spot-any-reservation",
        _on(
            NODE_POOL,
            lambda p, _r: p["nodeConfig"].update(
                spot=True, reservationAffinity={"consumeReservationType": "ANY_RESERVATION"}
            ),
            "-gpu-pool",
        ),
        "NO_RESERVATION",
    ),
    Breakage(
        "spot-pools-no-reservation",
        "spot-specific-reservation",
        _on(
            NODE_POOL,
            lambda p, _r: p["nodeConfig"].update(
                spot=True,
                reservationAffinity={
                    "consumeReservationType": "SPECIFIC_RESERVATION",
                    "key": "compute.googleapis.com/reservation-name",
                    "values": ["r"],
                },
            ),
            "-gpu-pool",
        ),
        "NO_RESERVATION",
    ),
    Breakage(
        "ray-head-on-on-demand-cpu-pool", "head-on-gpu-pool", _head_on("-gpu-pool"), "system pool"
    ),
    Breakage(
        "ray-head-on-on-demand-cpu-pool",
        "no-node-selector",
        _on(RAY_CLUSTER, lambda p, _r: _head_spec(p).pop("nodeSelector")),
        "gke-nodepool",
    ),
    Breakage(
        "ray-head-on-on-demand-cpu-pool",
        "unknown-pool",
        _on(
            RAY_CLUSTER,
            lambda p, _r: _head_spec(p)["nodeSelector"].update(
                {"cloud.google.com/gke-nodepool": "nope"}
            ),
        ),
        "does not define",
    ),
    Breakage("ray-head-on-on-demand-cpu-pool", "system-pool-on-spot", _system_pool_on_spot, "spot"),
    Breakage(
        "ray-cluster-changes-reach-the-head",
        "no-upgrade-strategy",
        _on(RAY_CLUSTER, lambda p, _r: p["spec"].pop("upgradeStrategy")),
        "Recreate",
    ),
    Breakage(
        "ray-cluster-changes-reach-the-head",
        "no-patch-force",
        _on(RAY_CLUSTER, lambda p, _r: p["metadata"]["annotations"].pop("pulumi.com/patchForce")),
        "field conflict",
    ),
    Breakage(
        "ray-dashboard-not-exposed",
        "head-loadbalancer",
        _on(RAY_CLUSTER, _set("spec.headGroupSpec.serviceType", "LoadBalancer")),
        "ClusterIP",
    ),
    Breakage(
        "ray-dashboard-not-exposed",
        "head-ingress",
        _on(RAY_CLUSTER, _set("spec.headGroupSpec.enableIngress", True)),
        "port-forward",
    ),
    Breakage(
        "ray-dashboard-not-exposed",
        "nodeport-to-8265",
        _add("kubernetes:core/v1:Service", "dash", _DASHBOARD_NODEPORT),
        "ClusterIP",
    ),
    Breakage(
        "ray-dashboard-not-exposed",
        "lb-selecting-head",
        _add("kubernetes:core/v1:Service", "lb", _HEAD_LOADBALANCER),
        "ClusterIP",
    ),
    Breakage(
        "metrics-not-exposed",
        "grafana-loadbalancer",
        _add("kubernetes:core/v1:Service", "grafana-lb", _GRAFANA_LOADBALANCER),
        "port-forward",
    ),
    Breakage(
        "metrics-not-exposed",
        "frontend-nodeport",
        _add("kubernetes:core/v1:Service", "promql", _FRONTEND_NODEPORT),
        "ClusterIP",
    ),
    Breakage(
        "no-literal-tokens",
        "hf-token-literal",
        _on(
            RAY_CLUSTER,
            lambda p, _r: _worker_container(p)["env"].append(
                {"name": "HF_TOKEN", "value": "not-a-secret"}
            ),
        ),
        "secretKeyRef",
    ),
    Breakage(
        "no-literal-tokens",
        "wandb-key-from-configmap",
        _on(
            RAY_CLUSTER,
            lambda p, _r: _worker_container(p)["env"].append(
                {
                    "name": "WANDB_API_KEY",
                    "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k"}},
                }
            ),
        ),
        "secretKeyRef",
    ),
    Breakage(
        "no-literal-tokens",
        "hf-token-value-under-any-name",
        _add("kubernetes:apps/v1:DaemonSet", "dl", _DAEMONSET_WITH_HF_TOKEN),
        "--secret",
    ),
    Breakage(
        "no-literal-tokens",
        "configmap-api-key",
        _add("kubernetes:core/v1:ConfigMap", "cm", _CONFIGMAP_WITH_KEY),
        "Secret",
    ),
    Breakage(
        "lustre-protected",
        "unprotected",
        _on(LUSTRE, _set("labels.rl-on-gke-protect", "true"), protect=False),
        "protect=True",
    ),
    Breakage(
        "lustre-protected",
        "bad-label",
        _on(LUSTRE, _set("labels.rl-on-gke-protect", "yes"), protect=True),
        "'true' or 'false'",
    ),
    Breakage(
        "lustre-port-matches-csi",
        "legacy-port-on",
        _on(CLUSTER, _set("addonsConfig.lustreCsiDriverConfig.enableLegacyLustrePort", True)),
        "enableLegacyLustrePort",
    ),
    Breakage(
        "lustre-port-matches-csi",
        "gke-support-on",
        _on(LUSTRE, _set("gkeSupportEnabled", True)),
        "gkeSupportEnabled",
    ),
    Breakage(
        "lustre-port-matches-csi",
        "csi-off",
        _on(CLUSTER, _set("addonsConfig.lustreCsiDriverConfig.enabled", False)),
        "enabled = true",
    ),
    Breakage(
        "lustre-port-matches-csi",
        "no-lnet-firewall",
        _on(FIREWALL, _set("allows", [{"protocol": "udp"}]), "-lnet"),
        "tcp:988",
    ),
    Breakage(
        "lustre-port-matches-csi",
        "lnet-firewall-wrong-source",
        _on(FIREWALL, _set("sourceRanges", ["192.168.0.0/18"]), "-lnet"),
        "Private Service Access",
    ),
    Breakage("rdma-vpc-no-firewall", "firewall-by-name", _firewall_on_rdma("name"), "RDMA"),
    Breakage("rdma-vpc-no-firewall", "firewall-by-id", _firewall_on_rdma("id"), "RDMA"),
    Breakage(
        "rdma-vpc-no-firewall", "firewall-by-self-link", _firewall_on_rdma("selfLink"), "RDMA"
    ),
]


# --- the code-contests executor (only in stacks that enable rewards.codeSandbox) ---------------

DEPLOYMENT = "kubernetes:apps/v1:Deployment"
NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
SANDBOX_IMAGE = "us-docker.pkg.dev/example-project/rl/code-sandbox@sha256:" + "a" * 64


@cache
def _with_code_sandbox(stack: str) -> Rendering:
    def enable(config: dict[str, Any]) -> None:
        config["rl-on-gke:rewards"] = {"codeSandbox": {"enabled": True, "image": SANDBOX_IMAGE}}
        config["rl-on-gke:codeSandboxToken"] = (
            "sandbox-token-" + "0" * 24
        )  # required with the sandbox

    return _rendered_with(stack, enable=enable)


def _sandbox_pod(props: dict[str, Any]) -> dict[str, Any]:
    return props["spec"]["template"]["spec"]


def _on_sandbox(type_: str, change: Callable[..., None]) -> Callable[[Rendering, str], Rendering]:
    # The stack files leave the sandbox off: break a rendering that has it.
    return lambda _rendering, stack: mutated(
        _with_code_sandbox(stack),
        type_,
        change,
        "-code-sandbox-executor" if type_ == DEPLOYMENT else "-code-sandbox-egress-deny",
    )


@pytest.mark.plan
@pytest.mark.parametrize("stack", ["dev", "h200"])
def test_a_stack_with_the_code_sandbox_breaks_no_rule(stack: str) -> None:
    rendering = _with_code_sandbox(stack)
    assert (
        _sandbox_pod(rendering.one(DEPLOYMENT, "-code-sandbox-executor").inputs)["runtimeClassName"]
        == "gvisor"
    )
    violations = run_policies(rendering)
    assert violations == [], "\n".join(f"{v.policy}: {v.message}" for v in violations)


SANDBOX_BREAKAGES = [
    Breakage(
        "code-sandbox-isolated",
        "runc",
        _on_sandbox(DEPLOYMENT, lambda p, _r: _sandbox_pod(p).pop("runtimeClassName")),
        "gvisor",
    ),
    Breakage(
        "code-sandbox-isolated",
        "runtime-runc-named",
        _on_sandbox(DEPLOYMENT, lambda p, _r: _sandbox_pod(p).update(runtimeClassName="runc")),
        "gvisor",
    ),
    Breakage(
        "code-sandbox-isolated",
        "token-mounted",
        _on_sandbox(DEPLOYMENT, lambda p, _r: _sandbox_pod(p).pop("automountServiceAccountToken")),
        "automountServiceAccountToken",
    ),
    Breakage(
        "code-sandbox-isolated",
        "secret-env",
        _on_sandbox(
            DEPLOYMENT,
            lambda p, _r: _sandbox_pod(p)["containers"][0]["env"].append(
                {"name": "EXTRA", "valueFrom": {"secretKeyRef": {"name": "rl-tokens", "key": "x"}}}
            ),
        ),
        "Secret",
    ),
    # The service token's name on another key of the Secret (the HF token, say) is not the service token.
    Breakage(
        "code-sandbox-isolated",
        "token-name-other-key",
        _on_sandbox(
            DEPLOYMENT,
            lambda p, _r: _sandbox_pod(p)["containers"][0]["env"].append(
                {
                    "name": "CODE_SANDBOX_TOKEN",
                    "valueFrom": {"secretKeyRef": {"name": "rl-tokens", "key": "HF_TOKEN"}},
                }
            ),
        ),
        "Secret",
    ),
    Breakage(
        "code-sandbox-isolated",
        "privileged",
        _on_sandbox(
            DEPLOYMENT,
            lambda p, _r: _sandbox_pod(p)["containers"][0]["securityContext"].update(
                privileged=True
            ),
        ),
        "privileged",
    ),
    Breakage(
        "code-sandbox-isolated",
        "secret-envfrom",
        _on_sandbox(
            DEPLOYMENT,
            lambda p, _r: _sandbox_pod(p)["containers"][0].update(
                envFrom=[{"secretRef": {"name": "rl-tokens"}}]
            ),
        ),
        "Secret",
    ),
    Breakage(
        "code-sandbox-isolated",
        "secret-volume",
        _on_sandbox(
            DEPLOYMENT,
            lambda p, _r: _sandbox_pod(p)["volumes"].append(
                {"name": "t", "secret": {"secretName": "rl-tokens"}}
            ),
        ),
        "Secret",
    ),
    Breakage(
        "code-sandbox-isolated",
        "egress-allowed",
        _on_sandbox(
            NETWORK_POLICY, _set("spec.egress", [{"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}]}])
        ),
        "NetworkPolicy",
    ),
    Breakage(
        "code-sandbox-isolated",
        "egress-not-a-policy-type",
        _on_sandbox(NETWORK_POLICY, _set("spec.policyTypes", ["Ingress"])),
        "NetworkPolicy",
    ),
    Breakage(
        "code-sandbox-isolated",
        "policy-selects-other-pods",
        _on_sandbox(NETWORK_POLICY, _set("spec.podSelector.matchLabels", {"app": "other"})),
        "NetworkPolicy",
    ),
]
BREAKAGES += SANDBOX_BREAKAGES


def _worker_pulls_by_tag_from_nvcr(props: dict[str, Any], _r: Any) -> None:
    for group in props["spec"]["workerGroupSpecs"]:
        group["template"]["spec"]["containers"][0]["image"] = "nvcr.io/nvidia/nemo-rl:v0.4.0"


def _cache_disk_without_streaming(props: dict[str, Any], _r: Any) -> None:
    node_config = props["nodeConfig"]
    node_config["secondaryBootDisks"] = [
        {"diskImage": "projects/p/global/images/c", "mode": "CONTAINER_IMAGE_CACHE"}
    ]
    node_config["gcfsConfig"] = {"enabled": False}


# The GPU pool streams its images (components/gcp/image_streaming.py): an image GKE cannot
# stream on it is refused by name, and so is a cache disk without streaming under it.
BREAKAGES += [
    Breakage(
        "gpu-pool-streams-eligible-images",
        "worker-image-from-nvcr-by-tag",
        _on(RAY_CLUSTER, _worker_pulls_by_tag_from_nvcr),
        "nvcr.io/nvidia/nemo-rl:v0.4.0",
    ),
    Breakage(
        "gpu-pool-streams-eligible-images",
        "cache-disk-without-streaming",
        _on(NODE_POOL, _cache_disk_without_streaming, "-gpu-pool"),
        "gcfsConfig",
    ),
]


@pytest.mark.plan
def test_the_sandbox_is_recognised_without_its_runtime_class_or_pool_selector() -> None:
    # Dropping both the gvisor runtime and the pool selector must not hide the executor.
    def strip(p: dict[str, Any], _r: Any) -> None:
        _sandbox_pod(p).pop("runtimeClassName")
        _sandbox_pod(p).pop("nodeSelector")

    violations = run_policies(_on_sandbox(DEPLOYMENT, strip)(rendered("dev"), "dev"))
    assert [v.policy for v in violations] == ["code-sandbox-isolated"]


def test_every_rule_has_a_breakage() -> None:
    assert {b.rule for b in BREAKAGES} == {p.name for p in POLICIES}


@pytest.mark.plan
@pytest.mark.parametrize("stack", ["dev", "h200"])
@pytest.mark.parametrize("breakage", BREAKAGES, ids=lambda b: f"{b.rule}:{b.id}")
def test_breaking_a_rule_trips_exactly_that_rule(stack: str, breakage: Breakage) -> None:
    violations = run_policies(breakage.apply(rendered(stack), stack))
    assert {v.policy for v in violations} == {breakage.rule}, "\n".join(
        f"{v.policy}: {v.message}" for v in violations
    )
    assert all(breakage.hint in v.message for v in violations), [v.message for v in violations]


@pytest.mark.plan
@pytest.mark.parametrize(
    "breakage", [b for b in BREAKAGES if b.rule == "no-literal-tokens"], ids=lambda b: b.id
)
def test_token_messages_never_repeat_the_value(breakage: Breakage) -> None:
    for violation in run_policies(breakage.apply(rendered("dev"), "dev")):
        assert FAKE_HF_TOKEN not in violation.message
        assert "not-a-secret" not in violation.message
