"""The GitHub Actions workflows: valid for GitHub, and doing what docs/ci-setup.md promises.

Validated against the workflow JSON schema vendored in check-jsonschema (the one its
`--builtin-schema vendor.github-workflows` uses), then checked for behaviour: a preview per
stack file, policy pack and sticky comment on, OIDC only, forks never near a cloud identity or a
write token, deploys behind per-stack environments.
"""

from __future__ import annotations

import copy
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import check_jsonschema
import pytest
import yaml
from jsonschema import validators

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / ".github" / "workflows"
SCHEMA_PATH = (
    Path(check_jsonschema.__file__).parent / "builtin_schemas" / "vendor" / "github-workflows.json"
)
FILES = sorted(WORKFLOWS.glob("*.yml"))


class _GithubYaml(yaml.SafeLoader):
    """YAML as GitHub reads it: `on:` is a key, not the boolean True of YAML 1.1."""


_GithubYaml.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_GithubYaml.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


@cache
def workflow(name: str) -> dict[str, Any]:
    return yaml.load((WORKFLOWS / name).read_text(), Loader=_GithubYaml)


@cache
def _validator() -> Any:
    schema = json.loads(SCHEMA_PATH.read_text())
    return validators.validator_for(schema)(schema)


def schema_errors(document: Any) -> list[str]:
    return [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
        for e in _validator().iter_errors(document)
    ]


def stack_files() -> set[str]:
    return {p.name[len("Pulumi.") : -len(".yaml")] for p in ROOT.glob("Pulumi.*.yaml")}


def steps_using(job: dict[str, Any], action: str) -> list[dict[str, Any]]:
    return [s for s in job["steps"] if str(s.get("uses", "")).split("@")[0] == action]


def one_step(job: dict[str, Any], action: str) -> dict[str, Any]:
    found = steps_using(job, action)
    assert len(found) == 1, f"expected one {action} step, found {len(found)}"
    return found[0]


# --- schema ----------------------------------------------------------------------------------


def test_the_four_workflows_exist() -> None:
    assert {f.name for f in FILES} == {
        "ci.yml",
        "preview.yml",
        "plan-diff-comment.yml",
        "deploy.yml",
    }


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_workflow_matches_the_github_workflow_schema(path: Path) -> None:
    assert schema_errors(workflow(path.name)) == []


def test_schema_rejects_a_job_without_runs_on() -> None:
    broken = copy.deepcopy(workflow("ci.yml"))
    del broken["jobs"]["test"]["runs-on"]
    assert schema_errors(broken)


def test_schema_rejects_an_unknown_event() -> None:
    broken = copy.deepcopy(workflow("ci.yml"))
    broken["on"] = {"pull_request_comment_reaction": None}
    assert schema_errors(broken)


def test_yaml_1_1_reading_of_on_would_be_caught() -> None:
    # Plain yaml.safe_load turns `on:` into True; the schema must not accept that silently.
    naive = yaml.safe_load((WORKFLOWS / "ci.yml").read_text())
    assert True in naive and schema_errors(naive)


# --- every workflow --------------------------------------------------------------------------


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_no_workflow_uses_a_long_lived_key(path: Path) -> None:
    text = path.read_text()
    for marker in ("credentials_json", "service_account_key", "GOOGLE_CREDENTIALS", "_KEY_JSON"):
        assert marker not in text


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_actions_are_pinned_to_a_major_version(path: Path) -> None:
    for job in workflow(path.name)["jobs"].values():
        for step in job.get("steps", []):
            if "uses" in step:
                assert re.fullmatch(r"[\w.-]+/[\w.-]+@v\d+(\.\d+){0,2}", step["uses"]), step["uses"]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_default_token_is_read_only(path: Path) -> None:
    top = workflow(path.name)["permissions"]
    assert top in ({}, {"contents": "read"})


@pytest.mark.parametrize("name", ["preview.yml", "deploy.yml"])
def test_pulumi_runs_after_its_virtualenv_and_google_auth(name: str) -> None:
    for job in workflow(name)["jobs"].values():
        steps = job["steps"]
        pulumi = [
            i for i, s in enumerate(steps) if str(s.get("uses", "")).startswith("pulumi/actions@")
        ]
        if not pulumi:
            continue
        venv = [i for i, s in enumerate(steps) if "python -m venv .venv" in s.get("run", "")]
        auth = [
            i
            for i, s in enumerate(steps)
            if str(s.get("uses", "")).startswith("google-github-actions/auth@")
        ]
        assert venv and auth and max(venv + auth) < pulumi[0]
        assert (
            "-r requirements.txt" in steps[venv[0]]["run"]
            and "-r policy/requirements.txt" in steps[venv[0]]["run"]
        )


@pytest.mark.parametrize("name", ["preview.yml", "deploy.yml"])
def test_gke_auth_plugin_is_installed_before_pulumi_reaches_the_cluster(name: str) -> None:
    for job in workflow(name)["jobs"].values():
        steps = job["steps"]
        pulumi = [
            i for i, s in enumerate(steps) if str(s.get("uses", "")).startswith("pulumi/actions@")
        ]
        if not pulumi:
            continue
        setup = [
            i
            for i, s in enumerate(steps)
            if str(s.get("uses", "")).startswith("google-github-actions/setup-gcloud@")
            and "gke-gcloud-auth-plugin" in str((s.get("with") or {}).get("install_components", ""))
        ]
        assert setup and setup[0] < pulumi[0]


# --- ci.yml ----------------------------------------------------------------------------------


def test_ci_runs_make_test_on_every_push_and_pull_request() -> None:
    ci = workflow("ci.yml")
    assert set(ci["on"]) == {"push", "pull_request"}
    assert ci["on"]["push"] is None and ci["on"]["pull_request"] is None  # no branch filters
    job = ci["jobs"]["test"]
    python = one_step(job, "actions/setup-python")["with"]
    assert python["python-version"] == "3.11" and python["cache"] == "pip"
    assert any(s.get("run", "").startswith("make test") for s in job["steps"])


def test_ci_lints_before_it_tests() -> None:
    runs = [s.get("run", "") for s in workflow("ci.yml")["jobs"]["test"]["steps"]]
    lint = [i for i, r in enumerate(runs) if r.startswith("make lint")]
    test = [i for i, r in enumerate(runs) if r.startswith("make test ")]
    assert lint and test and lint[0] < test[0]


def test_ci_runs_the_heads_tests_under_each_framework_images_ray() -> None:
    """The head runs the framework image's Ray, not .venv's: .ci/run and the Makefile name the
    versions; GitHub's CI must run each of them too, not only `make test`."""
    job = workflow("ci.yml")["jobs"]["head-on-image-ray"]
    makefile = (ROOT / "Makefile").read_text()
    versions = re.search(r"^IMAGE_RAY_VERSIONS := (.+)$", makefile, re.M)
    assert versions is not None
    assert job["strategy"]["matrix"]["ray"] == versions.group(1).split()
    (step,) = [s for s in job["steps"] if "make test-image-ray" in s.get("run", "")]
    assert "HEAD_RAY_VERSIONS=${{ matrix.ray }}" in step["run"]
    assert job["strategy"]["fail-fast"] is False  # one version's failure does not hide the other's


# --- preview.yml -----------------------------------------------------------------------------


def test_preview_runs_one_preview_per_stack_file() -> None:
    job = workflow("preview.yml")["jobs"]["preview"]
    assert set(job["strategy"]["matrix"]["stack"]) == stack_files()
    assert job["strategy"]["fail-fast"] is False
    pulumi = one_step(job, "pulumi/actions")["with"]
    assert pulumi["command"] == "preview"
    assert pulumi["stack-name"] == "${{ matrix.stack }}"


def test_preview_applies_the_policy_pack_and_keeps_one_comment_per_stack() -> None:
    pulumi = one_step(workflow("preview.yml")["jobs"]["preview"], "pulumi/actions")["with"]
    assert pulumi["policyPacks"] == "policy" and (ROOT / "policy" / "PulumiPolicy.yaml").is_file()
    assert pulumi["comment-on-pr"] is True and pulumi["edit-pr-comment"] is True
    assert pulumi["cloud-url"] == "gs://${{ vars.PULUMI_STATE_BUCKET }}"


def test_preview_authenticates_through_a_service_account_with_oidc() -> None:
    job = workflow("preview.yml")["jobs"]["preview"]
    assert job["permissions"] == {"contents": "read", "id-token": "write", "pull-requests": "write"}
    auth = one_step(job, "google-github-actions/auth")
    assert auth["uses"].endswith("@v3")
    assert auth["with"] == {
        "workload_identity_provider": "${{ vars.GCP_WORKLOAD_IDENTITY_PROVIDER }}",
        "service_account": "${{ vars.GCP_PREVIEW_SERVICE_ACCOUNT }}",
    }


def test_cloud_preview_is_for_same_repository_prs_and_forks_get_the_offline_diff() -> None:
    jobs = workflow("preview.yml")["jobs"]
    # never pull_request_target; labeled/unlabeled re-run the preview gate when its label changes
    assert workflow("preview.yml")["on"] == {
        "pull_request": {"types": ["opened", "synchronize", "reopened", "labeled", "unlabeled"]}
    }
    assert (
        jobs["preview"]["if"]
        == "github.event.pull_request.head.repo.full_name == github.repository"
    )
    assert (
        jobs["plan-diff"]["if"]
        == "github.event.pull_request.head.repo.full_name != github.repository"
    )


def test_fork_job_has_no_cloud_identity_secret_or_write_token() -> None:
    job = workflow("preview.yml")["jobs"]["plan-diff"]
    assert job["permissions"] == {"contents": "read"}
    text = yaml.safe_dump(job)
    assert (
        "secrets." not in text
        and "google-github-actions" not in text
        and "pulumi/actions" not in text
    )
    assert set(job["strategy"]["matrix"]["stack"]) == stack_files()


def test_fork_job_renders_the_plan_diff_against_the_pr_base_and_uploads_it() -> None:
    job = workflow("preview.yml")["jobs"]["plan-diff"]
    assert one_step(job, "actions/checkout")["with"]["fetch-depth"] == 0
    render = next(
        s for s in job["steps"] if "make --no-print-directory plan-diff" in s.get("run", "")
    )
    assert render["env"] == {
        "STACK": "${{ matrix.stack }}",
        "BASE": "${{ github.event.pull_request.base.sha }}",
    }
    assert (
        'STACK="$STACK" BASE="$BASE"' in render["run"]
        and '> "plan-diff/$STACK.md"' in render["run"]
    )
    upload = one_step(job, "actions/upload-artifact")["with"]
    assert upload["name"] == "plan-diff-${{ matrix.stack }}"


# --- plan-diff-comment.yml -------------------------------------------------------------------


def test_fork_comment_is_posted_by_workflow_run_without_running_pr_code() -> None:
    poster = workflow("plan-diff-comment.yml")
    assert poster["on"] == {
        "workflow_run": {"workflows": [workflow("preview.yml")["name"]], "types": ["completed"]}
    }
    job = poster["jobs"]["comment"]
    assert "head_repository.full_name != github.repository" in job["if"]
    assert job["permissions"] == {"actions": "read", "pull-requests": "write"}
    assert not steps_using(job, "actions/checkout")
    assert not any("run" in s for s in job["steps"])  # nothing from the artifact is executed
    download = one_step(job, "actions/download-artifact")["with"]
    assert (
        download["run-id"] == "${{ github.event.workflow_run.id }}"
        and download["pattern"] == "plan-diff-*"
    )


def test_fork_comment_takes_the_pr_from_the_event_and_is_sticky_per_stack() -> None:
    script = one_step(
        workflow("plan-diff-comment.yml")["jobs"]["comment"], "actions/github-script"
    )["with"]["script"]
    assert "p.head.sha === run.head_sha" in script  # PR number from the event, not the artifact
    assert "rl-on-gke:plan-diff stack=${stack}" in script
    assert "updateComment" in script and "github.paginate(github.rest.issues.listComments" in script


# --- deploy.yml ------------------------------------------------------------------------------


def _deploy_job() -> dict[str, Any]:
    return workflow("deploy.yml")["jobs"]["up"]


def test_deploy_runs_by_hand_for_a_chosen_stack_or_on_push_to_main() -> None:
    on = workflow("deploy.yml")["on"]
    assert on["push"] == {"branches": ["main"]}
    stack = on["workflow_dispatch"]["inputs"]["stack"]
    assert stack["type"] == "choice" and set(stack["options"]) == stack_files()


def test_deploy_on_push_covers_every_stack_file() -> None:
    expression = _deploy_job()["strategy"]["matrix"]["stack"]
    default = re.search(r"\|\| '(\[.*?\])'", expression)
    assert default and set(json.loads(default.group(1))) == stack_files()
    assert "inputs.stack" in expression


def test_deploy_is_behind_a_per_stack_environment_and_never_overlaps() -> None:
    job = _deploy_job()
    assert job["environment"] == "${{ matrix.stack }}"
    assert job["concurrency"] == {
        "group": "pulumi-up-${{ matrix.stack }}",
        "cancel-in-progress": False,
    }
    assert job["permissions"] == {"contents": "read", "id-token": "write", "pull-requests": "read"}


def test_deploy_runs_pulumi_up_with_the_policy_pack_as_the_deployer() -> None:
    job = _deploy_job()
    (pulumi,) = [
        s["with"]
        for s in job["steps"]
        if str(s.get("uses", "")).startswith("pulumi/actions@") and "with" in s
    ]
    assert pulumi["command"] == "up" and pulumi["stack-name"] == "${{ matrix.stack }}"
    assert pulumi["policyPacks"] == "policy"
    assert pulumi["cloud-url"] == "gs://${{ vars.PULUMI_STATE_BUCKET }}"
    auth = one_step(job, "google-github-actions/auth")["with"]
    assert auth["service_account"] == "${{ vars.GCP_DEPLOY_SERVICE_ACCOUNT }}"


def test_deploy_enables_service_usage_and_resource_manager_before_pulumi_up() -> None:
    # A project with only billing: enabling any API needs these two on first (tpg #6101, #11435).
    steps = _deploy_job()["steps"]
    enable = [i for i, s in enumerate(steps) if "gcloud services enable" in s.get("run", "")]
    gcloud = [
        i
        for i, s in enumerate(steps)
        if str(s.get("uses", "")).startswith("google-github-actions/setup-gcloud@")
    ]
    pulumi = [
        i for i, s in enumerate(steps) if str(s.get("uses", "")).startswith("pulumi/actions@")
    ]
    assert len(enable) == 1 and gcloud and pulumi and gcloud[0] < enable[0] < pulumi[0]
    run = steps[enable[0]]["run"]
    for api in ("serviceusage.googleapis.com", "cloudresourcemanager.googleapis.com"):
        assert api in run
    assert "python -m tools.stack_project" in run


def test_preview_gates_replacements_on_the_json_preview_and_the_pr_labels() -> None:
    steps = workflow("preview.yml")["jobs"]["preview"]["steps"]
    action = [
        i for i, s in enumerate(steps) if str(s.get("uses", "")).startswith("pulumi/actions@")
    ]
    json_step = [
        i
        for i, s in enumerate(steps)
        if "pulumi preview" in s.get("run", "") and "--json" in s["run"]
    ]
    gate = [
        i
        for i, s in enumerate(steps)
        if "python -m tools.preview_gate preview.json" in s.get("run", "")
    ]
    assert action and json_step and gate and action[0] < json_step[0] < gate[0]
    assert "> preview.json" in steps[json_step[0]]["run"]
    assert (
        steps[gate[0]]["env"]["LABELS"]
        == "${{ join(github.event.pull_request.labels.*.name, ',') }}"
    )


def test_deploy_runs_up_only_after_the_gate_passed_on_the_merged_state() -> None:
    """The deploy workflow ran `up` on main with no gate, and a PR is gated
    against the state of the day it was opened. Now: install the CLI, preview the commit being
    deployed as JSON, gate it, then `up` -- in that order, with the merged PR's labels (push) or
    the dispatch input (by hand)."""
    steps = _deploy_job()["steps"]
    uses = [str(s.get("uses", "")) for s in steps]
    install = [
        i for i, s in enumerate(steps) if uses[i].startswith("pulumi/actions@") and "with" not in s
    ]
    preview = [
        i
        for i, s in enumerate(steps)
        if "pulumi preview" in s.get("run", "") and "--json > preview.json" in s["run"]
    ]
    gate = [
        i
        for i, s in enumerate(steps)
        if "python -m tools.preview_gate preview.json" in s.get("run", "")
    ]
    up = [
        i
        for i, s in enumerate(steps)
        if uses[i].startswith("pulumi/actions@") and s.get("with", {}).get("command") == "up"
    ]
    assert len(install) == len(preview) == len(gate) == len(up) == 1
    assert install[0] < preview[0] < gate[0] < up[0]
    # GitHub Actions skips every later step once one fails (no `if: always()`), so a failed gate
    # means no `up`; and nothing lets the gate step itself pass on failure.
    for step in steps[gate[0] :]:
        assert "if" not in step and not step.get("continue-on-error")
    assert "pulumi login" in steps[preview[0]]["run"]
    assert "--policy-pack policy" in steps[preview[0]]["run"]
    gate_step = steps[gate[0]]
    assert "repos/$REPO/commits/$SHA/pulls" in gate_step["run"]
    assert gate_step["env"]["ALLOW"] == (
        "${{ inputs.allow-replace && 'allow-replace' || '' }},"
        "${{ inputs.restart-ray && 'restart-ray' || '' }}"
    )
    assert _deploy_job()["permissions"]["pull-requests"] == "read"
    inputs = workflow("deploy.yml")["on"]["workflow_dispatch"]["inputs"]
    for label in ("allow-replace", "restart-ray"):
        assert inputs[label]["type"] == "boolean" and inputs[label]["default"] is False
