"""The stack's one typed, validated configuration: parsed from Pulumi config once, at the edge.

Every rule lives here, so a bad stack file fails before any resource is registered, with one
`ConfigError` that names each bad key (as the user writes it: `rl-on-gke:lustre.capacityGib`),
the value found and what is allowed. Components never read `pulumi.Config` themselves.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from components.capacity import capacity_problems
from components.catalogue import (
    CAPACITY_MODES,
    FLEX_START_MAX_RUN_HOURS,
    LUSTRE_TIERS,
    MACHINES,
    MIN_GKE_VERSION_FOR_LUSTRE_PORT_988,
    MachineSpec,
)
from components.contract import Framework
from components.images_config import ImageDigests
from components.maintenance import MaintenanceSettings
from components.rewards_config import RewardsSettings
from components.rules import NAMESPACE, ConfigError, Settings, describe_error, matches, rule

_GCP_NAME = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
ProjectId = Annotated[
    str,
    matches(
        re.compile(r"^[a-z][-a-z0-9]{4,28}[a-z0-9]$"),
        "must be a GCP project id: 6-30 lowercase letters, digits or '-', starting with a letter",
    ),
]
RegionName = Annotated[
    str, matches(re.compile(r"^[a-z]+-[a-z]+[0-9]+$"), "must be a GCP region such as us-east1")
]
# Lustre API: "eight characters or less and can only contain letters and numbers"; the CSI
# reference adds "beginning with an alphabetic character".
FilesystemName = Annotated[
    str,
    matches(
        re.compile(r"^[A-Za-z][A-Za-z0-9]{0,7}$"),
        "must be 1-8 letters or digits, starting with a letter",
    ),
]
ReservationName = Annotated[
    str,
    matches(
        re.compile(
            r"^(projects/[a-z][-a-z0-9]{4,28}[a-z0-9]/reservations/)?[a-z]([-a-z0-9]{0,61}[a-z0-9])?"
            r"(/reservationBlocks/[a-z]([-a-z0-9]{0,61}[a-z0-9])?)?$"
        ),
        "must be a reservation name, or projects/<project>/reservations/<name>"
        "[/reservationBlocks/<block>]",
    ),
]
MachineTypeName = Annotated[
    str, matches(_GCP_NAME, "must be a Compute Engine machine type such as n2-standard-16")
]
_SYSTEM_NAMESPACES = {
    "default",
    "kube-system",
    "kube-public",
    "kube-node-lease",
    "gmp-system",
    "gmp-public",
}
_GKE_VERSION = re.compile(r"^1\.(\d+)(\.(\d+)(-gke\.(\d+))?)?$")

# Whether each capacity mode's GPU nodes follow demand unless `gpu.scaling` says otherwise
# (components/catalogue.py CAPACITY_MODES says why per mode).
DEFAULT_SCALING: dict[str, Literal["static", "on-demand"]] = {
    name: mode.default_scaling for name, mode in CAPACITY_MODES.items()
}
# Idle minutes before a GPU worker is released. A node that comes back costs its provisioning
# (a few minutes for an A4 / A3 Ultra VM) plus the pull of the ~20 GiB framework image
# (components/catalogue.py FRAMEWORKS; several minutes on a new node), billed with nothing
# training: about 10-15 node-minutes. Holding an idle node for as long as a comeback costs
# before releasing it never spends more than twice the best choice made in hindsight (the
# rent-or-buy rule), and it outlasts the gap between a failed attempt and its restart (the
# supervisor's 60 s settle), so a restart keeps its nodes.
DEFAULT_IDLE_MINUTES = 15


class GpuSettings(Settings):
    machine_type: str
    # 0 parks the GPUs: the pool scales to zero and the RayCluster keeps no workers, while the
    # cluster, Lustre and its data stay (README "Park the GPUs").
    node_count: int = Field(ge=0, le=64)
    # One capacity mode, so spot + flex-start or a reservation + flex-start cannot be written
    # (cluster-toolkit gke-node-pool main.tf preconditions: flex-start needs NO_RESERVATION and
    # never spot). flex-start is Dynamic Workload Scheduler (GKE "flex-start provisioning mode").
    provisioning: Literal["spot", "reservation", "on-demand", "flex-start"] = "spot"
    reservation: ReservationName | None = None
    compact_placement: bool = False
    # flex-start only: hours each node may run before GKE removes it (pulumi-gcp
    # NodePoolNodeConfigArgs.max_run_duration); GKE's limit and default is 7 days.
    max_run_duration_hours: int | None = Field(default=None, ge=1, le=FLEX_START_MAX_RUN_HOURS)
    # Whether the GPU nodes follow demand: `on-demand` lets KubeRay's autoscaler add Ray workers
    # (and GKE's cluster autoscaler their nodes) when a run asks for GPUs and remove them
    # `idle_minutes` after the last one is idle; `static` keeps nodeCount nodes up. Unset: the
    # capacity mode's default (DEFAULT_SCALING; README "Capacity").
    scaling: Literal["static", "on-demand"] | None = None
    # How long a GPU worker may sit idle before the autoscaler removes it (scaling on-demand).
    idle_minutes: int = Field(default=DEFAULT_IDLE_MINUTES, ge=1, le=24 * 60)
    # A disk image preloaded with the framework image (docs/deploy.md "Image cache disk").
    image_cache_disk: str | None = None

    @field_validator("machine_type")
    @classmethod
    def _known_machine(cls, value: str) -> str:
        if value not in MACHINES:
            raise ValueError(f"must be one of {', '.join(sorted(MACHINES))}")
        return value

    @model_validator(mode="after")
    def _reservation_only_for_reservation(self) -> GpuSettings:
        # Spot and on-demand pools must not consume reservations (GKE rejects spot with
        # SPECIFIC_RESERVATION; cluster-toolkit gke-node-pool precondition).
        if self.provisioning == "reservation" and not self.reservation:
            raise rule("reservation", None, "required when provisioning is 'reservation'")
        if self.provisioning != "reservation" and self.reservation:
            raise rule(
                "reservation",
                self.reservation,
                f"only allowed with provisioning 'reservation' (provisioning is "
                f"'{self.provisioning}')",
            )
        if "idle_minutes" in self.model_fields_set and self.scaling_mode == "static":
            raise rule(
                "idle_minutes",
                self.idle_minutes,
                "only allowed when the GPU nodes scale on demand (scaling is 'static'"
                + ("" if self.scaling else f", the default for provisioning '{self.provisioning}'")
                + "; set rl-on-gke:gpu.scaling: on-demand to use it)",
            )
        ends = CAPACITY_MODES[self.provisioning].max_run_hours is not None
        if not ends and self.max_run_duration_hours is not None:
            raise rule(
                "max_run_duration_hours",
                self.max_run_duration_hours,
                f"only allowed with provisioning 'flex-start' (provisioning is '{self.provisioning}')",
            )
        return self

    @property
    def machine(self) -> MachineSpec:
        return MACHINES[self.machine_type]

    @property
    def scaling_mode(self) -> Literal["static", "on-demand"]:
        """`scaling` as set, else the capacity mode's default."""
        return self.scaling or DEFAULT_SCALING[self.provisioning]

    @property
    def scales_on_demand(self) -> bool:
        return self.scaling_mode == "on-demand"

    @property
    def node_max_run_hours(self) -> int | None:
        """How long a flex-start node runs before GKE removes it: max_run_duration_hours, else
        GKE's default and limit of 7 days (GKE "About flex-start VMs"); None for other modes."""
        limit = CAPACITY_MODES[self.provisioning].max_run_hours
        if limit is None:
            return None
        return self.max_run_duration_hours or limit


class CostSettings(Settings):
    """What the stack's GPU nodes cost: exported for `rl-jobs cost` (components/prices.py)."""

    # USD per GPU node-hour; unset: the price table's estimate for the machine type and mode.
    node_hour_usd: float | None = Field(default=None, gt=0, le=10_000)


# A Cloud Billing account id: three groups of six upper-case hex digits (Cloud Billing API
# `billingAccounts/{id}`, e.g. 012345-6789AB-CDEF01 as `gcloud billing accounts list` prints it).
_BILLING_ACCOUNT = re.compile(r"^[0-9A-F]{6}-[0-9A-F]{6}-[0-9A-F]{6}$")
# What a notification e-mail address must look like: one @, no spaces, a dotted domain.
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


def _email_list(value: list[str]) -> list[str]:
    """`value` when every entry is an e-mail address and none repeats; ValueError saying which
    are not."""
    bad = [e for e in value if not _EMAIL.match(e)]
    if bad:
        raise ValueError(f"must be e-mail addresses (name@example.com); not {bad}")
    if len(set(value)) != len(value):
        raise ValueError("must not repeat an address")
    return value


# A budget takes at most five monitoring notification channels (pulumi-gcp 10.2
# billing BudgetAllUpdatesRuleArgs.monitoring_notification_channels: "A maximum of 5").
MAX_BUDGET_EMAILS = 5


class BudgetSettings(Settings):
    """A monthly Cloud Billing budget on the stack's project that e-mails as spend crosses thresholds."""

    # Required; None only so that a missing one is refused with the format it must have.
    billing_account: str | None = Field(default=None, validate_default=True)
    # Whole units of the billing account's currency per calendar month.
    monthly_amount: int = Field(ge=1, le=100_000_000)
    # Fractions of the amount (1.0 = 100%) at which an e-mail goes out.
    thresholds: list[float] = Field(default_factory=lambda: [0.5, 0.9, 1.0], min_length=1)
    emails: list[str] = Field(min_length=1, max_length=MAX_BUDGET_EMAILS)

    @field_validator("billing_account")
    @classmethod
    def _billing_account(cls, value: str | None) -> str | None:
        if value is None:
            raise ValueError(
                "required: the billing account that pays for the project, as XXXXXX-XXXXXX-XXXXXX "
                "(`gcloud billing projects describe <project>` prints it)"
            )
        if not _BILLING_ACCOUNT.match(value.removeprefix("billingAccounts/")):
            raise ValueError(
                "must be a billing account id XXXXXX-XXXXXX-XXXXXX (six upper-case hex digits, "
                "three times, e.g. 012345-6789AB-CDEF01)"
            )
        return value.removeprefix("billingAccounts/")

    @field_validator("thresholds")
    @classmethod
    def _thresholds(cls, value: list[float]) -> list[float]:
        bad = [t for t in value if not 0 < t <= 10]
        if bad:
            raise ValueError(
                f"each threshold must be a fraction of the amount above 0 and at most 10 "
                f"(0.5 = 50%); not {bad}"
            )
        if len(set(value)) != len(value):
            raise ValueError("must not repeat a threshold")
        return sorted(value)

    @field_validator("emails")
    @classmethod
    def _emails(cls, value: list[str]) -> list[str]:
        return _email_list(value)


# How many e-mail channels the stack's alerts send to: a handful of people or lists, not a roster.
MAX_ALERT_EMAILS = 10


class MonitoringSettings(Settings):
    """The stack's Cloud Monitoring: a dashboard always; alert policies only when someone is told.

    Alert policies need a notification channel to tell anyone, so none is created until
    `alertEmails` names at least one address (components/gcp/monitoring.py)."""

    alert_emails: list[str] = Field(default_factory=list, max_length=MAX_ALERT_EMAILS)
    # Percent of the Lustre instance in use above which the Lustre alert opens.
    lustre_full_percent: int = Field(default=85, ge=50, le=99)
    # Ray's dashboard Metrics tab: an in-cluster Grafana over Managed Prometheus
    # (components/k8s/grafana.py); off saves its two small pods on the system pool.
    grafana: bool = True

    @field_validator("alert_emails")
    @classmethod
    def _alert_emails(cls, value: list[str]) -> list[str]:
        return _email_list(value)

    @property
    def alerts_on(self) -> bool:
        return bool(self.alert_emails)


class LustreSettings(Settings):
    per_unit_storage_throughput: int
    capacity_gib: int
    filesystem: FilesystemName = "lustrefs"
    protect: bool = True

    @field_validator("per_unit_storage_throughput")
    @classmethod
    def _known_tier(cls, value: int) -> int:
        if value not in LUSTRE_TIERS:
            raise ValueError(
                f"must be one of {', '.join(map(str, sorted(LUSTRE_TIERS)))} (MB/s per TiB)"
            )
        return value

    @field_validator("capacity_gib")
    @classmethod
    def _capacity_fits_tier(cls, value: int, info: ValidationInfo) -> int:
        throughput: int | None = info.data.get("per_unit_storage_throughput")
        tier = None if throughput is None else LUSTRE_TIERS.get(throughput)
        if tier is not None and not tier.allows(value):
            raise ValueError(f"at {tier.throughput} MB/s/TiB must be {tier.describe()}")
        return value


class AuthorizedNetwork(Settings):
    cidr_block: str
    display_name: str = "authorized"

    @field_validator("cidr_block")
    @classmethod
    def _not_the_internet(cls, value: str) -> str:
        network = _parse_cidr(value)
        if network.prefixlen == 0:
            raise ValueError(
                "must not open the control plane to the whole internet; use your own CIDR"
            )
        return str(network)


def _parse_cidr(value: str) -> ipaddress.IPv4Network:
    try:
        return ipaddress.IPv4Network(value, strict=True)
    except ValueError as err:
        raise ValueError(f"must be an IPv4 CIDR with no host bits set ({err})") from None


class NetworkSettings(Settings):
    """Address plan. Defaults follow cluster-toolkit's A4 / A3 Ultra blueprints."""

    main_subnet_cidr: str = "192.168.0.0/18"
    pods_cidr: str = "10.4.0.0/14"
    services_cidr: str = "10.0.32.0/20"
    gvnic_subnet_cidr: str = "192.168.64.0/18"
    # Split into eight equal subnets, one per RDMA NIC (cluster-toolkit gpu-rdma-vpc).
    rdma_cidr: str = "192.168.128.0/18"
    # Private Service Access range for Managed Lustre; the Lustre doc reserves a /20 so several
    # instances fit, and each needs a contiguous /24 or larger.
    psa_cidr: str = "10.16.0.0/20"
    control_plane_cidr: str = "172.16.0.32/28"

    @field_validator(
        "main_subnet_cidr", "pods_cidr", "services_cidr", "gvnic_subnet_cidr", "psa_cidr"
    )
    @classmethod
    def _cidr(cls, value: str) -> str:
        return str(_parse_cidr(value))

    @field_validator("rdma_cidr")
    @classmethod
    def _rdma_cidr(cls, value: str) -> str:
        network = _parse_cidr(value)
        if network.prefixlen > 26:
            raise ValueError("must be /26 or larger so it splits into 8 subnets of at least /29")
        return str(network)

    @field_validator("control_plane_cidr")
    @classmethod
    def _control_plane_cidr(cls, value: str) -> str:
        network = _parse_cidr(value)
        if network.prefixlen != 28:
            raise ValueError("must be a /28 (GKE private cluster master_ipv4_cidr_block)")
        return str(network)

    @model_validator(mode="after")
    def _no_overlaps(self) -> NetworkSettings:
        ranges = self.named_ranges()
        names = list(ranges)
        for i, first in enumerate(names):
            for second in names[i + 1 :]:
                if ranges[first].overlaps(ranges[second]):
                    raise rule(
                        first,
                        str(ranges[first]),
                        f"overlaps {to_camel(second)} {ranges[second]}; every range must be distinct",
                    )
        return self

    def named_ranges(self) -> dict[str, ipaddress.IPv4Network]:
        return {
            name: ipaddress.IPv4Network(getattr(self, name)) for name in type(self).model_fields
        }

    def rdma_subnet_cidrs(self) -> list[str]:
        return [str(s) for s in ipaddress.IPv4Network(self.rdma_cidr).subnets(prefixlen_diff=3)]


class ClusterSettings(Settings):
    release_channel: Literal["RAPID", "REGULAR", "STABLE"] = "REGULAR"
    # A fuzzy version ("1.35") lets GKE pick the newest patch of that minor.
    min_master_version: str = "1.35"
    system_machine_type: MachineTypeName = "n2-standard-16"
    system_node_count: int = Field(default=1, ge=1, le=10)
    deletion_protection: bool = False
    # Reach the control plane through GKE's DNS-based endpoint, gated by IAM rather than source
    # IPs, so GitHub-hosted runners (not in authorizedNetworks) can apply the Kubernetes layer.
    # The IP endpoint stays limited to authorizedNetworks either way.
    dns_endpoint: bool = True
    # Recurring window and exclusions for GKE auto-upgrades (components/maintenance.py).
    maintenance: MaintenanceSettings = MaintenanceSettings()

    @field_validator("min_master_version")
    @classmethod
    def _supports_every_feature(cls, value: str) -> str:
        parsed = _version_tuple(value)
        if parsed is None:
            raise ValueError("must look like 1.35, 1.35.1 or 1.35.1-gke.1234000")
        # A fuzzy minor version resolves to its newest patch, so compare only what was given.
        short = [
            f"{needs} needs {version}"
            for version, needs in _GKE_VERSION_FLOORS
            if parsed < _version_tuple(version)[: len(parsed)]  # type: ignore[index]
        ]
        if short:
            highest = max((v for v, _ in _GKE_VERSION_FLOORS), key=_version_tuple)  # type: ignore[arg-type]
            raise ValueError(f"must be at least {highest} ({'; '.join(short)})")
        return value


# Every GKE version a feature of the stack needs, with the feature: the cluster's minimum version
# must reach the highest (each machine's RDMA floor from the catalogue, Lustre on port 988).
_GKE_VERSION_FLOORS: tuple[tuple[str, str], ...] = (
    (MIN_GKE_VERSION_FOR_LUSTRE_PORT_988, "Lustre on port 988 without the legacy port"),
    *((m.min_gke_version_for_rdma, f"RDMA on {name}") for name, m in MACHINES.items()),
)


def _version_tuple(value: str) -> tuple[int, ...] | None:
    match = _GKE_VERSION.match(value)
    if not match:
        return None
    parts = [1, int(match.group(1))]
    if match.group(3) is not None:
        parts.append(int(match.group(3)))
    if match.group(5) is not None:
        parts.append(int(match.group(5)))
    return tuple(parts)


class RaySettings(Settings):
    framework: Framework = "nemo-rl"
    namespace: str = "rl"
    head_cpu: int = Field(default=8, ge=2, le=64)
    head_memory_gib: int = Field(default=32, ge=8, le=512)

    @field_validator("namespace")
    @classmethod
    def _namespace(cls, value: str) -> str:
        if not _GCP_NAME.match(value) or len(value) > 63:
            raise ValueError("must be a Kubernetes namespace name (lowercase letters, digits, '-')")
        # The stack creates this namespace and deletes it on destroy, with everything in it.
        if value in _SYSTEM_NAMESPACES or value.startswith("kube-") or value.startswith("gke-"):
            raise ValueError("must be a namespace of its own, not default, kube-* or gke-*")
        return value


class StackConfig(Settings):
    """What one stack builds. Field names are snake_case; the stack file uses camelCase."""

    project: ProjectId
    region: RegionName
    zone: str
    name_prefix: str
    gpu: GpuSettings
    lustre: LustreSettings
    # Optional while cluster.dnsEndpoint is on: the IAM-gated DNS endpoint is then the way in and
    # the IP endpoint is made private (components/gcp/cluster.py).
    authorized_networks: list[AuthorizedNetwork] = Field(default_factory=list)
    network: NetworkSettings = NetworkSettings()
    cluster: ClusterSettings = ClusterSettings()
    ray: RaySettings = RaySettings()
    # Off unless rewards.codeSandbox.enabled: the gVisor pool and executor service (rewards_config.py).
    rewards: RewardsSettings = RewardsSettings()
    cost: CostSettings = CostSettings()
    # Optional: a Cloud Billing budget with e-mail alerts (components/gcp/budget.py).
    budget: BudgetSettings | None = None
    # The stack dashboard, and alert policies when alertEmails is set (components/gcp/monitoring.py).
    monitoring: MonitoringSettings = MonitoringSettings()
    # Per catalogue image: the digest pods pull it by (components/images_config.py).
    images: ImageDigests = Field(default_factory=dict)

    @field_validator("zone")
    @classmethod
    def _zone_in_region(cls, value: str, info: ValidationInfo) -> str:
        region = info.data.get("region")
        if region and not re.fullmatch(re.escape(region) + r"-[a-z]", value):
            raise ValueError(f"must be a zone of region {region}, such as {region}-b")
        if not re.fullmatch(r"[a-z]+-[a-z]+[0-9]+-[a-z]", value):
            raise ValueError("must be a GCP zone such as us-east1-b")
        return value

    @field_validator("name_prefix")
    @classmethod
    def _prefix(cls, value: str) -> str:
        # Longest derived name is "<prefix>-rdma-sub-7" and GKE cluster names stop at 40 chars.
        if not _GCP_NAME.match(value) or len(value) > 20:
            raise ValueError(
                "must be 1-20 lowercase letters, digits or '-', starting with a letter"
            )
        return value

    @model_validator(mode="after")
    def _reachable_control_plane(self) -> StackConfig:
        if not self.authorized_networks and not self.cluster.dns_endpoint:
            raise rule(
                "authorized_networks",
                [],
                "at least one network is required when rl-on-gke:cluster.dnsEndpoint is false "
                "(the IP endpoint is then the only way to reach the control plane)",
            )
        return self

    @model_validator(mode="after")
    def _ranges_hold_the_nodes(self) -> StackConfig:
        problems = capacity_problems(
            gpu_nodes=self.gpu.node_count,
            system_nodes=self.cluster.system_node_count,
            main_subnet_cidr=self.network.main_subnet_cidr,
            pods_cidr=self.network.pods_cidr,
            gvnic_subnet_cidr=self.network.gvnic_subnet_cidr,
            rdma_cidr=self.network.rdma_cidr,
            sandbox_nodes=self.code_sandbox_nodes,
        )
        if problems:
            first = problems[0]
            raise rule(first.field, first.value, first.allowed)
        return self

    @property
    def code_sandbox_nodes(self) -> int:
        sandbox = self.rewards.code_sandbox
        return sandbox.node_count if sandbox.enabled else 0

    @property
    def cluster_name(self) -> str:
        return f"{self.name_prefix}-gke"

    @property
    def lustre_instance_id(self) -> str:
        return f"{self.name_prefix}-lustre"


def parse_stack_config(raw: Mapping[str, Any]) -> StackConfig:
    """Validate a raw (camelCase) config mapping, or raise one ConfigError listing every problem."""
    try:
        return StackConfig.model_validate(dict(raw))
    except ValidationError as err:
        raise ConfigError([describe_error(e) for e in err.errors()]) from None


# Fields that live outside the `rl-on-gke:` namespace, and the one with a per-stack default.
_FOREIGN_KEYS = {"project": ("gcp", "project"), "region": ("gcp", "region")}


def config_keys(model: type[StackConfig] = StackConfig) -> dict[str, tuple[str, str]]:
    """Every field of the model -> the (namespace, key) it is read from in the stack file.

    Derived from the model itself, so a new field is read (and is a known key) with no second
    edit anywhere else.
    """
    return {
        name: _FOREIGN_KEYS.get(name, (NAMESPACE, to_camel(name))) for name in model.model_fields
    }


def raw_config_from_pulumi(
    get: Callable[[str, str], Any], stack: str, model: type[StackConfig] = StackConfig
) -> dict[str, Any]:
    """Gather the raw config through `get(namespace, key)`; separated so tests need no engine."""
    raw: dict[str, Any] = {}
    for name, (namespace, key) in config_keys(model).items():
        raw[to_camel(name)] = get(namespace, key)
    if raw.get("namePrefix") is None:
        raw["namePrefix"] = f"rl-{stack}"
    return {k: v for k, v in raw.items() if v is not None}
