"""docs/architecture.json is the house: every never holds in the real imports, every room is placed,
and the arrows drawn are the arrows the code has."""

from __future__ import annotations

import json

import pytest

from tests.architecture import (
    WHITEBOARD,
    Whiteboard,
    is_package_face,
    part_imports,
    program_modules,
    rel,
)

BOARD = Whiteboard.load()


@pytest.mark.parametrize("never", BOARD.nevers, ids=[f"{a}-never-{b}" for a, b, _ in BOARD.nevers])
def test_no_part_imports_what_the_architecture_says_it_never_may(never):
    source, target, why = never
    found = part_imports().get((source, target), [])
    assert not found, f"never {source} -> {target} ({why}), yet: {found}"


@pytest.mark.parametrize("path", program_modules(), ids=rel)
def test_every_module_of_the_program_sits_in_exactly_one_part(path):
    # A new file belongs to a room by where it is created (components/gcp/ for a GCP resource):
    # one that matches no part, or two, is a room nobody decided on.
    if is_package_face(path):
        return
    assert len(BOARD.part_of(rel(path))) == 1, (
        f"{rel(path)} is in parts {BOARD.part_of(rel(path))}; give it one in {rel(WHITEBOARD)}"
    )


def test_every_import_between_parts_is_drawn():
    undrawn = {f"{a} -> {b}": files[:3] for (a, b), files in part_imports().items()}
    for a, b in BOARD.arrows:
        undrawn.pop(f"{a} -> {b}", None)
    assert not undrawn, f"imports between parts that {rel(WHITEBOARD)} does not draw: {undrawn}"


def test_every_arrow_drawn_is_an_import_of_the_code():
    stale = sorted(f"{a} -> {b}" for a, b in BOARD.arrows if (a, b) not in part_imports())
    assert not stale, f"{rel(WHITEBOARD)} draws arrows no import makes: {stale}"


def test_the_whiteboard_keeps_the_drawable_format():
    # The same format as the team's whiteboard, so its picture can be drawn again for the docs:
    # a 6 x 8 grid, at most 16 parts and 30 nevers, one short ASCII line per part.
    raw = json.loads(WHITEBOARD.read_text())
    assert len(raw["parts"]) <= 16 and len(raw["never"]) <= 30
    cells = [tuple(p["at"]) for p in raw["parts"].values()]
    assert len(set(cells)) == len(cells)
    assert all(0 <= x < 6 and 0 <= y < 8 for x, y in cells)
    assert all(len(p["says"]) <= 60 and p["says"].isascii() for p in raw["parts"].values())
    named = set(raw["parts"])
    assert all({a, b} <= named for a, b in raw["arrows"])
    assert all({a, b} <= named for a, b, _ in raw["never"])


def test_a_forbidden_import_is_caught(tmp_path):
    """The checker itself: a board whose never the code breaks reports the file pair."""
    raw = json.loads(WHITEBOARD.read_text())
    raw["never"].append(["runs", "client", "a rule the code breaks, to see it caught"])
    board_file = tmp_path / "architecture.json"
    board_file.write_text(json.dumps(raw))
    edges = part_imports(board_file)
    assert any(f.startswith("jobs/runs/") for f in edges[("runs", "client")])
