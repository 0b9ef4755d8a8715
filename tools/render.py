"""Runs the Pulumi program under Pulumi's mock runtime and records everything it registers.

This is an offline rendering, not a cloud preview: no credentials, network or Pulumi CLI are
used, and provider-computed values (IPs, endpoints, emails) are stand-ins made up by
`OfflineMocks`. Tests, `tools.plan`, `tools.plan_diff` and the policy tests all read this.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import runpy
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
from pulumi.runtime import resource as runtime_resource
from pulumi.runtime import rpc
from pulumi.runtime.mocks import MockCallArgs, MockMonitor, MockResourceArgs, Mocks
from pulumi.runtime.proto import source_pb2
from pulumi.runtime.settings import get_root_resource
from pulumi.runtime.stack import Stack, run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from components.catalogue import IMAGES
from components.rules import NAMESPACE

ROOT = Path(__file__).resolve().parent.parent
PROJECT = "rl-on-gke"
SECRET_MASK = "[secret]"


class SecretValue:
    """A value the program marked secret; `str()` never shows it."""

    def __init__(self, value: Any):
        self.value = value

    def __repr__(self) -> str:
        return SECRET_MASK


def _unwrap(value: Any) -> Any:
    """Deserialized RPC values -> plain Python, with secrets kept as SecretValue."""
    if rpc.is_rpc_secret(value):
        return SecretValue(_unwrap(rpc.unwrap_rpc_secret(value)))
    if isinstance(value, dict):
        return {k: _unwrap(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unwrap(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        # Protobuf carries every number as a double; 8896.0 reads as the 8896 the program set.
        return int(value)
    return value


def masked(value: Any) -> Any:
    """A JSON-safe copy with every secret replaced by the mask."""
    if isinstance(value, SecretValue):
        return SECRET_MASK
    if isinstance(value, dict):
        return {k: masked(v) for k, v in value.items()}
    if isinstance(value, list):
        return [masked(v) for v in value]
    return value


def plain_strings(value: Any) -> Iterator[str]:
    """Every string outside a secret, for checking that no token leaked in clear."""
    if isinstance(value, SecretValue):
        return
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from plain_strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from plain_strings(item)


@dataclass
class RenderedResource:
    urn: str
    type: str
    name: str
    parent: str
    custom: bool
    inputs: dict[str, Any]
    outputs: dict[str, Any]
    dependencies: list[str]
    protect: bool
    retain_on_delete: bool
    deleted_with: str
    provider: str
    ignore_changes: list[str] = field(default_factory=list)

    @property
    def is_component(self) -> bool:
        return not self.custom


@dataclass
class Rendering:
    stack: str
    resources: list[RenderedResource] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)

    def of_type(self, type_: str) -> list[RenderedResource]:
        return [r for r in self.resources if r.type == type_]

    def one(self, type_: str, name_suffix: str = "") -> RenderedResource:
        found = [r for r in self.of_type(type_) if r.name.endswith(name_suffix)]
        if len(found) != 1:
            raise LookupError(
                f"expected one {type_} named *{name_suffix}, found {[r.name for r in found]}"
            )
        return found[0]

    def by_urn(self, urn: str) -> RenderedResource:
        return next(r for r in self.resources if r.urn == urn)

    def custom_resources(self) -> list[RenderedResource]:
        return [r for r in self.resources if r.custom]


MACHINE_TYPES_TOKEN = "gcp:compute/getMachineTypes:getMachineTypes"
RESERVATION_TOKEN = "gcp:compute/getReservation:getReservation"
PROJECT_TOKEN = "gcp:organizations/getProject:getProject"
# The stand-in project number offline plans give every project (the budget filter needs one).
OFFLINE_PROJECT_NUMBER = "123456789012"


def _raw(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) and value[:1] in "{[" else value


@dataclass
class OfflineCapacity:
    """What the Compute API answers the capacity invokes with (components/gcp/gpu_capacity.py), offline.

    `machine_types`: zone -> machine types it offers. `reservations`: (project, zone, name) ->
    (machine type, VM count). Offline plans assume the capacity the stack asks for exists
    (`as_the_stack_asks`); tests build the world they need.
    """

    machine_types: dict[str, list[str]] = field(default_factory=dict)
    reservations: dict[tuple[str, str, str], tuple[str, int]] = field(default_factory=dict)
    # project -> the billing account get_project reports ("" or absent: not known, as offline).
    billing_accounts: dict[str, str] = field(default_factory=dict)

    @classmethod
    def as_the_stack_asks(cls, config: Mapping[str, Any]) -> OfflineCapacity:
        gpu = _raw(config.get(f"{PROJECT}:gpu")) or {}
        zone = config.get(f"{PROJECT}:zone")
        world = cls()
        if not isinstance(gpu, dict) or not isinstance(zone, str):
            return world
        machine = gpu.get("machineType")
        world.machine_types[zone] = [machine] if isinstance(machine, str) else []
        reservation = gpu.get("reservation")
        if isinstance(reservation, str) and isinstance(machine, str):
            parts = reservation.split("/")
            project, name = (
                (parts[1], parts[3])
                if parts[0] == "projects"
                else (config.get("gcp:project", "offline-project"), parts[0])
            )
            world.reservations[(str(project), zone, name)] = (
                machine,
                int(gpu.get("nodeCount") or 0),
            )
        return world

    def answer(self, token: str, args: Mapping[str, Any]) -> dict[str, Any]:
        zone, project = args.get("zone"), args.get("project")
        if token == MACHINE_TYPES_TOKEN:
            wanted = str(args.get("filter", "")).removeprefix("name = ").strip()
            offered = [m for m in self.machine_types.get(str(zone), []) if m == wanted]
            return {
                "id": f"projects/{project}/zones/{zone}",
                "project": project,
                "zone": zone,
                "filter": args.get("filter"),
                "machineTypes": [
                    {
                        "name": m,
                        "guestCpus": 0,
                        "memoryMb": 0,
                        "description": m,
                        "isSharedCpus": False,
                        "maximumPersistentDisks": 0,
                        "maximumPersistentDisksSizeGb": 0,
                        "accelerators": [],
                        "deprecateds": [],
                        "selfLink": "",
                    }
                    for m in offered
                ],
            }
        if token == RESERVATION_TOKEN:
            return self._reservation(str(project), str(zone), str(args.get("name")))
        if token == PROJECT_TOKEN:
            project_id = args.get("projectId")
            answer = {"projectId": project_id, "number": OFFLINE_PROJECT_NUMBER, "id": project_id}
            account = self.billing_accounts.get(str(project_id))
            return {**answer, "billingAccount": account} if account else answer
        return {}

    def _reservation(self, project: str, zone: str, name: str) -> dict[str, Any]:
        found = self.reservations.get((project, zone, name))
        base = {"name": name, "project": project, "zone": zone}
        if found is None:
            # What the data source returns for a 404: the inputs and nothing else (gpu_capacity.py).
            return {**base, "id": "", "selfLink": "", "status": "", "specificReservations": []}
        machine, count = found
        link = f"https://www.googleapis.com/compute/v1/projects/{project}/zones/{zone}/reservations/{name}"
        return {
            **base,
            "id": f"projects/{project}/zones/{zone}/reservations/{name}",
            "selfLink": link,
            "status": "READY",
            "specificReservationRequired": True,
            "specificReservations": [
                {
                    "count": count,
                    "inUseCount": 0,
                    "assuredCount": count,
                    "sourceInstanceTemplate": "",
                    "instanceProperties": [
                        {
                            "machineType": machine,
                            "minCpuPlatform": "",
                            "locationHint": "",
                            "maintenanceInterval": "",
                            "guestAccelerators": [],
                            "localSsds": [],
                        }
                    ],
                }
            ],
        }


class OfflineMocks(Mocks):
    """Stand-ins for the values a real provider would compute."""

    def __init__(self, capacity: OfflineCapacity | None = None) -> None:
        self.psa_base: ipaddress.IPv4Address | None = None
        self.capacity = capacity or OfflineCapacity()
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def new_resource(self, args: MockResourceArgs) -> tuple[str, dict[str, Any]]:
        inputs = dict(args.inputs)
        outputs = dict(inputs)
        name = inputs.get("name", args.name)
        project = inputs.get("project", "offline-project")
        typ = args.typ
        resource_id = f"{args.name}-id"
        if typ in ("gcp:compute/network:Network", "gcp:compute/subnetwork:Subnetwork"):
            kind = (
                "networks"
                if typ.endswith("Network")
                else f"regions/{inputs.get('region')}/subnetworks"
            )
            resource_id = (
                f"projects/{project}/{'global/' if kind == 'networks' else ''}{kind}/{name}"
            )
            outputs["selfLink"] = f"https://www.googleapis.com/compute/v1/{resource_id}"
        elif typ == "gcp:compute/globalAddress:GlobalAddress" and inputs.get("address"):
            self.psa_base = ipaddress.IPv4Address(inputs["address"])
        elif typ == "gcp:serviceaccount/account:Account":
            outputs["email"] = f"{inputs['accountId']}@{project}.iam.gserviceaccount.com"
            outputs["member"] = f"serviceAccount:{outputs['email']}"
        elif typ == "gcp:container/cluster:Cluster":
            outputs["endpoint"] = "203.0.113.10"
            outputs["masterAuth"] = {"clusterCaCertificate": "T0ZGTElORS1DQQ=="}
            endpoints = dict(inputs.get("controlPlaneEndpointsConfig") or {})
            endpoints["dnsEndpointConfig"] = {
                **(endpoints.get("dnsEndpointConfig") or {}),
                "endpoint": f"gke-0ff11e0000000000-{project}.{inputs.get('location')}.gke.goog",
            }
            outputs["controlPlaneEndpointsConfig"] = endpoints
            resource_id = f"projects/{project}/locations/{inputs.get('location')}/clusters/{name}"
        elif typ == "gcp:lustre/instance:Instance":
            ip = (self.psa_base or ipaddress.IPv4Address("10.0.0.0")) + 2
            outputs["mountPoint"] = f"{ip}@tcp:/{inputs.get('filesystem')}"
            resource_id = f"projects/{project}/locations/{inputs.get('location')}/instances/{inputs.get('instanceId')}"
        outputs.setdefault("id", resource_id)
        return resource_id, outputs

    def call(self, args: MockCallArgs) -> dict[str, Any]:  # type: ignore[override]
        # A plain dict: the mock monitor iterates a tuple's second item as check failures.
        self.calls.append((args.token, dict(args.args)))
        return self.capacity.answer(args.token, args.args)


class RecordingMonitor(MockMonitor):
    """A mock monitor that also keeps parents, dependencies and resource options."""

    def __init__(self, mocks: Mocks):
        super().__init__(mocks)
        self.rendering = Rendering(stack="")
        self._stack_urn = ""

    def RegisterResource(self, request: Any) -> Any:
        # pulumi's MockMonitor is unannotated (pulumi/runtime/mocks.py)
        response = super().RegisterResource(request)  # type: ignore[no-untyped-call]
        if request.type == "pulumi:pulumi:Stack":
            self._stack_urn = response.urn
            return response
        inputs = _unwrap(rpc.deserialize_properties(request.object))
        state = self.resources[response.urn].state
        self.rendering.resources.append(
            RenderedResource(
                urn=response.urn,
                type=request.type,
                name=request.name,
                parent=request.parent,
                custom=request.custom,
                inputs=inputs,
                outputs=_unwrap(dict(state)),
                dependencies=list(request.dependencies),
                protect=request.protect,
                retain_on_delete=request.retainOnDelete,
                deleted_with=request.deletedWith,
                provider=request.provider,
                ignore_changes=list(request.ignoreChanges),
            )
        )
        return response

    def RegisterResourceOutputs(self, request: Any) -> Any:
        if request.urn == self._stack_urn:
            self.rendering.outputs = _unwrap(rpc.deserialize_properties(request.outputs))
        return super().RegisterResourceOutputs(request)  # type: ignore[no-untyped-call]


def _config_value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _build_and_export(build: Callable[[], object]) -> None:
    build()
    # set_mocks registered the root stack before the program ran; registering its outputs
    # again is what records the program's `pulumi.export`s, as the real entry point does.
    root = get_root_resource()
    if isinstance(root, Stack):  # set_mocks' root (pulumi/runtime/mocks.py `Stack()`)
        root._outputs_registered = False
        root._finish()


def _no_stack_trace() -> Any:
    """An empty source trace for a registration.

    The SDK walks the whole Python stack at each registration so the engine can point its
    diagnostics at the line that created a resource; the recording monitor keeps no source
    positions, and under pytest that walk (~50 frames a resource) is a fifth of a rendering.
    """
    return source_pb2.StackTrace()


def render_with(
    build: Callable[[], object],
    config: Mapping[str, Any],
    *,
    stack: str = "test",
    secret_keys: tuple[str, ...] = (),
    capacity: OfflineCapacity | None = None,
) -> Rendering:
    """Run `build` under mocks with `config` (full keys, e.g. `rl-on-gke:gpu`) and record it.

    Capacity invokes are answered from `capacity`, by default as the stack asks.

    Each call gets its own event loop and a fresh runtime, reset afterwards even on failure, so
    one rendering can never leak queued work into the next. Raises whatever `build` raises.
    """
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    capture_stack_trace = runtime_resource._get_stack_trace
    runtime_resource._get_stack_trace = _no_stack_trace
    mocks = OfflineMocks(
        capacity if capacity is not None else OfflineCapacity.as_the_stack_asks(config)
    )
    monitor = RecordingMonitor(mocks)
    monitor.rendering.stack = stack
    pulumi.runtime.set_mocks(mocks, project=PROJECT, stack=stack, preview=False, monitor=monitor)
    pulumi.runtime.set_all_config(
        {k: _config_value(v) for k, v in config.items()}, list(secret_keys)
    )
    try:
        _sync_await(run_pulumi_func(lambda: _build_and_export(build)))
        return monitor.rendering
    finally:
        runtime_resource._get_stack_trace = capture_stack_trace
        pulumi.runtime.reset_options()
        pulumi.runtime.set_all_config({}, [])
        pending = asyncio.all_tasks(loop)
        for task in pending:
            task.cancel()
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.close()
        asyncio.set_event_loop(None)


def render(
    config: Mapping[str, Any],
    *,
    stack: str = "test",
    secret_keys: tuple[str, ...] = (),
    program: Path = ROOT / "__main__.py",
    capacity: OfflineCapacity | None = None,
) -> Rendering:
    """Run the whole program (`__main__.py`) under mocks with a stack's config."""
    return render_with(
        lambda: runpy.run_path(str(program), run_name="__main__"),
        config,
        stack=stack,
        secret_keys=secret_keys,
        capacity=capacity,
    )


# Offline only: the digest an image without a confirmed one is rendered with, so the plan can show
# everything else. It names no image (all zeros) and `tools.plan` lists each use as a setting the
# user must confirm; the real preview refuses the stack instead (components/registry.py).
UNCONFIRMED_DIGEST = "sha256:" + "0" * 64


def with_unconfirmed_digests(config: dict[str, Any]) -> list[str]:
    """Give every catalogue image without a digest the placeholder, in place; the names given it."""
    images = dict(config.get(f"{NAMESPACE}:images") or {})
    missing = [name for name, pin in IMAGES.items() if pin.digest is None and name not in images]
    for name in missing:
        images[name] = {"digest": UNCONFIRMED_DIGEST}
    if missing:
        config[f"{NAMESPACE}:images"] = images
    return missing


def load_stack_file(stack: str, root: Path = ROOT) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The `config:` block of `Pulumi.<stack>.yaml`, and which keys are `secure:` secrets.

    Secure values are ciphertext only the user's secrets provider can open; offline they are
    replaced by a placeholder that is still handled as a secret.
    """
    import yaml

    path = root / f"Pulumi.{stack}.yaml"
    if not path.exists():
        stacks = sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in root.glob("Pulumi.*.yaml"))
        raise FileNotFoundError(f"no stack file {path.name}; stacks here: {', '.join(stacks)}")
    document = yaml.safe_load(path.read_text()) or {}
    config: dict[str, Any] = {}
    secret_keys: list[str] = []
    for key, value in (document.get("config") or {}).items():
        if isinstance(value, dict) and set(value) == {"secure"}:
            config[key] = "offline-placeholder-secret"
            secret_keys.append(key)
        else:
            config[key] = value
    with_unconfirmed_digests(config)
    return config, tuple(secret_keys)
