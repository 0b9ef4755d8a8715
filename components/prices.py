"""What one GPU node-hour costs, by machine type and capacity mode: the default of `cost.nodeHourUsd`.

Pure data (no Pulumi import), shared by the config (the default it exports), the stack outputs
contract (`gpuNodeHourUsd`, `gpuNodeHourSource`) and the `rl-jobs cost` command.

Every figure here is an ESTIMATE, marked so in what the stack exports. Google publishes the A4 and
A3 Ultra machine prices on the "GPU pricing" / "VM instance pricing" pages
(https://cloud.google.com/compute/gpus-pricing, https://cloud.google.com/compute/vm-instance-pricing),
but the search tool's stored copies of those pages (looked up 2026-12-01) held no a4-highgpu-8g or
a3-ultragpu-8g figure, so the on-demand rates below are our estimates of a whole 8-GPU node
(GPUs + vCPUs + memory + the bundled Local SSDs) in a US region, and the other modes are derived
from it:
  - spot: Google's "Spot VMs pricing" page (https://cloud.google.com/spot-vms/pricing, stored copy
    read 2026-12-01) says Spot prices vary, change at most once a day, and are discounted up to 91%
    (older copies: 60-91%) from on-demand; 40% of on-demand is our middle estimate;
  - flex-start (Dynamic Workload Scheduler): Google advertises it below on-demand; 55% of on-demand
    is our estimate (no published figure found);
  - reservation: an on-demand reservation bills the on-demand rate whether or not a node runs
    (committed-use discounts, not modelled here, lower it).
A stack that knows its real rate (its billing export, a negotiated price, a committed-use discount)
sets `rl-on-gke:cost.nodeHourUsd`; the source then reads "stack config".
"""

from __future__ import annotations

from dataclasses import dataclass

# The day the table was last checked against the sources above.
PRICES_CHECKED = "2026-12-01"

# Our estimates of one on-demand node-hour, USD, US regions (see the module docstring).
_ON_DEMAND_ESTIMATE: dict[str, float] = {
    "a4-highgpu-8g": 95.0,
    "a3-ultragpu-8g": 85.0,
}
# Each capacity mode's rate as a fraction of on-demand (see the module docstring).
_MODE_FACTOR: dict[str, float] = {
    "on-demand": 1.0,
    "reservation": 1.0,
    "spot": 0.40,
    "flex-start": 0.55,
}


@dataclass(frozen=True)
class NodeHourPrice:
    """One node-hour's price and where it comes from (shown beside every cost)."""

    usd: float
    source: str

    @property
    def estimate(self) -> bool:
        return self.source.startswith("estimate")


def list_price(machine_type: str, provisioning: str) -> NodeHourPrice | None:
    """The table's price of one node-hour of `machine_type` in capacity mode `provisioning`."""
    base = _ON_DEMAND_ESTIMATE.get(machine_type)
    factor = _MODE_FACTOR.get(provisioning)
    if base is None or factor is None:
        return None
    return NodeHourPrice(
        usd=round(base * factor, 2),
        source=f"estimate: components/prices.py ({machine_type}, {provisioning}, {PRICES_CHECKED})",
    )


def node_hour_price(
    machine_type: str, provisioning: str, override_usd: float | None
) -> NodeHourPrice | None:
    """The stack's `cost.nodeHourUsd` when set, else the table's estimate."""
    if override_usd is not None:
        return NodeHourPrice(usd=override_usd, source="stack config rl-on-gke:cost.nodeHourUsd")
    return list_price(machine_type, provisioning)
