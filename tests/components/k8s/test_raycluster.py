"""The RayCluster: a protected CPU-pool head, a GPU worker group (fixed or autoscaled) with every NIC and mount."""

from __future__ import annotations

import json

from components.catalogue import FRAMEWORKS, RAY_METRICS_PORT
from components.contract import SECRET_ENV
from components.k8s.identity import token_env
from components.k8s.names import K8sNames
from components.k8s.raycluster import (
    HEAD_PRIORITY,
    HEAD_SCRATCH_GIB,
    PACKAGES_PATH,
    RayClusterInputs,
    head_priority_class_manifest,
    install_command,
    ray_cluster_manifest,
    worker_start_script,
)
from tests.components.k8s.conftest import COMBINATIONS, make_config
from tests.components.k8s.manifests import validate_core, validate_custom

HF_TOKEN_KEY = SECRET_ENV["hfToken"]

SYSTEM_POOL = "rl-test-system"


def _manifest(config, token_refs=()):
    inputs = RayClusterInputs.for_stack(
        config, K8sNames.for_stack(config), system_pool_name=SYSTEM_POOL, token_env=token_refs
    )
    return ray_cluster_manifest(inputs)


def _head(manifest):
    return manifest["spec"]["headGroupSpec"]


def _worker(manifest):
    (group,) = manifest["spec"]["workerGroupSpecs"]
    return group


def _container(group):
    """The Ray container (the head pod also runs the re-armer beside it)."""
    (container,) = [
        c
        for c in group["template"]["spec"]["containers"]
        if c["name"] in ("ray-head", "ray-worker")
    ]
    return container


def _mounts(group):
    return {m["mountPath"]: m["name"] for m in _container(group)["volumeMounts"]}


def _volumes(group):
    return {v["name"]: v for v in group["template"]["spec"]["volumes"]}


def _env(group):
    return {e["name"]: e for e in _container(group)["env"]}


def test_image_and_ray_version_come_from_the_framework_catalogue(any_config) -> None:
    manifest = _manifest(any_config)
    framework = FRAMEWORKS[any_config.ray.framework]
    assert manifest["spec"]["rayVersion"] == framework.ray_version
    assert _container(_head(manifest))["image"] == framework.image_ref
    assert _container(_worker(manifest))["image"] == framework.image_ref


def test_head_runs_on_the_system_pool_and_takes_no_ray_tasks(k8s_config) -> None:
    head = _head(_manifest(k8s_config))
    spec = head["template"]["spec"]
    assert spec["nodeSelector"] == {"cloud.google.com/gke-nodepool": SYSTEM_POOL}
    assert "tolerations" not in spec  # so it can never land on a tainted GPU (spot) node
    assert head["rayStartParams"]["num-cpus"] == "0"
    assert "nvidia.com/gpu" not in _container(head)["resources"]["limits"]


def test_head_is_guaranteed_qos_high_priority_and_never_evicted_by_the_autoscaler(
    k8s_config,
) -> None:
    head = _head(_manifest(k8s_config))
    resources = _container(head)["resources"]
    assert resources["limits"] == {"cpu": "8", "memory": "32Gi"}
    # Guaranteed QoS is decided by cpu and memory only; scratch disk is requested, not limited.
    assert resources["requests"] == {
        **resources["limits"],
        "ephemeral-storage": f"{HEAD_SCRATCH_GIB}Gi",
    }
    assert (
        head["template"]["metadata"]["annotations"][
            "cluster-autoscaler.kubernetes.io/safe-to-evict"
        ]
        == "false"
    )
    assert (
        head["template"]["spec"]["priorityClassName"]
        == K8sNames.for_stack(k8s_config).head_priority_class
    )
    priority_class = head_priority_class_manifest("pc")
    assert priority_class["value"] == HEAD_PRIORITY > 0 and priority_class["globalDefault"] is False
    validate_core(priority_class)


def test_dashboard_listens_on_all_addresses_behind_a_cluster_ip_service(k8s_config) -> None:
    head = _head(_manifest(k8s_config))
    assert head["rayStartParams"]["dashboard-host"] == "0.0.0.0"
    assert head["serviceType"] == "ClusterIP"


def test_ray_containers_are_named_and_expose_the_kuberay_ports(k8s_config) -> None:
    manifest = _manifest(k8s_config)
    head, worker = _container(_head(manifest)), _container(_worker(manifest))
    assert (head["name"], worker["name"]) == ("ray-head", "ray-worker")
    assert {p["name"]: p["containerPort"] for p in head["ports"]} == {
        "gcs-server": 6379,
        "dashboard": 8265,
        "client": 10001,
        "metrics": RAY_METRICS_PORT,
    }
    assert {p["name"]: p["containerPort"] for p in worker["ports"]} == {"metrics": RAY_METRICS_PORT}


def test_static_workers_are_a_fixed_group_of_gpu_node_count() -> None:
    for machine, framework in COMBINATIONS:
        config = make_config(machine, framework, node_count=3, scaling="static")
        manifest = _manifest(config)
        worker = _worker(manifest)
        assert worker["replicas"] == worker["minReplicas"] == worker["maxReplicas"] == 3
        assert manifest["spec"]["enableInTreeAutoscaling"] is False
        assert "autoscalerOptions" not in manifest["spec"]
        validate_custom(manifest)


def test_on_demand_workers_autoscale_from_zero_to_node_count_with_the_idle_timeout() -> None:
    """Ray's in-tree autoscaler (v2) owns the GPU worker count, 0..nodeCount,
    and releases a worker idle for gpu.idleMinutes."""
    config = make_config(node_count=3, scaling="on-demand", idleMinutes=20)
    manifest = _manifest(config)
    spec = manifest["spec"]
    assert spec["enableInTreeAutoscaling"] is True
    options = spec["autoscalerOptions"]
    assert options["version"] == "v2" and options["idleTimeoutSeconds"] == 20 * 60
    worker = _worker(manifest)
    assert worker["minReplicas"] == 0 and worker["maxReplicas"] == 3
    # The autoscaler writes `replicas`; a program-owned value would be re-applied on every
    # `pulumi up` and delete a running job's workers.
    assert "replicas" not in worker
    validate_custom(manifest)


def test_autoscaler_v2_is_asked_for_by_version_never_by_the_head_env_var() -> None:
    """KubeRay (utils/validation.go ValidateRayClusterSpec) refuses a RayCluster that sets both
    autoscalerOptions.version and RAY_enable_autoscaler_v2 on the head, and v2 needs every pod's
    restartPolicy Never or unset."""
    manifest = _manifest(make_config(scaling="on-demand"))
    head, worker = _head(manifest), _worker(manifest)
    for group in (head, worker):
        spec = group["template"]["spec"]
        assert spec.get("restartPolicy", "Never") == "Never"
        for c in spec["containers"]:
            assert "RAY_enable_autoscaler_v2" not in {e["name"] for e in c.get("env", [])}


def test_the_autoscaler_sidecar_keeps_the_head_pod_guaranteed() -> None:
    resources = _manifest(make_config(scaling="on-demand"))["spec"]["autoscalerOptions"][
        "resources"
    ]
    assert resources["requests"] == resources["limits"]


def test_each_capacity_mode_scales_as_the_readme_says() -> None:
    expected = {"spot": True, "on-demand": True, "flex-start": True, "reservation": False}
    for mode, autoscaled in expected.items():
        extra = {"reservation": "r1"} if mode == "reservation" else {}
        config = make_config(provisioning=mode, **extra)
        assert _manifest(config)["spec"]["enableInTreeAutoscaling"] is autoscaled, mode


def test_each_worker_takes_all_gpus_and_the_catalogued_cpu_and_memory(any_config) -> None:
    machine = any_config.gpu.machine
    resources = _container(_worker(_manifest(any_config)))["resources"]
    expected = {
        "cpu": str(machine.worker_cpu),
        "memory": f"{machine.worker_memory_gib}Gi",
        "nvidia.com/gpu": "8",
    }
    assert resources["limits"] == expected
    assert {k: v for k, v in resources["requests"].items() if k != "ephemeral-storage"} == expected


def _worker_pod_ephemeral_requests(manifest) -> dict[str, str]:
    spec = _worker(manifest)["template"]["spec"]
    containers = [*spec.get("initContainers", []), *spec["containers"]]
    return {
        c["name"]: c["resources"]["requests"]["ephemeral-storage"]
        for c in containers
        if "ephemeral-storage" in c.get("resources", {}).get("requests", {})
    }


def test_workers_of_a_pool_scaled_from_zero_request_no_ephemeral_storage(any_config) -> None:
    """GKE's cluster autoscaler does not scale a pool up from 0 when its ephemeral storage is on
    Local SSD and the pending pod requests ephemeral storage (kubernetes/autoscaler#1869, GKE
    release note of 2021-02-05; #4318 taught the GCE template about Local SSD, "doesn't work out
    of the box for GKE"). Every autoscaled mode starts its GPU pool at 0, so no worker container
    may ask for it; a static pool's nodes exist before the pods, so it keeps its request."""
    machine_type, framework = any_config.gpu.machine_type, any_config.ray.framework
    for mode in ("spot", "on-demand", "flex-start"):
        config = make_config(machine_type, framework, node_count=3, provisioning=mode)
        assert config.gpu.scales_on_demand, mode
        manifest = _manifest(config)
        assert _worker_pod_ephemeral_requests(manifest) == {}, mode
        validate_custom(manifest)
    static = make_config(machine_type, framework, node_count=3, scaling="static")
    assert _worker_pod_ephemeral_requests(_manifest(static)) == {
        "ray-worker": f"{any_config.gpu.machine.worker_scratch_gib}Gi"
    }


def test_workers_select_this_machines_gpus_and_tolerate_gpu_and_termination_taints(
    any_config,
) -> None:
    spec = _worker(_manifest(any_config))["template"]["spec"]
    assert spec["nodeSelector"] == {
        "cloud.google.com/gke-accelerator": any_config.gpu.machine.accelerator_type
    }
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in spec[
        "tolerations"
    ]
    assert {"key": "cloud.google.com/impending-node-termination", "operator": "Exists"} in spec[
        "tolerations"
    ]


def test_workers_ask_for_ten_interfaces(k8s_config) -> None:
    annotations = _worker(_manifest(k8s_config))["template"]["metadata"]["annotations"]
    interfaces = json.loads(annotations["networking.gke.io/interfaces"])
    assert len(interfaces) == 10
    assert [i["interfaceName"] for i in interfaces] == [f"eth{i}" for i in range(10)]
    assert annotations["networking.gke.io/default-interface"] == "eth0"


def test_lustre_claim_is_mounted_at_slash_lustre_on_head_and_workers(k8s_config) -> None:
    manifest = _manifest(k8s_config)
    claim = K8sNames.for_stack(k8s_config).lustre_pvc
    for group in (_head(manifest), _worker(manifest)):
        volume_name = _mounts(group)["/lustre"]
        assert _volumes(group)[volume_name]["persistentVolumeClaim"] == {"claimName": claim}


def test_worker_shm_is_a_memory_emptydir_sized_from_the_machine(any_config) -> None:
    worker = _worker(_manifest(any_config))
    shm = _volumes(worker)[_mounts(worker)["/dev/shm"]]
    assert shm["emptyDir"] == {
        "medium": "Memory",
        "sizeLimit": f"{any_config.gpu.machine.shm_size_gib}Gi",
    }


def test_workers_mount_the_gib_and_nvidia_host_dirs(k8s_config) -> None:
    worker = _worker(_manifest(k8s_config))
    mounts, volumes = _mounts(worker), _volumes(worker)
    assert volumes[mounts["/usr/local/gib"]]["hostPath"]["path"] == "/home/kubernetes/bin/gib"
    assert volumes[mounts["/usr/local/nvidia"]]["hostPath"]["path"] == "/home/kubernetes/bin/nvidia"


def test_workers_freeze_no_gib_tuning_and_source_gibs_script_at_start(any_config) -> None:
    worker = _worker(_manifest(any_config))
    container = _container(worker)
    env = {k: v["value"] for k, v in _env(worker).items() if "value" in v}
    # gIB's tuning is not copied into the pod spec: a gIB bump must not leave stale values.
    assert not [k for k in env if k.startswith("NCCL_")]
    assert env["GLOO_SOCKET_IFNAME"] == env["TP_SOCKET_IFNAME"] == "eth0"
    assert env["LD_LIBRARY_PATH"] == "/usr/local/nvidia/lib64"
    assert worker["template"]["metadata"]["annotations"]["ray.io/overwrite-container-cmd"] == "true"
    assert container["command"] == ["/bin/bash", "-lc", "--"]
    (script,) = container["args"]
    assert "source /usr/local/gib/scripts/set_nccl_env.sh" in script
    assert any_config.gpu.machine.nccl_tuner_config in script


def test_hf_cache_is_on_lustre_for_head_and_workers(k8s_config) -> None:
    manifest = _manifest(k8s_config)
    for group in (_head(manifest), _worker(manifest)):
        assert _env(group)["HF_HOME"]["value"] == "/lustre/huggingface_cache"


def test_tokens_reach_head_and_workers_only_by_secret_reference(k8s_config) -> None:
    refs = token_env("rl-test-tokens", [HF_TOKEN_KEY])
    manifest = _manifest(k8s_config, refs)
    for group in (_head(manifest), _worker(manifest)):
        assert _env(group)[HF_TOKEN_KEY] == refs[0]
        assert "value" not in _env(group)[HF_TOKEN_KEY]


def test_head_and_workers_run_as_their_own_workload_identity_ksas(k8s_config) -> None:
    manifest = _manifest(k8s_config)
    names = K8sNames.for_stack(k8s_config)
    assert _head(manifest)["template"]["spec"]["serviceAccountName"] == names.service_account
    worker = _worker(manifest)["template"]["spec"]["serviceAccountName"]
    assert worker == names.worker_service_account != names.service_account


def test_ray_cluster_is_deterministically_named_in_the_training_namespace(k8s_config) -> None:
    metadata = _manifest(k8s_config)["metadata"]
    assert metadata == {
        "name": "rl-test-ray",
        "namespace": "rl-train",
        # Applies take the worker list back from Ray's autoscaler (test_raycluster_ownership.py).
        "annotations": {"pulumi.com/patchForce": "true"},
    }


def test_every_machine_and_framework_renders_a_schema_valid_ray_cluster(any_config) -> None:
    validate_custom(_manifest(any_config, token_env("t", [HF_TOKEN_KEY])))


def _all_containers(group):
    spec = group["template"]["spec"]
    return [*spec.get("initContainers", []), *spec["containers"]]


def test_verl_pods_install_the_pinned_verl_before_ray_starts_and_import_it(any_config) -> None:
    manifest = _manifest(any_config)
    framework = FRAMEWORKS[any_config.ray.framework]
    for group in (_head(manifest), _worker(manifest)):
        spec = group["template"]["spec"]
        # The head's re-armer is a sidecar among the init containers (restartPolicy Always).
        installs = [c for c in spec.get("initContainers", []) if "restartPolicy" not in c]
        if not framework.install:
            assert installs == [] and "PYTHONPATH" not in _env(group)
            continue
        (init,) = installs
        script = init["command"][-1]
        # Exactly veRL 0.6.0, hash-checked, without touching the image's dependencies.
        assert "verl==0.6.0 --hash=sha256:" in script
        for flag in (
            "--no-deps",
            "--require-hashes",
            "--only-binary=:all:",
            f"--target {PACKAGES_PATH}",
        ):
            assert flag in script
        assert init["image"] == framework.image_ref
        # The install lands in a volume the Ray container mounts and puts on PYTHONPATH.
        (init_mount,) = init["volumeMounts"]
        volume = _volumes(group)[init_mount["name"]]
        assert "emptyDir" in volume
        assert _mounts(group)[PACKAGES_PATH] == init_mount["name"]
        assert _env(group)["PYTHONPATH"]["value"] == init_mount["mountPath"] == PACKAGES_PATH


def test_the_verl_framework_is_pinned_to_0_6_0() -> None:
    verl = FRAMEWORKS["verl"]
    assert verl.version == "0.6.0"
    assert [line.split()[0] for line in verl.install] == [f"verl=={verl.version}"]


def test_every_container_of_the_head_keeps_guaranteed_qos(any_config) -> None:
    # Guaranteed QoS needs equal cpu/memory requests and limits on every container, init ones too.
    for container in _all_containers(_head(_manifest(any_config))):
        resources = container["resources"]
        # QoS is judged on cpu and memory only; the head's scratch disk is a request alone.
        assert {k: resources["requests"][k] for k in ("cpu", "memory")} == {
            k: resources["limits"][k] for k in ("cpu", "memory")
        }


def test_install_command_is_one_shell_line_pip_reads_as_a_hashed_requirement() -> None:
    shell, flag, script = install_command(FRAMEWORKS["verl"])
    assert (shell, flag) == ("/bin/sh", "-c")
    requirement = FRAMEWORKS["verl"].install[0]
    assert f"'{requirement}'" in script  # quoted whole: the --hash stays on the requirement line


def test_an_image_without_a_digest_is_pulled_by_tag_and_flagged_unverified() -> None:
    for framework in FRAMEWORKS.values():
        if framework.image_digest is None:
            assert framework.image_ref == framework.image and framework.image_unverified
        else:
            assert framework.image_ref == f"{framework.image}@{framework.image_digest}"
            assert framework.image_digest.startswith("sha256:")


def test_a_verl_ray_cluster_with_the_install_step_is_schema_valid() -> None:
    validate_custom(_manifest(make_config(framework="verl")))


def _run_start(tmp_path, machine, gib_script: str | None):
    import subprocess

    script_path = tmp_path / "set_nccl_env.sh"
    if gib_script is not None:
        script_path.write_text(gib_script)
    start = worker_start_script(machine, script=str(script_path))
    # KubeRay's generated command, replaced by `env` so the test sees what `ray start` would inherit.
    return subprocess.run(
        ["/bin/bash", "-lc", "--", start],
        env={"PATH": "/usr/bin:/bin", "KUBERAY_GEN_RAY_START_CMD": "env"},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def test_start_script_exports_gibs_settings_and_ours_on_top_to_ray_start(
    tmp_path, any_config
) -> None:
    machine = any_config.gpu.machine
    gib = "export NCCL_NET=gIB\nexport NCCL_IB_TC=52\nexport NCCL_SOCKET_IFNAME=enp0s12\n"
    done = _run_start(tmp_path, machine, gib)
    assert done.returncode == 0, done.stderr
    env = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
    assert (env["NCCL_NET"], env["NCCL_IB_TC"]) == ("gIB", "52")  # gIB's values pass through
    assert env["NCCL_SOCKET_IFNAME"] == "eth0"  # ours win over the script's
    assert env["NCCL_TUNER_CONFIG_PATH"] == machine.nccl_tuner_config


def test_start_script_fails_loudly_when_gib_is_not_installed(tmp_path, k8s_config) -> None:
    done = _run_start(tmp_path, k8s_config.gpu.machine, None)
    assert done.returncode == 1
    assert "nccl-rdma-installer" in done.stderr
    assert "KUBERAY" not in done.stdout  # ray start never ran


def test_head_and_workers_keep_ray_scratch_in_an_emptydir_at_tmp_ray(any_config) -> None:
    manifest = _manifest(any_config)
    for group in (_head(manifest), _worker(manifest)):
        volume = _volumes(group)[_mounts(group)["/tmp/ray"]]
        # No sizeLimit: crossing one would evict the pod and end the run.
        assert volume["emptyDir"] == {}


def test_worker_scratch_fits_the_local_ssds_the_pool_gives_each_node(any_config) -> None:
    machine = any_config.gpu.machine
    assert 0 < machine.worker_scratch_gib < machine.local_ssd_gib


def test_a_parked_stack_keeps_a_worker_group_with_no_pods(stack_config) -> None:
    from components.config import parse_stack_config
    from tests.conftest import raw_from_stack

    stack_config["rl-on-gke:gpu"]["nodeCount"] = 0
    stack_config["rl-on-gke:gpu"]["scaling"] = "static"
    manifest = _manifest(parse_stack_config(raw_from_stack(stack_config)))
    worker = _worker(manifest)
    assert worker["replicas"] == worker["minReplicas"] == worker["maxReplicas"] == 0
    validate_custom(manifest)


def test_a_parked_autoscaled_stack_allows_no_worker() -> None:
    manifest = _manifest(make_config(node_count=0, scaling="on-demand"))
    worker = _worker(manifest)
    assert worker["minReplicas"] == worker["maxReplicas"] == 0
    validate_custom(manifest)


def test_the_head_pod_starts_the_re_armer_beside_ray_with_the_runs_root_on_lustre(
    any_config,
) -> None:
    from components.contract import RUNS_ROOT
    from components.k8s.raycluster import REARM_CODE, REARM_CONTAINER

    head = _head(_manifest(any_config))
    containers = head["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["ray-head"]
    # A native sidecar (an init container with restartPolicy Always): the kubelet restarts it
    # whatever the pod's restartPolicy, which KubeRay sets to Never with autoscaler v2 (kuberay
    # v1.7.0 common/pod.go L278-280), so a re-armer that dies (an OOM kill, an unhandled error)
    # comes back (https://kubernetes.io/docs/concepts/workloads/pods/sidecar-containers/).
    (rearm,) = [
        c for c in head["template"]["spec"]["initContainers"] if c["name"] == REARM_CONTAINER
    ]
    assert rearm["restartPolicy"] == "Always"
    assert head["template"]["spec"]["initContainers"][-1] is rearm
    script = rearm["command"][-1]
    assert (
        f"python -m jobs.head.rearm --address http://127.0.0.1:8265 --runs-root {RUNS_ROOT}"
        in script
        and f"PYTHONPATH={REARM_CODE}" in script
    )
    assert {m["mountPath"]: m["name"] for m in rearm["volumeMounts"]} == {"/lustre": "lustre"}
    assert rearm["image"] == _container(head)["image"]
    # Only the head pod: workers ride spot and are not where runs are re-armed from.
    worker = _worker(_manifest(any_config))["template"]["spec"]
    assert all(
        c["name"] != REARM_CONTAINER
        for c in [*worker["containers"], *worker.get("initContainers", [])]
    )
