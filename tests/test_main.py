"""Whole stacks: both stack files render through __main__.py, with the networks, cluster, pools,
outputs and refusals a stack promises."""

from __future__ import annotations

import copy
import json
from functools import cache
from typing import Any

import pytest

from components.config import ConfigError
from components.stack_outputs import StackOutputs
from jobs.runs import stack as jobs_stack
from tests.conftest import BASE_STACK_CONFIG
from tools.render import Rendering, SecretValue, load_stack_file, plain_strings, render

STACKS = ("dev", "h200")
# Outputs of features the stack files leave off (rewards.codeSandbox).
# Off in both stack files: the code sandbox, and the maximum run of flex-start nodes (both stacks
# run on spot).
OFF_FEATURE_OUTPUTS = {"code_sandbox_url", "gpu_max_run_hours"}


@cache
def rendered(stack: str) -> Rendering:
    config, secret_keys = load_stack_file(stack)
    config.setdefault("gcp:project", "example-project")
    return render(config, stack=stack, secret_keys=secret_keys)


def test_stack_files_are_exactly_dev_and_h200() -> None:
    from tools.render import ROOT

    assert sorted(p.name for p in ROOT.glob("Pulumi.*.yaml")) == [
        "Pulumi.dev.yaml",
        "Pulumi.h200.yaml",
    ]


@pytest.mark.plan
def test_dev_stack_has_three_vpcs_and_an_rdma_vpc_on_the_zone_roce_profile() -> None:
    networks = {
        r.inputs["name"]: r.inputs for r in rendered("dev").of_type("gcp:compute/network:Network")
    }
    assert len(networks) == 3
    rdma = networks["rl-dev-rdma-net"]
    assert rdma["networkProfile"].endswith("/networkProfiles/us-east1-b-vpc-roce")
    assert rdma["mtu"] == 8896


@pytest.mark.plan
def test_dev_rdma_vpc_has_eight_subnets_and_no_firewall() -> None:
    rendering = rendered("dev")
    rdma_subnets = [
        s
        for s in rendering.of_type("gcp:compute/subnetwork:Subnetwork")
        if "rdma" in s.inputs["name"]
    ]
    assert len(rdma_subnets) == 8
    assert not [
        f
        for f in rendering.of_type("gcp:compute/firewall:Firewall")
        if "rdma" in f.inputs["network"]
    ]


@pytest.mark.plan
def test_dev_lustre_instance_depends_on_the_psa_connection() -> None:
    rendering = rendered("dev")
    connection = rendering.one("gcp:servicenetworking/connection:Connection")
    assert connection.urn in rendering.one("gcp:lustre/instance:Instance").dependencies


@pytest.mark.plan
def test_dev_cluster_is_private_and_has_every_feature_the_design_card_lists() -> None:
    cluster = rendered("dev").one("gcp:container/cluster:Cluster").inputs
    assert cluster["privateClusterConfig"]["enablePrivateNodes"] is True
    assert cluster["workloadIdentityConfig"]["workloadPool"] == "example-project.svc.id.goog"
    assert cluster["datapathProvider"] == "ADVANCED_DATAPATH"
    assert cluster["enableMultiNetworking"] is True
    assert cluster["addonsConfig"]["rayOperatorConfigs"][0]["enabled"] is True
    assert cluster["addonsConfig"]["lustreCsiDriverConfig"]["enabled"] is True
    # No authorizedNetworks in the stack file: the IP endpoint is private, the DNS endpoint is the way in.
    assert cluster["masterAuthorizedNetworksConfig"]["cidrBlocks"] == []
    assert cluster["privateClusterConfig"]["enablePrivateEndpoint"] is True
    assert (
        cluster["controlPlaneEndpointsConfig"]["dnsEndpointConfig"]["allowExternalTraffic"] is True
    )


@pytest.mark.plan
def test_dev_gpu_pool_is_spot_without_reservation_and_system_pool_is_not_spot() -> None:
    rendering = rendered("dev")
    pools = {
        p.inputs["name"]: p.inputs for p in rendering.of_type("gcp:container/nodePool:NodePool")
    }
    gpu, system = pools["gpu"], pools["system"]
    assert gpu["nodeConfig"]["spot"] is True
    assert gpu["nodeConfig"]["reservationAffinity"]["consumeReservationType"] == "NO_RESERVATION"
    assert len(gpu["networkConfig"]["additionalNodeNetworkConfigs"]) == 9
    assert system["nodeConfig"]["spot"] is False


@pytest.mark.plan
def test_h200_stack_uses_a3_ultra_on_its_named_reservation_and_protects_data() -> None:
    rendering = rendered("h200")
    gpu = next(
        p.inputs
        for p in rendering.of_type("gcp:container/nodePool:NodePool")
        if p.inputs["name"] == "gpu"
    )
    assert gpu["nodeConfig"]["machineType"] == "a3-ultragpu-8g"
    assert (
        gpu["nodeConfig"]["reservationAffinity"]["consumeReservationType"] == "SPECIFIC_RESERVATION"
    )
    instance = rendering.one("gcp:lustre/instance:Instance")
    assert (instance.inputs["capacityGib"], instance.inputs["perUnitStorageThroughput"]) == (
        "18000",
        "500",
    )
    assert instance.protect and instance.retain_on_delete


@pytest.mark.plan
def test_a_sandbox_without_its_token_is_refused_by_key_before_anything_registers(
    monkeypatch,
) -> None:
    import tools.render as render_module

    recorded: list[str] = []
    original = render_module.RecordingMonitor.RegisterResource

    def spy(self, request):
        if request.type != "pulumi:pulumi:Stack":
            recorded.append(request.type)
        return original(self, request)

    monkeypatch.setattr(render_module.RecordingMonitor, "RegisterResource", spy)
    config, secret_keys = load_stack_file("dev")
    config.setdefault("gcp:project", "example-project")
    config["rl-on-gke:rewards"] = {"codeSandbox": {"enabled": True, "image": SANDBOX_IMAGE}}
    with pytest.raises(ConfigError) as caught:
        render(config, stack="dev", secret_keys=secret_keys)
    assert "rl-on-gke:codeSandboxToken: required when rewards.codeSandbox.enabled" in str(
        caught.value
    )
    assert recorded == []


@pytest.mark.plan
@pytest.mark.parametrize("stack", STACKS)
def test_stack_outputs_name_the_cluster_lustre_and_networks(stack: str) -> None:
    outputs = rendered(stack).outputs
    for field in StackOutputs.model_fields:
        key = StackOutputs.output_name(field)
        if field in OFF_FEATURE_OUTPUTS:
            # The stack files leave these features off: exported as None, not made up.
            assert outputs.get(key) is None, key
            continue
        assert outputs.get(key) not in (None, ""), key
    assert isinstance(outputs["kubeconfig"], SecretValue)
    assert "gke-gcloud-auth-plugin" in outputs["kubeconfig"].value
    assert outputs["lustreMountPoint"].startswith(outputs["lustreIp"] + "@tcp:/")
    assert len(outputs["networks"]["rdmaSubnets"]) == 8


def _as_stack_output_json(value: Any) -> Any:
    """What `pulumi stack output --json` (without --show-secrets) prints for a value."""
    if isinstance(value, SecretValue):
        return "[secret]"
    if isinstance(value, dict):
        return {k: _as_stack_output_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_stack_output_json(v) for v in value]
    return value


@pytest.mark.plan
@pytest.mark.parametrize(("hours", "exported"), [(None, 168), (36, 36)])
def test_a_flex_start_stack_exports_its_nodes_maximum_run(hours: int | None, exported: int) -> None:
    """`rl-jobs` has supervised attempts save before it (jobs/head/node_end.py); unset, it is
    GKE's default of 7 days."""
    config, secret_keys = load_stack_file("dev")
    config["gcp:project"] = "example-project"
    config["rl-on-gke:gpu"] = {**config.get("rl-on-gke:gpu", {}), "provisioning": "flex-start"}
    if hours is not None:
        config["rl-on-gke:gpu"]["maxRunDurationHours"] = hours
    outputs = render(config, stack="dev", secret_keys=secret_keys).outputs
    assert outputs["gpuProvisioning"] == "flex-start"
    assert outputs["gpuMaxRunHours"] == exported


@pytest.mark.plan
@pytest.mark.parametrize("stack", STACKS)
def test_rendered_outputs_parse_with_the_model_jobs_uses(stack: str) -> None:
    rendering = rendered(stack)
    printed = json.loads(json.dumps(_as_stack_output_json(rendering.outputs)))
    outputs = jobs_stack.parse(stack, printed)
    config, _ = load_stack_file(stack)
    gpu, ray = config["rl-on-gke:gpu"], config.get("rl-on-gke:ray", {})
    assert outputs.gpu_node_count == gpu["nodeCount"]
    assert outputs.gpus_per_node == 8
    assert outputs.ray_framework == ray.get("framework", "nemo-rl")
    assert outputs.cluster_name == f"rl-{stack}-gke"
    assert (
        outputs.kube_context() == f"gke_example-project_{outputs.cluster_location}_rl-{stack}-gke"
    )
    assert outputs.get_credentials_command().startswith(
        f"gcloud container clusters get-credentials rl-{stack}-gke "
    )
    assert outputs.dashboard_port_forward == (
        f"kubectl port-forward -n {outputs.ray_namespace} svc/{outputs.ray_head_service} "
        f"{outputs.ray_dashboard_port}:{outputs.ray_dashboard_port}"
    )
    assert outputs.kubeconfig == "[secret]"


@pytest.mark.plan
@pytest.mark.parametrize("stack", STACKS)
def test_every_component_child_is_parented_and_every_component_registered(stack: str) -> None:
    rendering = rendered(stack)
    urns = {r.urn for r in rendering.resources}
    components = [r for r in rendering.resources if r.is_component]
    assert {c.type for c in components} >= {
        "rl-on-gke:gcp:Network",
        "rl-on-gke:gcp:PrivateServiceAccess",
        "rl-on-gke:gcp:ManagedLustre",
        "rl-on-gke:gcp:GkeCluster",
        "rl-on-gke:gcp:GpuNodePool",
        "rl-on-gke:k8s:KubernetesLayer",
    }
    assert all(r.parent in urns for r in rendering.custom_resources())


@pytest.mark.plan
def test_a_token_set_as_a_secret_appears_in_no_input_in_clear() -> None:
    config, _ = load_stack_file("dev")
    config["gcp:project"] = "example-project"
    token = "hf_" + "Q" * 34
    config["rl-on-gke:hfToken"] = token
    rendering = render(config, stack="dev", secret_keys=("rl-on-gke:hfToken",))
    secrets = rendering.of_type("kubernetes:core/v1:Secret")
    assert secrets, "a token was configured, so the stack must create a Secret"
    for resource in rendering.resources:
        assert not any(token in s for s in plain_strings(resource.inputs)), resource.name
    assert token not in json.dumps([list(plain_strings(rendering.outputs))])


@pytest.mark.plan
def test_a_token_stored_in_plain_text_is_refused_without_echoing_it() -> None:
    config = copy.deepcopy(BASE_STACK_CONFIG)
    config["rl-on-gke:hfToken"] = (
        "hf_" + "plaintextvalue" * 3
    )  # built, so no token-shaped literal sits in the repo
    with pytest.raises(ConfigError) as caught:
        render(config)
    assert "rl-on-gke:hfToken" in str(caught.value)
    assert "hf_plaintextvalue" not in str(caught.value)


# Each bad value, and the exact key its error must name.
BAD = {
    "lustre 10000 at 1000": (
        "rl-on-gke:lustre",
        {"capacityGib": 10000, "perUnitStorageThroughput": 1000},
        "rl-on-gke:lustre.capacityGib",
    ),
    "throughput 300": (
        "rl-on-gke:lustre",
        {"capacityGib": 9000, "perUnitStorageThroughput": 300},
        "rl-on-gke:lustre.perUnitStorageThroughput",
    ),
    "filesystem": (
        "rl-on-gke:lustre",
        {"capacityGib": 9000, "perUnitStorageThroughput": 1000, "filesystem": "lustre-fs-01"},
        "rl-on-gke:lustre.filesystem",
    ),
    "zone outside region": ("rl-on-gke:zone", "us-west1-a", "rl-on-gke:zone"),
    "nodeCount -1": (
        "rl-on-gke:gpu",
        {"machineType": "a4-highgpu-8g", "nodeCount": -1},
        "rl-on-gke:gpu.nodeCount",
    ),
    "rdma range too small for the nodes": (
        "rl-on-gke:network",
        {"rdmaCidr": "192.168.128.0/26"},
        "rl-on-gke:network.rdmaCidr",
        {"rl-on-gke:gpu": {"machineType": "a4-highgpu-8g", "nodeCount": 64}},
    ),
    "maintenance window too short": (
        "rl-on-gke:cluster",
        {
            "maintenance": {
                "window": {
                    "startTime": "2026-01-03T07:00:00Z",
                    "endTime": "2026-01-03T13:00:00Z",
                    "recurrence": "FREQ=WEEKLY;BYDAY=SA",
                }
            }
        },
        "rl-on-gke:cluster.maintenance.window.recurrence",
    ),
    "exclusion ending before it starts": (
        "rl-on-gke:cluster",
        {
            "maintenance": {
                "exclusions": [
                    {
                        "name": "campaign",
                        "startTime": "2026-03-01T00:00:00Z",
                        "endTime": "2026-02-01T00:00:00Z",
                    }
                ]
            }
        },
        "rl-on-gke:cluster.maintenance.exclusions[0].endTime",
    ),
    "reservation without name": (
        "rl-on-gke:gpu",
        {"machineType": "a4-highgpu-8g", "nodeCount": 1, "provisioning": "reservation"},
        "rl-on-gke:gpu.reservation",
    ),
    "unknown machine": (
        "rl-on-gke:gpu",
        {"machineType": "a2-highgpu-1g", "nodeCount": 1},
        "rl-on-gke:gpu.machineType",
    ),
    "open control plane": (
        "rl-on-gke:authorizedNetworks",
        [{"cidrBlock": "0.0.0.0/0"}],
        "rl-on-gke:authorizedNetworks[0].cidrBlock",
    ),
    "code sandbox without an image": (
        "rl-on-gke:rewards",
        {"codeSandbox": {"enabled": True}},
        "rl-on-gke:rewards.codeSandbox.image",
    ),
    "code sandbox on a shared-core machine": (
        "rl-on-gke:rewards",
        {
            "codeSandbox": {
                "enabled": True,
                "image": "us-docker.pkg.dev/example-project/rl/code-sandbox@sha256:" + "a" * 64,
                "machineType": "e2-medium",
            }
        },
        "rl-on-gke:rewards.codeSandbox.machineType",
    ),
    "code sandbox replicas beyond its nodes": (
        "rl-on-gke:rewards",
        {
            "codeSandbox": {
                "enabled": True,
                "image": "us-docker.pkg.dev/example-project/rl/code-sandbox@sha256:" + "a" * 64,
                "nodeCount": 1,
                "replicas": 2,
            }
        },
        "rl-on-gke:rewards.codeSandbox.replicas",
    ),
    "code sandbox nodes beyond the main subnet": (
        "rl-on-gke:rewards",
        {
            "codeSandbox": {
                "enabled": True,
                "image": "us-docker.pkg.dev/example-project/rl/code-sandbox@sha256:" + "a" * 64,
                "nodeCount": 2,
            }
        },
        "rl-on-gke:network.mainSubnetCidr",
        {
            "rl-on-gke:network": {"mainSubnetCidr": "192.168.0.0/29"},
            "rl-on-gke:gpu": {"machineType": "a4-highgpu-8g", "nodeCount": 2},
        },
    ),
    "overlapping cidrs": (
        "rl-on-gke:network",
        {"gvnicSubnetCidr": "192.168.0.0/24"},
        "rl-on-gke:network.mainSubnetCidr",
    ),
}


@pytest.mark.plan
@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_config_fails_the_whole_program_before_any_resource_is_registered(
    case: str, monkeypatch
) -> None:
    import tools.render as render_module

    recorded: list[str] = []
    original = render_module.RecordingMonitor.RegisterResource

    def spy(self, request):
        if request.type != "pulumi:pulumi:Stack":
            recorded.append(request.type)
        return original(self, request)

    monkeypatch.setattr(render_module.RecordingMonitor, "RegisterResource", spy)
    key, value, named, *also = BAD[case]
    config = copy.deepcopy(BASE_STACK_CONFIG)
    config[key] = value
    for extra in also:
        config.update(extra)
    with pytest.raises(ConfigError) as caught:
        render(config)
    assert [p.split(" ")[0].rstrip(":") for p in caught.value.problems] == [named]
    assert recorded == []


@pytest.mark.plan
def test_growing_lustre_changes_the_instance_and_volume_but_never_the_claim() -> None:
    config, secret_keys = load_stack_file("dev")
    config["gcp:project"] = "example-project"
    config["rl-on-gke:lustre"] = {**config["rl-on-gke:lustre"], "capacityGib": 18000}
    grown = render(config, stack="dev", secret_keys=secret_keys)
    before = rendered("dev")
    claim = "kubernetes:core/v1:PersistentVolumeClaim"
    volume = "kubernetes:core/v1:PersistentVolume"
    assert grown.one(claim).inputs == before.one(claim).inputs
    assert grown.one(volume).inputs["spec"]["capacity"] == {"storage": "18000Gi"}
    assert grown.one("gcp:lustre/instance:Instance").inputs["capacityGib"] == "18000"


@pytest.mark.plan
@pytest.mark.parametrize("typo", ["rl-on-gke:clusters", "rl-on-gke:hftoken"])
def test_a_misspelt_top_level_key_is_refused_without_showing_its_value(typo: str) -> None:
    config = copy.deepcopy(BASE_STACK_CONFIG)
    config[typo] = "hf_shouldnotbeshown1234567890"
    with pytest.raises(ConfigError) as caught:
        render(config)
    assert any(p.startswith(f"{typo}: unknown key") for p in caught.value.problems)
    assert "hf_shouldnotbeshown" not in str(caught.value)


@pytest.mark.plan
@pytest.mark.parametrize("scaling", ["static", "on-demand"])
def test_a_parked_stack_renders_a_zero_node_gpu_pool_and_a_ray_cluster_without_workers(
    scaling: str,
) -> None:
    config, secret_keys = load_stack_file("dev")
    config["gcp:project"] = "example-project"
    config["rl-on-gke:gpu"] = {**config["rl-on-gke:gpu"], "nodeCount": 0, "scaling": scaling}
    parked = render(config, stack="dev", secret_keys=secret_keys)
    pools = {p.inputs["name"]: p.inputs for p in parked.of_type("gcp:container/nodePool:NodePool")}
    assert pools["system"]["nodeCount"] == 1
    (group,) = parked.one("kubernetes:ray.io/v1:RayCluster").inputs["spec"]["workerGroupSpecs"]
    if scaling == "static":
        assert pools["gpu"]["nodeCount"] == 0
        assert (group["replicas"], group["minReplicas"], group["maxReplicas"]) == (0, 0, 0)
    else:  # GKE refuses an autoscaling maximum of 0: a ceiling of 1 that no worker can use
        assert pools["gpu"]["autoscaling"]["totalMaxNodeCount"] == 1
        assert "nodeCount" not in pools["gpu"] and "replicas" not in group
        assert (group["minReplicas"], group["maxReplicas"]) == (0, 0)
    # Lustre, the cluster and everything else stay: the same resources as the running stack
    # (dev scales on demand), but for the autoscaler's PodMonitoring when parked static (a static
    # stack runs no autoscaler: components/k8s/metrics.py).
    running = {r.urn for r in rendered("dev").custom_resources()}
    if scaling == "static":
        running = {
            u for u in running if not u.endswith("::rl-dev-k8s-metrics-autoscaler-podmonitoring")
        }
    assert sorted(r.urn for r in parked.custom_resources()) == sorted(running)
    assert parked.outputs["gpuNodeCount"] == 0


@pytest.mark.plan
@pytest.mark.parametrize("stack", STACKS)
def test_crd_gate_job_runs_on_the_system_pool_once_it_exists(stack: str) -> None:
    rendering = rendered(stack)
    job = rendering.one("kubernetes:batch/v1:Job")
    system_pool = next(
        p
        for p in rendering.of_type("gcp:container/nodePool:NodePool")
        if p.inputs["name"] == "system"
    )
    assert system_pool.urn in job.dependencies
    assert job.inputs["spec"]["template"]["spec"]["nodeSelector"] == {
        "cloud.google.com/gke-nodepool": "system"
    }


# --- rewards.codeSandbox ---------------------------------------------------------------------

SANDBOX_IMAGE = "us-docker.pkg.dev/example-project/rl/code-sandbox@sha256:" + "0" * 64


@cache
def with_code_sandbox(stack: str) -> Rendering:
    config, secret_keys = load_stack_file(stack)
    config.setdefault("gcp:project", "example-project")
    config["rl-on-gke:rewards"] = {"codeSandbox": {"enabled": True, "image": SANDBOX_IMAGE}}
    config["rl-on-gke:codeSandboxToken"] = "sandbox-token-" + "0" * 24  # required with the sandbox
    return render(config, stack=stack, secret_keys=(*secret_keys, "rl-on-gke:codeSandboxToken"))


@pytest.mark.plan
@pytest.mark.parametrize("stack", STACKS)
def test_enabling_the_code_sandbox_adds_a_gvisor_pool_upgraded_in_place(stack: str) -> None:
    rendering = with_code_sandbox(stack)
    pools = {p.inputs["name"]: p for p in rendering.of_type("gcp:container/nodePool:NodePool")}
    assert set(pools) == {"system", "gpu", "code-sandbox"}
    pool = pools["code-sandbox"].inputs
    assert pool["nodeConfig"]["sandboxConfig"] == {"type": "GVISOR"}
    assert pool["nodeConfig"]["imageType"] == "COS_CONTAINERD"
    assert pool["nodeConfig"]["machineType"] == "n2-standard-8" and pool["nodeCount"] == 2
    assert "guestAccelerators" not in pool["nodeConfig"] and not pool["nodeConfig"].get("spot")
    # The same in-place upgrade as the GPU pool; the system pool surges, never left without a node.
    assert (
        pool["upgradeSettings"]
        == pools["gpu"].inputs["upgradeSettings"]
        == {"strategy": "SURGE", "maxSurge": 0, "maxUnavailable": 1}
    )
    assert pools["system"].inputs["upgradeSettings"] == {
        "strategy": "SURGE",
        "maxSurge": 1,
        "maxUnavailable": 0,
    }


@pytest.mark.plan
@pytest.mark.parametrize("stack", STACKS)
def test_enabling_the_code_sandbox_applies_its_four_objects_in_the_training_namespace(
    stack: str,
) -> None:
    rendering = with_code_sandbox(stack)
    kinds = (
        "kubernetes:core/v1:ConfigMap",
        "kubernetes:apps/v1:Deployment",
        "kubernetes:core/v1:Service",
        "kubernetes:networking.k8s.io/v1:NetworkPolicy",
    )
    objects = {
        kind: rendering.one(kind, suffix)
        for kind, suffix in zip(
            kinds,
            (
                "-code-sandbox-code",
                "-code-sandbox-executor",
                "-code-sandbox-service",
                "-code-sandbox-egress-deny",
            ),
            strict=True,
        )
    }
    cluster = rendering.one("gcp:container/cluster:Cluster")
    provider = rendering.one("pulumi:providers:kubernetes")
    namespace = rendering.one("kubernetes:core/v1:Namespace")
    pool = next(
        p
        for p in rendering.of_type("gcp:container/nodePool:NodePool")
        if p.inputs["name"] == "code-sandbox"
    )
    for obj in objects.values():
        assert obj.deleted_with == cluster.urn and obj.provider.startswith(provider.urn)
        assert obj.inputs["metadata"]["namespace"] == namespace.inputs["metadata"]["name"]
        assert namespace.urn in obj.dependencies
    deployment = objects["kubernetes:apps/v1:Deployment"]
    # Pods only once their nodes, their code and their NetworkPolicy exist.
    assert {
        pool.urn,
        objects["kubernetes:core/v1:ConfigMap"].urn,
        objects["kubernetes:networking.k8s.io/v1:NetworkPolicy"].urn,
    } <= set(deployment.dependencies)
    pod = deployment.inputs["spec"]["template"]["spec"]
    assert pod["runtimeClassName"] == "gvisor" and pod["automountServiceAccountToken"] is False
    assert pod["containers"][0]["image"] == SANDBOX_IMAGE
    ray = rendering.one("kubernetes:ray.io/v1:RayCluster").inputs["metadata"]["name"]
    ingress = objects["kubernetes:networking.k8s.io/v1:NetworkPolicy"].inputs["spec"]["ingress"]
    assert ingress[0]["from"] == [{"podSelector": {"matchLabels": {"ray.io/cluster": ray}}}]


@pytest.mark.plan
@pytest.mark.parametrize("stack", STACKS)
def test_enabling_the_code_sandbox_exports_its_url_for_the_reward(stack: str) -> None:
    rendering = with_code_sandbox(stack)
    service = rendering.one("kubernetes:core/v1:Service", "-code-sandbox-service").inputs
    url = rendering.outputs["codeSandboxUrl"]
    assert url == (
        f"http://{service['metadata']['name']}.{service['metadata']['namespace']}"
        f".svc.cluster.local:{service['spec']['ports'][0]['port']}"
    )
    printed = json.loads(json.dumps(_as_stack_output_json(rendering.outputs)))
    assert jobs_stack.parse(stack, printed).code_sandbox_url == url


@pytest.mark.plan
@pytest.mark.parametrize("stack", STACKS)
def test_the_code_sandbox_off_adds_nothing(stack: str) -> None:
    # Off is the default: the stack files render no sandbox object (plan unchanged).
    rendering = rendered(stack)
    assert not [
        r.name for r in rendering.resources if "code-sandbox" in r.name or "Sandbox" in r.type
    ]
    with_urns = {r.urn for r in with_code_sandbox(stack).resources}
    assert {r.urn for r in rendering.resources} < with_urns


@pytest.mark.plan
def test_the_executor_code_in_the_configmap_is_the_repositorys() -> None:
    from components.k8s.sandbox import SOURCE_FILES, source_key
    from tools.render import ROOT

    data = (
        with_code_sandbox("dev")
        .one("kubernetes:core/v1:ConfigMap", "-code-sandbox-code")
        .inputs["data"]
    )
    assert data == {source_key(p): (ROOT / p).read_text() for p in SOURCE_FILES}


@pytest.mark.plan
def test_each_stack_exports_its_node_hour_price_with_its_source() -> None:
    """Jobs read the price through the stack outputs contract."""
    from components.prices import list_price

    dev = jobs_stack.parse("dev", _as_stack_output_json(rendered("dev").outputs))
    assert dev.gpu_scaling == "on-demand"  # spot's default: runs ask for their GPU nodes
    assert (dev.gpu_node_hour_usd, dev.gpu_node_hour_source) == (
        list_price("a4-highgpu-8g", "spot").usd,
        list_price("a4-highgpu-8g", "spot").source,
    )
    h200 = jobs_stack.parse("h200", _as_stack_output_json(rendered("h200").outputs))
    assert h200.gpu_scaling == "static" and h200.gpu_node_hour_source.startswith("estimate")
    assert h200.gpu_node_hour_usd == list_price("a3-ultragpu-8g", "reservation").usd


@pytest.mark.plan
def test_cost_node_hour_usd_overrides_the_table_and_is_named_as_the_source() -> None:
    config, secret_keys = load_stack_file("dev")
    config["gcp:project"] = "example-project"
    config["rl-on-gke:cost"] = {"nodeHourUsd": 41.5}
    outputs = render(config, stack="dev", secret_keys=secret_keys).outputs
    assert outputs["gpuNodeHourUsd"] == 41.5
    assert outputs["gpuNodeHourSource"] == "stack config rl-on-gke:cost.nodeHourUsd"


@pytest.mark.parametrize("bad", [0, -3.0, "40"])
def test_a_bad_node_hour_price_is_refused_by_key(bad) -> None:
    config = copy.deepcopy(BASE_STACK_CONFIG)
    config["rl-on-gke:cost"] = {"nodeHourUsd": bad}
    from components.config import parse_stack_config
    from tests.conftest import raw_from_stack

    with pytest.raises(ConfigError) as caught:
        parse_stack_config(raw_from_stack(config))
    (problem,) = caught.value.problems
    assert problem.startswith(f"rl-on-gke:cost.nodeHourUsd = {bad!r}: ")


def _head_env(rendering) -> dict[str, str]:
    spec = rendering.one("kubernetes:ray.io/v1:RayCluster").inputs["spec"]
    [head] = [
        c
        for c in spec["headGroupSpec"]["template"]["spec"]["containers"]
        if c["name"] == "ray-head"
    ]
    return {e["name"]: e.get("value") for e in head["env"]}


@pytest.mark.plan
def test_rays_metrics_tab_is_wired_to_the_stacks_grafana_and_can_be_turned_off() -> None:
    """The head's env names the Grafana and query-frontend Services the stack renders."""
    on = rendered("dev")
    services = {
        s.inputs["metadata"]["name"]: s.inputs for s in on.of_type("kubernetes:core/v1:Service")
    }
    env = _head_env(on)
    grafana_host = env["RAY_GRAFANA_HOST"].removeprefix("http://").split(".")[0]
    frontend_host = env["RAY_PROMETHEUS_HOST"].removeprefix("http://").split(".")[0]
    assert services[grafana_host]["spec"]["type"] == "ClusterIP"
    assert services[frontend_host]["spec"]["type"] == "ClusterIP"
    assert on.outputs["grafanaPortForward"].endswith(f"svc/{grafana_host} 3000:3000")

    config, secret_keys = load_stack_file("dev")
    config["gcp:project"] = "example-project"
    config["rl-on-gke:monitoring"] = {**config.get("rl-on-gke:monitoring", {}), "grafana": False}
    off = render(config, stack="dev", secret_keys=secret_keys)
    assert not any(
        n.startswith("RAY_GRAFANA") or n.startswith("RAY_PROMETHEUS") for n in _head_env(off)
    )
    assert not [r for r in off.custom_resources() if "grafana" in r.name]
    assert off.outputs.get("grafanaPortForward") is None  # exported as null: absent under mocks
