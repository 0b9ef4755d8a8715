"""The budget: e-mail channels and a monthly budget on the project, or nothing at all."""

from __future__ import annotations

import copy
import gc
from collections.abc import Iterator

import pytest

from components.config import ConfigError, parse_stack_config
from components.gcp.budget import check_billing_account
from tests.conftest import BASE_STACK_CONFIG, raw_from_stack
from tools.render import OFFLINE_PROJECT_NUMBER, load_stack_file, render


@pytest.fixture(autouse=True)
def _collect_refused_outputs() -> Iterator[None]:
    """A refused program leaves failed futures whose finalizer logs a traceback; Python 3.11
    formats it with ast.parse, and collected inside another test's ast.parse (the layout tests)
    that reentry breaks the ast module's shared depth counter ("AST constructor recursion depth
    mismatch", a CPython 3.11 fault). Collected here, their logging happens in this test."""
    yield
    gc.collect()


BUDGET = {
    "billingAccount": "012345-6789AB-CDEF01",
    "monthlyAmount": 20000,
    "thresholds": [0.9, 0.5],
    "emails": ["ml-platform@example.com", "finance@example.com"],
}
BUDGET_TYPE = "gcp:billing/budget:Budget"
CHANNEL_TYPE = "gcp:monitoring/notificationChannel:NotificationChannel"


def _render(budget: dict | None):
    config, secret_keys = load_stack_file("dev")
    config["gcp:project"] = "example-project"
    if budget is not None:
        config["rl-on-gke:budget"] = budget
    return render(config, stack="dev", secret_keys=secret_keys)


@pytest.mark.plan
def test_a_budget_e_mails_each_address_at_each_threshold_and_on_the_forecast() -> None:
    rendering = _render(BUDGET)
    channels = rendering.of_type(CHANNEL_TYPE)
    assert sorted(c.inputs["labels"]["email_address"] for c in channels) == sorted(BUDGET["emails"])
    assert all(
        c.inputs["type"] == "email" and c.inputs["project"] == "example-project" for c in channels
    )
    (budget,) = rendering.of_type(BUDGET_TYPE)
    b = budget.inputs
    assert b["billingAccount"] == "012345-6789AB-CDEF01"
    assert b["amount"] == {"specifiedAmount": {"units": "20000"}}
    # The budget counts this project only, by number, over each calendar month.
    assert b["budgetFilter"]["projects"] == [f"projects/{OFFLINE_PROJECT_NUMBER}"]
    assert b["budgetFilter"]["calendarPeriod"] == "MONTH"
    assert b["thresholdRules"] == [
        {"thresholdPercent": 0.5, "spendBasis": "CURRENT_SPEND"},
        {"thresholdPercent": 0.9, "spendBasis": "CURRENT_SPEND"},
        {"thresholdPercent": 1.0, "spendBasis": "FORECASTED_SPEND"},
    ]
    assert sorted(b["allUpdatesRule"]["monitoringNotificationChannels"]) == sorted(
        f"{c.name}-id" for c in channels
    )


@pytest.mark.plan
def test_the_budget_api_is_enabled_and_called_with_a_quota_project() -> None:
    rendering = _render(BUDGET)
    services = {r.inputs["service"] for r in rendering.of_type("gcp:projects/service:Service")}
    assert "billingbudgets.googleapis.com" in services
    (budget,) = rendering.of_type(BUDGET_TYPE)
    provider = next(
        r
        for r in rendering.of_type("pulumi:providers:gcp")
        if r.inputs.get("userProjectOverride") in (True, "true")
    )
    assert provider.inputs["billingProject"] == "example-project"
    assert budget.provider and budget.provider.startswith(provider.urn)


@pytest.mark.plan
def test_no_budget_config_registers_nothing_of_it() -> None:
    rendering = _render(None)
    assert rendering.of_type(BUDGET_TYPE) == [] and rendering.of_type(CHANNEL_TYPE) == []
    services = {r.inputs["service"] for r in rendering.of_type("gcp:projects/service:Service")}
    assert "billingbudgets.googleapis.com" not in services


def _problems(**budget) -> list[str]:
    config = copy.deepcopy(BASE_STACK_CONFIG)
    config["rl-on-gke:budget"] = {k: v for k, v in {**BUDGET, **budget}.items() if v is not None}
    with pytest.raises(ConfigError) as caught:
        parse_stack_config(raw_from_stack(config))
    return caught.value.problems


def test_a_missing_billing_account_is_refused_by_name() -> None:
    (problem,) = _problems(billingAccount=None)
    assert problem.startswith("rl-on-gke:budget.billingAccount = <unset>: required")
    assert "XXXXXX-XXXXXX-XXXXXX" in problem


@pytest.mark.parametrize(
    "bad", ["0123456789ABCDEF01", "012345-6789ab-cdef01", "012345-6789AB", "billing-account"]
)
def test_a_malformed_billing_account_is_refused_with_its_format(bad: str) -> None:
    (problem,) = _problems(billingAccount=bad)
    assert problem.startswith(f"rl-on-gke:budget.billingAccount = {bad!r}: ")
    assert "XXXXXX-XXXXXX-XXXXXX" in problem


@pytest.mark.plan
def test_a_bad_config_registers_nothing() -> None:
    # The program validates before registering anything: render raises, no resource is left.
    config, secret_keys = load_stack_file("dev")
    config["gcp:project"] = "example-project"
    config["rl-on-gke:budget"] = {**BUDGET, "billingAccount": "nope"}
    with pytest.raises(Exception, match="billingAccount"):
        render(config, stack="dev", secret_keys=secret_keys)


def test_amount_thresholds_and_addresses_are_checked_by_key() -> None:
    (amount,) = _problems(monthlyAmount=0)
    assert amount.startswith("rl-on-gke:budget.monthlyAmount = 0: ")
    (threshold,) = _problems(thresholds=[0.5, 0])
    assert (
        threshold.startswith("rl-on-gke:budget.thresholds = [0.5, 0]: ") and "above 0" in threshold
    )
    (email,) = _problems(emails=["not-an-address"])
    assert email.startswith("rl-on-gke:budget.emails = ['not-an-address']: ")
    (too_many,) = _problems(emails=[f"u{i}@example.com" for i in range(6)])
    assert too_many.startswith("rl-on-gke:budget.emails = ") and "5" in too_many
    (unknown,) = _problems(currency="EUR")
    assert unknown.startswith("rl-on-gke:budget.currency: unknown key")


def test_a_billing_account_that_does_not_pay_for_the_project_is_refused_by_name() -> None:
    """A valid but wrong `budget.billingAccount` gives a budget that never sees
    the project's spend. The project's own account (get_project's `billingAccount`) decides."""
    from components.gcp.budget import paying_account

    assert paying_account("012345-6789AB-CDEF01", "billingAccounts/012345-6789AB-CDEF01") == (
        "012345-6789AB-CDEF01"
    )
    assert paying_account("012345-6789AB-CDEF01", "") == "012345-6789AB-CDEF01"  # not known
    with pytest.raises(ValueError) as refused:
        paying_account("012345-6789AB-CDEF01", "billingAccounts/ABCDEF-012345-6789AB")
    message = str(refused.value)
    assert message.startswith("rl-on-gke:budget.billingAccount = '012345-6789AB-CDEF01': ")
    assert "ABCDEF-012345-6789AB" in message and "\n" not in message


def _render_stack(stack: str):
    config, secret_keys = load_stack_file(stack)
    config["gcp:project"] = "example-project"
    config["rl-on-gke:budget"] = BUDGET
    return render(config, stack=stack, secret_keys=secret_keys)


@pytest.mark.plan
@pytest.mark.parametrize(("stack", "kept"), [("h200", True), ("dev", False)])
def test_the_budget_is_kept_on_destroy_whenever_lustre_is(stack: str, kept: bool) -> None:
    """A destroy that keeps Lustre (h200: lustre.protect true) keeps it billing; the budget and the
    channels it e-mails through stay with it, protected and retained the same way, so the only
    warning about that spend is not deleted with the compute."""
    rendering = _render_stack(stack)
    (lustre,) = rendering.of_type("gcp:lustre/instance:Instance")
    assert (lustre.protect, lustre.retain_on_delete) == (kept, kept)
    kept_with_it = [*rendering.of_type(BUDGET_TYPE), *rendering.of_type(CHANNEL_TYPE)]
    assert len(kept_with_it) == 1 + len(BUDGET["emails"])
    for resource in kept_with_it:
        assert (resource.protect, resource.retain_on_delete) == (kept, kept), resource.name


def _render_billed_to(account: str):
    from tools.render import OfflineCapacity

    config, secret_keys = load_stack_file("dev")
    config["gcp:project"] = "example-project"
    config["rl-on-gke:budget"] = BUDGET
    capacity = OfflineCapacity.as_the_stack_asks(config)
    capacity.billing_accounts["example-project"] = account
    return render(config, stack="dev", secret_keys=secret_keys, capacity=capacity)


@pytest.mark.plan
def test_the_whole_program_refuses_a_budget_on_an_account_that_does_not_pay(monkeypatch) -> None:
    """get_project is an invoke, so it runs at preview (and under mocks) and reports the
    project's billing account: a mismatch fails the run by key before any resource registers,
    so a refused `up` leaves nothing half-built."""
    import tools.render as render_module

    registered: list[str] = []
    original = render_module.RecordingMonitor.RegisterResource

    def spy(self, request):
        if request.type != "pulumi:pulumi:Stack":
            registered.append(request.type)
        return original(self, request)

    monkeypatch.setattr(render_module.RecordingMonitor, "RegisterResource", spy)
    with pytest.raises(ValueError) as refused:
        _render_billed_to("ABCDEF-012345-6789AB")
    assert registered == []
    message = str(refused.value)
    assert "rl-on-gke:budget.billingAccount = '012345-6789AB-CDEF01'" in message
    assert "billed to ABCDEF-012345-6789AB" in message and "set it to" in message
    (budget,) = _render_billed_to("012345-6789AB-CDEF01").of_type(BUDGET_TYPE)
    assert budget.inputs["billingAccount"] == "012345-6789AB-CDEF01"


def test_the_account_check_looks_up_the_stacks_project_only_when_a_budget_is_set() -> None:
    config = copy.deepcopy(BASE_STACK_CONFIG)
    asked: list[str] = []

    def billed_to(account: str):
        return lambda project: asked.append(project) or account

    check_billing_account(parse_stack_config(raw_from_stack(config)), billed_to("X"))
    assert asked == []  # no budget: nothing to look up
    config["rl-on-gke:budget"] = BUDGET
    with_budget = parse_stack_config(raw_from_stack(config))
    check_billing_account(with_budget, billed_to("billingAccounts/012345-6789AB-CDEF01"))
    check_billing_account(with_budget, billed_to(""))  # not known: not refused
    with pytest.raises(ValueError, match=r"budget\.billingAccount = '012345-6789AB-CDEF01'"):
        check_billing_account(with_budget, billed_to("ABCDEF-012345-6789AB"))
    assert asked == [with_budget.project] * 3
