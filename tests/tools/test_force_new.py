"""The force-new table: every path is a real pulumi-gcp input of that shape, and replacements are found."""

from __future__ import annotations

import collections.abc
import typing

import pytest
from pulumi import _types

from tests.test_sdk_inputs import _input_classes, args_class
from tools.force_new import FORCE_NEW, UPSTREAM_COMMIT
from tools.plan_diff import flatten, replace_reasons

ENTRIES = [(typ, entry) for typ, entries in FORCE_NEW.items() for entry in entries]


def _is_sequence(hint: typing.Any) -> bool:
    stack = [hint]
    while stack:
        current = stack.pop()
        if typing.get_origin(current) in (list, collections.abc.Sequence):
            return True
        stack.extend(typing.get_args(current))
    return False


def sdk_shape(resource_type: str, path: str) -> str:
    """'block' or 'value' for an input path of the SDK's Args type; KeyError naming the bad segment."""
    cls: typing.Any = args_class(resource_type)
    segments = path.split(".")
    for index, segment in enumerate(segments):
        name, is_list = segment.removesuffix("[]"), segment.endswith("[]")
        hints = _types.input_type_types(cls)
        if name not in hints:
            raise KeyError(f"{resource_type}: {path}: no input {name!r} in {cls.__name__}")
        if is_list != _is_sequence(hints[name]):
            raise KeyError(f"{resource_type}: {path}: {name!r} list-ness differs from the SDK")
        classes, _ = _input_classes(hints[name])
        if index == len(segments) - 1:
            return "block" if classes else "value"
        if not classes:
            raise KeyError(f"{resource_type}: {path}: {name!r} has no nested inputs in the SDK")
        cls = classes[0]
    raise AssertionError("unreachable")


@pytest.mark.plan
def test_the_table_names_its_upstream_commit_and_covers_every_gcp_type_the_stacks_use() -> None:
    from tools.render import load_stack_file, render

    assert len(UPSTREAM_COMMIT) == 40
    config, secrets = load_stack_file("h200")
    config["gcp:project"] = "example-project"
    types = {
        r.type
        for r in render(config, stack="h200", secret_keys=secrets).custom_resources()
        if r.type.startswith("gcp:")
    }
    assert types <= set(FORCE_NEW), types - set(FORCE_NEW)


@pytest.mark.parametrize(
    ("resource_type", "entry"), ENTRIES, ids=[f"{t.split(':')[-1]}.{e.path}" for t, e in ENTRIES]
)
def test_every_force_new_path_exists_in_the_sdk_with_its_shape(resource_type: str, entry) -> None:
    assert sdk_shape(resource_type, entry.path) == entry.kind


def test_the_sdk_walk_rejects_a_path_the_sdk_does_not_have() -> None:
    with pytest.raises(KeyError, match="no input 'machineTypo'"):
        sdk_shape("gcp:container/nodePool:NodePool", "nodeConfig.machineTypo")


POOL = "gcp:container/nodePool:NodePool"


def _pool(**node_config) -> dict:
    return flatten(
        {
            "name": "gpu",
            "nodeCount": 2,
            "nodeConfig": {
                "machineType": "a4-highgpu-8g",
                "guestAccelerators": [{"type": "nvidia-b200", "count": 8}],
                "labels": {"role": "gpu"},
                **node_config,
            },
        }
    )


def test_an_accelerator_type_change_replaces_the_pool_but_labels_and_node_count_do_not() -> None:
    base = _pool()
    assert replace_reasons(
        POOL, base, _pool(guestAccelerators=[{"type": "nvidia-h200-141gb", "count": 8}])
    ) == ["nodeConfig.guestAccelerators[].type"]
    assert replace_reasons(POOL, base, _pool(labels={"role": "other"})) == []
    assert replace_reasons(POOL, base, {**base, "nodeCount": 3}) == []


def test_a_block_replaces_when_it_appears_but_not_when_an_updatable_field_inside_it_changes() -> (
    None
):
    base = _pool()
    assert "nodeConfig.ephemeralStorageLocalSsdConfig" in replace_reasons(
        POOL, base, _pool(ephemeralStorageLocalSsdConfig={"localSsdCount": 32})
    )
    # ... unless the resource ignores it, as the GPU pool does (cluster-toolkit gke-node-pool).
    assert (
        replace_reasons(
            POOL,
            base,
            _pool(ephemeralStorageLocalSsdConfig={"localSsdCount": 32}),
            ignored=["nodeConfig.ephemeralStorageLocalSsdConfig"],
        )
        == []
    )
    # A second accelerator entry: the block's element count changed.
    assert "nodeConfig.guestAccelerators[]" in replace_reasons(
        POOL,
        base,
        _pool(
            guestAccelerators=[
                {"type": "nvidia-b200", "count": 8},
                {"type": "nvidia-b200", "count": 8},
            ]
        ),
    )


def test_a_map_marked_force_new_replaces_on_any_key() -> None:
    assert replace_reasons(POOL, _pool(metadata={"a": "1"}), _pool(metadata={"a": "2"})) == [
        "nodeConfig.metadata"
    ]


def test_a_subnetwork_replaces_when_its_range_shrinks_but_not_when_it_grows() -> None:
    subnet = "gcp:compute/subnetwork:Subnetwork"
    assert (
        replace_reasons(subnet, {"ipCidrRange": "10.0.0.0/18"}, {"ipCidrRange": "10.0.0.0/17"})
        == []
    )
    assert replace_reasons(
        subnet, {"ipCidrRange": "10.0.0.0/18"}, {"ipCidrRange": "10.0.0.0/19"}
    ) == ["ipCidrRange"]


def test_lustre_filesystem_replaces_and_capacity_updates() -> None:
    lustre = "gcp:lustre/instance:Instance"
    base = {"filesystem": "lustrefs", "capacityGib": "9000"}
    assert replace_reasons(lustre, base, {**base, "filesystem": "ckpt"}) == ["filesystem"]
    assert replace_reasons(lustre, base, {**base, "capacityGib": "18000"}) == []


def test_kubernetes_objects_follow_pulumi_kubernetes_own_force_new_fields() -> None:
    pv, job = "kubernetes:core/v1:PersistentVolume", "kubernetes:batch/v1:Job"
    base = flatten(
        {
            "metadata": {"name": "pv"},
            "spec": {
                "capacity": {"storage": "9000Gi"},
                "csi": {"volumeAttributes": {"filesystem": "lustrefs"}},
            },
        }
    )
    grown = flatten(
        {
            "metadata": {"name": "pv"},
            "spec": {
                "capacity": {"storage": "18000Gi"},
                "csi": {"volumeAttributes": {"filesystem": "lustrefs"}},
            },
        }
    )
    renamed_fs = flatten(
        {
            "metadata": {"name": "pv"},
            "spec": {
                "capacity": {"storage": "9000Gi"},
                "csi": {"volumeAttributes": {"filesystem": "ckpt"}},
            },
        }
    )
    assert replace_reasons(pv, base, grown) == []
    assert replace_reasons(pv, base, renamed_fs) == ["spec.csi"]
    assert replace_reasons(
        job, flatten({"spec": {"template": {"a": 1}}}), flatten({"spec": {"template": {"a": 2}}})
    ) == ["spec.template"]
    assert replace_reasons(
        "kubernetes:ray.io/v1:RayCluster",
        flatten({"metadata": {"name": "a"}}),
        flatten({"metadata": {"name": "b"}}),
    ) == ["metadata.name"]
