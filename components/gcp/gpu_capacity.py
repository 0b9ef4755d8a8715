"""The GPU capacity a stack asks for, looked up through the Compute API before anything is registered.

Without this, a missing reservation, a reservation of another machine type, or a zone without the
machine type shows up as a GPU node pool that times out after an hour. Two pulumi-gcp invokes
answer it in seconds, at `pulumi preview` as at `up`:
  - `gcp.compute.get_machine_types(zone, filter="name = <type>")`: the zone offers the machine type
    (any capacity mode);
  - `gcp.compute.get_reservation(name, zone, project)`: the named reservation exists in the stack's
    zone, reserves the stack's machine type and holds at least `gpu.nodeCount` VMs
    (`specific_reservations[].count`, `instance_properties[].machine_type`, or for a reservation
    created from an instance template, `source_instance_template`'s machine type through
    `gcp.compute.get_instance_template` / `get_region_instance_template`), and only specific
    consumers may use it (`specific_reservation_required`), as cluster-toolkit requires before it
    targets one (cluster-toolkit 1047080375af modules/compute/gke-node-pool/reservation_definitions.tf
    line 58, and the main.tf precondition at lines 351-367: "Its consumption type must be
    specific"). A reservation that does
    not exist comes back as an empty result, not an error: the data source reads it through the
    resource's Read, whose 404 handling clears the id and returns no error
    (terraform-provider-google-beta data_source_google_compute_reservation.go lines 45-63,
    resource_compute_reservation.go line 862 `HandleNotFoundError`).
Spot stock cannot be looked up ahead (no API says whether a zone has spot B200s now), and
pulumi-gcp 10.2 has no network-profile data source, so the zone's RoCE profile stays a documented
precondition (README "Capacity"). A parked stack (nodeCount 0) asks for nothing and is not checked.
The lookups need the Compute API on, which the README's one-time step enables.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi_gcp as gcp

from components.config import StackConfig


class CapacityError(ValueError):
    """The capacity the stack asks for is not there, one line per problem, each naming its key."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(
            f"the stack's GPU capacity is not available ({len(problems)} problem(s)):\n{lines}"
        )


@dataclass(frozen=True)
class GpuCapacityArgs:
    """What the check reads of the stack: the GPU ask and where."""

    project: str
    zone: str
    machine_type: str
    node_count: int
    provisioning: str
    reservation: str | None

    @classmethod
    def for_stack(cls, config: StackConfig) -> GpuCapacityArgs:
        return cls(
            project=config.project,
            zone=config.zone,
            machine_type=config.gpu.machine_type,
            node_count=config.gpu.node_count,
            provisioning=config.gpu.provisioning,
            reservation=config.gpu.reservation,
        )

    def reservation_path(self) -> tuple[str, str]:
        """(project, name) of the reservation; a block suffix belongs to the same reservation."""
        assert self.reservation is not None
        parts = self.reservation.split("/")
        if parts[0] == "projects":
            return parts[1], parts[3]
        return self.project, parts[0]


def _get(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def machine_type_problems(args: GpuCapacityArgs, machine_types: Sequence[Any]) -> list[str]:
    if any(_get(m, "name") == args.machine_type for m in machine_types):
        return []
    return [
        f"rl-on-gke:gpu.machineType = {args.machine_type!r}: zone {args.zone} (rl-on-gke:zone) of project "
        f"{args.project} does not offer it (gcp.compute.getMachineTypes); pick a zone that does"
    ]


def _no_template(link: str) -> str | None:
    raise AssertionError(f"no instance template lookup given for {link}")


def reservation_problems(
    args: GpuCapacityArgs,
    reservation: Any,
    template_machine_type: Callable[[str], str | None] = _no_template,
) -> list[str]:
    """What is wrong with the reservation for this stack; `template_machine_type` reads the
    machine type of the instance template a reservation was created from."""
    project, name = args.reservation_path()
    key = f"rl-on-gke:gpu.reservation = {args.reservation!r}"
    if not _get(reservation, "self_link"):
        return [
            f"{key}: no reservation {name} in zone {args.zone} (rl-on-gke:zone) of project {project} "
            "(gcp.compute.getReservation)"
        ]
    problems = []
    if not _get(reservation, "specific_reservation_required"):
        problems.append(
            f"{key}: any VM may consume it (specificReservationRequired is false), so other "
            "workloads can take its machines before the pool does; GKE's SPECIFIC_RESERVATION "
            "pools and cluster-toolkit expect a reservation created with "
            "--require-specific-reservation"
        )
    specific = list(_get(reservation, "specific_reservations") or [])
    count = sum(int(_get(s, "count") or 0) for s in specific)
    types: set[str] = set()
    templates: list[str] = []
    for entry in specific:
        properties = list(_get(entry, "instance_properties") or [])
        types |= {str(_get(p, "machine_type")) for p in properties if _get(p, "machine_type")}
        template = _get(entry, "source_instance_template")
        if template and not properties:
            templates.append(str(template))
            machine = template_machine_type(str(template))
            if machine:
                types.add(machine)
    if args.machine_type not in types:
        source = f" (from instance template {', '.join(templates)})" if templates else ""
        problems.append(
            f"{key}: reserves {', '.join(sorted(types)) or 'no machine type'}{source}, not "
            f"{args.machine_type} (rl-on-gke:gpu.machineType)"
        )
    if count < args.node_count:
        problems.append(
            f"{key}: holds {count} VM(s) but rl-on-gke:gpu.nodeCount is {args.node_count}"
        )
    return problems


@dataclass(frozen=True)
class Lookups:
    """The two invokes, replaceable in tests that need no engine."""

    machine_types: Callable[[GpuCapacityArgs], Sequence[Any]]
    reservation: Callable[[GpuCapacityArgs], Any]
    template_machine_type: Callable[[str], str | None] = _no_template


def _machine_types(args: GpuCapacityArgs) -> Sequence[Any]:
    result = gcp.compute.get_machine_types(
        zone=args.zone, project=args.project, filter=f"name = {args.machine_type}"
    )
    return list(result.machine_types or [])


def _reservation(args: GpuCapacityArgs) -> Any:
    project, name = args.reservation_path()
    return gcp.compute.get_reservation(name=name, zone=args.zone, project=project)


def _template_machine_type(link: str) -> str | None:
    """The machine type of an instance template given by URL or path (global or regional)."""
    parts = link.split("/")
    try:
        project = parts[parts.index("projects") + 1]
        name = parts[-1]
    except (ValueError, IndexError):
        return None
    if "regions" in parts:
        region = parts[parts.index("regions") + 1]
        template = gcp.compute.get_region_instance_template(
            name=name, project=project, region=region
        )
        return template.machine_type or None
    return gcp.compute.get_instance_template(name=name, project=project).machine_type or None


INVOKES = Lookups(
    machine_types=_machine_types,
    reservation=_reservation,
    template_machine_type=_template_machine_type,
)


def capacity_problems(args: GpuCapacityArgs, lookups: Lookups = INVOKES) -> list[str]:
    """Every problem with the stack's GPU capacity, each naming its key.

    A lookup that itself fails (Compute API off, no permission) is not caught here: the Pulumi
    runtime records a failed invoke and fails the program with the provider's own error at the
    end (pulumi/runtime/rpc_manager.py `unhandled_exception`), so it would be reported anyway.
    """
    if args.node_count == 0:
        return []
    problems = machine_type_problems(args, lookups.machine_types(args))
    if args.provisioning == "reservation":
        problems += reservation_problems(
            args, lookups.reservation(args), lookups.template_machine_type
        )
    return problems


def check_gpu_capacity(args: GpuCapacityArgs, lookups: Lookups = INVOKES) -> None:
    """Raise CapacityError naming each problem; return when the capacity is there."""
    problems = capacity_problems(args, lookups)
    if problems:
        raise CapacityError(problems)
