"""KubernetesLayer under Pulumi mocks: what it registers, how it is tied to the cluster, secrecy."""

from __future__ import annotations

import pytest

from components.catalogue import RAY_DASHBOARD_PORT
from components.k8s.layer import KubernetesLayer
from tests.components.k8s.conftest import make_config
from tests.components.k8s.fakes import (
    GVNIC_NET,
    GVNIC_SUB,
    HF_TOKEN,
    LUSTRE_IP,
    RDMA_NET,
    RDMA_SUBS,
    SYSTEM_POOL,
    WANDB_KEY,
    render_layer,
)
from tests.components.k8s.manifests import (
    kubernetes_objects,
    rendered_manifest,
    validate,
    validate_core,
)
from tools.render import plain_strings

CLUSTER = "gcp:container/cluster:Cluster"
PROVIDER = "pulumi:providers:kubernetes"
RAY_CLUSTER = "kubernetes:ray.io/v1:RayCluster"
SECRET = "kubernetes:core/v1:Secret"


@pytest.fixture(scope="module")
def run():
    return render_layer(make_config(), hf_token=HF_TOKEN, wandb_key=WANDB_KEY)


def test_nine_device_networks_and_nine_param_sets(run) -> None:
    networks = run.rendering.of_type("kubernetes:networking.gke.io/v1:Network")
    params = run.rendering.of_type("kubernetes:networking.gke.io/v1:GKENetworkParamSet")
    expected = ["gvnic-1", *(f"rdma-{i}" for i in range(8))]
    assert sorted(n.inputs["metadata"]["name"] for n in networks) == sorted(expected)
    assert sorted(p.inputs["metadata"]["name"] for p in params) == sorted(expected)


def test_param_sets_carry_the_vpc_and_subnet_names_handed_in(run) -> None:
    specs = {
        p.inputs["metadata"]["name"]: p.inputs["spec"]
        for p in run.rendering.of_type("kubernetes:networking.gke.io/v1:GKENetworkParamSet")
    }
    assert specs["gvnic-1"] == {"vpc": GVNIC_NET, "vpcSubnet": GVNIC_SUB, "deviceMode": "NetDevice"}
    assert [specs[f"rdma-{i}"]["vpcSubnet"] for i in range(8)] == RDMA_SUBS
    assert {specs[f"rdma-{i}"]["vpc"] for i in range(8)} == {RDMA_NET}


def test_every_kubernetes_object_uses_the_layer_provider_and_dies_with_the_cluster(run) -> None:
    cluster = run.rendering.one(CLUSTER)
    provider = run.rendering.one(PROVIDER)
    objects = list(kubernetes_objects(run.rendering.resources))
    assert len(objects) >= 25
    for obj in objects:
        assert obj.deleted_with == cluster.urn, obj.name
        assert obj.provider.startswith(provider.urn + "::"), obj.name


def test_provider_is_built_from_the_secret_kubeconfig_after_the_cluster(run) -> None:
    provider = run.rendering.one(PROVIDER)
    assert not list(plain_strings(provider.inputs.get("kubeconfig")))
    assert run.rendering.one(CLUSTER).urn in provider.dependencies


def test_provider_is_replaced_only_when_the_cluster_is(run) -> None:
    provider = run.rendering.one(PROVIDER)
    cluster = run.rendering.one(CLUSTER)
    assert provider.inputs["clusterIdentifier"] == cluster.outputs["id"]


def test_gcp_identity_objects_are_not_tied_to_the_cluster_or_the_kubernetes_provider(run) -> None:
    gcp = [
        r
        for r in run.rendering.custom_resources()
        if r.type.startswith("gcp:") and r.name.startswith("k8s-")
    ]
    assert {r.type for r in gcp} == {
        "gcp:serviceaccount/account:Account",
        "gcp:projects/iAMMember:IAMMember",
        "gcp:serviceaccount/iAMMember:IAMMember",
    }
    for resource in gcp:
        assert resource.deleted_with == "" and not resource.provider.startswith(
            "urn:pulumi:test::rl-on-gke::pulumi:providers:kubernetes"
        )


def test_project_roles_are_granted_to_the_training_gsa_and_the_metrics_reader_only(run) -> None:
    members = run.rendering.of_type("gcp:projects/iAMMember:IAMMember")
    by_member = {}
    for m in members:
        by_member.setdefault(m.inputs["member"], set()).add(m.inputs["role"])
    assert by_member == {
        "serviceAccount:rl-test-training@example-project.iam.gserviceaccount.com": {
            "roles/logging.logWriter",
            "roles/monitoring.metricWriter",
        },
        # The Managed Prometheus query frontend behind Grafana reads metrics, nothing else.
        "serviceAccount:rl-test-mquery@example-project.iam.gserviceaccount.com": {
            "roles/monitoring.viewer"
        },
    }


def test_workload_identity_binding_names_the_ksa_and_waits_for_the_cluster(run) -> None:
    [binding] = [
        b
        for b in run.rendering.of_type("gcp:serviceaccount/iAMMember:IAMMember")
        if "rl-test-training]" in b.inputs["member"]
    ]
    assert binding.inputs["role"] == "roles/iam.workloadIdentityUser"
    assert (
        binding.inputs["member"]
        == "serviceAccount:example-project.svc.id.goog[rl-train/rl-test-training]"
    )
    assert run.rendering.one(CLUSTER).urn in binding.dependencies
    ksa = run.rendering.one("kubernetes:core/v1:ServiceAccount", "identity-ksa").inputs["metadata"]
    assert (ksa["namespace"], ksa["name"]) == ("rl-train", "rl-test-training")
    assert (
        ksa["annotations"]["iam.gke.io/gcp-service-account"]
        == "rl-test-training@example-project.iam.gserviceaccount.com"
    )


def test_tokens_appear_in_no_resource_input_outside_a_secret(run) -> None:
    for resource in run.rendering.resources:
        for text in plain_strings(resource.inputs):
            assert HF_TOKEN not in text and WANDB_KEY not in text, resource.name


def test_one_secret_holds_both_tokens_and_pods_reference_them(run) -> None:
    (secret,) = run.rendering.of_type(SECRET)
    assert secret.inputs["metadata"] == {"name": "rl-test-tokens", "namespace": "rl-train"}
    assert secret.inputs["stringData"].value == {"HF_TOKEN": HF_TOKEN, "WANDB_API_KEY": WANDB_KEY}
    worker = run.rendering.one(RAY_CLUSTER).inputs["spec"]["workerGroupSpecs"][0]
    env = {e["name"]: e for e in worker["template"]["spec"]["containers"][0]["env"]}
    assert env["HF_TOKEN"]["valueFrom"]["secretKeyRef"]["name"] == "rl-test-tokens"
    assert env["WANDB_API_KEY"]["valueFrom"]["secretKeyRef"]["optional"] is True


def test_without_tokens_there_is_no_secret_and_no_reference_to_one() -> None:
    rendering = render_layer(make_config(), hf_token=None, wandb_key=None).rendering
    assert rendering.of_type(SECRET) == []
    assert not any("secretKeyRef" in s for s in plain_strings(rendering.one(RAY_CLUSTER).inputs))


def test_wandb_alone_makes_a_secret_without_an_hf_key() -> None:
    rendering = render_layer(make_config(), hf_token=None, wandb_key=WANDB_KEY).rendering
    (secret,) = rendering.of_type(SECRET)
    assert set(secret.inputs["stringData"].value) == {"WANDB_API_KEY"}
    assert "HF_TOKEN" not in set(plain_strings(rendering.one(RAY_CLUSTER).inputs))


def test_ray_cluster_waits_for_gpu_pool_networks_claim_identity_and_installer(run) -> None:
    dependencies = set(run.rendering.one(RAY_CLUSTER).dependencies)
    required = [
        run.rendering.one("gcp:container/nodePool:NodePool"),
        run.rendering.one("kubernetes:core/v1:PersistentVolumeClaim"),
        run.rendering.one("kubernetes:core/v1:ServiceAccount", "identity-ksa"),
        run.rendering.one(SECRET),
        run.rendering.one("kubernetes:apps/v1:DaemonSet"),
        *run.rendering.of_type("kubernetes:networking.gke.io/v1:Network"),
    ]
    assert {r.urn for r in required} <= dependencies


def test_lustre_volume_points_at_the_instance_from_its_outputs(run) -> None:
    spec = run.rendering.one("kubernetes:core/v1:PersistentVolume").inputs["spec"]
    assert spec["csi"]["volumeHandle"] == "example-project/us-east1-b/rl-test-lustre"
    assert spec["csi"]["volumeAttributes"] == {"ip": LUSTRE_IP, "filesystem": "lustrefs"}
    assert spec["capacity"] == {"storage": "9000Gi"}


def test_ray_head_selects_the_system_pool_passed_in(run) -> None:
    head = run.rendering.one(RAY_CLUSTER).inputs["spec"]["headGroupSpec"]
    assert head["template"]["spec"]["nodeSelector"] == {
        "cloud.google.com/gke-nodepool": SYSTEM_POOL
    }


def test_every_child_is_named_after_the_layer_and_nested_inside_it(run) -> None:
    layer = run.rendering.one("rl-on-gke:k8s:KubernetesLayer")
    by_urn = {r.urn: r for r in run.rendering.resources}

    def ancestors(resource):
        while resource.parent in by_urn:
            resource = by_urn[resource.parent]
            yield resource.urn

    outside = {"cluster", "gpu-pool", "k8s"}
    children = [r for r in run.rendering.resources if r.name not in outside]
    assert len(children) > 30
    for child in children:
        assert child.name.startswith("k8s-"), child.name
        assert layer.urn in set(ancestors(child)), child.name


def test_layer_exposes_what_the_stack_exports(run) -> None:
    layer = run.component
    assert (layer.ray_cluster_name, layer.namespace, layer.head_service) == (
        "rl-test-ray",
        "rl-train",
        "rl-test-ray-head-svc",
    )
    assert (layer.dashboard_port, layer.framework, layer.node_count, layer.gpus_per_node) == (
        RAY_DASHBOARD_PORT,
        "nemo-rl",
        2,
        8,
    )
    assert (
        layer.dashboard_port_forward
        == "kubectl port-forward -n rl-train svc/rl-test-ray-head-svc 8265:8265"
    )


def test_layer_registers_every_exposed_value_as_an_output(monkeypatch: pytest.MonkeyPatch) -> None:
    registered: dict = {}
    original = KubernetesLayer.register_outputs

    def spy(self, outputs):
        registered.update(outputs)
        return original(self, outputs)

    monkeypatch.setattr(KubernetesLayer, "register_outputs", spy)
    layer = render_layer(make_config()).component
    assert registered == {
        key: getattr(layer, key)
        for key in (
            "ray_cluster_name",
            "namespace",
            "head_service",
            "dashboard_port",
            "framework",
            "node_count",
            "gpus_per_node",
            "dashboard_port_forward",
            "code_sandbox_url",
            "grafana_port_forward",
        )
    }
    assert registered["code_sandbox_url"] is None  # the sandbox is off by default


def test_wrong_number_of_rdma_subnets_fails_before_anything_is_registered() -> None:
    with pytest.raises(ValueError, match="expected 8 subnet names, got 7"):
        render_layer(make_config(), rdma_subnets=RDMA_SUBS[:7])


def test_every_machine_and_framework_renders_valid_kubernetes_objects(any_config) -> None:
    rendering = render_layer(any_config).rendering
    ray = rendering.one(RAY_CLUSTER).inputs["spec"]
    assert ray["workerGroupSpecs"][0]["template"]["spec"]["nodeSelector"] == {
        "cloud.google.com/gke-accelerator": any_config.gpu.machine.accelerator_type
    }
    objects = list(kubernetes_objects(rendering.resources))
    for resource in objects:
        validate(rendered_manifest(resource))
    assert "kubernetes:monitoring.googleapis.com/v1:PodMonitoring" in {r.type for r in objects}


# --- rewards.codeSandbox -----------------------------------------------------------------------

SANDBOX_KINDS = (
    "kubernetes:core/v1:ConfigMap",
    "kubernetes:apps/v1:Deployment",
    "kubernetes:core/v1:Service",
    "kubernetes:networking.k8s.io/v1:NetworkPolicy",
)


def _sandbox_config(**settings):
    from components.config import parse_stack_config
    from tests.conftest import BASE_STACK_CONFIG, raw_from_stack

    raw = raw_from_stack(BASE_STACK_CONFIG)
    raw["ray"] = {"namespace": "rl-train"}
    raw["rewards"] = {
        "codeSandbox": {"enabled": True, "image": "example.test/sandbox:1", **settings}
    }
    return parse_stack_config(raw)


@pytest.fixture(scope="module")
def sandbox_run():
    return render_layer(_sandbox_config(replicas=2, concurrency=3))


def test_an_enabled_sandbox_adds_four_valid_objects_that_wait_for_their_pool(sandbox_run) -> None:
    rendering = sandbox_run.rendering
    objects = [
        r
        for r in rendering.custom_resources()
        if "code-sandbox" in r.name and r.type.startswith("kubernetes:")
    ]
    assert sorted(r.type for r in objects) == sorted(SANDBOX_KINDS)
    for resource in objects:
        validate_core(rendered_manifest(resource))  # kubernetes-validate, strict
    pool = rendering.one("gcp:container/nodePool:NodePool", "code-sandbox-pool")
    deployment = rendering.one("kubernetes:apps/v1:Deployment", "code-sandbox-executor")
    assert pool.urn in deployment.dependencies
    assert deployment.inputs["spec"]["replicas"] == 2
    command = deployment.inputs["spec"]["template"]["spec"]["containers"][0]["command"]
    assert command[command.index("--concurrency") + 1] == "3"
    assert (
        sandbox_run.component.code_sandbox_url
        == "http://rl-test-code-sandbox.rl-train.svc.cluster.local:8080"
    )


def test_sandbox_objects_hold_no_token_but_a_reference_to_the_service_token(sandbox_run) -> None:
    from tests.components.k8s.fakes import CODE_SANDBOX_TOKEN

    for resource in sandbox_run.rendering.custom_resources():
        if "code-sandbox" in resource.name:
            strings = plain_strings(resource.inputs)
            assert not any(HF_TOKEN in s or CODE_SANDBOX_TOKEN in s for s in strings), resource.name
    container = sandbox_run.rendering.one(
        "kubernetes:apps/v1:Deployment", "code-sandbox-executor"
    ).inputs["spec"]["template"]["spec"]["containers"][0]
    refs = [e["valueFrom"]["secretKeyRef"] for e in container["env"] if "valueFrom" in e]
    assert refs == [{"name": "rl-test-tokens", "key": "CODE_SANDBOX_TOKEN"}]


def test_a_layer_with_the_sandbox_and_no_service_token_is_refused() -> None:
    # The stack is refused by key first (tests/test_main.py); this guards other callers.
    with pytest.raises(
        ValueError, match="CODE_SANDBOX_TOKEN is required when rewards.codeSandbox.enabled"
    ):
        render_layer(_sandbox_config(), sandbox_token=None)


def test_a_code_change_rolls_the_executor_pods() -> None:
    from components.k8s.sandbox import CODE_DIGEST_ANNOTATION, deployment_manifest
    from components.k8s.sandbox_service import read_sources, service_inputs

    config = _sandbox_config()
    sources = read_sources()
    before = deployment_manifest(service_inputs(config, "rl-test-ray", sources, "rl-test-tokens"))
    changed = {
        **sources,
        "jobs/rewards/sandbox.py": sources["jobs/rewards/sandbox.py"] + "\n# changed\n",
    }
    after = deployment_manifest(service_inputs(config, "rl-test-ray", changed, "rl-test-tokens"))
    annotation = lambda m: m["spec"]["template"]["metadata"]["annotations"][CODE_DIGEST_ANNOTATION]  # noqa: E731
    assert annotation(before) != annotation(after)


@pytest.mark.parametrize("enabled", [True, False])
def test_the_sandbox_pool_is_required_exactly_when_enabled(enabled: bool) -> None:
    config = _sandbox_config() if enabled else make_config()
    with pytest.raises(
        ValueError,
        match=f"code_sandbox_pool: given exactly when rewards.codeSandbox.enabled \\(enabled is {enabled}\\)",
    ):
        render_layer(config, code_sandbox_pool=not enabled)


def test_workers_run_as_their_own_ksa_with_the_same_google_identity_and_no_autoscaler_rights(
    run,
) -> None:
    """KubeRay binds its autoscaler Role (patch pods, the RayCluster) to the head template's
    serviceAccountName (kuberay v1.7.0 ray-operator/controllers/ray/utils/util.go
    `GetHeadGroupServiceAccountName`, raycluster_controller.go `reconcileAutoscalerRoleBinding`).
    Workers get a KSA of their own, so code on a GPU worker cannot resize or delete the cluster,
    and the same Google SA through a Workload Identity binding of its own."""
    spec = run.rendering.one(RAY_CLUSTER).inputs["spec"]
    head_ksa = spec["headGroupSpec"]["template"]["spec"]["serviceAccountName"]
    worker_ksa = spec["workerGroupSpecs"][0]["template"]["spec"]["serviceAccountName"]
    assert (head_ksa, worker_ksa) == ("rl-test-training", "rl-test-ray-worker")
    ksas = {
        r.inputs["metadata"]["name"]: r
        for r in run.rendering.of_type("kubernetes:core/v1:ServiceAccount")
    }
    worker = ksas[worker_ksa]
    validate_core(rendered_manifest(worker))
    assert worker.inputs["metadata"]["namespace"] == "rl-train"
    assert (
        worker.inputs["metadata"]["annotations"]["iam.gke.io/gcp-service-account"]
        == "rl-test-training@example-project.iam.gserviceaccount.com"
    )
    [binding] = [
        b
        for b in run.rendering.of_type("gcp:serviceaccount/iAMMember:IAMMember")
        if b.inputs["member"].endswith("[rl-train/rl-test-ray-worker]")
    ]
    assert binding.inputs["role"] == "roles/iam.workloadIdentityUser"
    assert binding.inputs["member"].startswith("serviceAccount:example-project.svc.id.goog[")
    assert run.rendering.one(CLUSTER).urn in binding.dependencies
    assert worker.urn in run.rendering.one(RAY_CLUSTER).dependencies
    # The program binds no Kubernetes role to the workers' KSA (KubeRay's goes to the head's).
    subjects = [
        subject
        for r in run.rendering.resources
        if r.type.endswith("Binding") and "rbac.authorization" in r.type
        for subject in r.inputs.get("subjects", [])
    ]
    assert subjects and worker_ksa not in {s.get("name") for s in subjects}
