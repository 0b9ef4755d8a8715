"""GSM8K conversion: rows the frameworks' own loading code accepts, versioned preparations."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from jobs.data import gsm8k
from jobs.recipes.catalogue import PAYLOADS, RECIPES
from tests.jobs.conftest import REPO, clean_env, run_cli

ROWS = {
    "train": [
        {
            "question": "Tom has 1,200 apples and buys 34 more. How many?",
            "answer": "1200 + 34 = <<1200+34=1234>>1234.\n#### 1,234",
        },
        {"question": "What is 2 + 3?", "answer": "2 + 3 = 5\n#### 5"},
    ],
    "test": [{"question": "What is 6 x 7?", "answer": "6 * 7 = 42\n#### 42"}],
}


def hub_folder(root: Path) -> Path:
    """The hub's openai/gsm8k layout: main/{train,test}-00000-of-00001.parquet."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    main = root / "main"
    main.mkdir(parents=True)
    for split, rows in ROWS.items():
        pq.write_table(pa.Table.from_pylist(rows), main / f"{split}-00000-of-00001.parquet")
    return root


@pytest.fixture
def converted(tmp_path: Path) -> Path:
    out = tmp_path / "out"
    done = run_cli(
        "data", "gsm8k", "--input", str(hub_folder(tmp_path / "in")), "--out", str(out), "--json"
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["rows"] == {"train": 2, "test": 1}
    return out


def test_nemo_rows_pass_nemo_rl_v0_4_0_loading_path(converted: Path) -> None:
    defaults = RECIPES["nemo-rl-grpo-gsm8k"].defaults
    input_key, output_key = defaults["data.input_key"], defaults["data.output_key"]
    assert defaults["data.train_data_path"].endswith("/gsm8k/nemo/train.jsonl")
    for split in ("train", "test"):
        # load_dataset_from_path: a .jsonl path goes to the `datasets` JSON loader, split "train".
        from datasets import load_dataset  # two seconds of import, paid by the tests that use it

        ds = load_dataset("json", data_files=str(converted / "nemo" / f"{split}.jsonl"))["train"]
        assert len(ds) == len(ROWS[split])
        # ResponseDataset.add_messages_key reads the two keys the recipe's data config names.
        ds = ds.map(
            lambda e: {
                "messages": [
                    {"role": "user", "content": e[input_key]},
                    {"role": "assistant", "content": e[output_key]},
                ]
            }
        )
        for entry, raw in zip(ds, ROWS[split], strict=True):
            # AllTaskProcessedDataset.__getitem__: entry["task_name"] must be a registered
            # processor, and run_grpo_math.py registers only "math".
            assert entry["task_name"] == "math"
            # math_hf_data_processor: problem and ground truth from the messages.
            assert entry["messages"][0]["content"] == raw["question"]
            assert entry["messages"][1]["content"] == gsm8k.final_answer(raw["answer"])


def _verl_gsm8k_reward():
    """veRL 0.6.0's own GSM8K scorer, loaded from its file (verl's package __init__ needs torch)."""
    spec = importlib.util.find_spec("verl")
    if spec is None or spec.origin is None:
        pytest.skip("verl (dev dependency, installed --no-deps) is not in this environment")
    path = Path(spec.origin).parent / "utils" / "reward_score" / "gsm8k.py"
    module_spec = importlib.util.spec_from_file_location("verl_gsm8k_reward", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def test_verl_rows_pass_verl_v0_6_0_rl_dataset_schema_and_reward(converted: Path) -> None:
    reward = _verl_gsm8k_reward()
    for split in ("train", "test"):
        # rl_dataset.py _read_files_and_tokenize: datasets.load_dataset("parquet", ...)["train"].
        from datasets import load_dataset

        ds = load_dataset("parquet", data_files=str(converted / "verl" / f"{split}.parquet"))[
            "train"
        ]
        for i, (row, raw) in enumerate(zip(ds, ROWS[split], strict=True)):
            # _build_messages pops config prompt_key ("prompt"): a list of chat messages.
            assert [m["role"] for m in row["prompt"]] == ["user"]
            assert raw["question"] in row["prompt"][0]["content"]
            # __getitem__ reads extra_info.index; the reward manager reads data_source (the
            # default data.reward_fn_key) and reward_model.ground_truth.
            assert row["extra_info"]["index"] == i and row["extra_info"]["split"] == split
            assert row["data_source"] == "openai/gsm8k"
            truth = row["reward_model"]["ground_truth"]
            # veRL's own scorer gives full marks to an answer ending in "#### <truth>".
            assert reward.compute_score(f"so the answer is\n#### {truth}", truth) == 1.0
            assert reward.compute_score("#### 999999", truth) == 0.0


def test_an_older_preparation_is_rebuilt_and_a_current_one_reused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "nemo").mkdir(parents=True)
    for split in ("train", "test"):  # format 1: rows without task_name, no FORMAT file
        (out / "nemo" / f"{split}.jsonl").write_text('{"question": "q", "answer": "1"}\n')
    assert not gsm8k.is_prepared(out, "nemo")
    prepare = [
        sys.executable,
        str(PAYLOADS / "gsm8k" / "prepare_gsm8k.py"),
        "--format",
        "nemo",
        "--out",
        str(out),
        "--input",
        str(hub_folder(tmp_path / "in")),
    ]
    # Run as Ray runs it: the payload script with the jobs package on PYTHONPATH (py_modules).
    env = clean_env(PYTHONPATH=str(REPO))
    first = subprocess.run(prepare, env=env, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    assert "wrote" in first.stdout
    assert (
        json.loads((out / "nemo" / "train.jsonl").read_text().splitlines()[0])["task_name"]
        == "math"
    )
    assert gsm8k.is_prepared(out, "nemo")
    second = subprocess.run(prepare, env=env, capture_output=True, text=True, timeout=120)
    assert "skipping" in second.stdout
    marker = out / "nemo" / gsm8k.FORMAT_FILE
    marker.write_text(json.dumps({"version": gsm8k.FORMAT_VERSION - 1}))
    assert not gsm8k.is_prepared(out, "nemo")


@pytest.mark.subprocess_cli
def test_missing_split_is_refused_naming_it_and_nothing_is_written(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "train.jsonl").write_text(json.dumps(ROWS["train"][0]) + "\n")
    done = run_cli("data", "gsm8k", "--input", str(folder), "--out", str(tmp_path / "out"))
    assert done.returncode == 2
    assert "no test* file" in done.stderr and "train.jsonl" in done.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.subprocess_cli
def test_a_row_without_a_final_answer_is_refused_naming_file_and_row(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "train.jsonl").write_text(
        json.dumps(ROWS["train"][0]) + "\n" + json.dumps({"question": "q", "answer": "none"}) + "\n"
    )
    (folder / "test.jsonl").write_text(json.dumps(ROWS["test"][0]) + "\n")
    done = run_cli("data", "gsm8k", "--input", str(folder), "--out", str(tmp_path / "out"))
    assert done.returncode == 2
    assert "train.jsonl row 2" in done.stderr and "####" in done.stderr


def test_final_answer_strips_thousands_separators() -> None:
    assert gsm8k.final_answer("x\n#### 1,234") == "1234"
    with pytest.raises(gsm8k.DataError):
        gsm8k.final_answer("no marker")


@pytest.mark.ray
def test_on_a_real_ray_cluster_the_payload_imports_the_shipped_jobs_package(
    tmp_path: Path, ray_client
) -> None:
    from jobs.runs import plan as submission
    from tests.jobs.conftest import wait_until

    sub = submission.for_recipe(RECIPES["nemo-rl-grpo-gsm8k"], "data-ray", 1, 8, [], {}, None, "c")
    out = tmp_path / "out"
    entry = (
        f"{sys.executable} prepare_gsm8k.py --format nemo --out {out} "
        f"--input {hub_folder(tmp_path / 'in')}"
    )
    # The recipe's runtime_env as submitted (payload working_dir + py_modules), no PYTHONPATH help.
    job = ray_client.submit_job(entrypoint=entry, runtime_env=sub.runtime_env)
    terminal = {"SUCCEEDED", "FAILED", "STOPPED"}
    wait_until(
        lambda: str(ray_client.get_job_status(job).value) in terminal,
        timeout=180,
        what="the preparation job",
    )
    assert ray_client.get_job_status(job).value == "SUCCEEDED", ray_client.get_job_logs(job)
    assert gsm8k.is_prepared(out, "nemo")


@pytest.mark.subprocess_cli
@pytest.mark.subprocess_cli
@pytest.mark.parametrize("under", [False, True])
def test_an_out_that_is_a_file_is_refused_naming_out(tmp_path: Path, under: bool) -> None:
    """It exited 4, with NotADirectoryError reported as "a bug"."""
    (tmp_path / "taken").write_text("mine\n")
    out = tmp_path / "taken" / "gsm8k" if under else tmp_path / "taken"
    done = run_cli("data", "gsm8k", "--input", str(hub_folder(tmp_path / "in")), "--out", str(out))
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(
        f"error: --out {out}: {tmp_path / 'taken'} exists and is not a directory"
    )
    assert (tmp_path / "taken").read_text() == "mine\n"


@pytest.mark.subprocess_cli
@pytest.mark.parametrize("name", ["passwd", "my_secret", "api_key"])
def test_an_out_path_named_like_a_credential_is_printed_as_written(
    tmp_path: Path, name: str
) -> None:
    """`--out /etc/passwd` was printed as `***` (the redactor read
    `passwd: ...` as a credential assignment)."""
    (tmp_path / name).write_text("mine\n")
    out = tmp_path / name
    done = run_cli("data", "gsm8k", "--input", str(hub_folder(tmp_path / "in")), "--out", str(out))
    assert done.returncode == 2, done.stderr
    assert f"--out {out}: {out} exists and is not a directory" in done.stderr
    assert "***" not in done.stderr
