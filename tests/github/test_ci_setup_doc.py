"""docs/ci-setup.md stays in step with the workflows and with what the program grants."""

from __future__ import annotations

import re
from pathlib import Path

from tests.policy.conftest import rendered

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "ci-setup.md").read_text()
WORKFLOW_TEXT = "\n".join(p.read_text() for p in (ROOT / ".github" / "workflows").glob("*.yml"))


def test_every_repository_variable_the_workflows_read_is_set_in_the_doc() -> None:
    used = set(re.findall(r"\bvars\.([A-Z0-9_]+)", WORKFLOW_TEXT))
    documented = set(re.findall(r"gh variable set ([A-Z0-9_]+)", DOC))
    assert used and used == documented


def test_every_secret_the_workflows_read_is_documented() -> None:
    used = set(re.findall(r"\bsecrets\.([A-Z0-9_]+)", WORKFLOW_TEXT))
    assert used == {"PULUMI_CONFIG_PASSPHRASE"}
    assert "gh secret set PULUMI_CONFIG_PASSPHRASE" in DOC


def test_conditional_project_iam_admin_allows_exactly_the_roles_the_program_grants() -> None:
    granted = {
        r.inputs["role"]
        for stack in ("dev", "h200")
        for r in rendered(stack).of_type("gcp:projects/iAMMember:IAMMember")
    }
    allowed = re.search(r'modifiedGrantsByRole", \[\]\)\.hasOnly\(\[(.*?)\]\)', DOC)
    assert allowed, "the conditional roles/resourcemanager.projectIamAdmin binding is missing"
    assert set(re.findall(r'"(roles/[\w.]+)"', allowed.group(1))) == granted


def test_deployer_can_only_be_impersonated_from_the_stack_environments() -> None:
    assert ":environment:${stack}" in DOC and ":pull_request" in DOC
    assert "--attribute-condition=\"assertion.repository == '${GITHUB_REPO}'\"" in DOC
