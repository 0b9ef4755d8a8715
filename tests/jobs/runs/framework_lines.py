"""Step lines exactly as NeMo RL v0.4.0 and veRL 0.6.0 print them, for the report's tests.

veRL's: made by veRL's own `concat_dict_to_str` (verl/utils/logger/aggregate_logger.py L26-32),
taken from the installed `verl` package (requirements-verl.txt). That module imports torch at
its top, which the venv does not carry (veRL is installed with --no-deps), so the function is
compiled from the installed file's source alone rather than imported.

NeMo RL's: `nemo_rl` is not installable here (its GPU stack), so the block is written out in
the shape its prints give, each line citing nemo_rl/algorithms/grpo.py or utils.py at v0.4.0.
"""

from __future__ import annotations

import ast
import importlib.util
import io
import numbers
import pprint
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ray._private import worker


def verl_concat_dict_to_str() -> Callable[[dict[str, Any], int], str]:
    """veRL's own formatter of a console step line, from the installed package."""
    spec = importlib.util.find_spec("verl")
    assert spec is not None and spec.submodule_search_locations, "verl is not installed"
    source = Path(next(iter(spec.submodule_search_locations))) / "utils/logger/aggregate_logger.py"
    tree = ast.parse(source.read_text())
    (fn,) = [
        n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "concat_dict_to_str"
    ]
    namespace: dict[str, Any] = {"numbers": numbers, "pprint": pprint}
    exec(compile(ast.Module(body=[fn], type_ignores=[]), str(source), "exec"), namespace)
    return namespace["concat_dict_to_str"]


def verl_step_line(metrics: dict[str, Any], step: int) -> str:
    """A line as LocalLogger.log prints it (aggregate_logger.py L48-50)."""
    return verl_concat_dict_to_str()(metrics, step=step)


def ray_actor_prefix(line: str, actor: str = "TaskRunner", pid: int = 4242, ip: str = "") -> str:
    """The line as a Ray job's log shows it when an actor printed it: made by Ray's own
    `print_worker_logs` (ray/_private/worker.py L2314-2402, Ray 2.60.0), which prefixes
    `(Class pid=N, ip=A)` in colour (the ip only for another node than the driver's)."""
    buffer = io.StringIO()
    worker.print_worker_logs(
        {
            "pid": pid,
            "ip": ip or "127.0.0.1",
            "localhost": "127.0.0.1",
            "actor_name": actor,
            "lines": [line],
        },
        buffer,
    )
    return buffer.getvalue().rstrip("\n")


def nemo_epoch(epoch: int, epochs: int) -> str:
    return f"\n{'=' * 25} Epoch {epoch}/{epochs} {'=' * 25}"  # grpo.py L910


def nemo_step_block(
    i: int, n: int, loss: float, reward: float, gen_len: float, step_s: float, tok_s_gpu: float
) -> str:
    """One synchronous GRPO step's console block (grpo.py L918-1367, utils.py L385-520)."""
    return "\n".join(
        [
            f"\n{'=' * 25} Step {i}/{n} {'=' * 25}",  # grpo.py L919
            "▶ Preparing batch...",
            "\n📊 Training Results:",  # L1331
            f"  • Loss: {loss:.4f}",  # L1333
            f"  • Avg Reward: {reward:.4f}",  # L1340
            f"  • Mean Generation Length: {gen_len:.4f}",  # L1341-1344
            "\n⏱️  Timing:",  # L1346
            f"  • Total step time: {step_s:.2f}s",  # L1359
            f"  • generation: {step_s / 2:.2f}s (50.0%)",  # L1367
            "\n🔍 Performance Metrics:",  # utils.py
            "  • Throughputs (per GPU):",
            f"    - E2E (Samples/sec/gpu): {tok_s_gpu / 300:.2f}",
            f"    - E2E (Tokens/sec/gpu): {tok_s_gpu:.2f}",
            "  • Throughputs (per Group):",
            f"    - E2E (Tokens/sec): {tok_s_gpu * 8:.2f}",
        ]
    )


def nemo_validation(accuracy: float) -> str:
    """grpo.py L1510-1518."""
    return "\n".join(
        [
            "\n📊 Validation Results:",
            f"    • Accuracy: {accuracy:.4f}",
            "    • Average response length: 512.0 tokens",
            "    • Samples processed: 500",
            "\n  ⏱️  Validation Timing:",
            "    • Total validation time: 31.20s",
        ]
    )


def nemo_saving(step: int) -> str:
    """The line NeMo RL prints as a save starts (grpo.py L1274-1277 @v0.4.0)."""
    return f"Saving checkpoint for step {step}..."


def verl_saving(checkpoint_dir: str, step: int) -> str:
    """The line veRL prints as a save starts (ray_trainer.py L772-776 @v0.6.0, `_save_checkpoint`:
    `os.path.join(trainer.default_local_dir, f"global_step_{global_steps}")`)."""
    return f"local_global_step_folder: {checkpoint_dir}/global_step_{step}"
