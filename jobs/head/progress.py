"""Training progress read from an attempt's log: how many steps it completed.

The crash rule (jobs/head/restart_policy.py `is_crash`) asks whether an attempt made progress
since the previous failure. Checkpoints alone are too coarse: a save period is about an hour for
the 72B recipe, so two transient failures inside one would end a 20-hour run as a "crash"
(issue 24 item 6). An attempt that completed a training step is not failing in its code or
config. The frameworks print a line as each step starts:
- NeMo RL v0.4.0: `========== Step k/M ==========` (nemo_rl/algorithms/grpo.py, the
  training loop's header line);
- veRL 0.6.0: its console logger prints `step:k - ...` with the step's metrics
  (verl/utils/tracking.py, the console backend).
A step is complete when a later one has started, so the count is distinct steps seen minus one.
Standard library only: it runs in the supervisor on the head.
"""

from __future__ import annotations

import re

STEP_LINE = re.compile(r"\bStep (?P<a>[0-9]+)/[0-9]+|\bstep:(?P<b>[0-9]+)\b")


def steps_seen(text: str) -> set[int]:
    return {int(m["a"] or m["b"]) for m in STEP_LINE.finditer(text)}


def completed_steps(text: str) -> int:
    """Training steps the log shows completed (0 when it shows at most one step started)."""
    return max(0, len(steps_seen(text)) - 1)
