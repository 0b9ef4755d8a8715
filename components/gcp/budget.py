"""The stack's Cloud Billing budget: a monthly amount on the project, e-mails as spend crosses thresholds.

Only when the stack sets `budget` (components/config.py BudgetSettings, which refuses a missing or
malformed billing account before anything is registered). The budget lives on the billing account
(`billingAccounts/<id>/budgets/<id>`), filtered to this project, so the deployer needs budget
permissions on the billing account, not on the project (docs/ci-setup.md). Each address gets its
own Cloud Monitoring e-mail channel in the project; the budget sends to those channels on top of
Cloud Billing's default recipients (the account's Billing Admins and Users).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_gcp as gcp

from components.config import BudgetSettings, StackConfig
from components.gcp.lustre import data_protection
from components.gcp.monitoring import email_channels


@dataclass(frozen=True)
class ProjectBudgetArgs:
    project: str
    name_prefix: str
    budget: BudgetSettings
    # What the budget's own provider waits for: the enabled APIs (components/gcp/apis.py).
    after: Sequence[pulumi.Resource] = ()
    # lustre.protect: a destroy that keeps Lustre keeps it billing, so it keeps the budget (and
    # the channels it e-mails through) too, protected and retained the same way.
    protect: bool = False

    @classmethod
    def for_stack(
        cls, config: StackConfig, after: Sequence[pulumi.Resource] = ()
    ) -> ProjectBudgetArgs:
        assert config.budget is not None  # only composed when the stack sets it (__main__.py)
        return cls(
            project=config.project,
            name_prefix=config.name_prefix,
            budget=config.budget,
            after=tuple(after),
            protect=config.lustre.protect,
        )


def paying_account(configured: str, projects: str) -> str:
    """The configured billing account, once it is the one that pays for the project.

    A budget watches the spend of its own billing account only: one on another account (valid,
    but not the project's) never sees this project's costs and never warns. `projects` is
    get_project's `billingAccount` (empty when it is not known, as offline)."""
    live = projects.removeprefix("billingAccounts/")
    wanted = configured.removeprefix("billingAccounts/")
    if live and live != wanted:
        raise ValueError(
            f"rl-on-gke:budget.billingAccount = {configured!r}: the project is billed to "
            f"{live}, so a budget on {wanted} would never see its spend; set it to {live}"
        )
    return configured


def budget_args(
    args: ProjectBudgetArgs,
    project_number: pulumi.Input[str],
    channels: Sequence[pulumi.Input[str]],
) -> dict[str, Any]:
    budget = args.budget
    assert budget.billing_account is not None  # refused by BudgetSettings otherwise
    rules: list[dict[str, Any]] = [
        {"threshold_percent": t, "spend_basis": "CURRENT_SPEND"} for t in budget.thresholds
    ]
    # One more e-mail when the month's forecast passes the amount: the warning comes before the
    # money is spent, not after.
    rules.append({"threshold_percent": 1.0, "spend_basis": "FORECASTED_SPEND"})
    return {
        "billing_account": budget.billing_account,
        # At most 60 characters (BudgetArgs.display_name); the prefix is at most 20.
        "display_name": f"{args.name_prefix} monthly budget",
        "budget_filter": {
            "projects": [pulumi.Output.concat("projects/", project_number)],
            "calendar_period": "MONTH",
            "credit_types_treatment": "INCLUDE_ALL_CREDITS",
        },
        # No currency code: the amount is in the billing account's own currency (a different
        # one is refused by the API).
        "amount": {"specified_amount": {"units": str(budget.monthly_amount)}},
        "threshold_rules": rules,
        "all_updates_rule": {
            "monitoring_notification_channels": list(channels),
            "disable_default_iam_recipients": False,
        },
    }


class ProjectBudget(pulumi.ComponentResource):
    """E-mail notification channels and the budget that sends to them."""

    budget: gcp.billing.Budget
    channels: list[gcp.monitoring.NotificationChannel]

    def __init__(
        self, name: str, args: ProjectBudgetArgs, opts: pulumi.ResourceOptions | None = None
    ):
        super().__init__("rl-on-gke:gcp:ProjectBudget", name, None, opts)
        self.channels = email_channels(
            name,
            args.project,
            args.name_prefix,
            "budget",
            args.budget.emails,
            pulumi.ResourceOptions.merge(
                pulumi.ResourceOptions(parent=self), data_protection(args.protect)
            ),
        )
        project = gcp.organizations.get_project_output(
            project_id=args.project, opts=pulumi.InvokeOutputOptions(parent=self)
        )
        number = project.number
        configured = args.budget.billing_account
        assert configured is not None  # refused by BudgetSettings otherwise
        # Checked before the budget is created: it takes the account through the check.
        account = project.billing_account.apply(lambda live: paying_account(configured, live or ""))
        # The Budget API bills its calls to a quota project; with user credentials (a person's
        # `gcloud auth application-default login`) the provider must name one and send it
        # (pulumi-gcp 10.2 billing.Budget: "If you are using User ADCs ... you must specify a
        # billing_project and set user_project_override to true"). A provider of its own, so no
        # other resource's calls change.
        provider = gcp.Provider(
            f"{name}-billing",
            project=args.project,
            billing_project=args.project,
            user_project_override=True,
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.after)),
        )
        self.budget = gcp.billing.Budget(
            f"{name}-budget",
            **{
                **budget_args(args, number, [c.id for c in self.channels]),
                "billing_account": account,
            },
            opts=pulumi.ResourceOptions.merge(
                pulumi.ResourceOptions(parent=self, provider=provider),
                data_protection(args.protect),
            ),
        )
        self.register_outputs({"budget": self.budget.name})
