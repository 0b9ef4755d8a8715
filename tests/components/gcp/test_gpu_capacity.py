"""The GPU capacity check: the whole program under mocks, the invokes answered in their documented shapes.

`OfflineMocks.call` answers `gcp:compute/getMachineTypes` and `gcp:compute/getReservation` from an
`OfflineCapacity` world, in the shape of pulumi-gcp's GetMachineTypesResult / GetReservationResult
(camelCase on the wire); a missing reservation is the empty result the data source returns for a 404.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components.gcp.gpu_capacity import CapacityError
from tests.conftest import BASE_STACK_CONFIG
from tools.render import OfflineCapacity, load_stack_file, render


class Recording(OfflineCapacity):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.asked: list[tuple[str, dict[str, Any]]] = []

    def answer(self, token: str, args: Any) -> dict[str, Any]:
        self.asked.append((token.split(":")[-1], dict(args)))
        return super().answer(token, args)


def _h200() -> dict[str, Any]:
    config, _ = load_stack_file("h200")
    config["gcp:project"] = "example-project"
    return config


def _problems(config: dict[str, Any], world: OfflineCapacity, monkeypatch) -> list[str]:
    import tools.render as render_module

    registered: list[str] = []
    original = render_module.RecordingMonitor.RegisterResource

    def spy(self, request):
        if request.type != "pulumi:pulumi:Stack":
            registered.append(request.type)
        return original(self, request)

    monkeypatch.setattr(render_module.RecordingMonitor, "RegisterResource", spy)
    with pytest.raises(CapacityError) as caught:
        render(config, stack="h200", capacity=world)
    assert registered == []  # checked before anything is registered
    return caught.value.problems


@pytest.mark.plan
def test_a_reservation_that_holds_the_stack_passes_and_is_looked_up_by_name_zone_and_project() -> (
    None
):
    world = Recording(
        machine_types={"us-central1-b": ["a3-ultragpu-8g"]},
        reservations={
            ("example-project", "us-central1-b", "h200-training-reservation"): ("a3-ultragpu-8g", 4)
        },
    )
    render(_h200(), stack="h200", capacity=world)
    assert world.asked == [
        (
            "getMachineTypes",
            {
                "filter": "name = a3-ultragpu-8g",
                "project": "example-project",
                "zone": "us-central1-b",
            },
        ),
        (
            "getReservation",
            {
                "name": "h200-training-reservation",
                "project": "example-project",
                "zone": "us-central1-b",
            },
        ),
    ]


@pytest.mark.plan
def test_a_missing_reservation_fails_naming_the_key(monkeypatch) -> None:
    world = OfflineCapacity(machine_types={"us-central1-b": ["a3-ultragpu-8g"]})
    assert _problems(_h200(), world, monkeypatch) == [
        "rl-on-gke:gpu.reservation = 'h200-training-reservation': no reservation h200-training-reservation in "
        "zone us-central1-b (rl-on-gke:zone) of project example-project (gcp.compute.getReservation)"
    ]


@pytest.mark.plan
def test_a_reservation_of_another_machine_and_too_few_vms_fails_on_both(monkeypatch) -> None:
    world = OfflineCapacity(
        machine_types={"us-central1-b": ["a3-ultragpu-8g"]},
        reservations={
            ("example-project", "us-central1-b", "h200-training-reservation"): ("a4-highgpu-8g", 2)
        },
    )
    assert _problems(_h200(), world, monkeypatch) == [
        "rl-on-gke:gpu.reservation = 'h200-training-reservation': reserves a4-highgpu-8g, not a3-ultragpu-8g "
        "(rl-on-gke:gpu.machineType)",
        "rl-on-gke:gpu.reservation = 'h200-training-reservation': holds 2 VM(s) but rl-on-gke:gpu.nodeCount is 4",
    ]


@pytest.mark.plan
def test_a_zone_without_the_machine_type_fails_naming_the_key(monkeypatch) -> None:
    config = copy.deepcopy(BASE_STACK_CONFIG)  # spot a4-highgpu-8g in us-east1-b
    world = OfflineCapacity(machine_types={"us-east1-b": ["a3-ultragpu-8g"]})
    assert _problems(config, world, monkeypatch) == [
        "rl-on-gke:gpu.machineType = 'a4-highgpu-8g': zone us-east1-b (rl-on-gke:zone) of project example-project "
        "does not offer it (gcp.compute.getMachineTypes); pick a zone that does"
    ]


@pytest.mark.plan
def test_a_shared_reservation_is_looked_up_in_its_own_project_without_its_block() -> None:
    config = _h200()
    config["rl-on-gke:gpu"] = {
        **config["rl-on-gke:gpu"],
        "reservation": "projects/capacity-host/reservations/h200/reservationBlocks/b1",
    }
    world = Recording(
        machine_types={"us-central1-b": ["a3-ultragpu-8g"]},
        reservations={("capacity-host", "us-central1-b", "h200"): ("a3-ultragpu-8g", 4)},
    )
    render(config, stack="h200", capacity=world)
    assert world.asked[-1] == (
        "getReservation",
        {"name": "h200", "project": "capacity-host", "zone": "us-central1-b"},
    )


@pytest.mark.plan
def test_a_parked_stack_asks_for_no_capacity_and_is_not_checked() -> None:
    config = _h200()
    config["rl-on-gke:gpu"] = {**config["rl-on-gke:gpu"], "nodeCount": 0}
    world = Recording()  # nothing exists
    render(config, stack="h200", capacity=world)
    assert world.asked == []


@pytest.mark.plan
def test_a_failing_lookup_fails_the_program_with_the_providers_error_before_any_resource(
    monkeypatch,
) -> None:
    import tools.render as render_module

    class Failing(OfflineCapacity):
        def answer(self, token: str, args: Any) -> dict[str, Any]:
            raise RuntimeError(
                "googleapi: Error 403: Compute Engine API has not been used in project"
            )

    registered: list[str] = []
    original = render_module.RecordingMonitor.RegisterResource
    monkeypatch.setattr(
        render_module.RecordingMonitor,
        "RegisterResource",
        lambda self, request: registered.append(request.type) or original(self, request),
    )
    with pytest.raises(RuntimeError, match="Compute Engine API has not been used"):
        render(_h200(), stack="h200", capacity=Failing())
    assert [t for t in registered if t != "pulumi:pulumi:Stack"] == []


def _args(**overrides: Any):
    from components.gcp.gpu_capacity import GpuCapacityArgs

    fields = {
        "project": "p",
        "zone": "us-central1-b",
        "machine_type": "a3-ultragpu-8g",
        "node_count": 2,
        "provisioning": "reservation",
        "reservation": "r1",
    }
    return GpuCapacityArgs(**{**fields, **overrides})


def _reservation(required: bool, template: str = "", machine: str | None = "a3-ultragpu-8g"):
    properties = [{"machine_type": machine}] if machine else []
    return {
        "self_link": "https://www.googleapis.com/compute/v1/projects/p/zones/us-central1-b/reservations/r1",
        "specific_reservation_required": required,
        "specific_reservations": [
            {"count": 2, "source_instance_template": template, "instance_properties": properties}
        ],
    }


def test_a_reservation_any_vm_may_consume_is_refused_as_cluster_toolkit_does() -> None:
    """Cluster-toolkit only targets a reservation whose
    specificReservationRequired is true (modules/compute/gke-node-pool/reservation_definitions.tf
    line 58, checked by the main.tf precondition "Its consumption type must be specific"); the
    check did not look at it."""
    from components.gcp.gpu_capacity import reservation_problems

    problems = reservation_problems(_args(), _reservation(required=False))
    assert len(problems) == 1
    assert problems[0].startswith("rl-on-gke:gpu.reservation = 'r1': ")
    assert "specificReservationRequired" in problems[0]
    assert reservation_problems(_args(), _reservation(required=True)) == []


def test_a_reservation_defined_by_an_instance_template_is_checked_through_the_template() -> None:
    """A reservation created from an instance template has no
    instanceProperties; it was reported as one that "reserves no machine type". Its machine type
    is the template's."""
    from components.gcp.gpu_capacity import reservation_problems

    template = "projects/p/global/instanceTemplates/h200-tpl"
    asked: list[str] = []

    def machine_of(link: str) -> str:
        asked.append(link)
        return "a3-ultragpu-8g"

    reservation = _reservation(required=True, template=template, machine=None)
    assert reservation_problems(_args(), reservation, machine_of) == []
    assert asked == [template]
    other = reservation_problems(_args(), reservation, lambda link: "a4-highgpu-8g")
    assert len(other) == 1 and "reserves a4-highgpu-8g" in other[0]
    assert "no machine type" not in other[0] and "h200-tpl" in other[0]
