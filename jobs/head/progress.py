"""Training progress read from an attempt's log: how many steps it completed.

The crash rule (jobs/head/restart_policy.py `is_crash`) asks whether an attempt made progress
since the previous failure. Checkpoints alone are too coarse: a save period is about an hour for
the 72B recipe, so two transient failures inside one would end a 20-hour run as a "crash".
An attempt that completed a training step is not failing in its code or config. The frameworks
print a line as each step starts:
- NeMo RL v0.4.0: `========== Step k/M ==========` (nemo_rl/algorithms/grpo.py, the
  training loop's header line);
- veRL 0.6.0: its console logger prints `step:k - ...` with the step's metrics
  (verl/utils/tracking.py, the console backend).
A step is complete when a later one has started, so the count is distinct steps seen minus one.
The lines that carry a step's figures (`progress_lines`) are kept on the runs root at each
attempt's end, so `status --runs-root` accounts the run's goodput without the head that ran it
(jobs/head/step_lines.py parses them; tests/jobs/head/test_progress.py holds the two together).
Standard library only: it runs in the supervisor on the head.
"""

from __future__ import annotations

import re

STEP_LINE = re.compile(r"\bStep (?P<a>[0-9]+)/[0-9]+|\bstep:(?P<b>[0-9]+)\b")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
# Ray's prefix on a line an actor or task printed, e.g. "(TaskRunner pid=123, ip=10.0.0.2) ".
_RAY_PREFIX = re.compile(r"^\([^()]*pid=[0-9]+[^()]*\)\s")
# veRL's `step:N - ...` line; NeMo RL's `==== Epoch/Step i/N ====` headers and its indented
# `  • name: value` / `    - E2E ...` figures; W&B's run link.
_PROGRESS = re.compile(r"^(step:[0-9]|\s*=+ (Epoch|Step) [0-9]|\s+[•-] |wandb: .*View run)")


def clean(line: str) -> str:
    """A log line without Ray's colour codes and actor prefix."""
    line = _ANSI.sub("", line.rstrip("\r\n"))
    return _RAY_PREFIX.sub("", line, count=1)


def progress_lines(text: str) -> str:
    """The lines of an attempt's log that carry its steps and their figures, cleaned."""
    kept = [line for line in map(clean, text.splitlines()) if _PROGRESS.match(line)]
    return "".join(f"{line}\n" for line in kept)


def steps_seen(text: str) -> set[int]:
    return {int(m["a"] or m["b"]) for m in STEP_LINE.finditer(text)}


def completed_steps(text: str) -> int:
    """Training steps the log shows completed (0 when it shows at most one step started)."""
    return max(0, len(steps_seen(text)) - 1)
