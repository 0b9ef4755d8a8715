"""Reading the Pulumi stack outputs that say where a stack's Ray cluster is and what it runs."""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import TYPE_CHECKING

from jobs.common.errors import Unreachable, UsageError

if TYPE_CHECKING:
    from components.stack_outputs import StackOutputs

PULUMI_TIMEOUT_S = 120


def read(stack: str) -> StackOutputs:
    """`pulumi stack output --json --stack NAME`, without --show-secrets."""
    pulumi = shutil.which("pulumi")
    if pulumi is None:
        raise Unreachable(
            f"cannot read stack {stack!r}: the pulumi CLI is not on PATH",
            "install Pulumi, or pass --address http://HOST:8265",
        )
    try:
        done = subprocess.run(
            [pulumi, "stack", "output", "--json", "--stack", stack],
            capture_output=True,
            text=True,
            timeout=PULUMI_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        raise Unreachable(
            f"pulumi stack output --stack {stack} took over {PULUMI_TIMEOUT_S} s",
            "check `pulumi whoami` and your network",
        ) from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise Unreachable(
            f"pulumi stack output --stack {stack} failed: {last}",
            "run from the project directory after `pulumi login`; "
            "list stacks with `pulumi stack ls`",
        )
    try:
        data = json.loads(done.stdout or "{}")
    except json.JSONDecodeError:
        raise Unreachable(
            f"stack {stack!r} gave unreadable output",
            f"check `pulumi stack output --json --stack {stack}`",
        ) from None
    return parse(stack, data)


def parse(stack: str, data: object) -> StackOutputs:
    """Validate the outputs; a missing output or an unusable value is one line naming it."""
    # Lazy, for start-up time: the model is built only when a stack is read.
    from pydantic import ValidationError

    from components.stack_outputs import StackOutputs

    try:
        outputs = StackOutputs.model_validate(data)
    except ValidationError as e:
        errors = e.errors()
    else:
        _check_gpus(stack, outputs)
        return outputs
    missing = sorted({str(err["loc"][0]) for err in errors if err["type"] == "missing"})
    if missing or not isinstance(data, dict):
        raise Unreachable(
            f"stack {stack!r} lacks outputs {', '.join(missing) or '(all)'}",
            f"deploy the Ray cluster first: pulumi up --stack {stack}",
        )
    first = errors[0]
    key = str(first["loc"][0]) if first["loc"] else "?"
    raise UsageError(
        f"stack {stack!r} output {key}={data.get(key)!r} is not usable: {first['msg'].lower()}",
        f"check `pulumi stack output --json --stack {stack}`",
    )


def _check_gpus(stack: str, outputs: StackOutputs) -> None:
    # A GPU node count below 0 or no GPUs per node is a broken output, whatever the command.
    # 0 nodes is a parked stack, readable by every command: only a new attempt needs GPUs
    # (`require_gpus`), while list, status, logs, stop and export must still reach the head.
    for field in ("gpu_node_count", "gpus_per_node"):
        value = getattr(outputs, field)
        if value < 1 and not (field == "gpu_node_count" and value == 0):
            raise UsageError(
                f"stack {stack!r} output {outputs.output_name(field)}={value!r} is not "
                "usable: a run needs at least one GPU node with at least one GPU",
                f"grow the stack's GPU node pool (pulumi up --stack {stack})",
            )


def require_gpus(stack: str, outputs: StackOutputs) -> None:
    """Refuse a new attempt on a parked stack: it would render cluster.num_nodes=0 and the
    framework would fail on the cluster instead of here."""
    if outputs.gpu_node_count == 0:
        # gpu.nodeCount 0 is how a stack parks its GPUs (README "Park the GPUs").
        raise UsageError(
            f"stack {stack!r} is parked: its GPU node pool has 0 nodes (gpuNodeCount=0)",
            f"unpark it: pulumi config set --path 'rl-on-gke:gpu.nodeCount' <nodes> --type int "
            f"--stack {stack} && pulumi up --stack {stack}",
        )
