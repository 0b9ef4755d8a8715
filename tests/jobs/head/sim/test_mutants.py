"""The mutation runner's own behaviour: every mutant in the set still applies, and a patch that no
longer applies is reported as stale rather than ending the run with a traceback."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path
from types import ModuleType

import pytest

MUTANTS = Path(__file__).resolve().parent / "mutants"


def load_kill() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sim_mutants_kill", MUTANTS / "kill.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


pytestmark = pytest.mark.skipif(shutil.which("patch") is None, reason="needs patch(1)")


@pytest.mark.parametrize("patch", sorted(MUTANTS.glob("*.patch")), ids=lambda p: p.stem)
def test_every_mutant_still_applies_to_the_code_it_plants_a_bug_in(patch: Path) -> None:
    assert load_kill().stale_reason(patch, MUTANTS.parents[4]) is None


def test_a_patch_that_no_longer_applies_is_stale_and_leaves_the_tree_unchanged(
    tmp_path: Path,
) -> None:
    kill = load_kill()
    (tmp_path / "a.py").write_text("x = 1\ny = 2\n")
    (tmp_path / "b.py").write_text("z = 3\n")
    patch = tmp_path / "m.patch"
    # The first hunk applies, the second does not: nothing may land half-way.
    patch.write_text(
        "--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,2 @@\n-x = 1\n+x = 9\n y = 2\n"
        "--- a/b.py\n+++ b/b.py\n@@ -1 +1 @@\n-z = 4\n+z = 5\n"
    )
    reason = kill.apply(patch, tmp_path)
    assert reason is not None and "FAILED" in reason.upper()
    assert (tmp_path / "a.py").read_text() == "x = 1\ny = 2\n"
    assert (tmp_path / "b.py").read_text() == "z = 3\n"


def test_a_patch_that_applies_changes_the_tree(tmp_path: Path) -> None:
    kill = load_kill()
    (tmp_path / "a.py").write_text("x = 1\n")
    patch = tmp_path / "m.patch"
    patch.write_text("--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 9\n")
    assert kill.apply(patch, tmp_path) is None
    assert (tmp_path / "a.py").read_text() == "x = 9\n"
