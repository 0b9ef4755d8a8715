"""Checkpoint footprint estimates and the Lustre capacity check at submit."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from components.stack_outputs import StackOutputs
from jobs.cli.app import app
from jobs.client.net import free_port
from jobs.recipes import ckpt_size, compose
from jobs.recipes.catalogue import RECIPES, RunContext
from jobs.runs import stack

runner = CliRunner()


def _footprint(name: str, *user: str) -> ckpt_size.Footprint:
    recipe = RECIPES[name]
    args = recipe.args(RunContext(run="r", nodes=8, gpus_per_node=8), {}) + list(user)
    fp = ckpt_size.footprint(recipe, compose.apply(recipe.framework, recipe.config_file, args))
    assert fp is not None
    return fp


def test_72b_megatron_checkpoint_is_about_a_terabyte_and_keeps_top_k_plus_latest():
    fp = _footprint("nemo-rl-grpo-math")
    assert 900 < fp.checkpoint_gib < 1000  # 72.7e9 x 14 B
    assert fp.kept == 4  # keep_top_k 3 + the latest, never pruned
    assert _footprint("nemo-rl-grpo-math-codelab").kept == 3


def test_a_consolidated_hugging_face_copy_adds_its_bf16_weights():
    assert _footprint("nemo-rl-grpo-gsm8k").bytes_per_param == 14
    off = _footprint("nemo-rl-grpo-gsm8k", "checkpointing.save_consolidated=false")
    assert off.bytes_per_param == 12


def test_verl_keeps_max_actor_ckpt_to_keep_of_fp32_state():
    fp = _footprint("verl-grpo-gsm8k")
    assert fp.kept == 3 and fp.bytes_per_param == 12


def test_size_from_the_model_name_and_unknown_models_are_skipped_with_a_note():
    assert ckpt_size.params("org/Some-Model-7B-Chat") == 7e9
    assert ckpt_size.params("org/no-size") is None
    fits, note = ckpt_size.check(None, 100, "stack s")
    assert fits and "not checked" in note


def test_unknown_capacity_is_skipped_with_a_note_and_a_small_lustre_refuses():
    fp = _footprint("nemo-rl-grpo-math")
    assert ckpt_size.check(fp, None, "--address x")[0]
    fits, message = ckpt_size.check(fp, 2400, "stack s")
    assert not fits and "2,400 GiB" in message


def _outputs(capacity: int | None) -> StackOutputs:
    return StackOutputs(
        rayClusterName="rc",
        rayNamespace="ray",
        rayHeadService="rc-head-svc",
        rayDashboardPort=free_port(),
        rayFramework="nemo-rl",
        gpuNodeCount=8,
        gpusPerNode=8,
        clusterName="c",
        clusterLocation="l",
        clusterProject="p",
        lustreCapacityGib=capacity,
    )


@pytest.mark.parametrize("force", [False, True])
def test_submit_refuses_a_run_whose_checkpoints_overflow_the_stacks_lustre(monkeypatch, force):
    # Only the `pulumi stack output` call is replaced; nothing after the check may contact a
    # cluster, so without --force the exit is 2, and with it the run goes on to connect.
    monkeypatch.setattr(stack, "read", lambda name: _outputs(2400))
    called = []
    from jobs.runs import address

    def no_connect(*a, **k):
        called.append(True)
        raise SystemExit(99)

    monkeypatch.setattr(address, "connect", no_connect)
    args = ["submit", "nemo-rl-grpo-math", "--stack", "s", "--name", "big"]
    result = runner.invoke(app, args + (["--force"] if force else []))
    if force:
        assert called and "warning:" in result.stderr
    else:
        assert result.exit_code == 2 and not called
        assert "would not fit Lustre" in result.stderr and "--force" in result.stderr


def test_stack_outputs_accept_a_missing_capacity():
    assert stack.parse("s", _outputs(None).model_dump(by_alias=True)).lustre_capacity_gib is None
