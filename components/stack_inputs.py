"""Reads the stack's Pulumi config and secrets once, and hands back validated, typed values.

The only module that touches `pulumi.Config`. Secrets are returned as secret Outputs and are
refused when a stack stores them in plain text, because a plain value in `Pulumi.<stack>.yaml`
is already a leak (it is committed with the stack file).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pulumi
from pulumi.runtime.config import CONFIG, get_config, get_config_env, is_config_secret

from components.config import (
    StackConfig,
    config_keys,
    parse_stack_config,
    raw_config_from_pulumi,
)
from components.contract import SECRET_CONFIG_KEYS, SECRET_ENV
from components.rules import NAMESPACE, ConfigError
from components.stack_images import stack_image_problems

# Plain-string fields are taken as written; everything else is JSON (objects, lists, numbers).
_PLAIN_STRING_KEYS = {
    location
    for name, location in config_keys().items()
    if StackConfig.model_fields[name].annotation is str
}


def _get(namespace: str, key: str) -> Any:
    value = get_config(f"{namespace}:{key}")
    if value is None or (namespace, key) in _PLAIN_STRING_KEYS:
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        # Not an object: hand the raw string to validation, which names the key.
        return value


def known_keys(model: type[StackConfig] = StackConfig) -> set[str]:
    """`rl-on-gke:*` keys the program reads: the model's own fields plus the secret keys."""
    ours = {key for namespace, key in config_keys(model).values() if namespace == NAMESPACE}
    return {f"{NAMESPACE}:{key}" for key in ours | set(SECRET_CONFIG_KEYS)}


def unknown_keys() -> list[str]:
    """`rl-on-gke:*` keys the stack sets that the program does not read (typos, old names)."""
    configured = set(CONFIG.get()) | set(get_config_env())
    ours = {key for key in configured if key.startswith(f"{NAMESPACE}:")}
    return sorted(ours - known_keys())


def _missing_secrets(config: StackConfig) -> list[str]:
    """Secrets a setting needs: the code sandbox service accepts only requests that carry its
    token (jobs/rewards/service.py), so a sandbox without one could judge nothing."""
    key = "codeSandboxToken"
    if config.rewards.code_sandbox.enabled and get_config(f"{NAMESPACE}:{key}") is None:
        return [
            f"{NAMESPACE}:{key}: required when rewards.codeSandbox.enabled is true "
            f"(`pulumi config set --secret {key} <random 32+ characters>`)"
        ]
    return []


def load_stack() -> tuple[StackConfig, Mapping[str, pulumi.Output[str]]]:
    """Validate all config, or raise one ConfigError before any resource is registered.

    Returns the config and the tokens the stack sets, as secret Outputs keyed by the env var
    training pods read them as (contract.SECRET_ENV).
    """
    problems: list[str] = []
    config: StackConfig | None = None
    try:
        config = parse_stack_config(raw_config_from_pulumi(_get, pulumi.get_stack()))
    except ConfigError as err:
        problems.extend(err.problems)
    allowed = ", ".join(sorted(k.split(":", 1)[1] for k in known_keys()))
    for key in unknown_keys():
        # The value is not shown: a misspelt secret key would otherwise leak its token here.
        problems.append(f"{key}: unknown key (the program reads {allowed})")
    for key in SECRET_CONFIG_KEYS:
        full = f"{NAMESPACE}:{key}"
        if get_config(full) is not None and not is_config_secret(full):
            problems.append(
                f"{full}: stored in plain text; remove it from the stack file and run "
                f"`pulumi config set --secret {key}` (the value is not shown here)"
            )
    if config is not None:
        problems.extend(_missing_secrets(config))
        problems.extend(stack_image_problems(config))
    if problems or config is None:
        raise ConfigError(problems)
    ns = pulumi.Config(NAMESPACE)
    tokens = {env: ns.get_secret(key) for key, env in SECRET_ENV.items()}
    return config, {env: value for env, value in tokens.items() if value is not None}
