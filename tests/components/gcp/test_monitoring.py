"""The stack dashboard, the give-up count and the alerts (Cloud Monitoring), as the program renders them."""

from __future__ import annotations

import copy
import json
import re
import warnings

import pytest

from components.config import ConfigError, parse_stack_config
from components.gcp import monitoring
from jobs.head import events
from tests.components.promql import selected_metrics
from tests.conftest import BASE_STACK_CONFIG, raw_from_stack
from tools.render import load_stack_file, render

DASHBOARD = "gcp:monitoring/dashboard:Dashboard"
METRIC = "gcp:logging/metric:Metric"
POLICY = "gcp:monitoring/alertPolicy:AlertPolicy"


def _dashboards_api():
    """The Dashboards API's own message types, imported when used (a second of import time)."""
    with warnings.catch_warnings():  # google.api_core warns about Python 3.11's end of life
        warnings.simplefilter("ignore", FutureWarning)
        from google.cloud import monitoring_dashboard_v1
    return monitoring_dashboard_v1


CHANNEL = "gcp:monitoring/notificationChannel:NotificationChannel"
CLUSTER = "gcp:container/cluster:Cluster"

# Every metric the dashboard may name, and where Google shows it exists (monitoring.py docstring).
KNOWN_PROMQL_METRICS = {
    "DCGM_FI_DEV_GPU_UTIL",  # GKE managed DCGM via Managed Prometheus
    "DCGM_FI_DEV_FB_USED",
    "kubernetes_io:pod_volume_utilization",  # kubernetes.io/pod/volume/utilization in PromQL
}


def _render(stack: str = "dev", monitoring_config: dict | None = None):
    config, secret_keys = load_stack_file(stack)
    config["gcp:project"] = "example-project"
    if monitoring_config is not None:
        config["rl-on-gke:monitoring"] = monitoring_config
    return render(config, stack=stack, secret_keys=secret_keys)


def _dashboard(rendering) -> dict:
    (resource,) = rendering.of_type(DASHBOARD)
    assert resource.inputs["project"] == "example-project"
    return json.loads(resource.inputs["dashboardJson"])


@pytest.mark.plan
@pytest.mark.parametrize("stack", ["dev", "h200"])
def test_the_dashboard_is_one_the_dashboards_api_accepts(stack: str) -> None:
    text = _render(stack).of_type(DASHBOARD)[0].inputs["dashboardJson"]
    # Google's own Dashboard message refuses an unknown field or enum value, as the API does.
    parsed = _dashboards_api().Dashboard.from_json(text)
    layout = parsed.mosaic_layout
    assert layout.columns == 48 and len(layout.tiles) == 6
    cells: set[tuple[int, int]] = set()
    for tile in layout.tiles:
        assert tile.width > 0 and tile.height > 0 and tile.x_pos + tile.width <= layout.columns
        assert tile.widget.title and tile.widget.xy_chart.data_sets
        area = {
            (x, y)
            for x in range(tile.x_pos, tile.x_pos + tile.width)
            for y in range(tile.y_pos, tile.y_pos + tile.height)
        }
        assert not area & cells, f"tile {tile.widget.title!r} overlaps another"
        cells |= area


def test_a_misspelt_dashboard_field_is_refused_by_the_same_check() -> None:
    bad = monitoring.dashboard(
        monitoring.StackMonitoringArgs("p-123456", "rl-dev", "rl-dev-gke", "rl")
    )
    bad["mosaicLayout"]["tiles"][0]["widget"]["xyChart"]["dataSets"][0]["plotType"] = "LINES"
    with pytest.raises(Exception, match="plotType"):
        _dashboards_api().Dashboard.from_json(json.dumps(bad))


@pytest.mark.plan
def test_every_metric_the_dashboard_names_exists_and_is_scoped_to_this_stack() -> None:
    rendering = _render("dev")
    board = _dashboard(rendering)
    created = {m.inputs["name"] for m in rendering.of_type(METRIC)}
    queries, filters = [], []
    for tile in board["mosaicLayout"]["tiles"]:
        for data_set in tile["widget"]["xyChart"]["dataSets"]:
            q = data_set["timeSeriesQuery"]
            if "prometheusQuery" in q:
                queries.append(q["prometheusQuery"])
            else:
                filters.append(q["timeSeriesFilter"]["filter"])
    # Parsed as Prometheus parses them (Cloud Monitoring's ${__interval} filled in).
    named = {m for q in queries for m in selected_metrics(q)}
    assert named == KNOWN_PROMQL_METRICS
    assert all('cluster="rl-dev-gke"' in q or 'cluster_name="rl-dev-gke"' in q for q in queries)
    # The log-based metrics the dashboard charts are the ones the program creates, each once.
    charted = {re.findall(r'logging.googleapis.com/user/([^"]+)"', f)[0] for f in filters}
    assert (
        charted
        == created
        == {"rl-dev-runs-gave-up", "rl-dev-runs-stalled", "rl-dev-runs-preempted"}
    )
    assert len(filters) == len(charted)


@pytest.mark.plan
def test_the_cluster_exports_what_the_dashboard_reads() -> None:
    (cluster,) = _render("dev").of_type(CLUSTER)
    config = cluster.inputs["monitoringConfig"]
    assert "DCGM" in config["enableComponents"] and config["managedPrometheus"]["enabled"]


def _matches(log_filter: str, text: str) -> bool:
    """The `textPayload:"..."` restrictions of a Logging query, applied to one line: each is a
    substring ("has") test; every other restriction is about the resource, not the text."""
    terms = [json.loads(t) for t in re.findall(r'textPayload:("(?:[^"\\]|\\.)*")', log_filter)]
    assert terms, log_filter
    return all(term in text for term in terms)


@pytest.mark.plan
@pytest.mark.parametrize(
    ("event", "name", "display"),
    [
        (events.GAVE_UP, "rl-dev-runs-gave-up", "rl-dev: runs that gave up"),
        (events.STALLED, "rl-dev-runs-stalled", "rl-dev: attempts stopped as stalled"),
        (events.PREEMPTED, "rl-dev-runs-preempted", "rl-dev: attempts lost to a preemption"),
    ],
)
def test_each_log_metric_counts_the_supervisors_own_line_of_its_event_and_no_other(
    event: str, name: str, display: str
) -> None:
    metrics = {m.inputs["name"]: m for m in _render("dev").of_type(METRIC)}
    metric = metrics[name]
    log_filter = metric.inputs["filter"]
    assert 'resource.labels.cluster_name="rl-dev-gke"' in log_filter
    assert 'resource.labels.namespace_name="rl"' in log_filter
    assert metric.inputs["metricDescriptor"] == {
        "metricKind": "DELTA",
        "valueType": "INT64",
        "unit": "1",
        "displayName": display,
    }
    # The supervisor's own line (jobs/head/events.py), as its job log holds it.
    own = events.line(event, "grpo-1", "what happened", reason="budget")
    assert _matches(log_filter, own)
    # Not pure JSON, so GKE's agent keeps it as textPayload rather than parsing it.
    with pytest.raises(json.JSONDecodeError):
        json.loads(own)
    others = {events.FINISHED, events.GAVE_UP, events.PREEMPTED, events.STALLED, events.STOPPED}
    for other in others - {event} | {events.ATTEMPT_ENDED}:
        assert not _matches(log_filter, events.line(other, "grpo-1", f"{event} mentioned"))


@pytest.mark.plan
def test_without_alert_emails_no_channel_and_no_alert_policy_exists() -> None:
    rendering = _render("dev")
    assert rendering.of_type(POLICY) == [] and rendering.of_type(CHANNEL) == []
    assert len(rendering.of_type(DASHBOARD)) == 1 and len(rendering.of_type(METRIC)) == 3


@pytest.mark.plan
def test_alert_emails_turn_on_both_policies_each_telling_every_address() -> None:
    emails = ["oncall@example.com", "ml-platform@example.com"]
    rendering = _render("h200", {"alertEmails": emails})
    channels = rendering.of_type(CHANNEL)
    assert sorted(c.inputs["labels"]["email_address"] for c in channels) == sorted(emails)
    ids = sorted(f"{c.name}-id" for c in channels)
    policies = {p.name.rsplit("-monitoring-", 1)[1]: p.inputs for p in rendering.of_type(POLICY)}
    assert set(policies) == {"lustre-full", "gave-up"}
    for policy in policies.values():
        assert sorted(policy["notificationChannels"]) == ids
        assert policy["combiner"] == "OR" and policy["documentation"]["content"]
    lustre = policies["lustre-full"]["conditions"][0]["conditionThreshold"]
    assert lustre["thresholdValue"] == 0.85 and lustre["comparison"] == "COMPARISON_GT"
    assert 'metric.type="kubernetes.io/pod/volume/utilization"' in lustre["filter"]
    assert 'metric.labels.volume_name="lustre"' in lustre["filter"]
    (gave_up,) = policies["gave-up"]["conditions"]
    # The supervisor's give-up lines themselves, as the give-up count reads them.
    (count,) = [m for m in rendering.of_type(METRIC) if m.inputs["name"] == "rl-h200-runs-gave-up"]
    assert gave_up["conditionMatchedLog"]["filter"] == count.inputs["filter"]
    assert policies["gave-up"]["alertStrategy"]["notificationRateLimit"]["period"] == "300s"


@pytest.mark.plan
def test_the_lustre_threshold_follows_the_config() -> None:
    rendering = _render("dev", {"alertEmails": ["a@example.com"], "lustreFullPercent": 70})
    (lustre,) = [p for p in rendering.of_type(POLICY) if p.name.endswith("lustre-full")]
    assert lustre.inputs["conditions"][0]["conditionThreshold"]["thresholdValue"] == 0.7
    assert "70 %" in lustre.inputs["displayName"]


def _problems(**settings) -> list[str]:
    config = copy.deepcopy(BASE_STACK_CONFIG)
    config["rl-on-gke:monitoring"] = settings
    with pytest.raises(ConfigError) as caught:
        parse_stack_config(raw_from_stack(config))
    return caught.value.problems


def test_bad_monitoring_settings_are_refused_by_key_value_and_what_is_allowed() -> None:
    (email,) = _problems(alertEmails=["oncall"])
    assert email.startswith("rl-on-gke:monitoring.alertEmails = ['oncall']: ")
    assert "e-mail" in email
    (repeat,) = _problems(alertEmails=["a@example.com", "a@example.com"])
    assert "repeat" in repeat
    (many,) = _problems(alertEmails=[f"u{i}@example.com" for i in range(11)])
    assert many.startswith("rl-on-gke:monitoring.alertEmails = ") and "10" in many
    (percent,) = _problems(lustreFullPercent=100)
    assert percent.startswith("rl-on-gke:monitoring.lustreFullPercent = 100: ") and "99" in percent
    (unknown,) = _problems(alertEmail=["a@example.com"])
    assert unknown.startswith("rl-on-gke:monitoring.alertEmail: unknown key")


LOG_METRIC_TYPE = re.compile(r'metric\.type\s*=\s*"logging\.googleapis\.com/user/([^"]+)"')


def _metric_filters(policy_inputs: dict) -> list[str]:
    out = []
    for condition in policy_inputs["conditions"]:
        for kind in ("conditionThreshold", "conditionAbsent"):
            if kind in condition:
                out.append(condition[kind]["filter"])
    return out


@pytest.mark.plan
def test_the_first_up_creates_no_alert_policy_on_a_metric_it_creates_itself() -> None:
    """The first `up` chain with alert e-mails and a budget: a log-based metric's
    type becomes readable by alert policies up to 10 minutes after it is created (the API's 404
    "Cannot find metric(s) that match type = ...", terraform-provider-google #11102,
    cloud-foundation-fabric #3739), and `depends_on` waits for the create call only. So no policy
    may read a `logging.Metric` registered in the same program; every dependency a resource waits
    for is registered, and the dependencies have an order (no cycle)."""
    config, secret_keys = load_stack_file("h200")
    config["gcp:project"] = "example-project"
    config["rl-on-gke:monitoring"] = {"alertEmails": ["oncall@example.com"]}
    config["rl-on-gke:budget"] = {
        "billingAccount": "012345-6789AB-CDEF01",
        "monthlyAmount": 1000,
        "emails": ["finance@example.com"],
    }
    rendering = render(config, stack="h200", secret_keys=secret_keys)
    created_metrics = {m.inputs["name"] for m in rendering.of_type(METRIC)}
    policies = rendering.of_type(POLICY)
    assert policies and rendering.of_type("gcp:billing/budget:Budget")
    for policy in policies:
        read = {m for f in _metric_filters(policy.inputs) for m in LOG_METRIC_TYPE.findall(f)}
        assert read & created_metrics == set(), policy.name
    by_urn = {r.urn: r for r in rendering.resources}
    order: list[str] = []
    pending = dict(by_urn)
    while pending:
        ready = [u for u, r in pending.items() if all(d in order for d in r.dependencies)]
        assert ready, f"a dependency cycle or an unregistered dependency among {sorted(pending)}"
        order += ready
        for u in ready:
            del pending[u]
