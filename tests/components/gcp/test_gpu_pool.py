"""GpuNodePool: catalogue machine, 8 GPUs, spot/reservation affinity, 9 NICs in order, placement, taint."""

from __future__ import annotations

from components.config import parse_stack_config
from components.gcp.cluster import GkeCluster, GkeClusterArgs
from components.gcp.gpu_pool import GpuNodePool, GpuNodePoolArgs, reservation_affinity
from components.gcp.network import Network, NetworkArgs
from tests.conftest import raw_from_stack
from tools.render import render_with

POOL = "gcp:container/nodePool:NodePool"


def _gpu_pool(config):
    def build() -> None:
        network = Network("net", NetworkArgs.for_stack(config))
        gke = GkeCluster(
            "gke", GkeClusterArgs.for_stack(config, network.main_network, network.main_subnet)
        )
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
    node = _gpu_pool(_config(stack_config, provisioning="reservation", reservation="h200-res"))[
        "nodeConfig"
    ]
    assert node["spot"] is False
    assert node["reservationAffinity"] == {
        "consumeReservationType": "SPECIFIC_RESERVATION",
        "key": "compute.googleapis.com/reservation-name",
        "values": ["projects/example-project/reservations/h200-res"],
    }


def test_shared_reservation_paths_are_kept_as_given(stack_config) -> None:
    config = _config(
        stack_config,
        provisioning="reservation",
        reservation="projects/other-project/reservations/r1",
    )
    assert reservation_affinity(config.gpu, config.project)["values"] == [
        "projects/other-project/reservations/r1"
    ]


def test_on_demand_pool_is_neither_spot_nor_consuming_reservations(stack_config) -> None:
    node = _gpu_pool(_config(stack_config, provisioning="on-demand"))["nodeConfig"]
    assert node["spot"] is False
    assert node["reservationAffinity"]["consumeReservationType"] == "NO_RESERVATION"


def test_machine_and_eight_accelerators_come_from_the_catalogue(stack_config) -> None:
    a4 = _gpu_pool(_config(stack_config))["nodeConfig"]
    assert (
        a4["machineType"],
        a4["guestAccelerators"][0]["type"],
        a4["guestAccelerators"][0]["count"],
    ) == ("a4-highgpu-8g", "nvidia-b200", 8)
    assert a4["guestAccelerators"][0]["gpuDriverInstallationConfig"] == {
        "gpuDriverVersion": "DEFAULT"
    }
    a3 = _gpu_pool(_config(stack_config, machineType="a3-ultragpu-8g"))["nodeConfig"]
    assert (a3["machineType"], a3["guestAccelerators"][0]["type"]) == (
        "a3-ultragpu-8g",
        "nvidia-h200-141gb",
    )
    assert a3["diskType"] == "hyperdisk-balanced"


def test_extra_nics_are_gvnic_then_rdma_zero_to_seven(config) -> None:
    nics = _gpu_pool(config)["networkConfig"]["additionalNodeNetworkConfigs"]
    assert len(nics) == 9
    assert nics[0] == {"network": "rl-test-gvnic-net", "subnetwork": "rl-test-gvnic-sub"}
    assert nics[1:] == [
        {"network": "rl-test-rdma-net", "subnetwork": f"rl-test-rdma-sub-{i}"} for i in range(8)
    ]


def test_gpu_nodes_are_tainted_use_the_metadata_server_and_have_a_static_size(
    stack_config,
) -> None:
    pool = _gpu_pool(_config(stack_config, scaling="static"))
    assert {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"} in pool[
        "nodeConfig"
    ]["taints"]
    assert pool["nodeConfig"]["workloadMetadataConfig"] == {"mode": "GKE_METADATA"}
    assert pool["nodeCount"] == 2 and pool["nodeLocations"] == ["us-east1-b"]


def test_compact_placement_only_when_asked(stack_config) -> None:
    assert "placementPolicy" not in _gpu_pool(_config(stack_config))
    assert _gpu_pool(_config(stack_config, compactPlacement=True))["placementPolicy"] == {
        "type": "COMPACT"
    }


def test_every_gpu_pool_upgrades_in_place_without_a_surge_node(stack_config) -> None:
    for gpu in (
        {"provisioning": "spot"},
        {"provisioning": "reservation", "reservation": "r"},
        {"provisioning": "on-demand"},
    ):
        pool = _gpu_pool(_config(dict(stack_config), **gpu))
        assert pool["upgradeSettings"] == {
            "strategy": "SURGE",
            "maxSurge": 0,
            "maxUnavailable": 1,
        }, gpu


def test_bundled_local_ssds_back_the_nodes_ephemeral_storage(stack_config) -> None:
    for machine in ("a4-highgpu-8g", "a3-ultragpu-8g"):
        pool = _gpu_pool(_config(dict(stack_config), machineType=machine))
        assert pool["nodeConfig"]["ephemeralStorageLocalSsdConfig"] == {"localSsdCount": 32}, (
            machine
        )


def test_a_parked_pool_has_zero_nodes_and_keeps_its_shape(stack_config) -> None:
    pool = _gpu_pool(_config(stack_config, nodeCount=0, scaling="static"))
    assert pool["nodeCount"] == 0
    assert len(pool["networkConfig"]["additionalNodeNetworkConfigs"]) == 9


def test_flex_start_pool_autoscales_from_zero_without_repair_reservation_or_spot(
    stack_config,
) -> None:
    # cluster-toolkit gke-node-pool preconditions and GKE's flex-start guide.
    pool = _gpu_pool(_config(stack_config, provisioning="flex-start", maxRunDurationHours=72))
    assert "nodeCount" not in pool and pool["initialNodeCount"] == 0
    assert pool["autoscaling"] == {
        "totalMinNodeCount": 0,
        "totalMaxNodeCount": 2,
        "locationPolicy": "ANY",
    }
    assert pool["management"] == {"autoRepair": False, "autoUpgrade": True}
    node = pool["nodeConfig"]
    assert (
        node["flexStart"] is True and node["spot"] is False and node["maxRunDuration"] == "259200s"
    )
    assert node["reservationAffinity"] == {"consumeReservationType": "NO_RESERVATION"}
    assert node["labels"]["rl-on-gke/provisioning"] == "flex-start"


def test_flex_start_without_a_run_limit_leaves_gkes_seven_day_default(stack_config) -> None:
    node = _gpu_pool(_config(stack_config, provisioning="flex-start"))["nodeConfig"]
    assert node["flexStart"] is True and "maxRunDuration" not in node


def _problems(stack_config, **gpu) -> list[str]:
    import pytest

    from components.config import ConfigError

    with pytest.raises(ConfigError) as caught:
        _config(stack_config, **gpu)
    return caught.value.problems


def test_only_valid_flex_start_combinations_are_accepted(stack_config) -> None:
    import copy

    assert _problems(copy.deepcopy(stack_config), provisioning="flex-start", reservation="r1") == [
        "rl-on-gke:gpu.reservation = 'r1': only allowed with provisioning 'reservation' (provisioning is 'flex-start')"
    ]
    assert _problems(copy.deepcopy(stack_config), provisioning="spot", maxRunDurationHours=24) == [
        "rl-on-gke:gpu.maxRunDurationHours = 24: only allowed with provisioning 'flex-start' (provisioning is 'spot')"
    ]
    (too_long,) = _problems(
        copy.deepcopy(stack_config), provisioning="flex-start", maxRunDurationHours=200
    )
    assert too_long.startswith("rl-on-gke:gpu.maxRunDurationHours = 200: ") and "168" in too_long
    (unknown,) = _problems(copy.deepcopy(stack_config), provisioning="dws")
    assert unknown.startswith("rl-on-gke:gpu.provisioning = 'dws': ") and "'flex-start'" in unknown


def _gpu_pool_resource(config):
    def build() -> None:
        network = Network("net", NetworkArgs.for_stack(config))
        gke = GkeCluster(
            "gke", GkeClusterArgs.for_stack(config, network.main_network, network.main_subnet)
        )
        GpuNodePool(
            "gpu",
            GpuNodePoolArgs.for_stack(
                config,
                cluster=gke.cluster,
                service_account=gke.node_service_account.email,
                nics=network.gpu_nics,
            ),
        )

    return render_with(build, {}).one(POOL, "gpu-pool")


def test_a_parked_flex_start_pool_never_renders_a_zero_maximum(stack_config) -> None:
    """A nodeCount of 0 on flex-start rendered total min 0 / max 0, which GKE refuses
    ("max_node_count and total_max_node_count cannot be both set to zero",
    terraform-google-kubernetes-engine#1554); the same for a stack created parked. Parked, the
    pool keeps a ceiling of one node and scales to none because no Ray worker asks for a GPU."""
    pool = _gpu_pool(_config(stack_config, provisioning="flex-start", nodeCount=0))
    assert pool["initialNodeCount"] == 0 and "nodeCount" not in pool
    autoscaling = pool["autoscaling"]
    assert autoscaling["totalMinNodeCount"] == 0
    assert autoscaling["totalMaxNodeCount"] >= 1
    assert "minNodeCount" not in autoscaling and "maxNodeCount" not in autoscaling


def test_a_flex_start_pool_leaves_upgrade_settings_to_gke_and_ignores_them(stack_config) -> None:
    """GKE forces the SHORT_LIVED strategy on flex-start pools while the provider
    accepts only SURGE or BLUE_GREEN (google-beta resource_container_node_pool.go line 471), so a
    SURGE 0/1 the program sets never converges: every preview showed a diff."""
    pool = _gpu_pool_resource(_config(stack_config, provisioning="flex-start"))
    assert "upgradeSettings" not in pool.inputs
    assert "upgradeSettings" in pool.ignore_changes


def test_static_pools_keep_their_in_place_upgrade_and_do_not_ignore_it(config) -> None:
    """Unlike flex-start, spot / reservation / on-demand pools keep SURGE 0/1."""
    pool = _gpu_pool_resource(config)
    assert pool.inputs["upgradeSettings"]["maxSurge"] == 0
    assert "upgradeSettings" not in pool.ignore_changes


# ---------------------------------------------------------------------------- scaling on demand


def test_spot_and_on_demand_pools_autoscale_from_zero_to_node_count_by_default(
    stack_config,
) -> None:
    """Nodes come when Ray's autoscaler asks for GPU workers and go when it
    releases them; no static size and no initial count (ForceNew: it would replace a pool that
    was deployed static)."""
    import copy

    for mode in ("spot", "on-demand"):
        pool = _gpu_pool(_config(copy.deepcopy(stack_config), provisioning=mode))
        assert "nodeCount" not in pool and "initialNodeCount" not in pool, mode
        assert pool["autoscaling"] == {
            "totalMinNodeCount": 0,
            "totalMaxNodeCount": 2,
            "locationPolicy": "ANY",
        }, mode
        # Everything else of the pool is as static: auto-repair, in-place upgrades, its NICs.
        assert pool["management"] == {"autoRepair": True, "autoUpgrade": True}
        assert pool["upgradeSettings"]["maxSurge"] == 0
        assert len(pool["networkConfig"]["additionalNodeNetworkConfigs"]) == 9


def test_a_reservation_pool_stays_static_unless_asked(stack_config) -> None:
    import copy

    static = _gpu_pool(
        _config(copy.deepcopy(stack_config), provisioning="reservation", reservation="r1")
    )
    assert static["nodeCount"] == 2 and "autoscaling" not in static
    asked = _gpu_pool(
        _config(
            copy.deepcopy(stack_config),
            provisioning="reservation",
            reservation="r1",
            scaling="on-demand",
        )
    )
    assert "nodeCount" not in asked and asked["autoscaling"]["totalMaxNodeCount"] == 2
    assert asked["nodeConfig"]["reservationAffinity"]["consumeReservationType"] == (
        "SPECIFIC_RESERVATION"
    )


def test_a_static_spot_pool_keeps_its_fixed_size(stack_config) -> None:
    pool = _gpu_pool(_config(stack_config, scaling="static"))
    assert pool["nodeCount"] == 2 and "autoscaling" not in pool


def test_a_parked_autoscaled_pool_never_renders_a_zero_maximum(stack_config) -> None:
    """GKE refuses max 0 (terraform-google-kubernetes-engine#1554), as for flex-start."""
    pool = _gpu_pool(_config(stack_config, nodeCount=0))
    assert pool["autoscaling"]["totalMinNodeCount"] == 0
    assert pool["autoscaling"]["totalMaxNodeCount"] == 1


def test_scaling_and_idle_minutes_are_refused_by_key_with_what_is_allowed(stack_config) -> None:
    import copy

    (bad_mode,) = _problems(copy.deepcopy(stack_config), scaling="auto")
    assert bad_mode.startswith("rl-on-gke:gpu.scaling = 'auto': ")
    assert "'static'" in bad_mode and "'on-demand'" in bad_mode
    (zero,) = _problems(copy.deepcopy(stack_config), idleMinutes=0)
    assert zero.startswith("rl-on-gke:gpu.idleMinutes = 0: ") and "1" in zero
    assert _problems(copy.deepcopy(stack_config), scaling="static", idleMinutes=30) == [
        "rl-on-gke:gpu.idleMinutes = 30: only allowed when the GPU nodes scale on demand "
        "(scaling is 'static'; set rl-on-gke:gpu.scaling: on-demand to use it)"
    ]
    assert _problems(
        copy.deepcopy(stack_config), provisioning="reservation", reservation="r", idleMinutes=30
    ) == [
        "rl-on-gke:gpu.idleMinutes = 30: only allowed when the GPU nodes scale on demand "
        "(scaling is 'static', the default for provisioning 'reservation'; set "
        "rl-on-gke:gpu.scaling: on-demand to use it)"
    ]
