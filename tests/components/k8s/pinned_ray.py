"""The framework images' Ray, installed in `.venv-ray-<version>` (`make venv-ray`), for tests that
hold the program to what that Ray itself declares."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


def pinned_ray_venv(version: str) -> Path:
    """`.venv-ray-<version>`, or skip (locally) / fail (under CI) naming how to make it."""
    root = REPO / f".venv-ray-{version}"
    if not sorted(root.glob("lib/python*/site-packages/ray")):
        reason = f"{root} is missing: `make venv-ray` installs Ray {version}"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}; CI must check the program against the pods' Ray")
        pytest.skip(reason)
    return root


def pinned_ray_package(version: str) -> Path:
    """The installed `ray` package of that venv."""
    return sorted(pinned_ray_venv(version).glob("lib/python*/site-packages/ray"))[0]
