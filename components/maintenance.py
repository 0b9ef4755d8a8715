"""When GKE may upgrade the cluster: the recurring maintenance window and exclusions, validated.

Pure (pydantic, no Pulumi), so the stack config can refuse a window GKE would reject before any
resource is registered. GKE's rules (GKE "Configure maintenance windows and exclusions"):
  - the window must allow at least 48 hours of maintenance in any 32-day rolling window, and only
    contiguous stretches of at least four hours count;
  - day-of-week recurrences are evaluated in UTC, so times are written in UTC ("Z"); pulumi-gcp
    also notes that GKE returns UTC, so any other offset would show as a permanent diff;
  - an exclusion has either an end time or `end_time_behavior: UNTIL_END_OF_SUPPORT`
    (pulumi-gcp ClusterMaintenancePolicyMaintenanceExclusionArgs), and a NO_UPGRADES exclusion
    lasts at most 30 days;
  - an exclusion whose end time has passed is dropped by GKE, so declaring one would re-add it on
    every `pulumi up` (a perpetual diff, terraform-provider-google #9941). Validation does not
    read the clock (a stack valid today must not break on a calendar date with no change to its
    code): an ended exclusion is left out of the rendered policy and named in a warning
    (`active_exclusions`, `ended_exclusions_warning`).
By default the cluster also holds minor and node versions until the version's end of support, as
cluster-toolkit's A4 and A3 Ultra blueprints do (examples/gke-a4/gke-a4.yaml lines 212-216,
examples/gke-a3-ultragpu/gke-a3-ultragpu.yaml lines 181-185): a node upgrade drains GPU nodes one
at a time and each drain ends the run on it. `holdNodeVersions: false` turns it off.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Final, Literal

from pydantic import Field, field_validator, model_validator

from components.rules import Settings, checked_by, rule

MIN_HOURS_PER_32_DAYS = 48
MIN_CONTIGUOUS_HOURS = 4
NO_UPGRADES_MAX_DAYS = 30
_ROLLING_DAYS = 32
_WEEKDAYS = ("MO", "TU", "WE", "TH", "FR", "SA", "SU")
_RFC3339_UTC = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
_WEEKLY = re.compile(
    r"^FREQ=WEEKLY;BYDAY=((?:MO|TU|WE|TH|FR|SA|SU)(?:,(?:MO|TU|WE|TH|FR|SA|SU))*)$"
)

# Standard-time UTC offset (hours) of a region's location, by name prefix (longest match wins).
# Only used to place the default window at local night; DST shifts it by an hour, which the
# six-hour window absorbs. Unknown regions fall back to UTC.
_REGION_UTC_OFFSETS: tuple[tuple[str, int], ...] = (
    ("us-west", -8),
    ("us-central", -6),
    ("us-south", -6),
    ("us-east", -5),
    ("northamerica-northeast", -5),
    ("northamerica-south", -6),
    ("southamerica", -3),
    ("europe-west2", 0),
    ("europe", 1),
    ("me-", 3),
    ("africa", 2),
    ("asia-south", 5),
    ("asia-southeast", 8),
    ("asia-east", 8),
    ("asia-northeast", 9),
    ("australia", 10),
)
# Default: Saturday and Sunday, 02:00-08:00 local time.
_DEFAULT_LOCAL_START_HOUR = 2
_DEFAULT_HOURS = 6
_REFERENCE_SATURDAY = datetime(2026, 1, 3, tzinfo=UTC)
# The default exclusion: a fixed start (a moving "now" would change the policy on every `up`).
HOLD_EXCLUSION_NAME = "rl-on-gke-hold-node-versions"
HOLD_EXCLUSION_START = "2026-01-01T00:00:00Z"
HOLD_EXCLUSION_SCOPE: Final = "NO_MINOR_OR_NODE_UPGRADES"


def utc_now() -> datetime:
    return datetime.now(UTC)


def parse_utc(value: str) -> datetime:
    if not _RFC3339_UTC.match(value):
        raise ValueError("must be an RFC 3339 time in UTC such as 2026-01-03T07:00:00Z")
    try:
        return datetime.fromisoformat(value)
    except ValueError as err:
        raise ValueError(f"must be a real RFC 3339 UTC date and time ({err})") from None


# A time field: an RFC 3339 time in UTC (`parse_utc`).
UtcTime = Annotated[str, checked_by(parse_utc)]


def _utc(value: datetime) -> str:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


def min_hours_in_rolling_window(recurrence: str, duration: timedelta) -> float:
    """The fewest maintenance hours any 32 consecutive days can contain for this recurrence."""
    hours = duration.total_seconds() / 3600
    if recurrence == "FREQ=DAILY":
        return _ROLLING_DAYS * hours
    match = _WEEKLY.match(recurrence)
    assert match is not None  # validated before
    days = {_WEEKDAYS.index(d) for d in match.group(1).split(",")}
    fewest = min(
        sum(1 for offset in range(_ROLLING_DAYS) if (start + offset) % 7 in days)
        for start in range(7)
    )
    return fewest * hours


class MaintenanceWindow(Settings):
    """One recurring window: the first occurrence (start/end) and an RFC 5545 RRULE."""

    start_time: UtcTime
    end_time: UtcTime
    recurrence: str

    @field_validator("recurrence")
    @classmethod
    def _recurrence(cls, value: str) -> str:
        if value != "FREQ=DAILY" and not _WEEKLY.match(value):
            raise ValueError(
                "must be FREQ=DAILY or FREQ=WEEKLY;BYDAY=<days> (days MO,TU,WE,TH,FR,SA,SU)"
            )
        return value

    @model_validator(mode="after")
    def _long_enough(self) -> MaintenanceWindow:
        start, end = parse_utc(self.start_time), parse_utc(self.end_time)
        duration = end - start
        if duration <= timedelta(0):
            raise rule("end_time", self.end_time, f"must be after startTime {self.start_time}")
        if duration > timedelta(hours=24):
            raise rule(
                "end_time",
                self.end_time,
                "must be at most 24 hours after startTime (one occurrence)",
            )
        if duration < timedelta(hours=MIN_CONTIGUOUS_HOURS):
            raise rule(
                "end_time",
                self.end_time,
                f"must be at least {MIN_CONTIGUOUS_HOURS} hours after startTime: GKE only counts "
                f"contiguous windows of {MIN_CONTIGUOUS_HOURS} hours or more",
            )
        hours = min_hours_in_rolling_window(self.recurrence, duration)
        if hours < MIN_HOURS_PER_32_DAYS:
            raise rule(
                "recurrence",
                self.recurrence,
                f"allows only {hours:g} hours of maintenance in some 32-day period with "
                f"{duration.total_seconds() / 3600:g}-hour windows; GKE requires at least "
                f"{MIN_HOURS_PER_32_DAYS} (add days or lengthen the window)",
            )
        return self


class MaintenanceExclusion(Settings):
    """A one-off period without (some) automatic upgrades, e.g. a training campaign."""

    name: str = Field(min_length=1, max_length=64)
    start_time: UtcTime
    end_time: UtcTime | None = None
    # NO_MINOR_OR_NODE_UPGRADES keeps node versions still while still allowing control-plane
    # patches (cluster-toolkit gke-a4 / gke-a3-ultragpu blueprints use it).
    scope: Literal["NO_UPGRADES", "NO_MINOR_UPGRADES", "NO_MINOR_OR_NODE_UPGRADES"] = (
        "NO_MINOR_OR_NODE_UPGRADES"
    )
    end_time_behavior: Literal["UNTIL_END_OF_SUPPORT"] | None = None

    @model_validator(mode="after")
    def _consistent(self) -> MaintenanceExclusion:
        if (self.end_time is None) == (self.end_time_behavior is None):
            raise rule(
                "end_time",
                self.end_time,
                "set exactly one of endTime and endTimeBehavior: UNTIL_END_OF_SUPPORT",
            )
        if self.end_time is not None:
            start, end = parse_utc(self.start_time), parse_utc(self.end_time)
            if end <= start:
                raise rule("end_time", self.end_time, f"must be after startTime {self.start_time}")
            if self.scope == "NO_UPGRADES" and end - start > timedelta(days=NO_UPGRADES_MAX_DAYS):
                raise rule(
                    "end_time",
                    self.end_time,
                    f"a NO_UPGRADES exclusion may last at most {NO_UPGRADES_MAX_DAYS} days; use scope "
                    "NO_MINOR_OR_NODE_UPGRADES for longer campaigns",
                )
        elif self.scope == "NO_UPGRADES":
            raise rule(
                "end_time_behavior",
                self.end_time_behavior,
                "UNTIL_END_OF_SUPPORT needs scope NO_MINOR_UPGRADES or NO_MINOR_OR_NODE_UPGRADES",
            )
        return self


class MaintenanceSettings(Settings):
    """`cluster.maintenance`: unset `window` means weekend nights (02:00-08:00) in the region."""

    window: MaintenanceWindow | None = None
    # No minor or node upgrades until the cluster version's end of support (module docstring).
    hold_node_versions: bool = True
    exclusions: list[MaintenanceExclusion] = Field(default_factory=list)

    @field_validator("exclusions")
    @classmethod
    def _unique_names(cls, value: list[MaintenanceExclusion]) -> list[MaintenanceExclusion]:
        names = [e.name for e in value]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"exclusion names must be unique; repeated: {', '.join(duplicates)}")
        if HOLD_EXCLUSION_NAME in names:
            raise ValueError(
                f"{HOLD_EXCLUSION_NAME} is the name of the exclusion holdNodeVersions adds; "
                "pick another name"
            )
        return value

    def all_exclusions(self) -> list[MaintenanceExclusion]:
        """The stack's exclusions, after the default hold when it is on."""
        held = (
            [
                MaintenanceExclusion(
                    name=HOLD_EXCLUSION_NAME,
                    start_time=HOLD_EXCLUSION_START,
                    scope=HOLD_EXCLUSION_SCOPE,
                    end_time_behavior="UNTIL_END_OF_SUPPORT",
                )
            ]
            if self.hold_node_versions
            else []
        )
        return held + list(self.exclusions)

    def effective_window(self, region: str) -> MaintenanceWindow:
        return self.window or default_window(region)


def region_utc_offset(region: str) -> int:
    matches = [
        (len(prefix), offset) for prefix, offset in _REGION_UTC_OFFSETS if region.startswith(prefix)
    ]
    # The most specific prefix wins: asia-southeast1 is not asia-south.
    return max(matches)[1] if matches else 0


def default_window(region: str) -> MaintenanceWindow:
    """Saturday and Sunday 02:00-08:00 at the region's (standard) local time, written in UTC."""
    local_start = _REFERENCE_SATURDAY + timedelta(hours=_DEFAULT_LOCAL_START_HOUR)
    start = local_start - timedelta(hours=region_utc_offset(region))
    first_day = start.weekday()
    days = ",".join(_WEEKDAYS[(first_day + i) % 7] for i in range(2))
    return MaintenanceWindow(
        start_time=_utc(start),
        end_time=_utc(start + timedelta(hours=_DEFAULT_HOURS)),
        recurrence=f"FREQ=WEEKLY;BYDAY={days}",
    )


def active_exclusions(
    settings: MaintenanceSettings, now: datetime
) -> tuple[list[MaintenanceExclusion], list[MaintenanceExclusion]]:
    """(exclusions still to come or running at `now`, exclusions that have ended by `now`)."""
    kept: list[MaintenanceExclusion] = []
    ended: list[MaintenanceExclusion] = []
    for exclusion in settings.all_exclusions():
        over = exclusion.end_time is not None and parse_utc(exclusion.end_time) <= now
        (ended if over else kept).append(exclusion)
    return kept, ended


def ended_exclusions_warning(ended: list[MaintenanceExclusion], now: datetime) -> str:
    """One warning naming every ended exclusion, and what to do about it."""
    listed = ", ".join(f"{e.name} (ended {e.end_time})" for e in ended)
    return (
        f"rl-on-gke:cluster.maintenance.exclusions: {listed} ended before now ({_utc(now)}); "
        "left out of the cluster's maintenance policy (GKE drops an ended exclusion, and "
        "declaring it would re-add it on every `pulumi up`, terraform-provider-google #9941). "
        "Remove it from the stack file."
    )


def maintenance_policy_args(
    settings: MaintenanceSettings, region: str, now: datetime | None = None
) -> dict[str, Any]:
    """pulumi-gcp `ClusterMaintenancePolicyArgs` as a dict, without exclusions ended by `now`."""
    window = settings.effective_window(region)
    exclusions_now, _ = active_exclusions(settings, now or utc_now())
    policy: dict[str, Any] = {
        "recurring_window": {
            "start_time": window.start_time,
            "end_time": window.end_time,
            "recurrence": window.recurrence,
        }
    }
    if exclusions_now:
        exclusions = []
        for exclusion in exclusions_now:
            options: dict[str, Any] = {"scope": exclusion.scope}
            entry: dict[str, Any] = {
                "exclusion_name": exclusion.name,
                "start_time": exclusion.start_time,
            }
            if exclusion.end_time is not None:
                entry["end_time"] = exclusion.end_time
            if exclusion.end_time_behavior is not None:
                options["end_time_behavior"] = exclusion.end_time_behavior
            entry["exclusion_options"] = options
            exclusions.append(entry)
        policy["maintenance_exclusions"] = exclusions
    return policy
