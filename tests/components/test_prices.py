"""The price table behind `cost.nodeHourUsd`: every machine and mode priced, sourced, dated."""

from __future__ import annotations

import pytest

from components.catalogue import MACHINES
from components.config import DEFAULT_SCALING
from components.prices import PRICES_CHECKED, list_price, node_hour_price


@pytest.mark.parametrize("machine", sorted(MACHINES))
@pytest.mark.parametrize("mode", sorted(DEFAULT_SCALING))
def test_every_catalogued_machine_and_mode_has_a_marked_estimate(machine: str, mode: str) -> None:
    price = list_price(machine, mode)
    assert price is not None and price.usd > 0
    assert price.estimate and machine in price.source and PRICES_CHECKED in price.source


def test_the_modes_are_ordered_as_google_prices_them() -> None:
    for machine in MACHINES:
        usd = {m: list_price(machine, m).usd for m in DEFAULT_SCALING}
        assert usd["spot"] < usd["flex-start"] < usd["on-demand"] == usd["reservation"]


def test_a_stack_price_replaces_the_estimate_and_says_so() -> None:
    price = node_hour_price("a4-highgpu-8g", "spot", 12.5)
    assert price.usd == 12.5 and not price.estimate
    assert node_hour_price("a4-highgpu-8g", "spot", None) == list_price("a4-highgpu-8g", "spot")
    assert list_price("a2-highgpu-1g", "spot") is None
