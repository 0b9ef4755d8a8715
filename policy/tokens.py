"""Guard rail on workload specs: no token is written into a pod template or ConfigMap in clear.

A literal `env[].value` ends up readable by anyone who can `kubectl get` the object, in the
stack state and in the preview diff. Tokens belong in a Kubernetes Secret read through
`valueFrom.secretKeyRef` (the program's secret config -> Secret -> secretKeyRef path).
Messages never repeat the value they found.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from pulumi_policy import ReportViolation, ResourceValidationArgs, ResourceValidationPolicy

from policy.props import as_dict, plain, walk_strings

WORKLOAD_TYPES = frozenset(
    {
        "kubernetes:core/v1:Pod",
        "kubernetes:core/v1:PodTemplate",
        "kubernetes:apps/v1:Deployment",
        "kubernetes:apps/v1:DaemonSet",
        "kubernetes:apps/v1:StatefulSet",
        "kubernetes:apps/v1:ReplicaSet",
        "kubernetes:batch/v1:Job",
        "kubernetes:batch/v1:CronJob",
        "kubernetes:ray.io/v1:RayCluster",
        "kubernetes:ray.io/v1:RayJob",
        "kubernetes:ray.io/v1:RayService",
    }
)
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"

# HF_TOKEN, WANDB_API_KEY, GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY, DB_PASSWORD ... but not
# TOKENIZERS_PARALLELISM or HF_TOKEN_PATH.
TOKEN_NAME = re.compile(r"(^|_)(TOKEN|API_?KEY|ACCESS_KEY)$|SECRET|PASSWORD|PASSWD", re.IGNORECASE)
# Hugging Face user access tokens: "hf_" + 34 letters/digits today; 20+ keeps older ones.
HF_TOKEN_VALUE = re.compile(r"hf_[A-Za-z0-9]{20,}")


def _env_lists(value: Any, path: str = "") -> Iterator[tuple[str, list[Any]]]:
    """Every container `env` list anywhere in a manifest, with its path."""
    if isinstance(value, dict):
        for key, item in value.items():
            child = f"{path}.{key}" if path else key
            if key == "env" and isinstance(item, list):
                yield child, item
            else:
                yield from _env_lists(item, child)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _env_lists(item, f"{path}[{index}]")


def _check_env(path: str, entries: list[Any], report: ReportViolation) -> None:
    for entry in entries:
        entry = as_dict(entry)
        name = entry.get("name")
        if not isinstance(name, str) or not TOKEN_NAME.search(name):
            continue
        literal = entry.get("value")
        from_secret = as_dict(as_dict(entry.get("valueFrom")).get("secretKeyRef"))
        if literal not in (None, ""):
            report(
                f"{path}: {name} is set with a literal `value`: read it from a Kubernetes Secret with "
                f"valueFrom.secretKeyRef (set the token with `pulumi config set --secret`).",
                None,
            )
        elif entry.get("valueFrom") is not None and not from_secret:
            report(
                f"{path}: {name} comes from somewhere other than a Secret (ConfigMaps and field refs are "
                "plain text): use valueFrom.secretKeyRef.",
                None,
            )


def _no_literal_tokens(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type in WORKLOAD_TYPES:
        props = plain(args.props)
        for path, entries in _env_lists(props):
            _check_env(path, entries, report)
    elif args.resource_type == CONFIG_MAP:
        props = plain(args.props)
        for key in as_dict(props.get("data")):
            if TOKEN_NAME.search(key):
                report(
                    f"ConfigMap key {key} looks like a credential: ConfigMaps are plain text, put it in "
                    "a Secret and read it with secretKeyRef.",
                    None,
                )
    else:
        return
    if any(HF_TOKEN_VALUE.search(text) for text in walk_strings(props)):
        report(
            "A Hugging Face token (hf_...) is written in clear in this object: move it to the stack's "
            "secret config (`pulumi config set --secret hfToken`) so it reaches pods via secretKeyRef.",
            None,
        )


POLICIES = [
    ResourceValidationPolicy(
        name="no-literal-tokens",
        description="Tokens reach pods through secretKeyRef, never as literal env values or ConfigMap data.",
        validate=_no_literal_tokens,
    ),
]
