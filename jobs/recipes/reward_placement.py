"""Where a recipe's reward runs model-written code: the stack's sandbox service, or, only when
the user accepts it, inside the trainer pod.

The code-contests reward compiles and runs the model's C++ (jobs/rewards/code_contests.py). With
the stack's executor service (stack output `codeSandboxUrl`, exported when `rewards.codeSandbox`
is on) it runs on a gVisor node pool with no token, no Secret and egress denied, and the job gets
CODE_SANDBOX_URL. Without it the same executor runs inside the trainer's Ray pod, where it cannot
make namespaces (no CAP_SYS_ADMIN) and falls back to its unprivileged mode: rlimits, an empty
environment, a private directory and a process-group kill, but the program runs as the pod's own
user, beside the trainer's files, its /proc and the network. That is refused unless the user
passes --allow-unsandboxed-reward.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from jobs.common.errors import UsageError

if TYPE_CHECKING:
    from components.stack_outputs import StackOutputs
    from jobs.recipes.catalogue import Recipe

ALLOW_FLAG = "--allow-unsandboxed-reward"


@dataclass(frozen=True)
class Decision:
    """The executor URL the job gets (None: in-process) and what to tell the user."""

    url: str | None = None
    notes: list[str] = field(default_factory=list)


def _risk(recipe: Recipe, source: str) -> str:
    return (
        f"{source} has no code sandbox service (stack output codeSandboxUrl), so recipe "
        f"{recipe.name} would compile and run model-written C++ inside the trainer pod with "
        "only rlimits, an empty environment and a process-group kill (the sandbox's "
        "unprivileged mode): the programs run as the pod's user, next to the trainer's "
        "files, other processes' environments (HF_TOKEN) and the network"
    )


def decide(
    recipe: Recipe, outputs: StackOutputs | None, allow: bool, source: str, dry_run: bool = False
) -> Decision:
    """The sandbox for one submission; raises UsageError when code would run unsandboxed and
    `allow` is not set (a dry run only warns: it submits nothing)."""
    if not recipe.runs_model_code:
        return Decision()
    url = outputs.code_sandbox_url if outputs is not None else None
    if url:
        return Decision(
            url, [f"note: model-written code runs in the stack's sandbox service ({url})"]
        )
    if dry_run:
        return Decision(
            None,
            [
                f"warning: {_risk(recipe, source)}; submitting needs "
                f"{ALLOW_FLAG} unless the stack has the service"
            ],
        )
    if allow:
        return Decision(None, [f"warning: {_risk(recipe, source)} ({ALLOW_FLAG} given)"])
    raise UsageError(
        _risk(recipe, source),
        "enable rewards.codeSandbox in the stack and run `pulumi up`, then submit "
        f"with --stack; or pass {ALLOW_FLAG} to accept running it in the trainer pod",
    )
