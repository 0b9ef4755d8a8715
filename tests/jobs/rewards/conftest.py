"""Every test here runs the real compiler in real boxes."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/jobs/rewards" in str(item.path).replace("\\", "/"):
            item.add_marker(pytest.mark.compiler)
