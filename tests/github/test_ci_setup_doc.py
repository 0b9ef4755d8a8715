"""docs/ci-setup.md stays in step with the workflows and with what the program grants."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

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


@pytest.mark.plan
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


# ------------------------------------------------------------ the deployer's service-account roles

# Roles that let the holder act as, mint tokens for, or change the IAM policy of a service account.
# Granted on the project they reach every account in it (the deployer could then act as any of
# them, and grant itself the rest), so they may only be granted on the stack's own accounts.
SERVICE_ACCOUNT_ROLES = {
    "roles/iam.serviceAccountUser",
    "roles/iam.serviceAccountAdmin",
    "roles/iam.serviceAccountTokenCreator",
    "roles/iam.serviceAccountKeyAdmin",
    "roles/iam.workloadIdentityUser",
}
DEPLOYER_SECTION = re.search(r"### Deployer:.*?(?=\n### )", DOC, re.S)
PROJECT_ID = "example-project"  # the project the offline renders use (tests/policy/conftest.py)
FAKE_GCLOUD = """#!/bin/sh
# Records the doc's gcloud calls instead of making them (one line of tab-separated argv per call),
# in a project where nothing exists yet: every `describe` answers not found.
printf '%s\\t' "$@" >> "$GCLOUD_LOG"; printf '\\n' >> "$GCLOUD_LOG"
case " $* " in *" describe "*) exit 1 ;; esac
"""


def _deployer_calls(tmp_path: Path) -> list[list[str]]:
    """Run the deployer section's bash blocks as written, with `gcloud` recording its arguments."""
    assert DEPLOYER_SECTION, "docs/ci-setup.md has no '### Deployer:' section"
    script = "\n".join(re.findall(r"```bash\n(.*?)```", DEPLOYER_SECTION.group(0), re.S))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "gcloud").write_text(FAKE_GCLOUD)
    (bin_dir / "gcloud").chmod(0o755)
    log = tmp_path / "gcloud.log"
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "GCLOUD_LOG": str(log),
        "PROJECT_ID": PROJECT_ID,
        "REGION": "us-central1",
        "STATE_BUCKET": f"{PROJECT_ID}-pulumi-state",
        "DEPLOYER": f"rl-on-gke-deployer@{PROJECT_ID}.iam.gserviceaccount.com",
    }
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return [line.split("\t")[:-1] for line in log.read_text().splitlines()]


def _flag(call: list[str], name: str) -> str | None:
    for index, arg in enumerate(call):
        if arg.startswith(f"{name}="):
            return arg.split("=", 1)[1]
        if arg == name and index + 1 < len(call):
            return call[index + 1]
    return None


def _deployer_member() -> str:
    return f"serviceAccount:rl-on-gke-deployer@{PROJECT_ID}.iam.gserviceaccount.com"


def _program_accounts() -> tuple[set[str], set[str]]:
    """(every service account the stacks create, the ones attached to GKE nodes), as e-mails."""
    accounts: set[str] = set()
    node_accounts: set[str] = set()
    for stack in ("dev", "h200"):
        rendering = rendered(stack)
        for account in rendering.of_type("gcp:serviceaccount/account:Account"):
            assert account.inputs["project"] == PROJECT_ID
            accounts.add(account.outputs["email"])
        for typ in ("gcp:container/nodePool:NodePool", "gcp:container/cluster:Cluster"):
            for resource in rendering.of_type(typ):
                node_accounts.add(resource.inputs["nodeConfig"]["serviceAccount"])
    return accounts, node_accounts


def test_the_deployer_gets_no_service_account_role_on_the_project(tmp_path: Path) -> None:
    """Project-level Service Account User and Admin let the deployer act as (and
    re-grant) every service account in the project; the doc must grant neither there."""
    project_roles = {
        _flag(call, "--role")
        for call in _deployer_calls(tmp_path)
        if call[:2] == ["projects", "add-iam-policy-binding"]
        and _flag(call, "--member") == _deployer_member()
    }
    assert "roles/container.admin" in project_roles  # the walk saw the project-level loop
    assert project_roles & SERVICE_ACCOUNT_ROLES == set()
    for row in re.findall(r"^\| `(roles/iam\.[\w.]+)` \| ([^|]+) \|", DOC, re.M):
        assert row[0] not in SERVICE_ACCOUNT_ROLES or "project" not in row[1], row


@pytest.mark.plan
def test_the_deployer_is_granted_exactly_on_the_accounts_the_program_creates(
    tmp_path: Path,
) -> None:
    """Each account the stacks create is created by the setup (the program adopts
    it) and the deployer holds Service Account Admin on each and Service Account User only on the
    ones GKE nodes run as."""
    calls = _deployer_calls(tmp_path)
    created = {
        f"{call[3]}@{_flag(call, '--project')}.iam.gserviceaccount.com"
        for call in calls
        if call[:3] == ["iam", "service-accounts", "create"]
    }
    on_accounts: dict[str, set[str]] = {}
    for call in calls:
        if (
            call[:3] == ["iam", "service-accounts", "add-iam-policy-binding"]
            and _flag(call, "--member") == _deployer_member()
        ):
            on_accounts.setdefault(str(_flag(call, "--role")), set()).add(call[3])
    accounts, node_accounts = _program_accounts()
    assert created == accounts
    assert on_accounts == {
        "roles/iam.serviceAccountAdmin": accounts,
        "roles/iam.serviceAccountUser": node_accounts,
    }
    for stack in ("dev", "h200"):
        for account in rendered(stack).of_type("gcp:serviceaccount/account:Account"):
            # The account exists before the first `pulumi up`; the provider adopts it on 409.
            assert account.inputs.get("createIgnoreAlreadyExists") is True, account.name
