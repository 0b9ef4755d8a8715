"""The suite's own guards: a whole-program rendering outside a `plan` test is refused."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

from tests.conftest import BASE_STACK_CONFIG
from tools.render import render


def test_an_unmarked_test_that_renders_the_whole_program_fails_naming_the_marker() -> None:
    with pytest.raises(pytest.fail.Exception, match="renders the whole program .* mark it plan"):
        render(dict(BASE_STACK_CONFIG))


def test_other_scripts_still_run_in_an_unmarked_test(tmp_path: Path) -> None:
    script = tmp_path / "script.py"
    script.write_text("ANSWER = 6 * 7\n")
    assert runpy.run_path(str(script))["ANSWER"] == 42


@pytest.mark.plan
def test_a_plan_test_renders_the_whole_program() -> None:
    rendering = render(dict(BASE_STACK_CONFIG))
    assert rendering.of_type("gcp:container/cluster:Cluster")
