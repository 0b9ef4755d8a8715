"""GpuNodePool: catalogue machine, 8 GPUs, spot/reservation affinity, 9 NICs in order, placement, taint."""

from __future__ import annotations

from components.cluster import GkeCluster, GkeClusterArgs
from components.config import parse_stack_config
from components.gpu_pool import GpuNodePool, GpuNodePoolArgs, reservation_affinity
from components.network import Network, NetworkArgs
from tests.conftest import raw_from_stack
from tools.render import render_with

POOL = "gcp:container/nodePool:NodePool"


def _gpu_pool(config):
    def build() -> None:
        network = Network("net", NetworkArgs.for_stack(config))
        gke = GkeCluster("gke", GkeClusterArgs.for_stack(config, network.main_network, network.main_subnet))
        GpuNodePool(
            "gpu",
            GpuNodePoolArgs.for_stack(
                config,
                cluster=gke.cluster,
                service_account=gke.node_service_account.email,
                nics=network.gpu_nics,
            ),
        )

    return render_with(build, {}).one(POOL, "gpu-pool").inputs


def _config(stack_config, **gpu):
    stack_config["rl-on-gke:gpu"] = {**stack_config["rl-on-gke:gpu"], **gpu}
    return parse_stack_config(raw_from_stack(stack_config))


def test_spot_pool_consumes_no_reservation(config) -> None:
    node = _gpu_pool(config)["nodeConfig"]
    assert node["spot"] is True
    assert node["reservationAffinity"] == {"consumeReservationType": "NO_RESERVATION"}


def test_reservation_pool_targets_exactly_that_reservation_and_is_not_spot(stack_config) -> None:
    node = _gpu_pool(_config(stack_config, provisioning="reservation", reservation="h200-res"))["nodeConfig"]
    assert node["spot"] is False
    assert node["reservationAffinity"] == {
        "consumeReservationType": "SPECIFIC_RESERVATION",
        "key": "compute.googleapis.com/reservation-name",
        "values": ["projects/example-project/reservations/h200-res"],
    }


def test_shared_reservation_paths_are_kept_as_given(stack_config) -> None:
    config = _config(stack_config, provisioning="reservation", reservation="projects/other-project/reservations/r1")
    assert reservation_affinity(config.gpu, config.project)["values"] == ["projects/other-project/reservations/r1"]


def test_on_demand_pool_is_neither_spot_nor_consuming_reservations(stack_config) -> None:
    node = _gpu_pool(_config(stack_config, provisioning="on-demand"))["nodeConfig"]
    assert node["spot"] is False
    assert node["reservationAffinity"]["consumeReservationType"] == "NO_RESERVATION"


def test_machine_and_eight_accelerators_come_from_the_catalogue(stack_config) -> None:
    a4 = _gpu_pool(_config(stack_config))["nodeConfig"]
    assert (a4["machineType"], a4["guestAccelerators"][0]["type"], a4["guestAccelerators"][0]["count"]) == (
        "a4-highgpu-8g", "nvidia-b200", 8)
    assert a4["guestAccelerators"][0]["gpuDriverInstallationConfig"] == {"gpuDriverVersion": "DEFAULT"}
    a3 = _gpu_pool(_config(stack_config, machineType="a3-ultragpu-8g"))["nodeConfig"]
    assert (a3["machineType"], a3["guestAccelerators"][0]["type"]) == ("a3-ultragpu-8g", "nvidia-h200-141gb")
    assert a3["diskType"] == "hyperdisk-balanced"


def test_extra_nics_are_gvnic_then_rdma_zero_to_seven(config) -> None:
    nics = _gpu_pool(config)["networkConfig"]["additionalNodeNetworkConfigs"]
    assert len(nics) == 9
    assert nics[0] == {"network": "rl-test-gvnic-net", "subnetwork": "rl-test-gvnic-sub"}
    assert nics[1:] == [{"network": "rl-test-rdma-net", "subnetwork": f"rl-test-rdma-sub-{i}"} for i in range(8)]


def test_gpu_nodes_are_tainted_use_the_metadata_server_and_have_a_static_size(config) -> None:
    pool = _gpu_pool(config)
    assert {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"} in pool["nodeConfig"]["taints"]
    assert pool["nodeConfig"]["workloadMetadataConfig"] == {"mode": "GKE_METADATA"}
    assert pool["nodeCount"] == 2 and pool["nodeLocations"] == ["us-east1-b"]


def test_compact_placement_only_when_asked(stack_config) -> None:
    assert "placementPolicy" not in _gpu_pool(_config(stack_config))
    assert _gpu_pool(_config(stack_config, compactPlacement=True))["placementPolicy"] == {"type": "COMPACT"}


def test_every_gpu_pool_upgrades_in_place_without_a_surge_node(stack_config) -> None:
    for gpu in ({"provisioning": "spot"}, {"provisioning": "reservation", "reservation": "r"},
                {"provisioning": "on-demand"}):
        pool = _gpu_pool(_config(dict(stack_config), **gpu))
        assert pool["upgradeSettings"] == {"strategy": "SURGE", "maxSurge": 0, "maxUnavailable": 1}, gpu


def test_bundled_local_ssds_back_the_nodes_ephemeral_storage(stack_config) -> None:
    for machine in ("a4-highgpu-8g", "a3-ultragpu-8g"):
        pool = _gpu_pool(_config(dict(stack_config), machineType=machine))
        assert pool["nodeConfig"]["ephemeralStorageLocalSsdConfig"] == {"localSsdCount": 32}, machine


def test_a_parked_pool_has_zero_nodes_and_keeps_its_shape(stack_config) -> None:
    pool = _gpu_pool(_config(stack_config, nodeCount=0))
    assert pool["nodeCount"] == 0
    assert len(pool["networkConfig"]["additionalNodeNetworkConfigs"]) == 9
