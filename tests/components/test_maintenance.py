"""The maintenance window and exclusions: GKE's rules enforced in config, and what the cluster gets."""

from __future__ import annotations

from datetime import timedelta

import pytest

from components.config import ConfigError, parse_stack_config
from components.maintenance import (
    MaintenanceSettings,
    default_window,
    ended_exclusions_warning,
    maintenance_policy_args,
    min_hours_in_rolling_window,
)
from tests.conftest import raw_from_stack


def _problems(stack_config, maintenance) -> list[str]:
    stack_config["rl-on-gke:cluster"] = {"maintenance": maintenance}
    with pytest.raises(ConfigError) as caught:
        parse_stack_config(raw_from_stack(stack_config))
    return caught.value.problems


def _window(
    start="2026-01-03T07:00:00Z", end="2026-01-03T13:00:00Z", recurrence="FREQ=WEEKLY;BYDAY=SA,SU"
):
    return {"window": {"startTime": start, "endTime": end, "recurrence": recurrence}}


@pytest.mark.parametrize(
    ("region", "start", "days"),
    [
        ("us-east1", "2026-01-03T07:00:00Z", "SA,SU"),  # 02:00 EST
        ("us-central1", "2026-01-03T08:00:00Z", "SA,SU"),  # 02:00 CST
        ("europe-west4", "2026-01-03T01:00:00Z", "SA,SU"),  # 02:00 CET
        ("asia-southeast1", "2026-01-02T18:00:00Z", "FR,SA"),  # 02:00 SGT is still Friday in UTC
    ],
)
def test_default_window_is_weekend_nights_in_the_regions_time_written_in_utc(
    region, start, days
) -> None:
    window = default_window(region)
    assert window.start_time == start
    assert window.recurrence == f"FREQ=WEEKLY;BYDAY={days}"


def test_default_window_allows_exactly_the_48_hours_gke_requires() -> None:
    window = default_window("us-east1")
    assert min_hours_in_rolling_window(window.recurrence, timedelta(hours=6)) == 48


def test_a_weekly_window_too_short_for_gke_is_refused_naming_the_hours() -> None:
    problems = _problems(_base(), _window(recurrence="FREQ=WEEKLY;BYDAY=SA"))
    assert problems == [
        "rl-on-gke:cluster.maintenance.window.recurrence = 'FREQ=WEEKLY;BYDAY=SA': allows only 24 hours of "
        "maintenance in some 32-day period with 6-hour windows; GKE requires at least 48 (add days or "
        "lengthen the window)"
    ]


def test_windows_under_four_contiguous_hours_do_not_count_and_are_refused() -> None:
    problems = _problems(_base(), _window(end="2026-01-03T10:00:00Z", recurrence="FREQ=DAILY"))
    assert problems[0].startswith(
        "rl-on-gke:cluster.maintenance.window.endTime = '2026-01-03T10:00:00Z'"
    )
    assert "at least 4 hours" in problems[0]


@pytest.mark.parametrize(
    "value", ["2026-01-03 07:00:00", "2026-01-03T07:00:00+01:00", "2026-02-30T07:00:00Z"]
)
def test_times_must_be_rfc3339_utc(value) -> None:
    problems = _problems(_base(), _window(start=value))
    assert problems[0].startswith(f"rl-on-gke:cluster.maintenance.window.startTime = {value!r}")
    assert "RFC 3339" in problems[0]


def test_recurrence_outside_daily_or_weekly_by_day_is_refused() -> None:
    problems = _problems(_base(), _window(recurrence="FREQ=MONTHLY;BYMONTHDAY=1"))
    assert "FREQ=DAILY or FREQ=WEEKLY;BYDAY" in problems[0]


def test_an_exclusion_ending_before_it_starts_is_refused() -> None:
    problems = _problems(
        _base(),
        {
            "exclusions": [
                {
                    "name": "campaign",
                    "startTime": "2026-03-01T00:00:00Z",
                    "endTime": "2026-02-01T00:00:00Z",
                }
            ]
        },
    )
    assert problems == [
        "rl-on-gke:cluster.maintenance.exclusions[0].endTime = '2026-02-01T00:00:00Z': must be after "
        "startTime 2026-03-01T00:00:00Z"
    ]


def test_an_exclusion_needs_exactly_one_of_end_time_and_end_of_support() -> None:
    problems = _problems(
        _base(), {"exclusions": [{"name": "campaign", "startTime": "2026-03-01T00:00:00Z"}]}
    )
    assert "exactly one of endTime and endTimeBehavior" in problems[0]


def test_no_upgrades_exclusions_are_limited_to_30_days() -> None:
    problems = _problems(
        _base(),
        {
            "exclusions": [
                {
                    "name": "freeze",
                    "scope": "NO_UPGRADES",
                    "startTime": "2026-03-01T00:00:00Z",
                    "endTime": "2026-04-15T00:00:00Z",
                }
            ]
        },
    )
    assert "at most 30 days" in problems[0]


def test_policy_renders_the_window_and_a_campaign_exclusion_until_end_of_support() -> None:
    settings = MaintenanceSettings.model_validate(
        {
            "holdNodeVersions": False,
            "exclusions": [
                {
                    "name": "grpo-campaign",
                    "startTime": "2026-03-01T00:00:00Z",
                    "endTimeBehavior": "UNTIL_END_OF_SUPPORT",
                }
            ],
        }
    )
    assert maintenance_policy_args(settings, "us-east1") == {
        "recurring_window": {
            "start_time": "2026-01-03T07:00:00Z",
            "end_time": "2026-01-03T13:00:00Z",
            "recurrence": "FREQ=WEEKLY;BYDAY=SA,SU",
        },
        "maintenance_exclusions": [
            {
                "exclusion_name": "grpo-campaign",
                "start_time": "2026-03-01T00:00:00Z",
                "exclusion_options": {
                    "scope": "NO_MINOR_OR_NODE_UPGRADES",
                    "end_time_behavior": "UNTIL_END_OF_SUPPORT",
                },
            }
        ],
    }


def test_by_default_node_versions_are_held_until_end_of_support_before_the_stack_exclusions() -> (
    None
):
    # cluster-toolkit's A4 / A3 Ultra blueprints ship this exclusion; the stack's own come after.
    settings = MaintenanceSettings.model_validate(
        {
            "exclusions": [
                {
                    "name": "campaign",
                    "startTime": "2026-03-01T00:00:00Z",
                    "endTimeBehavior": "UNTIL_END_OF_SUPPORT",
                }
            ]
        }
    )
    exclusions = maintenance_policy_args(settings, "us-east1")["maintenance_exclusions"]
    assert [e["exclusion_name"] for e in exclusions] == ["rl-on-gke-hold-node-versions", "campaign"]
    assert exclusions[0] == {
        "exclusion_name": "rl-on-gke-hold-node-versions",
        "start_time": "2026-01-01T00:00:00Z",
        "exclusion_options": {
            "scope": "NO_MINOR_OR_NODE_UPGRADES",
            "end_time_behavior": "UNTIL_END_OF_SUPPORT",
        },
    }


def test_the_hold_can_be_turned_off() -> None:
    settings = MaintenanceSettings.model_validate({"holdNodeVersions": False})
    assert "maintenance_exclusions" not in maintenance_policy_args(settings, "us-east1")


def test_an_ended_exclusion_is_dropped_with_a_warning_and_never_breaks_the_stack() -> None:
    """Exclusions were validated against the wall clock, so a stack valid today
    refused to preview once an exclusion's end had passed, with no change to its code. Now the
    config parses on any date; the ended exclusion is left out of the policy (GKE drops it anyway,
    terraform-provider-google #9941) and named in a warning."""
    from datetime import UTC, datetime

    from components.maintenance import active_exclusions

    raw = {
        "exclusions": [
            {
                "name": "spring",
                "startTime": "2026-03-01T00:00:00Z",
                "endTime": "2026-03-20T00:00:00Z",
            },
            {
                "name": "summer",
                "startTime": "2026-06-01T00:00:00Z",
                "endTime": "2026-07-01T00:00:00Z",
            },
        ]
    }
    config = _base()
    config["rl-on-gke:cluster"] = {"maintenance": raw}
    settings = parse_stack_config(raw_from_stack(config)).cluster.maintenance  # any date parses

    in_april = datetime(2026, 4, 1, tzinfo=UTC)
    kept, ended = active_exclusions(settings, in_april)
    assert [e.name for e in kept] == ["rl-on-gke-hold-node-versions", "summer"]
    assert [e.name for e in ended] == ["spring"]
    policy = maintenance_policy_args(settings, "us-east1", now=in_april)
    assert [e["exclusion_name"] for e in policy["maintenance_exclusions"]] == [
        "rl-on-gke-hold-node-versions",
        "summer",
    ]
    warning = ended_exclusions_warning(ended, in_april)
    assert "spring" in warning and "2026-03-20T00:00:00Z" in warning
    assert "rl-on-gke:cluster.maintenance.exclusions" in warning
    # Before either ends, both are kept and there is nothing to warn about.
    kept, ended = active_exclusions(settings, datetime(2026, 2, 1, tzinfo=UTC))
    assert len(kept) == 3 and ended == []


def test_the_cluster_warns_about_ended_exclusions_through_pulumi_log(monkeypatch) -> None:
    """The ended exclusions' warning reaches the user in `pulumi preview` / `up` output."""
    from datetime import UTC, datetime

    import pulumi

    from components.gcp import cluster

    config = _base()
    config["rl-on-gke:cluster"] = {
        "maintenance": {
            "exclusions": [
                {
                    "name": "spring",
                    "startTime": "2026-03-01T00:00:00Z",
                    "endTime": "2026-03-20T00:00:00Z",
                }
            ]
        }
    }
    settings = parse_stack_config(raw_from_stack(config)).cluster.maintenance
    warnings: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda message, *a, **k: warnings.append(message))
    policy = cluster.maintenance_policy(settings, "us-east1", datetime(2026, 4, 1, tzinfo=UTC))
    assert [e["exclusion_name"] for e in policy["maintenance_exclusions"]] == [
        "rl-on-gke-hold-node-versions"
    ]
    assert len(warnings) == 1 and "spring" in warnings[0]


def test_an_exclusion_may_not_take_the_default_holds_name() -> None:
    problems = _problems(
        _base(),
        {
            "exclusions": [
                {
                    "name": "rl-on-gke-hold-node-versions",
                    "startTime": "2026-03-01T00:00:00Z",
                    "endTimeBehavior": "UNTIL_END_OF_SUPPORT",
                }
            ]
        },
    )
    assert problems[0].startswith("rl-on-gke:cluster.maintenance.exclusions = ")
    assert "holdNodeVersions" in problems[0]


def _base():
    import copy

    from tests.conftest import BASE_STACK_CONFIG

    return copy.deepcopy(BASE_STACK_CONFIG)
