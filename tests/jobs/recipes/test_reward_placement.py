"""Where model-written code runs: the stack's sandbox service, or the trainer pod only with
--allow-unsandboxed-reward; refusals come before anything is contacted."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from components.stack_outputs import StackOutputs
from jobs.cli.app import app
from jobs.common.errors import UsageError
from jobs.recipes import reward_placement as reward_sandbox
from jobs.recipes.catalogue import CODE_SANDBOX_URL_ENV, RECIPES
from jobs.runs import plan as submission
from jobs.runs import stack

NAME = "verl-grpo-codecontests"
URL = "http://cc-sandbox.ray.svc.cluster.local:8080"
runner = CliRunner()


def test_the_stacks_service_url_is_used_when_present():
    d = reward_sandbox.decide(RECIPES[NAME], _outputs(URL), allow=False, source="stack s")
    assert d.url == URL and URL in d.notes[0]


def test_without_the_service_only_the_flag_lets_a_submission_through():
    recipe = RECIPES[NAME]
    with pytest.raises(UsageError) as e:
        reward_sandbox.decide(recipe, _outputs(None), allow=False, source="stack s")
    assert e.value.message.startswith("stack s has no code sandbox service")
    assert "--allow-unsandboxed-reward" in (e.value.hint or "")
    allowed = reward_sandbox.decide(recipe, _outputs(None), allow=True, source="stack s")
    assert allowed.url is None and allowed.notes[0].startswith("warning:")
    dry = reward_sandbox.decide(recipe, None, allow=False, source="a dry run", dry_run=True)
    assert dry.url is None and "submitting needs --allow-unsandboxed-reward" in dry.notes[0]


def test_recipes_whose_reward_runs_no_code_are_not_concerned():
    for recipe in RECIPES.values():
        if not recipe.runs_model_code:
            assert (
                reward_sandbox.decide(recipe, None, allow=False, source="x")
                == reward_sandbox.Decision()
            )
    assert [r.name for r in RECIPES.values() if r.runs_model_code] == [NAME]


def _outputs(url: str | None) -> StackOutputs:
    return StackOutputs(
        rayClusterName="rc",
        rayNamespace="ray",
        rayHeadService="rc-head-svc",
        rayDashboardPort=8265,
        rayFramework="verl",
        gpuNodeCount=1,
        gpusPerNode=8,
        clusterName="c",
        clusterLocation="l",
        clusterProject="p",
        codeSandboxUrl=url,
    )


@pytest.mark.parametrize("url, allow, code", [(None, False, 2), (None, True, 99), (URL, False, 99)])
def test_without_a_sandbox_service_submit_needs_the_flag_and_contacts_nothing(
    monkeypatch, url, allow, code
):
    monkeypatch.setattr(stack, "read", lambda name: _outputs(url))
    sent = []
    from jobs.runs import address

    def no_connect(where, spinner=None):
        sent.append(where.outputs())
        raise SystemExit(99)  # stands for "went on to contact the cluster"

    monkeypatch.setattr(address, "connect", no_connect)
    monkeypatch.setattr(submission, "for_recipe", _recording(submission.for_recipe, sent))
    args = ["submit", NAME, "--stack", "s", "--name", "u"] + (
        ["--allow-unsandboxed-reward"] if allow else []
    )
    result = runner.invoke(app, args)
    assert result.exit_code == code, result.stderr
    if code == 2:
        assert "has no code sandbox service (stack output codeSandboxUrl)" in result.stderr
        assert "inside the trainer pod with only rlimits" in result.stderr
        assert "--allow-unsandboxed-reward" in result.stderr and not sent
        return
    sub = sent[0]
    env = sub.runtime_env["env_vars"]
    if url:
        assert env[CODE_SANDBOX_URL_ENV] == url
    else:
        assert CODE_SANDBOX_URL_ENV not in env and "warning:" in result.stderr


def _recording(real, sent):
    def wrapper(*args, **kwargs):
        sub = real(*args, **kwargs)
        sent.append(sub)
        return sub

    return wrapper


def test_recipes_that_run_no_model_code_need_no_flag(monkeypatch):
    monkeypatch.setattr(stack, "read", lambda name: _outputs(None))
    from jobs.runs import address

    monkeypatch.setattr(address, "connect", lambda *a, **k: (_ for _ in ()).throw(SystemExit(99)))
    assert runner.invoke(app, ["submit", "verl-grpo-gsm8k", "--stack", "s"]).exit_code == 99
