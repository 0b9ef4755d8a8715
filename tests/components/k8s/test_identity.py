"""Workload Identity wiring, least-privilege roles, and the token Secret / secretKeyRef contract."""

from __future__ import annotations

from components.contract import SECRET_ENV
from components.k8s.identity import (
    TRAINING_ROLES,
    WORKLOAD_IDENTITY_ANNOTATION,
    namespace_manifest,
    service_account_manifest,
    token_env,
    token_secret_manifest,
    workload_identity_member,
)
from tests.components.k8s.manifests import validate_core

HF_TOKEN_KEY, WANDB_API_KEY = SECRET_ENV["hfToken"], SECRET_ENV["wandbApiKey"]


def test_workload_identity_member_names_project_pool_namespace_and_ksa() -> None:
    member = workload_identity_member("example-project", "rl-train", "rl-test-training")
    assert member == "serviceAccount:example-project.svc.id.goog[rl-train/rl-test-training]"


def test_ksa_is_annotated_with_the_gsa_email() -> None:
    ksa = service_account_manifest("ksa", "rl-train", "gsa@example-project.iam.gserviceaccount.com")
    assert ksa["metadata"]["namespace"] == "rl-train"
    assert ksa["metadata"]["annotations"] == {
        WORKLOAD_IDENTITY_ANNOTATION: "gsa@example-project.iam.gserviceaccount.com"
    }
    validate_core(ksa)


def test_training_roles_are_writers_only_never_admin_or_storage() -> None:
    assert set(TRAINING_ROLES) == {"roles/logging.logWriter", "roles/monitoring.metricWriter"}
    assert all(reason for reason in TRAINING_ROLES.values())


def test_no_tokens_means_no_secret_and_no_secret_refs() -> None:
    assert token_secret_manifest("tokens", "rl-train", {}) is None
    assert token_env(None, ()) == []


def test_secret_carries_only_the_configured_tokens_as_string_data() -> None:
    secret = token_secret_manifest("tokens", "rl-train", {HF_TOKEN_KEY: "hf_x"})
    assert secret is not None
    assert secret["stringData"] == {HF_TOKEN_KEY: "hf_x"}
    assert "data" not in secret
    validate_core(secret)


def test_token_env_references_each_key_and_only_wandb_is_optional() -> None:
    env = token_env("tokens", [WANDB_API_KEY, HF_TOKEN_KEY])
    refs = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in env}
    assert refs == {
        HF_TOKEN_KEY: {"name": "tokens", "key": HF_TOKEN_KEY, "optional": False},
        WANDB_API_KEY: {"name": "tokens", "key": WANDB_API_KEY, "optional": True},
    }
    assert all("value" not in e for e in env)


def test_token_env_with_only_wandb_does_not_reference_hf() -> None:
    assert [e["name"] for e in token_env("tokens", [WANDB_API_KEY])] == [WANDB_API_KEY]


def test_namespace_is_a_valid_kubernetes_object() -> None:
    validate_core(namespace_manifest("rl-train"))
