"""The stack's Cloud Monitoring: a dashboard of the GPU pool, Lustre and the runs, counts of the supervisors' records, and alerts.

Always: one dashboard (`monitoring.Dashboard`) and three log-based metrics (`logging.Metric`)
that count the supervisors' give-up, stall and preemption records. Only when `monitoring.alertEmails` names someone: an
e-mail notification channel per address and two alert policies (Lustre above
`monitoring.lustreFullPercent`, default 85 %; a run gave up). An alert policy with no channel tells
nobody, so none is created without one.

Where each number comes from, and why it is named so:
- GPU utilisation and memory: GKE's managed DCGM metrics (the cluster's
  `monitoringConfig.enableComponents` holds DCGM, components/gcp/cluster.py) read through Managed
  Prometheus with PromQL, as Google's own "NVIDIA GPU Monitoring Advanced DCGM Metrics (GKE Only)"
  dashboard does (GoogleCloudPlatform/monitoring-dashboard-samples
  dashboards/nvidia-gpu/nvidia-dcgm-prometheus.json @25d8c3e: `DCGM_FI_DEV_GPU_UTIL`,
  `DCGM_FI_DEV_FB_USED`, labels `cluster`, `Hostname`).
- GPU nodes: the nodes that report DCGM, i.e. the GPU pool's (only its nodes have GPUs); counted
  per `Hostname` from the same metric.
- Lustre used: kubelet's volume statistics for the pods' `lustre` volume
  (components/k8s/raycluster.py `_lustre_volume`), which GKE exports as
  `kubernetes.io/pod/volume/utilization` (a fraction, label `volume_name`; as in the same
  repository's dashboards/apigee/hybrid-cassandra-monitoring.json). The Lustre CSI driver answers
  kubelet's NodeGetVolumeStats with the file system's statfs (GoogleCloudPlatform/lustre-csi-driver
  pkg/csi_driver/node.go L529-555 @89f1eb7, GET_VOLUME_STATS in lustre_driver.go L90), so the
  fraction is the whole instance's, as seen by the Ray head that always mounts it.
- Runs that gave up or stalled, and the preemptions they met: the supervisor writes one
  `JOBS-SUPERVISOR {json}` line per decision (jobs/head/events.py `line`: json.dumps with
  sort_keys, so `"event": "gave_up"` reads exactly so); each log-based metric counts entries of
  the cluster's Ray namespace whose text holds both. A preemption here is an attempt that ended
  while a node that could host its workers died (events.PREEMPTED), i.e. one that cost the run.
  Those lines are in the supervisor's Ray job log on the head; they reach Cloud Logging only
  through the Ray add-on's log collection (`rayClusterLoggingConfig`, cluster.py), whose coverage
  of job-driver logs is not verified here (docs/jobs.md, "Known limits").
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_gcp as gcp

from components.config import StackConfig

# The pods' name for the Lustre volume (components/k8s/raycluster.py _lustre_volume).
LUSTRE_VOLUME = "lustre"
# GKE's managed DCGM series (see the module docstring): utilisation in percent, memory in MiB.
DCGM_GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"
DCGM_FB_USED = "DCGM_FI_DEV_FB_USED"
DCGM_METRICS = (DCGM_GPU_UTIL, DCGM_FB_USED)
# What the supervisor's give-up record holds (jobs/head/events.py PREFIX, GAVE_UP, `line`).
SUPERVISOR_PREFIX = "JOBS-SUPERVISOR"
# Dashboards API: a mosaic layout is 48 columns wide (MosaicLayout.columns, at most 48).
COLUMNS = 48


@dataclass(frozen=True)
class StackMonitoringArgs:
    project: str
    name_prefix: str
    cluster_name: str
    namespace: str
    alert_emails: tuple[str, ...] = ()
    lustre_full_percent: int = 85
    after: Sequence[pulumi.Resource] = ()

    @classmethod
    def for_stack(
        cls, config: StackConfig, after: Sequence[pulumi.Resource] = ()
    ) -> StackMonitoringArgs:
        return cls(
            project=config.project,
            name_prefix=config.name_prefix,
            cluster_name=config.cluster_name,
            namespace=config.ray.namespace,
            alert_emails=tuple(config.monitoring.alert_emails),
            lustre_full_percent=config.monitoring.lustre_full_percent,
            after=tuple(after),
        )


@dataclass(frozen=True)
class EventMetric:
    """A log-based metric counting one kind of the supervisor's records."""

    event: str  # jobs/head/events.py: GAVE_UP, STALLED, PREEMPTED
    suffix: str  # of the metric's name, after the stack's prefix
    what: str  # its display name, after the stack's prefix


# What the dashboard counts from the supervisors' records: runs that got no further attempt,
# attempts the stall watchdog stopped, and attempts lost to a preemption (a GPU node gone).
GAVE_UP = EventMetric("gave_up", "runs-gave-up", "runs that gave up")
STALLED = EventMetric("stalled", "runs-stalled", "attempts stopped as stalled")
PREEMPTED = EventMetric("preempted", "runs-preempted", "attempts lost to a preemption")
EVENT_METRICS = (GAVE_UP, STALLED, PREEMPTED)


def event_metric_name(args: StackMonitoringArgs, metric: EventMetric) -> str:
    return f"{args.name_prefix}-{metric.suffix}"


def event_log_filter(args: StackMonitoringArgs, metric: EventMetric) -> str:
    """The Logging query for the supervisor's lines of one event, in this cluster's Ray
    namespace. `:` is the query language's "has" (substring) operator on a text field;
    container lines that are not pure JSON land in `textPayload`."""
    quoted = json.dumps(f'"event": "{metric.event}"')
    return " AND ".join(
        [
            'resource.type="k8s_container"',
            f'resource.labels.cluster_name="{args.cluster_name}"',
            f'resource.labels.namespace_name="{args.namespace}"',
            f'textPayload:"{SUPERVISOR_PREFIX}"',
            f"textPayload:{quoted}",
        ]
    )


def event_metric_args(args: StackMonitoringArgs, metric: EventMetric) -> dict[str, Any]:
    return {
        "project": args.project,
        "name": event_metric_name(args, metric),
        "description": f"The supervisor's `{metric.event}` records ({metric.what}), "
        "from its JOBS-SUPERVISOR lines",
        "filter": event_log_filter(args, metric),
        "metric_descriptor": {
            "metric_kind": "DELTA",
            "value_type": "INT64",
            "unit": "1",
            "display_name": f"{args.name_prefix}: {metric.what}",
        },
    }


def gave_up_metric_name(args: StackMonitoringArgs) -> str:
    return event_metric_name(args, GAVE_UP)


def lustre_utilization_filter(args: StackMonitoringArgs) -> str:
    return " AND ".join(
        [
            'metric.type="kubernetes.io/pod/volume/utilization"',
            'resource.type="k8s_pod"',
            f'resource.labels.cluster_name="{args.cluster_name}"',
            f'resource.labels.namespace_name="{args.namespace}"',
            f'metric.labels.volume_name="{LUSTRE_VOLUME}"',
        ]
    )


def _promql_chart(title: str, query: str, unit: str = "") -> dict[str, Any]:
    query_spec: dict[str, Any] = {"prometheusQuery": query}
    if unit:
        query_spec["unitOverride"] = unit
    return {
        "title": title,
        "xyChart": {
            "dataSets": [{"timeSeriesQuery": query_spec, "plotType": "LINE", "targetAxis": "Y1"}],
            "yAxis": {"scale": "LINEAR"},
        },
    }


def _log_count_chart(
    title: str, args: StackMonitoringArgs, *counted: EventMetric
) -> dict[str, Any]:
    """Counts per 5 minutes of log-based metrics, one line each, named by what it counts."""
    return {
        "title": title,
        "xyChart": {
            "dataSets": [
                {
                    "timeSeriesQuery": {
                        "timeSeriesFilter": {
                            "filter": f'metric.type="logging.googleapis.com/user/'
                            f'{event_metric_name(args, metric)}" AND resource.type="k8s_container"',
                            "aggregation": {
                                "alignmentPeriod": "300s",
                                "perSeriesAligner": "ALIGN_SUM",
                                "crossSeriesReducer": "REDUCE_SUM",
                            },
                        }
                    },
                    "plotType": "LINE",
                    "targetAxis": "Y1",
                    "legendTemplate": metric.what,
                }
                for metric in counted
            ],
            "yAxis": {"scale": "LINEAR"},
        },
    }


def dashboard(args: StackMonitoringArgs) -> dict[str, Any]:
    """The dashboard as the Dashboards API takes it (projects.dashboards, mosaicLayout)."""
    dcgm = f'cluster="{args.cluster_name}"'
    ray_pods = (
        f'monitored_resource="k8s_pod",cluster_name="{args.cluster_name}",'
        f'namespace_name="{args.namespace}",volume_name="{LUSTRE_VOLUME}"'
    )
    widgets = [
        _promql_chart(
            "GPU utilisation per node (DCGM)",
            f"avg by (Hostname) (avg_over_time({DCGM_GPU_UTIL}{{{dcgm}}}[${{__interval}}]))",
            "%",
        ),
        _promql_chart(
            "GPU memory used per node (DCGM, MiB)",
            f"sum by (Hostname) (avg_over_time({DCGM_FB_USED}{{{dcgm}}}[${{__interval}}]))",
        ),
        _promql_chart(
            "GPU pool nodes (reporting DCGM)",
            f"count(count by (Hostname) ({DCGM_GPU_UTIL}{{{dcgm}}}))",
        ),
        _promql_chart(
            f"Lustre used (alert above {args.lustre_full_percent} %)",
            f"max(kubernetes_io:pod_volume_utilization{{{ray_pods}}}) * 100",
            "%",
        ),
        _log_count_chart("Runs that gave up or stalled", args, GAVE_UP, STALLED),
        _log_count_chart("Preemptions the runs met", args, PREEMPTED),
    ]
    width, height = COLUMNS // 2, 16
    tiles = [
        {
            "xPos": (i % 2) * width,
            "yPos": (i // 2) * height,
            "width": width,
            "height": height,
            "widget": widget,
        }
        for i, widget in enumerate(widgets)
    ]
    return {
        "displayName": f"{args.name_prefix}: GPU pool, Lustre and runs",
        "mosaicLayout": {"columns": COLUMNS, "tiles": tiles},
    }


def email_channel_args(project: str, name_prefix: str, purpose: str, email: str) -> dict[str, Any]:
    """A Cloud Monitoring e-mail channel of the stack; `purpose` (alerts, budget) names it."""
    return {
        "project": project,
        "type": "email",
        "display_name": f"{name_prefix} {purpose}: {email}",
        "labels": {"email_address": email},
        "user_labels": {"rl-on-gke-stack": name_prefix},
    }


def email_channels(
    name: str,
    project: str,
    name_prefix: str,
    purpose: str,
    emails: Sequence[str],
    opts: pulumi.ResourceOptions,
) -> list[gcp.monitoring.NotificationChannel]:
    """One e-mail channel per address, `{name}-email-{i}` in the order the stack lists them."""
    return [
        gcp.monitoring.NotificationChannel(
            f"{name}-email-{i}",
            **email_channel_args(project, name_prefix, purpose, email),
            opts=opts,
        )
        for i, email in enumerate(emails)
    ]


def _threshold_alert_args(
    args: StackMonitoringArgs,
    *,
    title: str,
    severity: str,
    condition: str,
    condition_filter: pulumi.Input[str],
    threshold: float,
    duration: str,
    aggregate: str,
    content: str,
    channels: Sequence[pulumi.Input[str]],
) -> dict[str, Any]:
    """One alert policy of a single threshold condition over 300 s windows, with its runbook.

    `aggregate` (MAX, SUM) is both the per-series aligner and the cross-series reducer."""
    return {
        "project": args.project,
        "display_name": f"{args.name_prefix}: {title}",
        "combiner": "OR",
        "severity": severity,
        "conditions": [
            {
                "display_name": condition,
                "condition_threshold": {
                    "filter": condition_filter,
                    "comparison": "COMPARISON_GT",
                    "threshold_value": threshold,
                    "duration": duration,
                    "aggregations": [
                        {
                            "alignment_period": "300s",
                            "per_series_aligner": f"ALIGN_{aggregate}",
                            "cross_series_reducer": f"REDUCE_{aggregate}",
                        }
                    ],
                    "trigger": {"count": 1},
                },
            }
        ],
        "documentation": {"mime_type": "text/markdown", "content": content},
        "alert_strategy": {"auto_close": "86400s"},
        "notification_channels": list(channels),
    }


def lustre_alert_args(
    args: StackMonitoringArgs, channels: Sequence[pulumi.Input[str]]
) -> dict[str, Any]:
    return _threshold_alert_args(
        args,
        title=f"Lustre above {args.lustre_full_percent} % full",
        severity="WARNING",
        condition=f"Lustre used > {args.lustre_full_percent} %",
        condition_filter=lustre_utilization_filter(args),
        threshold=args.lustre_full_percent / 100,
        duration="600s",
        # Every pod that mounts it sees the same file system: the fullest reading.
        aggregate="MAX",
        content=(
            f"Lustre of stack `{args.name_prefix}` is above {args.lustre_full_percent} % full. "
            "A run that cannot write its next checkpoint fails. Keep fewer checkpoints "
            "(`rl-jobs submit --set <keep key>=N`), delete old runs' directories, or grow "
            "`lustre.capacityGib` (an in-place update)."
        ),
        channels=channels,
    )


def gave_up_alert_args(
    args: StackMonitoringArgs, channels: Sequence[pulumi.Input[str]]
) -> dict[str, Any]:
    """A log-match policy on the supervisor's give-up lines themselves, not on the give-up count.

    A log-based metric's type is readable by alert policies only up to 10 minutes after the metric
    is created: a threshold policy on it, created in the same first `up`, fails with 404 "Cannot
    find metric(s) that match type" (terraform-provider-google #11102, cloud-foundation-fabric
    #3739), and `depends_on` waits only for the metric's create call. A LogMatch condition reads
    the log entries with the same filter and names no metric. The API requires a notification rate
    limit on such a policy (AlertPolicy.AlertStrategy.notification_rate_limit, "Required for alert
    policies with a LogMatch condition"; at least 5 minutes, cloud.google.com/monitoring/alerts/
    log-based-alerts), and allows only one condition.
    """
    return {
        "project": args.project,
        "display_name": f"{args.name_prefix}: a run gave up",
        "combiner": "OR",
        "severity": "ERROR",
        "conditions": [
            {
                "display_name": "Supervisor gave up on a run",
                "condition_matched_log": {"filter": event_log_filter(args, GAVE_UP)},
            }
        ],
        "documentation": {
            "mime_type": "text/markdown",
            "content": (
                f"A run on stack `{args.name_prefix}` will get no further attempt: its supervisor "
                "gave up (restart budget spent, or a failure it does not retry). "
                "`rl-jobs list --stack <stack>` shows which; `rl-jobs status RUN` says why."
            ),
        },
        "alert_strategy": {"notification_rate_limit": {"period": "300s"}, "auto_close": "86400s"},
        "notification_channels": list(channels),
    }


class StackMonitoring(pulumi.ComponentResource):
    """The dashboard and the give-up count; channels and alert policies when someone is told."""

    dashboard: gcp.monitoring.Dashboard
    gave_up: gcp.logging.Metric
    counts: dict[str, gcp.logging.Metric]
    channels: list[gcp.monitoring.NotificationChannel]
    alerts: list[gcp.monitoring.AlertPolicy]

    def __init__(
        self, name: str, args: StackMonitoringArgs, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__("rl-on-gke:gcp:StackMonitoring", name, None, opts)
        child = pulumi.ResourceOptions(parent=self, depends_on=list(args.after))
        self.dashboard = gcp.monitoring.Dashboard(
            f"{name}-dashboard",
            project=args.project,
            dashboard_json=json.dumps(dashboard(args), sort_keys=True),
            opts=child,
        )
        # The give-up count keeps its first resource name (`-gave-up`): a rename would
        # replace it and lose its history.
        self.counts = {
            metric.event: gcp.logging.Metric(
                f"{name}-{metric.suffix.removeprefix('runs-')}",
                **event_metric_args(args, metric),
                opts=child,
            )
            for metric in EVENT_METRICS
        }
        self.gave_up = self.counts[GAVE_UP.event]
        self.channels = email_channels(
            name, args.project, args.name_prefix, "alerts", args.alert_emails, child
        )
        self.alerts = []
        if self.channels:
            ids = [c.id for c in self.channels]
            self.alerts = [
                gcp.monitoring.AlertPolicy(
                    f"{name}-lustre-full", **lustre_alert_args(args, ids), opts=child
                ),
                gcp.monitoring.AlertPolicy(
                    f"{name}-gave-up", **gave_up_alert_args(args, ids), opts=child
                ),
            ]
        self.register_outputs({})
