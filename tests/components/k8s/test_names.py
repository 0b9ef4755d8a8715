"""Deterministic names: what jobs and stack outputs rely on, within Kubernetes and GCP limits."""

from __future__ import annotations

import re

from components.k8s.names import K8sNames, head_service_name, lustre_pv_name
from tests.components.k8s.conftest import make_config

_DNS_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def test_head_service_follows_kuberays_naming() -> None:
    assert head_service_name("rl-test-ray") == "rl-test-ray-head-svc"


def test_names_derive_from_the_prefix_and_namespace(k8s_config) -> None:
    names = K8sNames.for_stack(k8s_config)
    assert names.namespace == "rl-train"
    assert names.ray_cluster == "rl-test-ray"
    assert names.head_service == "rl-test-ray-head-svc"
    assert names.lustre_pvc == "rl-test-lustre-pvc"


def test_longest_prefix_still_fits_gcp_and_kubernetes_limits() -> None:
    config = make_config().model_copy(update={"name_prefix": "a" * 20})
    names = K8sNames.for_stack(config)
    assert 6 <= len(names.gsa_account_id) <= 30
    # KubeRay derives Service names from the cluster name; keep well under the 63-char label cap.
    assert len(names.head_service) <= 63
    for value in (
        names.ray_cluster,
        names.service_account,
        names.token_secret,
        names.lustre_pv,
        names.lustre_pvc,
        names.pod_monitoring,
        names.head_priority_class,
        names.gsa_account_id,
    ):
        assert _DNS_LABEL.match(value) and len(value) <= 63, value


def test_the_volume_is_named_from_its_claim_so_a_claim_that_moves_gets_a_fresh_volume() -> None:
    """A PV keeps the uid of the claim it was bound to in `claimRef`, so after
    the claim is replaced (a `ray.namespace` change) the new claim never binds it and stays
    Pending. The PV's name carries the claim's namespace, so a moved claim comes with a new,
    Available volume; the default namespace keeps the name stacks were deployed with."""
    base = make_config()
    names = {
        namespace: K8sNames.for_stack(
            base.model_copy(update={"ray": base.ray.model_copy(update={"namespace": namespace})})
        )
        for namespace in ("rl", "other", "rl-train")
    }
    assert names["rl"].lustre_pv == "rl-test-lustre-pv"
    assert len({n.lustre_pv for n in names.values()}) == 3
    assert names["other"].lustre_pvc == names["rl"].lustre_pvc


def test_the_config_reference_ray_namespace_row_names_the_pv_as_the_program_does() -> None:
    """The `ray.namespace` row said nothing of the PV named from it."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[3] / "docs" / "configuration.md").read_text()
    (row,) = [line for line in readme.splitlines() if line.startswith("| `ray.namespace` |")]
    assert f"`{lustre_pv_name('<prefix>', '<namespace>')}`" in row
    assert f"`{lustre_pv_name('<prefix>', 'rl')}` for `rl`" in row
