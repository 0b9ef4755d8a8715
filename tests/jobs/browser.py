"""Headless Chromium for the report's browser test: a page opened offline, its screenshot, DOM and requests.

Debian's `chromium` (installed by `make browser`), started with every host name unresolvable
(`--host-resolver-rules`), its own throw-away profile and background networking off, and its
network log (`--log-net-log`) read back for the URLs it requested.
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

# The report's curve colour (jobs/runs/run_report.py `_chart`: the polyline's stroke, #1565c0).
CURVE_RGB = (0x15, 0x65, 0xC0)
WINDOW = "1280,4200"
TIMEOUT_S = 120


@dataclass(frozen=True)
class Shot:
    png: bytes
    dom: str
    requests: list[str]


def chromium() -> str:
    found = shutil.which("chromium")
    if found is None:
        pytest.skip("Debian's chromium is not installed: `make browser` installs it (as root)")
    return found


def _args(profile: Path, net_log: Path, window: str = WINDOW) -> list[str]:
    return [
        chromium(),
        "--headless",
        "--no-sandbox",  # CI runs as root, where Chromium's own sandbox refuses to start
        "--disable-gpu",
        f"--user-data-dir={profile}",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        f"--log-net-log={net_log}",
        f"--window-size={window}",
        "--hide-scrollbars",
    ]


# The browser's own requests (clock sync, account checks) carry no origin; the page's carry its
# origin ("null" for a file:// page). Only the page's are the report's.
BROWSER_INITIATOR = "not an origin"


def _requested(net_log: Path) -> list[str]:
    """Every URL the page asked for (the browser's own requests left out), first seen first."""
    log = json.loads(net_log.read_text())
    types = {v: k for k, v in log["constants"]["logEventTypes"].items()}
    urls: list[str] = []
    for event in log.get("events", []):
        if types.get(event.get("type")) != "URL_REQUEST_START_JOB":
            continue
        params = event.get("params") or {}
        url = params.get("url")
        if url and params.get("initiator") != BROWSER_INITIATOR and url not in urls:
            urls.append(url)
    return urls


def open_offline(page: Path, tmp: Path, window: str = WINDOW) -> Shot:
    """Screenshot and DOM of `page` as Chromium renders it with no network, and what it asked
    for; `window` is the window's "width,height" in CSS pixels (a phone's: "390,2400")."""
    uri = page.resolve().as_uri()
    shot, net = tmp / "shot.png", tmp / "net.json"
    subprocess.run(
        [*_args(tmp / "profile-shot", net, window), f"--screenshot={shot}", uri],
        check=True,
        capture_output=True,
        timeout=TIMEOUT_S,
    )
    requests = _requested(net)
    dom = subprocess.run(
        [*_args(tmp / "profile-dom", tmp / "net-dom.json", window), "--dump-dom", uri],
        check=True,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    ).stdout
    return Shot(shot.read_bytes(), dom, requests)


def row_bands(
    png: bytes, rgb: tuple[int, int, int], tolerance: int = 40
) -> list[tuple[int, int, int]]:
    """(first row, rows, columns) of each run of image rows holding pixels of colour `rgb`
    (anti-aliased edges within `tolerance`; gaps of up to 3 rows bridged), with how many columns
    of that run hold the colour: a curve drawn across a chart spans most of its width."""
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB")
    width, height = image.size
    pixels = image.load()

    def near(xy: tuple[int, int]) -> bool:
        return all(abs(c - w) <= tolerance for c, w in zip(pixels[xy], rgb, strict=True))

    hits = {y: {x for x in range(width) if near((x, y))} for y in range(height)}
    bands: list[tuple[int, int, set[int]]] = []
    for y in sorted(y for y, xs in hits.items() if xs):
        if bands and y - (bands[-1][0] + bands[-1][1] - 1) <= 4:
            first, _, columns = bands[-1]
            bands[-1] = (first, y - first + 1, columns | hits[y])
        else:
            bands.append((y, 1, set(hits[y])))
    return [(first, rows, len(columns)) for first, rows, columns in bands]
