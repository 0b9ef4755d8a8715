"""Stack config validation: each rule rejects its bad value by key, and nothing else escapes."""

from __future__ import annotations

import copy
from typing import Any, get_args

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from components.catalogue import CAPACITY_MODES, LUSTRE_TIERS
from components.config import (
    ConfigError,
    GpuSettings,
    StackConfig,
    parse_stack_config,
    raw_config_from_pulumi,
)
from components.stack_inputs import known_keys as program_known_keys
from tests.conftest import BASE_STACK_CONFIG, raw_from_stack


def _with(path: str, value: Any) -> dict[str, Any]:
    """BASE_STACK_CONFIG with one value replaced; path like `rl-on-gke:lustre.capacityGib`."""
    config = copy.deepcopy(BASE_STACK_CONFIG)
    key, _, rest = path.partition(".")
    if not rest:
        config[key] = value
    else:
        config.setdefault(key, {})[rest] = value
    return config


def _problems(stack_config: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse_stack_config(raw_from_stack(stack_config))
    return caught.value.problems


# Each bad config, and the key its error must name.
BAD_CONFIGS = {
    "lustre 10000 GiB at 1000": (
        _with("rl-on-gke:lustre.capacityGib", 10000),
        "rl-on-gke:lustre.capacityGib",
        "steps of 9000",
    ),
    "throughput 300": (
        _with("rl-on-gke:lustre.perUnitStorageThroughput", 300),
        "rl-on-gke:lustre.perUnitStorageThroughput",
        "125, 250, 500, 1000",
    ),
    "filesystem with dashes": (
        _with("rl-on-gke:lustre.filesystem", "lustre-fs-01"),
        "rl-on-gke:lustre.filesystem",
        "letters or digits",
    ),
    "zone outside region": (
        _with("rl-on-gke:zone", "us-central1-a"),
        "rl-on-gke:zone",
        "zone of region us-east1",
    ),
    "nodeCount -1": (
        _with("rl-on-gke:gpu.nodeCount", -1),
        "rl-on-gke:gpu.nodeCount",
        "greater than or equal to 0",
    ),
    "reservation without a name": (
        _with("rl-on-gke:gpu.provisioning", "reservation"),
        "rl-on-gke:gpu.reservation",
        "required",
    ),
    "unknown machine type": (
        _with("rl-on-gke:gpu.machineType", "a5-megagpu-16g"),
        "rl-on-gke:gpu.machineType",
        "a3-ultragpu-8g, a4-highgpu-8g",
    ),
    "internet-wide control plane": (
        _with("rl-on-gke:authorizedNetworks", [{"cidrBlock": "0.0.0.0/0"}]),
        "rl-on-gke:authorizedNetworks[0].cidrBlock",
        "whole internet",
    ),
    "overlapping CIDRs": (
        _with("rl-on-gke:network", {"podsCidr": "192.168.0.0/16"}),
        "rl-on-gke:network.mainSubnetCidr",
        "overlaps podsCidr",
    ),
}


@pytest.mark.parametrize("name", sorted(BAD_CONFIGS))
def test_each_bad_value_is_reported_by_key_value_and_what_is_allowed(name: str) -> None:
    stack_config, key, allowed = BAD_CONFIGS[name]
    problems = _problems(stack_config)
    assert len(problems) == 1, problems
    assert problems[0].startswith(key), problems[0]
    assert allowed in problems[0]


def test_every_problem_is_reported_in_one_error() -> None:
    stack_config = _with("rl-on-gke:zone", "us-west1-a")
    stack_config["rl-on-gke:gpu"] = {"machineType": "a4-highgpu-8g", "nodeCount": -1}
    stack_config["rl-on-gke:lustre"] = {
        "capacityGib": 9000,
        "perUnitStorageThroughput": 300,
        "filesystem": "x-y",
    }
    problems = _problems(stack_config)
    keys = {p.split(" ")[0].rstrip(":") for p in problems}
    assert keys == {
        "rl-on-gke:zone",
        "rl-on-gke:gpu.nodeCount",
        "rl-on-gke:lustre.perUnitStorageThroughput",
        "rl-on-gke:lustre.filesystem",
    }


def test_unknown_keys_are_refused_rather_than_ignored() -> None:
    problems = _problems(_with("rl-on-gke:gpu.nodecount", 4))
    assert any(p.startswith("rl-on-gke:gpu.nodecount: unknown key") for p in problems)


def test_reservation_name_is_refused_for_spot_pools() -> None:
    problems = _problems(_with("rl-on-gke:gpu.reservation", "my-res"))
    assert problems == [
        "rl-on-gke:gpu.reservation = 'my-res': only allowed with provisioning 'reservation' (provisioning is 'spot')"
    ]


def test_missing_required_keys_are_named() -> None:
    stack_config = copy.deepcopy(BASE_STACK_CONFIG)
    del stack_config["rl-on-gke:lustre"]
    del stack_config["gcp:project"]
    problems = _problems(stack_config)
    assert "gcp:project: required but not set" in problems
    assert "rl-on-gke:lustre: required but not set" in problems


def test_control_plane_must_have_an_authorized_network_without_the_dns_endpoint() -> None:
    stack_config = _with("rl-on-gke:authorizedNetworks", [])
    stack_config["rl-on-gke:cluster"] = {"dnsEndpoint": False}
    problems = _problems(stack_config)
    assert problems == [
        "rl-on-gke:authorizedNetworks = []: at least one network is required when "
        "rl-on-gke:cluster.dnsEndpoint is false (the IP endpoint is then the only way to reach the control plane)"
    ]


def test_authorized_networks_may_be_left_out_when_the_dns_endpoint_is_on(stack_config) -> None:
    del stack_config["rl-on-gke:authorizedNetworks"]
    config = parse_stack_config(raw_from_stack(stack_config))
    assert config.authorized_networks == [] and config.cluster.dns_endpoint is True


def test_a_parked_stack_is_valid(stack_config) -> None:
    stack_config["rl-on-gke:gpu"]["nodeCount"] = 0
    assert parse_stack_config(raw_from_stack(stack_config)).gpu.node_count == 0


def test_gke_version_below_the_lustre_port_floor_is_refused() -> None:
    problems = _problems(_with("rl-on-gke:cluster", {"minMasterVersion": "1.32"}))
    assert problems[0].startswith("rl-on-gke:cluster.minMasterVersion = '1.32'")
    assert "1.33.2-gke.4655000" in problems[0]


def test_each_machines_rdma_floor_is_named_where_the_version_is_below_it() -> None:
    # The floors come from the catalogue (MachineSpec.min_gke_version_for_rdma), one per machine.
    problem = _problems(_with("rl-on-gke:cluster", {"minMasterVersion": "1.31"}))[0]
    assert "RDMA on a4-highgpu-8g needs 1.32.2-gke.1475000" in problem
    assert "a3-ultragpu-8g" not in problem  # its floor, 1.31.4, is within a fuzzy 1.31
    assert "must be at least 1.33.2-gke.4655000" in problem


@pytest.mark.parametrize("version", ["1.33.2-gke.4655000", "1.34", "1.35.1", "1.33"])
def test_gke_versions_at_or_above_the_floor_are_accepted(version: str) -> None:
    config = parse_stack_config(
        raw_from_stack(_with("rl-on-gke:cluster", {"minMasterVersion": version}))
    )
    assert config.cluster.min_master_version == version


@pytest.mark.parametrize(
    ("throughput", "capacity", "valid"),
    [
        (1000, 9000, True),
        (1000, 18000, True),
        (1000, 8999, False),
        (1000, 1_530_000, True),
        (1000, 1_539_000, False),
        (1000, 1_584_000, True),
        (1000, 1_602_000, False),
        (1000, 10_008_000, True),
        (1000, 10_080_000, False),
        (500, 18000, True),
        (500, 9000, False),
        (500, 20_016_000, True),
        (500, 3_060_000 + 18_000, False),
        (250, 36000, True),
        (250, 40_032_000, True),
        (125, 72000, True),
        (125, 12_240_000, True),
        (125, 144_001, False),
    ],
)
def test_lustre_capacity_follows_the_tier_minimum_step_and_maximum(
    throughput: int, capacity: int, valid: bool
) -> None:
    stack_config = _with(
        "rl-on-gke:lustre", {"capacityGib": capacity, "perUnitStorageThroughput": throughput}
    )
    if valid:
        assert parse_stack_config(raw_from_stack(stack_config)).lustre.capacity_gib == capacity
    else:
        assert _problems(stack_config)[0].startswith("rl-on-gke:lustre.capacityGib")


def test_rdma_range_splits_into_eight_equal_subnets(config) -> None:
    subnets = config.network.rdma_subnet_cidrs()
    assert len(subnets) == 8
    assert subnets[0] == "192.168.128.0/21" and subnets[-1] == "192.168.184.0/21"


def test_defaults_are_sensible_for_an_unset_optional_block(config) -> None:
    assert config.lustre.protect is False  # BASE sets it; default checked below
    fresh = copy.deepcopy(BASE_STACK_CONFIG)
    fresh["rl-on-gke:lustre"] = {"capacityGib": 9000, "perUnitStorageThroughput": 1000}
    parsed = parse_stack_config(raw_from_stack(fresh))
    assert parsed.lustre.protect is True  # data is protected unless a stack opts out
    assert parsed.lustre.filesystem == "lustrefs"
    assert parsed.ray.framework == "nemo-rl"


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-10, 10**7)
    | st.text(max_size=20)
    | st.sampled_from(
        ["a4-highgpu-8g", "spot", "reservation", "10.0.0.0/8", "0.0.0.0/0", "us-east1-b"]
    ),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=12,
)
known_keys = st.sampled_from(
    [
        "project",
        "region",
        "zone",
        "namePrefix",
        "gpu",
        "lustre",
        "authorizedNetworks",
        "network",
        "cluster",
        "ray",
    ]
)
gpu_blocks = st.fixed_dictionaries(
    {},
    optional={
        "machineType": st.sampled_from(["a4-highgpu-8g", "a3-ultragpu-8g", "n1"]) | json_values,
        "nodeCount": st.integers(-2, 100) | json_values,
        "provisioning": st.sampled_from(["spot", "reservation", "on-demand", "x"]),
        "reservation": st.none() | st.text(max_size=70),
        "compactPlacement": st.booleans() | json_values,
    },
)
lustre_blocks = st.fixed_dictionaries(
    {},
    optional={
        "capacityGib": st.integers(0, 20_000_000) | json_values,
        "perUnitStorageThroughput": st.sampled_from([125, 250, 300, 500, 1000]) | json_values,
        "filesystem": st.text(max_size=10),
        "protect": st.booleans() | json_values,
    },
)


@settings(max_examples=300, deadline=None)
@given(
    base_overrides=st.dictionaries(known_keys, json_values, max_size=4),
    gpu=gpu_blocks,
    lustre=lustre_blocks,
)
def test_arbitrary_configs_validate_or_raise_the_config_error_only(
    base_overrides, gpu, lustre
) -> None:
    raw = raw_from_stack(copy.deepcopy(BASE_STACK_CONFIG))
    raw["gpu"], raw["lustre"] = gpu, lustre
    raw.update(base_overrides)
    try:
        parsed = parse_stack_config(raw)
    except ConfigError as error:
        assert error.problems, "a ConfigError must carry at least one problem"
        assert all(isinstance(p, str) and p for p in error.problems)
    else:
        # Anything that validates honours the rules the components rely on.
        assert parsed.gpu.node_count >= 1
        assert LUSTRE_TIERS[parsed.lustre.per_unit_storage_throughput].allows(
            parsed.lustre.capacity_gib
        )
        assert (parsed.gpu.reservation is not None) == (parsed.gpu.provisioning == "reservation")


@pytest.mark.parametrize(
    "namespace", ["default", "kube-system", "gke-managed-system", "gmp-system"]
)
def test_training_namespace_cannot_be_a_system_namespace(namespace: str) -> None:
    problems = _problems(_with("rl-on-gke:ray", {"namespace": namespace}))
    assert problems[0].startswith(f"rl-on-gke:ray.namespace = '{namespace}'")


def test_a_new_config_field_is_read_and_known_with_no_second_edit() -> None:
    class WithExperiment(StackConfig):
        experiment_flag: int = 0

    values = {**BASE_STACK_CONFIG, "rl-on-gke:experimentFlag": 7}
    raw = raw_config_from_pulumi(lambda ns, key: values.get(f"{ns}:{key}"), "test", WithExperiment)
    assert WithExperiment.model_validate(raw).experiment_flag == 7
    assert raw["namePrefix"] == "rl-test"
    assert "rl-on-gke:experimentFlag" in program_known_keys(WithExperiment)
    assert "rl-on-gke:experimentFlag" not in program_known_keys(StackConfig)


def test_the_config_reference_names_every_key() -> None:
    # Docs match code: each settings field, nested ones included, has its row.
    from pathlib import Path

    from pydantic import BaseModel
    from pydantic.alias_generators import to_camel

    from components.config import StackConfig

    readme = (Path(__file__).resolve().parents[2] / "docs" / "configuration.md").read_text()

    def keys(model: type[BaseModel], prefix: str = "") -> list[str]:
        found = []
        for name, info in model.model_fields.items():
            key = f"{prefix}{to_camel(name)}"
            nested = (
                info.annotation
                if isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel)
                else None
            )
            found += (
                keys(nested, f"{key}.") if nested and key != "cluster.maintenance.window" else [key]
            )
        return found

    top = {"project": "gcp:project", "region": "gcp:region"}
    missing = [k for k in keys(StackConfig) if f"`{top.get(k, k)}`" not in readme]
    assert missing == []


def test_the_capacity_modes_config_accepts_are_the_catalogues() -> None:
    """gpu.provisioning's allowed values and components/catalogue.py CAPACITY_MODES are one list."""
    allowed = get_args(GpuSettings.model_fields["provisioning"].annotation)
    assert set(allowed) == set(CAPACITY_MODES)
