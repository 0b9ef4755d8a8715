"""Picking a run's checkpoint on a folder laid out as each framework writes it, and the converter
command built for it (its flags checked against veRL 0.6.0's own argument parser)."""

from __future__ import annotations

import argparse
import ast
import importlib.util
import sys
from pathlib import Path

import pytest

from jobs.head import checkpoints
from jobs.head.checkpoints import Checkpoint, NoCheckpoint, pick, plan
from jobs.recipes import catalogue as recipes


def nemo_step(root: Path, name: str, *, config: bool = True, weights: str | None = "dcp") -> Path:
    step = root / name
    (step / "policy" / "tokenizer").mkdir(parents=True)
    (step / "policy" / "tokenizer" / "tokenizer.json").write_text("{}")
    if config:
        (step / "config.yaml").write_text("policy: {model_name: m}\n")
    w = step / "policy" / "weights"
    if weights == "dcp":
        w.mkdir()
        (w / ".metadata").write_bytes(b"x")
    elif weights == "megatron":
        (w / "iter_0000000").mkdir(parents=True)
    elif weights == "v2":
        (w / "model").mkdir(parents=True)
    elif weights == "v2-consolidated":
        (w / "model" / "consolidated").mkdir(parents=True)
        (w / "model" / "consolidated" / "config.json").write_text("{}")
        (w / "model" / "consolidated" / "model-00001-of-00001.safetensors").write_bytes(b"w")
    return step


def verl_step(root: Path, n: int) -> Path:
    step = root / f"global_step_{n}"
    (step / "actor" / "huggingface").mkdir(parents=True)
    # FSDP's per-rank weights (verl docs/advance/checkpoint.rst): without them, not complete.
    (step / "actor" / "model_world_size_1_rank_0.pt").write_bytes(b"w")
    return step


def test_nemo_rl_latest_is_the_highest_finalised_step(tmp_path):
    for n in (2, 10, 4):
        nemo_step(tmp_path, f"step_{n}")
    # Being written (renamed to step_12 only when done) and the moment a step is replaced.
    nemo_step(tmp_path, "tmp_step_12")
    nemo_step(tmp_path, "old_step_14")
    got = pick("nemo-rl", tmp_path)
    assert got == Checkpoint(10, tmp_path / "step_10")


def test_nemo_rl_step_without_config_or_weights_is_not_complete(tmp_path):
    nemo_step(tmp_path, "step_2")
    nemo_step(tmp_path, "step_6", config=False)
    nemo_step(tmp_path, "step_8", weights=None)
    assert pick("nemo-rl", tmp_path).step == 2
    with pytest.raises(
        NoCheckpoint, match=r"no complete checkpoint for step 6 .*complete steps: 2$"
    ):
        pick("nemo-rl", tmp_path, step=6)


def test_a_chosen_step_is_returned(tmp_path):
    for n in (2, 4):
        nemo_step(tmp_path, f"step_{n}")
    assert pick("nemo-rl", tmp_path, step=2) == Checkpoint(2, tmp_path / "step_2")


def test_missing_and_empty_checkpoint_dirs_say_so(tmp_path):
    with pytest.raises(
        NoCheckpoint, match=rf"^no checkpoint in {tmp_path / 'nope'}: the directory does not exist"
    ):
        pick("nemo-rl", tmp_path / "nope")
    nemo_step(tmp_path, "tmp_step_2")
    with pytest.raises(NoCheckpoint, match=r"no complete step_N folder \(found: tmp_step_2\)"):
        pick("nemo-rl", tmp_path)


def test_verl_follows_its_tracker_file(tmp_path):
    for n in (20, 40, 60):
        verl_step(tmp_path, n)
    # veRL writes the tracker after the save: global_step_60 is still being written.
    (tmp_path / checkpoints.VERL_TRACKER).write_text("40\n")
    assert pick("verl", tmp_path) == Checkpoint(40, tmp_path / "global_step_40")
    with pytest.raises(NoCheckpoint, match="complete steps: 20, 40"):
        pick("verl", tmp_path, step=60)


def test_verl_without_tracker_has_no_complete_checkpoint(tmp_path):
    # veRL writes latest_checkpointed_iteration.txt after the step's files: without it, even a
    # step with an actor/ folder may be half-written (the supervisor's pruning agrees).
    verl_step(tmp_path, 20)
    (tmp_path / "global_step_40").mkdir()  # no actor/ in it
    with pytest.raises(NoCheckpoint, match="no latest_checkpointed_iteration.txt"):
        pick("verl", tmp_path)
    (tmp_path / "latest_checkpointed_iteration.txt").write_text("20")
    assert pick("verl", tmp_path).step == 20


def test_nemo_rl_dcp_v1_runs_the_dcp_converter_and_copies_the_tokenizer(tmp_path):
    step = nemo_step(tmp_path, "step_10")
    got = plan("nemo-rl", "dcp", Checkpoint(10, step), Path("/lustre/runs/r/hf/step_10"))
    # examples/converters/convert_dcp_to_hf.py @v0.4.0: --config, --dcp-ckpt-path, --hf-ckpt-path.
    assert got.argv == (
        "uv",
        "run",
        "python",
        "examples/converters/convert_dcp_to_hf.py",
        "--config",
        f"{step}/config.yaml",
        "--dcp-ckpt-path",
        f"{step}/policy/weights",
        "--hf-ckpt-path",
        "/lustre/runs/r/hf/step_10",
    )
    assert got.cwd == recipes.NEMO_RL_HOME == "/opt/nemo-rl"
    assert got.tokenizer_from == step / "policy" / "tokenizer"


def test_nemo_rl_megatron_converts_the_iter_folder_with_the_mcore_extra(tmp_path):
    step = nemo_step(tmp_path, "step_4", weights="megatron")
    got = plan("nemo-rl", "megatron", Checkpoint(4, step), Path("/o"))
    # examples/converters/convert_megatron_to_hf.py @v0.4.0 and its docs' command.
    assert got.argv == (
        "uv",
        "run",
        "--extra",
        "mcore",
        "python",
        "examples/converters/convert_megatron_to_hf.py",
        "--config",
        f"{step}/config.yaml",
        "--megatron-ckpt-path",
        f"{step}/policy/weights/iter_0000000",
        "--hf-ckpt-path",
        "/o",
    )
    assert got.cwd == "/opt/nemo-rl"


def test_megatron_backend_on_a_dcp_checkpoint_is_refused(tmp_path):
    step = nemo_step(tmp_path, "step_4", weights="dcp")
    with pytest.raises(
        NoCheckpoint, match=r"no Megatron iter_NNNNNNN folder \(found: \.metadata\)"
    ):
        plan("nemo-rl", "megatron", Checkpoint(4, step), Path("/o"))


def test_dtensor_v2_is_copied_when_consolidated_and_refused_otherwise(tmp_path):
    step = nemo_step(tmp_path, "step_2", weights="v2-consolidated")
    got = plan("nemo-rl", "dcp", Checkpoint(2, step), Path("/o"))
    assert (
        got.argv == () and got.copy_from == step / "policy" / "weights" / "model" / "consolidated"
    )
    other = nemo_step(tmp_path, "step_4", weights="v2")
    with pytest.raises(NoCheckpoint, match="DTensor v2 .* checkpointing.save_consolidated=true"):
        plan("nemo-rl", "dcp", Checkpoint(4, other), Path("/o"))


def _verl_parse_args():
    """veRL 0.6.0's own `parse_args`, lifted from the installed package's source: the module
    imports torch and transformers, which this environment does not have, but its argument
    parser needs argparse only."""
    spec = importlib.util.find_spec("verl")
    assert spec is not None and spec.submodule_search_locations
    source = Path(spec.submodule_search_locations[0], "model_merger", "base_model_merger.py")
    tree = ast.parse(source.read_text())
    [fn] = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "parse_args"]
    namespace: dict[str, object] = {"argparse": argparse}
    exec(compile(ast.Module(body=[fn], type_ignores=[]), str(source), "exec"), namespace)
    return namespace["parse_args"]


@pytest.mark.parametrize("backend", ["fsdp", "megatron"])
def test_verl_merge_command_is_what_the_model_merger_parses(tmp_path, monkeypatch, backend):
    step = verl_step(tmp_path, 20)
    got = plan("verl", backend, Checkpoint(20, step), Path("/lustre/runs/r/hf/step_20"))
    assert got.argv[:3] == ("python3", "-m", "verl.model_merger")
    monkeypatch.setattr(sys, "argv", ["verl.model_merger", *got.argv[3:]])
    args = _verl_parse_args()()
    assert (args.operation, args.backend) == ("merge", backend)
    assert args.local_dir == f"{step}/actor" and args.target_dir == "/lustre/runs/r/hf/step_20"
    assert args.hf_upload_path is None  # nothing leaves the cluster


def test_unknown_backend_is_a_programming_error(tmp_path):
    with pytest.raises(ValueError, match="no 'fsdp' backend for 'nemo-rl'"):
        plan("nemo-rl", "fsdp", Checkpoint(1, tmp_path), Path("/o"))


def test_out_template_fills_the_step():
    assert checkpoints.out_path("/lustre/runs/r/hf/step_{step}", 30) == Path(
        "/lustre/runs/r/hf/step_30"
    )
    assert checkpoints.out_path("/lustre/runs/r/final", 30) == Path("/lustre/runs/r/final")


def test_the_module_runs_on_the_standard_library_alone():
    # The export payload imports it on the cluster, where the image's python3 may lack pydantic.
    tree = ast.parse(Path(checkpoints.__file__).read_text())
    imported = {
        a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
    }
    imported |= {
        n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module
    }
    assert imported <= set(sys.stdlib_module_names), imported - set(sys.stdlib_module_names)


def test_verl_a_tracked_step_whose_actor_lost_its_weights_is_not_complete(tmp_path):
    """With max_actor_ckpt_to_keep=1 veRL deletes the previous actor files
    before writing the new ones (fsdp_checkpoint_manager.py L205-214 @v0.6.0); a preemption
    then leaves the tracker on a folder without weights. Export, pruning and the supervisor
    (one rule) must not take it for complete."""
    from jobs.head import hygiene

    verl_step(tmp_path, 20)
    emptied = verl_step(tmp_path, 40)
    (emptied / "actor" / "model_world_size_1_rank_0.pt").unlink()  # deleted before the save
    (tmp_path / checkpoints.VERL_TRACKER).write_text("40\n")
    assert pick("verl", tmp_path).step == 20
    assert sorted(hygiene.complete_steps(str(tmp_path))) == [20]
    assert checkpoints.entries(str(tmp_path)) == {"global_step_20"}
    assert "global_step_20" not in hygiene.plan(str(tmp_path), keep=1)


def test_entries_ignore_half_written_and_hidden_entries(tmp_path):
    assert checkpoints.entries(str(tmp_path / "missing")) == frozenset()
    assert checkpoints.entries("") == frozenset()
    for n in ("step_10", "tmp_step_20", ".lock", "old_step_3"):
        (tmp_path / n / "policy" / "weights").mkdir(parents=True)
        (tmp_path / n / "config.yaml").write_text("{}")
    (tmp_path / "step_30").mkdir()  # no config, no weights: not a complete NeMo RL step
    assert checkpoints.entries(str(tmp_path)) == {"step_10"}


def test_a_verl_step_counts_only_once_its_tracker_points_at_it(tmp_path):
    # veRL writes global_step_N/ first and latest_checkpointed_iteration.txt last
    # (verl/trainer/ppo/ray_trainer.py v0.6.0 L819-824): a step above the tracker is half-written.
    (tmp_path / "global_step_5" / "actor").mkdir(parents=True)
    (tmp_path / "global_step_5" / "actor" / "model_world_size_1_rank_0.pt").write_bytes(b"w")
    assert checkpoints.entries(str(tmp_path)) == frozenset()
    (tmp_path / "latest_checkpointed_iteration.txt").write_text("5")
    (tmp_path / "global_step_10" / "actor").mkdir(parents=True)  # being written
    assert checkpoints.entries(str(tmp_path)) == {"global_step_5"}
    assert "global_step_10" in checkpoints.activity(str(tmp_path))


def test_activity_is_every_entry_and_empty_when_the_dir_is_unknown(tmp_path):
    assert checkpoints.activity(None) == frozenset()
    assert checkpoints.activity(str(tmp_path / "missing")) == frozenset()
    (tmp_path / "tmp_step_20").mkdir()
    (tmp_path / ".lock").write_text("")
    assert checkpoints.activity(str(tmp_path)) == {"tmp_step_20", ".lock"}
