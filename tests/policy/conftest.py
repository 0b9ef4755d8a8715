"""Renders the real stacks once per session for the policy tests (offline, under mocks)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from tools.render import ROOT, Rendering, load_stack_file, render

# The stack files leave gcp:project to each user (`pulumi config set gcp:project ...`).
PLACEHOLDER_PROJECT = "example-project"
STACKS = sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in Path(ROOT).glob("Pulumi.*.yaml"))


@cache
def rendered(stack: str) -> Rendering:
    config, secret_keys = load_stack_file(stack)
    config.setdefault("gcp:project", PLACEHOLDER_PROJECT)
    return render(config, stack=stack, secret_keys=secret_keys)


@pytest.fixture(params=STACKS)
def stack(request: pytest.FixtureRequest) -> str:
    return request.param
