"""The offline browser harness can fail: a page that fetches is seen fetching, a blank page has no curve."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.jobs import browser

pytestmark = pytest.mark.browser


def test_a_page_that_fetches_a_remote_image_is_seen_asking_for_it(tmp_path: Path) -> None:
    page = tmp_path / "fetches.html"
    page.write_text('<html><body><img src="http://example.com/pixel.png"><p>x</p></body></html>')
    shot = browser.open_offline(page, tmp_path)
    assert shot.requests == ["http://example.com/pixel.png"]


def test_a_blank_page_has_no_band_of_the_curve_colour(tmp_path: Path) -> None:
    page = tmp_path / "blank.html"
    page.write_text("<html><body><p>no chart</p></body></html>")
    shot = browser.open_offline(page, tmp_path)
    assert browser.row_bands(shot.png, browser.CURVE_RGB) == []
    assert "<p>no chart</p>" in shot.dom
