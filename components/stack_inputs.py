"""Reads the stack's Pulumi config and secrets once, and hands back validated, typed values.

The only module that touches `pulumi.Config`. Secrets are returned as secret Outputs and are
refused when a stack stores them in plain text, because a plain value in `Pulumi.<stack>.yaml`
is already a leak (it is committed with the stack file).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi.runtime.config import CONFIG, get_config, get_config_env, is_config_secret

from components.config import (
    NAMESPACE,
    SECRET_KEYS,
    ConfigError,
    StackConfig,
    parse_stack_config,
    raw_config_from_pulumi,
    to_camel,
)

_PLAIN_STRING_KEYS = {("gcp", "project"), ("gcp", "region"), (NAMESPACE, "zone"), (NAMESPACE, "namePrefix")}


@dataclass(frozen=True)
class StackSecrets:
    """Optional tokens the training pods read from a Kubernetes Secret."""

    hf_token: pulumi.Output[str] | None
    wandb_api_key: pulumi.Output[str] | None

    def as_secret_data(self) -> dict[str, pulumi.Output[str]]:
        data = {"HF_TOKEN": self.hf_token, "WANDB_API_KEY": self.wandb_api_key}
        return {key: value for key, value in data.items() if value is not None}


def _get(namespace: str, key: str) -> Any:
    value = get_config(f"{namespace}:{key}")
    if value is None or (namespace, key) in _PLAIN_STRING_KEYS:
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        # Not an object: hand the raw string to validation, which names the key.
        return value


def _known_keys() -> set[str]:
    fields = {to_camel(name) for name in StackConfig.model_fields if name not in ("project", "region")}
    return {f"{NAMESPACE}:{key}" for key in fields | set(SECRET_KEYS)}


def unknown_keys() -> list[str]:
    """`rl-on-gke:*` keys the stack sets that the program does not read (typos, old names)."""
    configured = set(CONFIG.get()) | set(get_config_env())
    ours = {key for key in configured if key.startswith(f"{NAMESPACE}:")}
    return sorted(ours - _known_keys())


def load_stack() -> tuple[StackConfig, StackSecrets]:
    """Validate all config, or raise one ConfigError before any resource is registered."""
    problems: list[str] = []
    config: StackConfig | None = None
    try:
        config = parse_stack_config(raw_config_from_pulumi(_get, pulumi.get_stack()))
    except ConfigError as err:
        problems.extend(err.problems)
    allowed = ", ".join(sorted(k.split(":", 1)[1] for k in _known_keys()))
    for key in unknown_keys():
        # The value is not shown: a misspelt secret key would otherwise leak its token here.
        problems.append(f"{key}: unknown key (the program reads {allowed})")
    for key in SECRET_KEYS:
        full = f"{NAMESPACE}:{key}"
        if get_config(full) is not None and not is_config_secret(full):
            problems.append(
                f"{full}: stored in plain text; remove it from the stack file and run "
                f"`pulumi config set --secret {key}` (the value is not shown here)"
            )
    if problems or config is None:
        raise ConfigError(problems)
    ns = pulumi.Config(NAMESPACE)
    secrets = StackSecrets(hf_token=ns.get_secret("hfToken"), wandb_api_key=ns.get_secret("wandbApiKey"))
    return config, secrets
