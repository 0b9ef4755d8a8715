"""Test helpers: validate Kubernetes manifests the way the API server would, and fake layer inputs.

Custom resources are checked against the real CRD schemas vendored in `tests/schemas`
(`spec.versions[].schema.openAPIV3Schema` of the served version named by `apiVersion`), core
kinds with `kubernetes-validate`. Should the schemas folder be missing, the calling test is
skipped with the reason, except under CI (`CI` set), where that is a failure.
"""

from __future__ import annotations

import copy
import functools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from tools.render import ROOT, RenderedResource, SecretValue

SCHEMAS_DIR = ROOT / "tests" / "schemas"
# The newest minor kubernetes-validate ships that GKE's REGULAR channel runs (config default 1.35).
KUBERNETES_VERSION = "1.35"
# Groups served by kube-apiserver itself: validated with kubernetes-validate.
_CORE_GROUPS = {"", "apps", "batch", "scheduling.k8s.io", "rbac.authorization.k8s.io", "policy"}


def require_schemas_dir(path: Path | None = None) -> Path:
    """The schemas folder, or skip (locally) / fail (under CI) naming where it was looked for."""
    path = SCHEMAS_DIR if path is None else path
    if path.is_dir():
        return path
    reason = f"CRD schemas not found at {path} (expected <repo>/tests/schemas)"
    if os.environ.get("CI"):
        pytest.fail(f"{reason}; CI must validate custom resources against them")
    pytest.skip(reason)
    raise AssertionError("unreachable")


def _group_version(api_version: str) -> tuple[str, str]:
    group, _, version = api_version.rpartition("/")
    return group, version


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@functools.cache
def _crd_documents(path: Path) -> tuple[dict[str, Any], ...]:
    return tuple(
        document
        for document in yaml.load_all(path.read_text(), Loader=_LOADER)
        if isinstance(document, dict) and document.get("kind") == "CustomResourceDefinition"
    )


def _crds_naming(schemas_dir: Path, kind: str) -> Iterator[dict[str, Any]]:
    # Parse only files that mention the kind: the RayJob CRD alone is 25k lines.
    for path in sorted(schemas_dir.rglob("*.yaml")):
        if f"kind: {kind}\n" in path.read_text():
            yield from _crd_documents(path)


def _to_json_schema(node: Any) -> Any:
    """OpenAPI v3 (structural CRD schema) -> JSON Schema, strict about unknown fields.

    - `x-kubernetes-int-or-string` has no `type`; jsonschema would accept anything, the API server
      only an integer or a string.
    - `nullable: true` also admits null.
    - An object with `properties` and neither `additionalProperties` nor
      `x-kubernetes-preserve-unknown-fields` gets `additionalProperties: false`: the API server
      silently prunes unknown fields, so a misspelt key would otherwise pass here and vanish there.
    """
    if isinstance(node, list):
        return [_to_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    schema = {key: _to_json_schema(value) for key, value in node.items()}
    if schema.pop("x-kubernetes-int-or-string", False):
        schema["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if schema.pop("nullable", False) and isinstance(schema.get("type"), str):
        schema["type"] = [schema["type"], "null"]
    if (
        "properties" in schema
        and "additionalProperties" not in schema
        and not schema.get("x-kubernetes-preserve-unknown-fields")
    ):
        schema["additionalProperties"] = False
    return schema


def crd_schema(api_version: str, kind: str, schemas_dir: Path | None = None) -> dict[str, Any]:
    """The JSON Schema of a served CRD version, or LookupError naming what is missing."""
    return _crd_schema(api_version, kind, require_schemas_dir(schemas_dir))


@functools.cache
def _crd_schema(api_version: str, kind: str, root: Path) -> dict[str, Any]:
    group, version = _group_version(api_version)
    for crd in _crds_naming(root, kind):
        spec = crd["spec"]
        if spec["group"] != group or spec["names"]["kind"] != kind:
            continue
        for served in spec["versions"]:
            if served["name"] == version and served.get("served", False):
                return _to_json_schema(served["schema"]["openAPIV3Schema"])
        raise LookupError(f"{group}/{kind} has no served version {version!r}")
    raise LookupError(f"no CRD for {kind} in group {group!r} under {root}")


def validate_custom(manifest: dict[str, Any], schemas_dir: Path | None = None) -> None:
    """Raise jsonschema.ValidationError when a custom resource breaks its CRD's schema."""
    schema = crd_schema(manifest["apiVersion"], manifest["kind"], schemas_dir)
    jsonschema.Draft7Validator(schema).validate(manifest)


class ApiServerRuleError(AssertionError):
    """A rule kube-apiserver enforces in code that the OpenAPI schema does not express."""


def _api_server_rules(manifest: dict[str, Any]) -> None:
    # The OpenAPI schemas mark almost nothing required; kube-apiserver's validation
    # (pkg/apis/core/validation) rejects volumes and claims without these.
    kind, spec = manifest.get("kind"), manifest.get("spec") or {}
    if kind in ("PersistentVolume", "PersistentVolumeClaim") and not spec.get("accessModes"):
        raise ApiServerRuleError(
            f"{kind} {manifest['metadata'].get('name')}: spec.accessModes is required"
        )
    if kind == "PersistentVolume" and not (spec.get("capacity") or {}).get("storage"):
        raise ApiServerRuleError(
            f"PersistentVolume {manifest['metadata'].get('name')}: spec.capacity.storage is required"
        )
    if kind == "PersistentVolumeClaim" and not (
        (spec.get("resources") or {}).get("requests") or {}
    ).get("storage"):
        raise ApiServerRuleError(
            f"PersistentVolumeClaim {manifest['metadata'].get('name')}: spec.resources.requests.storage is required"
        )


def validate_core(manifest: dict[str, Any]) -> None:
    """Raise for a broken core object: schema errors (unknown fields too) or missing required parts."""
    kubernetes_validate.validate(manifest, KUBERNETES_VERSION, strict=True)
    _api_server_rules(manifest)


def is_core(manifest: dict[str, Any]) -> bool:
    return _group_version(manifest["apiVersion"])[0] in _CORE_GROUPS


def validate(manifest: dict[str, Any]) -> None:
    if is_core(manifest):
        validate_core(manifest)
    else:
        validate_custom(manifest)


def _plain(value: Any) -> Any:
    """Recorded inputs -> a manifest: secrets opened (validation only), whole floats -> ints."""
    if isinstance(value, SecretValue):
        return _plain(value.value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    # Pulumi numbers are float64 on the wire; the API server decodes 2.0 as the integer 2.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def rendered_manifest(resource: RenderedResource) -> dict[str, Any]:
    """The object a recorded `kubernetes:*` resource would send to the API server."""
    return _plain(copy.deepcopy(resource.inputs))


def kubernetes_objects(resources: list[RenderedResource]) -> Iterator[RenderedResource]:
    return (r for r in resources if r.custom and r.type.startswith("kubernetes:"))
