"""A stand-in for the frameworks' evaluation with their interface: takes the command line the eval
job gives NeMo RL's run_eval.py (`--config FILE key=value ...`) or veRL's main_ppo (Hydra
overrides with `trainer.val_only=True`), reads the held-out file those arguments name, answers
each problem from a fixture instead of a model, and writes each sample's score where and how the
framework writes it (NeMo RL: `<eval.save_path>/evaluation_data.json`, nemo_rl/evals/eval.py
L444-476; veRL: `<trainer.validation_data_dir>/<step>.jsonl`, ray_trainer.py L418-447).

The fixture (env EVAL_STUB_ANSWERS, a JSON file) maps the framework ("nemo" or "verl") and a
model key to per-problem answer lists: `{"nemo": {"step_20": {"<question>": ["72", "71", ...]},
"base": {...}}, "verl": {...}}`; the model key is the checkpoint's step
(`hf/step_N` or `global_step_N` in the arguments) or `base`. A sample's reward is 1.0 when its
answer equals the problem's expected answer, as the math environment scores. EVAL_STUB_SLEEP
seconds between problems lets a test kill it mid-evaluation; EVAL_STUB_FAIL_ON makes it exit 3
when an argument contains that text (a shard's file, say), as a node lost under it would.
EVAL_STUB_HOLD names a file: while it exists, the generator actor (EVAL_STUB_RAY=1) holds its GPU
inside its answer, having written `<file>.held`, so a test kills the node while the generator
certainly runs on it (a node killed before the actor is placed leaves the actor pending, and
the evaluation waits for a GPU instead of failing).
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any


def _settings(argv: list[str]) -> dict[str, str]:
    return dict(a.lstrip("+").split("=", 1) for a in argv if "=" in a and not a.startswith("--"))


def _model_key(values: dict[str, str]) -> str:
    where = values.get("generation.model_name") or values.get("trainer.resume_from_path") or ""
    m = re.search(r"(?:global_)?step_(\d+)", where)
    return f"step_{m.group(1)}" if m else "base"


def _problems(path: str, question: str, answer: str) -> list[tuple[str, str]]:
    if path.endswith(".parquet"):
        import pyarrow.parquet as pq

        rows = pq.read_table(path).to_pylist()
        return [(r["prompt"][0]["content"], r["reward_model"]["ground_truth"]) for r in rows]
    lines = Path(path).read_text().splitlines()
    return [(json.loads(x)[question], json.loads(x)[answer]) for x in lines if x.strip()]


def _generator() -> Any:
    """With EVAL_STUB_RAY=1, the answers come through an actor holding one GPU, as the
    frameworks' vLLM workers hold theirs: losing its node fails the evaluation."""
    if os.environ.get("EVAL_STUB_RAY") != "1":
        return None
    import ray

    ray.init()

    @ray.remote(num_gpus=1, num_cpus=0)
    class Generator:
        def answer(self, pause: float, hold: str) -> bool:
            if hold and os.path.exists(hold):
                Path(f"{hold}.held").touch()
                while os.path.exists(hold):
                    time.sleep(0.1)
            time.sleep(pause)
            return True

    return Generator.remote()  # type: ignore[attr-defined]


def _samples(
    values: dict[str, str], problems: list[tuple[str, str]], n: int
) -> list[dict[str, Any]]:
    fmt = "verl" if values.get("trainer.val_only") == "True" else "nemo"
    fixture = json.loads(Path(os.environ["EVAL_STUB_ANSWERS"]).read_text())
    answers = fixture[fmt][_model_key(values)]
    pause = float(os.environ.get("EVAL_STUB_SLEEP", "0"))
    hold = os.environ.get("EVAL_STUB_HOLD", "")
    generator = _generator()
    out = []
    for i, (question, expected) in enumerate(problems):
        if generator is not None:
            import ray

            ray.get(generator.answer.remote(pause, hold))
            print(f"stub: answered problem {i + 1} of {len(problems)}", flush=True)
        given = answers.get(question, [])
        for j in range(n):
            said = given[j] if j < len(given) else ""
            out.append({"prompt": question, "response": said, "reward": float(said == expected)})
        if generator is None:
            time.sleep(pause)
    return out


def main(argv: list[str]) -> int:
    fail_on = os.environ.get("EVAL_STUB_FAIL_ON")
    if fail_on and any(fail_on in a for a in argv):
        print(f"stub: failing as told ({fail_on} in the arguments)", file=sys.stderr, flush=True)
        return 3
    values = _settings(argv)
    if values.get("trainer.val_only") == "True":
        problems = _problems(values["data.val_files"], "", "")
        n = int(values["actor_rollout_ref.rollout.val_kwargs.n"])
        samples = _samples(values, problems, n)
        folder = Path(values["trainer.validation_data_dir"])
        folder.mkdir(parents=True, exist_ok=True)
        step = _model_key(values).removeprefix("step_").replace("base", "0")
        rows = [
            {"input": s["prompt"], "output": s["response"], "score": s["reward"]} for s in samples
        ]
        (folder / f"{step}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        return 0
    problems = _problems(
        values["data.dataset_name"], values["data.problem_key"], values["data.solution_key"]
    )
    samples = _samples(values, problems, int(values["eval.num_tests_per_prompt"]))
    for i, s in enumerate(samples):
        s["sample_index"] = i
    folder = Path(values["eval.save_path"])
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "evaluation_data.json").write_text(json.dumps({"evaluation_data": samples}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
