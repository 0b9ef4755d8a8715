"""`--checkpoint-every N|auto`: the save period a run's next attempt is given, as an override of its recipe's save key.

`auto` is the Young/Daly period for what the run has shown (jobs/runs/save_period.py, read by
jobs/runs/run_goodput.save_advice); a run that has not yet timed a step and a save keeps its
recipe's period, and says when `auto` will take effect.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

from jobs.common import commands
from jobs.common.errors import UsageError
from jobs.recipes.catalogue import Recipe
from jobs.recipes.overrides import Override

AUTO: Final = "auto"
Every = int | Literal["auto"]


def parse_flag(value: str | None) -> Every | None:
    """The flag's value: a positive step count or "auto"; anything else refused by name."""
    if value is None:
        return None
    text = value.strip().lower()
    if text == AUTO:
        return AUTO
    if text.isdigit() and int(text) > 0:
        return int(text)
    raise UsageError(
        f"--checkpoint-every {value!r} is neither a positive number of steps nor 'auto'",
        "write --checkpoint-every 10, or --checkpoint-every auto for the Young/Daly period "
        "from the run's measured save time, step time and interruptions",
    )


def not_twice(recipe: Recipe, given: list[Override], every: Every | None) -> list[Override]:
    """`given`, unless it sets the save key that --checkpoint-every sets too."""
    if every is not None and any(o.key == recipe.save_key for o in given):
        raise UsageError(
            f"--checkpoint-every and --set {recipe.save_key} both set the save period",
            "keep one of them",
        )
    return given


def choose(
    recipe: Recipe,
    given: list[Override],
    every: Every | None,
    advice: Mapping[str, Any] | None,
    run: str,
) -> tuple[list[Override], str]:
    """The run's overrides with its save key set as `every` asks, and a note saying what was
    chosen ("" when nothing changed). `advice` is save_advice's young_daly entry, or None."""
    if every is None:
        return given, ""
    user = {o.key: o.value for o in given}
    configured = recipe.value_of(recipe.save_key, user)
    if every == AUTO:
        if not advice:
            return given, (
                f"--checkpoint-every auto: run {run} has not timed a step and a save yet, so it "
                f"keeps {recipe.save_key}={configured}; "
                f"{commands.command('submit', '--resume', run, '--checkpoint-every auto')} "
                "sets the Young/Daly period once it has"
            )
        steps = int(advice["period_steps"])
        why = (
            f"Young/Daly for save {advice['save_s']:.3g} s, step {advice['step_s']:.3g} s, an "
            f"interruption every {advice['mtbi_s'] / 3600:.1f} h ({advice['mtbi_source']})"
        )
    else:
        steps = int(every)  # a step count: AUTO took the branch above
        why = "as asked"
        align = recipe.save_alignment(user)
        if align and steps % align:
            why += (
                f"; warning: not a multiple of grpo.val_period {align}, so NeMo RL saves these "
                "checkpoints without ranking them by the validation metric"
            )
    kept = [o for o in given if o.key != recipe.save_key]
    chosen = [*kept, Override(recipe.save_key, str(steps))]
    return chosen, f"checkpoint every {steps} steps ({recipe.save_key}={steps}, {why})"
