"""`tools.stack_project` prints a stack's gcp:project, or names the missing key."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.render import load_stack_file
from tools.stack_project import stack_project


def test_it_reads_gcp_project_from_the_stack_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "Pulumi.x.yaml").write_text(
        "config:\n  gcp:project: my-project-1\n  gcp:region: us-east1\n"
    )
    monkeypatch.setattr(
        "tools.stack_project.load_stack_file", lambda stack: load_stack_file(stack, tmp_path)
    )
    assert stack_project("x") == "my-project-1"


def test_a_stack_without_a_project_names_the_key_and_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "Pulumi.x.yaml").write_text("config:\n  gcp:region: us-east1\n")
    monkeypatch.setattr(
        "tools.stack_project.load_stack_file", lambda stack: load_stack_file(stack, tmp_path)
    )
    with pytest.raises(
        ValueError,
        match=r"gcp:project is not set in Pulumi.x.yaml; run `pulumi config set gcp:project",
    ):
        stack_project("x")
