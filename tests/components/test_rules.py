"""The pattern check the settings blocks' field validators share."""

from __future__ import annotations

import re

import pytest

from components.rules import matching

_DIGITS = re.compile(r"^\d+$")


def test_matching_returns_a_value_the_pattern_matches() -> None:
    assert matching(_DIGITS, "42", "must be digits") == "42"


def test_matching_raises_what_the_field_must_be_otherwise() -> None:
    with pytest.raises(ValueError, match="^must be digits$"):
        matching(_DIGITS, "4x2", "must be digits")
