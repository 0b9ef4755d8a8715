"""The sandbox service manifests: valid for the API server, gVisor, no credentials, egress denied."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from components.k8s import sandbox
from components.k8s.sandbox import SandboxServiceInputs
from jobs.rewards import compile_cache
from jobs.rewards import sandbox as rewards_sandbox
from tests.components.k8s.manifests import validate_core

REPO = Path(__file__).resolve().parents[3]


def inputs(**overrides: Any) -> SandboxServiceInputs:
    sources = {p: (REPO / p).read_text() for p in sandbox.SOURCE_FILES}
    return SandboxServiceInputs(
        **{
            "name": "rl-test-code-sandbox",
            "namespace": "rl-train",
            "image": "gcc:12",
            "ray_cluster": "rl-test-ray",
            "sources": sources,
            "token_secret": "rl-tokens",
            **overrides,
        }
    )


def by_kind(manifests: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {m["kind"]: m for m in manifests}


def test_every_manifest_validates_against_the_kubernetes_schemas() -> None:
    manifests = sandbox.manifests(inputs())
    assert sorted(m["kind"] for m in manifests) == [
        "ConfigMap",
        "Deployment",
        "NetworkPolicy",
        "Service",
    ]
    for manifest in manifests:
        validate_core(manifest)  # kubernetes-validate, strict: unknown fields fail too


def test_pods_run_under_gvisor_on_the_sandbox_pool_only() -> None:
    pod = by_kind(sandbox.manifests(inputs()))["Deployment"]["spec"]["template"]["spec"]
    assert pod["runtimeClassName"] == "gvisor"
    assert pod["nodeSelector"] == {
        "sandbox.gke.io/runtime": "gvisor",
        "rl-on-gke/role": "code-sandbox",
    }
    assert {
        "key": "sandbox.gke.io/runtime",
        "operator": "Equal",
        "value": "gvisor",
        "effect": "NoSchedule",
    } in pod["tolerations"]


def test_pods_hold_no_secret_but_the_service_token() -> None:
    pod = by_kind(sandbox.manifests(inputs()))["Deployment"]["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is False
    assert pod["enableServiceLinks"] is False
    (container,) = pod["containers"]
    assert "envFrom" not in container
    secret_refs = [e for e in container["env"] if "valueFrom" in e]
    assert secret_refs == [
        {
            "name": sandbox.TOKEN_ENV,
            "valueFrom": {"secretKeyRef": {"name": "rl-tokens", "key": sandbox.TOKEN_ENV}},
        }
    ]
    plain = [e for e in container["env"] if "valueFrom" not in e]
    assert not any(
        w in e["name"].upper() for e in plain for w in ("TOKEN", "KEY", "SECRET", "PASSWORD")
    )
    assert all("secret" not in v and "projected" not in v for v in pod["volumes"])


def test_the_executor_is_root_inside_gvisor_with_only_the_listed_capabilities() -> None:
    pod = by_kind(sandbox.manifests(inputs()))["Deployment"]["spec"]["template"]["spec"]
    assert pod["runtimeClassName"] == "gvisor"
    (container,) = pod["containers"]
    ctx = container["securityContext"]
    assert ctx["runAsUser"] == 0 and ctx["privileged"] is False
    assert ctx["allowPrivilegeEscalation"] is False and ctx["readOnlyRootFilesystem"] is True
    assert ctx["capabilities"] == {"drop": ["ALL"], "add": list(sandbox.EXECUTOR_CAPABILITIES)}
    assert (
        "SYS_PTRACE" not in ctx["capabilities"]["add"]
        and "SYS_MODULE" not in ctx["capabilities"]["add"]
    )


def test_tini_is_pid_1_and_starts_the_service_as_the_tests_do() -> None:
    (container,) = by_kind(sandbox.manifests(inputs()))["Deployment"]["spec"]["template"]["spec"][
        "containers"
    ]
    assert container["command"][:2] == list(sandbox.INIT)
    assert container["command"][2:] == sandbox.service_command(
        sandbox.PORT, 4, workers=4, memory_bytes=7 * 2**30
    )


def test_the_executor_is_told_its_pods_cpus_and_memory_less_its_own_share() -> None:
    """The boxes' total stays within the pod's memory; the node's CPU count (what
    the executor would read) is not the pod's."""
    (container,) = by_kind(sandbox.manifests(inputs(cpu="6", memory="12Gi")))["Deployment"]["spec"][
        "template"
    ]["spec"]["containers"]
    command = container["command"]
    assert command[command.index("--workers") + 1] == "6"
    limit = sandbox.quantity_bytes(container["resources"]["limits"]["memory"])
    budget = int(command[command.index("--memory-bytes") + 1])
    assert budget == limit - sandbox.SERVICE_OWN_BYTES == 11 * 2**30


@pytest.mark.parametrize("bad", ["8G", "8", "1.5Gi", "8Ti"])
def test_a_memory_quantity_the_program_does_not_write_is_refused_by_value(bad: str) -> None:
    with pytest.raises(ValueError, match=repr(bad)):
        sandbox.quantity_bytes(bad)


def test_network_policy_denies_all_egress_and_admits_only_the_ray_pods() -> None:
    manifests = by_kind(sandbox.manifests(inputs()))
    policy = manifests["NetworkPolicy"]["spec"]
    assert "Egress" in policy["policyTypes"] and policy["egress"] == []
    labels = manifests["Deployment"]["spec"]["template"]["metadata"]["labels"]
    assert all(labels.get(k) == v for k, v in policy["podSelector"]["matchLabels"].items())
    (rule,) = policy["ingress"]
    assert rule["from"] == [{"podSelector": {"matchLabels": {"ray.io/cluster": "rl-test-ray"}}}]
    assert rule["ports"] == [{"protocol": "TCP", "port": sandbox.PORT}]


def test_service_reaches_the_container_port_and_the_code_is_mounted() -> None:
    manifests = by_kind(sandbox.manifests(inputs()))
    (container,) = manifests["Deployment"]["spec"]["template"]["spec"]["containers"]
    (port,) = manifests["Service"]["spec"]["ports"]
    assert port["targetPort"] in {p["name"] for p in container["ports"]}
    assert (
        manifests["Service"]["spec"]["selector"]
        == manifests["Deployment"]["spec"]["selector"]["matchLabels"]
    )
    mounted = {m["mountPath"] for m in container["volumeMounts"]}
    assert {f"{sandbox.CODE_DIR}/{p}" for p in sandbox.SOURCE_FILES} <= mounted
    assert set(manifests["ConfigMap"]["data"]) == {
        sandbox.source_key(p) for p in sandbox.SOURCE_FILES
    }
    assert inputs().url == "http://rl-test-code-sandbox.rl-train.svc.cluster.local:8080"


def test_the_mounted_sources_are_all_the_service_imports() -> None:
    # The pod has only these files: importing the service from them alone must work.
    import subprocess
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for path in sandbox.SOURCE_FILES:
            (Path(tmp) / path).parent.mkdir(parents=True, exist_ok=True)
            (Path(tmp) / path).write_text((REPO / path).read_text())
        done = subprocess.run(
            [
                sys.executable,
                "-I",
                "-c",
                "import sys; sys.path.insert(0, '.'); import jobs.rewards.service",
            ],
            cwd=tmp,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 0, done.stderr


def test_missing_sources_are_named() -> None:
    with pytest.raises(ValueError, match="missing \\['jobs/rewards/service.py'\\]"):
        inputs(sources={p: "" for p in sandbox.SOURCE_FILES if p != "jobs/rewards/service.py"})


def test_the_kernel_wide_uid_leases_have_a_writable_run() -> None:
    """Leases moved from $TMPDIR to uids.LEASE_DIR under /run; the root
    filesystem is read-only, so /run is a small memory emptyDir of its own."""
    from jobs.rewards import uids

    pod = by_kind(sandbox.manifests(inputs()))["Deployment"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    assert str(uids.LEASE_DIR.parent) == "/run" and mounts["/run"] == "run"
    (run,) = [v for v in pod["volumes"] if v["name"] == "run"]
    assert run["emptyDir"] == {"medium": "Memory", "sizeLimit": sandbox.RUN_SIZE}


def test_every_solution_the_pod_runs_at_once_may_compile_at_once_within_its_memory() -> None:
    """The largest compile times the solutions run at once fits the executor's budget, and the
    budget plus the service's own share fits the pod's memory limit: with the defaults, compile
    bombs wait for no one and the pod is never killed for memory."""
    defaults = inputs()
    (container,) = by_kind(sandbox.manifests(defaults))["Deployment"]["spec"]["template"]["spec"][
        "containers"
    ]
    command = container["command"]
    budget = int(command[command.index("--memory-bytes") + 1])
    limit = sandbox.quantity_bytes(container["resources"]["limits"]["memory"])
    assert defaults.concurrency * rewards_sandbox.COMPILE_BYTES <= budget
    assert budget + sandbox.SERVICE_OWN_BYTES <= limit


def test_the_binaries_a_pod_may_hold_at_once_fit_its_scratch_disk() -> None:
    """Each running compile holds its binary twice (the compiler's output, the executor's copy),
    the cache up to CACHE_BYTES more: within the pod's ephemeral storage, which the kubelet
    enforces by evicting the pod, not by ENOSPC."""
    defaults = inputs()
    scratch = sandbox.quantity_bytes(defaults.scratch)
    worst = defaults.concurrency * 2 * compile_cache.MAX_BINARY_BYTES + compile_cache.CACHE_BYTES
    assert worst <= scratch
