"""A run's training curves, read from the step lines NeMo RL v0.4.0 and veRL 0.6.0 print to a Ray job's log.

Pure and standard library only (the supervisor on the head parses with it too, jobs/head/run_gauges.py):
text in, curves out. What each framework prints, and where:

- veRL 0.6.0 logs a step's metrics through `Tracking` (`trainer.logger` holds "console", which the
  recipes always set): `LocalLogger.log` prints `concat_dict_to_str(data, step)`
  (verl/utils/logger/aggregate_logger.py L26-32 and L48-50): `step:N - key:value - key:value`,
  one line, numbers only, each value as `pprint.pformat` renders it (so a numpy scalar under
  numpy 2 reads `np.float64(0.5)`). Training metrics are logged at ray_trainer.py L1266,
  validation metrics (`val-core/<data source>/<acc|reward>/mean@N`, L635-653) at L994. The
  trainer runs inside veRL's `TaskRunner` actor (verl/trainer/main_ppo.py L82-95), so in the job's
  log each line carries Ray's actor prefix, `(TaskRunner pid=N[, ip=A]) `, in colour unless
  RAY_COLOR_PREFIX=0 (ray/_private/worker.py print_worker_logs L2314-2402, Ray 2.60.0).
- NeMo RL v0.4.0 prints a block per step from the driver (no prefix): a header
  `===== Step i/N =====` (nemo_rl/algorithms/grpo.py L919, synchronous GRPO; L1784 async), after a
  `===== Epoch e/E =====` header (L910) where i restarts at 1 every epoch; then
  `  • Loss: x` (L1333), `  • Avg Reward: x` (L1340; `Avg Total Reward` L1337 under dynamic
  sampling), `  • Mean Generation Length: x` (L1341-1344), `  • Total step time: x s` (L1359),
  and from `print_performance_metrics` (nemo_rl/algorithms/utils.py L358) the per-GPU
  `    - E2E (Tokens/sec/gpu): x`. Validation (grpo.py L1510-1512, `    • Accuracy: x`) runs
  before step 1 (val_at_start, step 0) or inside a step, before its results (L1140-1150), so it
  belongs to the step whose header came last. NeMo RL prints no KL to the console: its KL
  (`train/kl_penalty`, loss_functions.py L415) goes only to TensorBoard / W&B.
- W&B's client prints the run's page when the run starts: `wandb: 🚀 View run NAME at: URL`
  (older clients: `View run at URL`); the report links what it printed.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from jobs.head.progress import clean

# The curves the report draws, in its order: key -> (title, unit).
METRICS: dict[str, tuple[str, str]] = {
    "reward": ("Reward (mean)", ""),
    "kl": ("KL to the reference policy", ""),
    "response_length": ("Response length (mean)", "tokens"),
    "step_time": ("Step time", "s"),
    "throughput": ("Throughput", "tokens/s/GPU"),
    "loss": ("Loss", ""),
    "save_time": ("Checkpoint save time", "s"),
    "validation_time": ("Validation time", "s"),
}
VALIDATION_PREFIX = "val:"  # validation curves: "val:<what>", one per data source for veRL

# veRL's metric names (verl/trainer/ppo/metric_utils.py @v0.6.0): critic/score/mean is the
# reward function's score (L161; critic/rewards/mean L165 adds the in-reward KL penalty),
# response_length/mean L189, timing_s/step L261, perf/throughput L301 (tokens / (time * GPUs));
# actor/kl_loss is the KL-loss term GRPO uses (verl/workers/actor/dp_actor.py L479),
# actor/reward_kl_penalty the in-reward one (ray_trainer.py apply_kl_penalty).
_VERL = {
    "critic/score/mean": "reward",
    "actor/kl_loss": "kl",
    "actor/reward_kl_penalty": "kl",
    "response_length/mean": "response_length",
    "timing_s/step": "step_time",
    "perf/throughput": "throughput",
    "actor/pg_loss": "loss",
    # Timed outside `timing_s/step` (ray_trainer.py L1203 and L1226, after the step timer L1043).
    "timing_s/save_checkpoint": "save_time",
    "timing_s/testing": "validation_time",
}

_VERL_LINE = re.compile(r"^step:(?P<step>[0-9]+)(?P<rest>( - .*)?)$")
# `np.float64(0.5)`: pprint.pformat of a numpy scalar under numpy >= 2.
_NUMPY_SCALAR = re.compile(r"^np\.[a-z0-9_]+\((?P<v>.*)\)$")

_NEMO_EPOCH = re.compile(r"^=+ Epoch (?P<e>[0-9]+)/(?P<total>[0-9]+) =+$")
_NEMO_STEP = re.compile(r"^=+ Step (?P<i>[0-9]+)/(?P<n>[0-9]+) =+$")
_NUM = r"(?P<v>[-+]?(?:[0-9.]+(?:e[-+]?[0-9]+)?|nan|inf))"
_NEMO_VALUES = [
    (re.compile(rf"^  • Loss: {_NUM}$"), "loss"),
    (re.compile(rf"^  • Avg Reward: {_NUM}$"), "reward"),
    (re.compile(rf"^  • Avg Total Reward: {_NUM}$"), "reward"),
    (re.compile(rf"^  • Mean Generation Length: {_NUM}$"), "response_length"),
    (re.compile(rf"^  • Total step time: {_NUM}s$"), "step_time"),
    (re.compile(rf"^    - E2E \(Tokens/sec/gpu\): {_NUM}$"), "throughput"),
    (re.compile(rf"^    • Accuracy: {_NUM}$"), f"{VALIDATION_PREFIX}accuracy"),
    # The timing block prints every timer but the total as `  • name: Xs (P%)` (grpo.py
    # L1362-1366); `checkpointing` (L1273) is timed inside the step's total (L927).
    (re.compile(rf"^  • checkpointing: {_NUM}s \([0-9.]+%\)$"), "save_time"),
]
_WANDB_URL = re.compile(r"wandb: .*View run\b.*?(?P<url>https://\S+)")
# A save starting, as each framework prints it: NeMo RL v0.4.0 `Saving checkpoint for step N...`
# (nemo_rl/algorithms/grpo.py L1275, async GRPO L2152), veRL 0.6.0 `local_global_step_folder:
# <dir>/global_step_N` (verl/trainer/ppo/ray_trainer.py L776). Neither prints the save's end, but
# both save synchronously inside the step and log the step's results after it (NeMo RL's
# "Training Results" at grpo.py L1331, veRL's `logger.log` after `_save_checkpoint`), so a save is
# complete once a result of its step (or a later one) follows it in the log.
_SAVES = (
    re.compile(r"^Saving checkpoint for step (?P<n>[0-9]+)\.\.\.$"),
    re.compile(r"^local_global_step_folder: .*global_step_(?P<n>[0-9]+)/?$"),
)


@dataclass
class Curves:
    """Per metric, its value at each step (a later line for the same step replaces an earlier
    one: a resumed attempt re-runs the steps after its checkpoint)."""

    points: dict[str, dict[int, float]] = field(default_factory=dict)
    wandb_urls: list[str] = field(default_factory=list)
    # NeMo RL's last `Epoch e/E` and `Step i/N` headers: (e, E, i, N); veRL prints no total.
    position: tuple[int, int, int, int] | None = None
    # Steps whose save the log shows starting (_SAVES), and those a later result followed.
    saves: set[int] = field(default_factory=set)
    saved: set[int] = field(default_factory=set)

    def add(self, metric: str, step: int, value: float) -> None:
        self.points.setdefault(metric, {})[step] = value
        self.saved |= {s for s in self.saves if s <= step}

    def merge(self, later: Curves) -> None:
        for metric, steps in later.points.items():
            for step, value in steps.items():
                self.add(metric, step, value)
        self.wandb_urls += [u for u in later.wandb_urls if u not in self.wandb_urls]
        self.position = later.position or self.position
        self.saves |= later.saves
        self.saved |= later.saved

    def complete_saves(self) -> list[int]:
        """Saves a result of their step (or a later one) followed: the save had ended."""
        return sorted(self.saved)

    def series(self, metric: str) -> list[tuple[int, float]]:
        """The metric's finite points, by step (NaN and inf are dropped: they cannot be drawn)."""
        return sorted((s, v) for s, v in self.points.get(metric, {}).items() if math.isfinite(v))

    def present(self) -> list[str]:
        """The metrics with at least one drawable point, in the report's order."""
        known = [m for m in METRICS if self.series(m)]
        vals = sorted(m for m in self.points if m.startswith(VALIDATION_PREFIX) and self.series(m))
        return known + vals


def title_of(metric: str) -> tuple[str, str]:
    if metric in METRICS:
        return METRICS[metric]
    what = metric.removeprefix(VALIDATION_PREFIX)
    return (f"Validation {what}", "")


def _number(text: str) -> float | None:
    text = text.strip()
    match = _NUMPY_SCALAR.match(text)
    if match:
        text = match["v"]
    if text in ("True", "False"):  # bool is a numbers.Number: pformat prints it so
        return float(text == "True")
    try:
        return float(text)
    except ValueError:
        return None


def _verl_metric(key: str) -> str | None:
    if key in _VERL:
        return _VERL[key]
    if key.startswith("val-core/"):
        # val-core/<data source>/<acc|reward>/<mean@N...>: the source and the variable
        return VALIDATION_PREFIX + "/".join(key.split("/")[1:3])
    return None


def parse_verl_line(line: str) -> tuple[int, dict[str, float]] | None:
    """One `step:N - key:value - ...` line as (N, every numeric key); None for any other line."""
    match = _VERL_LINE.match(line)
    if not match:
        return None
    values: dict[str, float] = {}
    for part in match["rest"].split(" - ")[1:]:
        # rpartition: a value is a number and holds no ':', a key may
        key, sep, raw = part.rpartition(":")
        value = _number(raw) if sep else None
        if value is not None:
            values[key] = value
    return int(match["step"]), values


def parse(text: str) -> Curves:
    """The curves in one attempt's log, whichever framework wrote it."""
    curves = Curves()
    epoch, epochs, step = 1, 1, 0
    for raw in text.splitlines():
        line = clean(raw)
        if url := _WANDB_URL.search(line):
            if url["url"] not in curves.wandb_urls:
                curves.wandb_urls.append(url["url"])
            continue
        if started := next((m for p in _SAVES if (m := p.match(line.strip()))), None):
            curves.saves.add(int(started["n"]))
            continue
        verl = parse_verl_line(line)
        if verl is not None:
            n, values = verl
            for key, value in values.items():
                metric = _verl_metric(key)
                # actor/kl_loss wins over the in-reward penalty when a step has both
                if metric == "kl" and key != "actor/kl_loss" and "actor/kl_loss" in values:
                    continue
                if metric is not None:
                    curves.add(metric, n, value)
            continue
        stripped = line.strip()
        if m := _NEMO_EPOCH.match(stripped):
            epoch, epochs = int(m["e"]), int(m["total"])
            continue
        if m := _NEMO_STEP.match(stripped):
            # i restarts every epoch; N = min(len(dataloader), max_num_steps), and a second epoch
            # only happens when N is the dataloader's length, so the global step is this:
            step = (epoch - 1) * int(m["n"]) + int(m["i"])
            curves.position = (epoch, epochs, int(m["i"]), int(m["n"]))
            continue
        for pattern, metric in _NEMO_VALUES:
            if m := pattern.match(line):
                number = _number(m["v"])
                if number is not None:
                    curves.add(metric, step, number)
                break
    return curves
