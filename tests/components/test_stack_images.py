"""The preview refuses a stack's bad image input by key, before anything is registered."""

from __future__ import annotations

from typing import Any

import pytest

from components.rules import ConfigError
from tools.render import load_stack_file, render

pytestmark = pytest.mark.plan


def _refusal(change: dict[str, Any]) -> str:
    config, secret_keys = load_stack_file("dev")
    config.setdefault("gcp:project", "example-project")
    for key, value in change.items():
        config[key] = value(config) if callable(value) else value
    with pytest.raises(ConfigError) as err:
        render(config, stack="dev", secret_keys=secret_keys)
    return str(err.value)


def _disk(disk: str) -> dict[str, Any]:
    return {"rl-on-gke:gpu": lambda c: {**c["rl-on-gke:gpu"], "imageCacheDisk": disk}}


def test_an_image_without_a_digest_is_refused_by_key() -> None:
    # The stack file gives none, and the catalogue verifies none (components/catalogue.py).
    message = _refusal({"rl-on-gke:images": {}})
    for name in ("nemo-rl", "kubectl", "grafana", "query-frontend"):
        assert f"rl-on-gke:images.{name}.digest: required" in message
    assert "images.verl.digest" not in message  # dev runs NeMo RL


def test_a_disk_image_in_another_project_is_refused_by_key() -> None:
    message = _refusal(_disk("projects/someone-else/global/images/cache"))
    assert "rl-on-gke:gpu.imageCacheDisk = 'projects/someone-else/global/images/cache'" in message


def test_a_disk_image_path_in_a_region_is_refused_by_key() -> None:
    message = _refusal(_disk("projects/example-project/regions/us-east1/images/cache"))
    assert "rl-on-gke:gpu.imageCacheDisk" in message and "no region or zone path" in message
