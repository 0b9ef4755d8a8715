"""typed_object: a manifest registered as its typed resource, field for field."""

from __future__ import annotations

from typing import Any

import pulumi

from components.k8s.provider import typed_object


class _Recorded(pulumi.CustomResource):
    """Stands in for a typed resource class: records what it was called with, registers nothing."""

    def __init__(self, resource_name: str, **kwargs: Any) -> None:
        self.resource_name = resource_name
        self.kwargs = kwargs


def test_every_field_but_api_version_and_kind_becomes_its_snake_case_argument() -> None:
    manifest = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "gate"},
        "roleRef": {"kind": "ClusterRole", "name": "gate"},
        "subjects": [{"kind": "ServiceAccount", "name": "gate"}],
    }
    opts = pulumi.ResourceOptions()
    recorded = typed_object(_Recorded, "k8s-gate-binding", manifest, opts)
    assert recorded.resource_name == "k8s-gate-binding"
    assert recorded.kwargs == {
        "metadata": manifest["metadata"],
        "role_ref": manifest["roleRef"],
        "subjects": manifest["subjects"],
        "opts": opts,
    }


def test_a_secret_keeps_its_type_and_string_data() -> None:
    manifest = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "t"},
        "type": "Opaque",
        "stringData": {"HF_TOKEN": "x"},
    }
    recorded = typed_object(_Recorded, "s", manifest, pulumi.ResourceOptions())
    assert set(recorded.kwargs) == {"metadata", "type", "string_data", "opts"}
