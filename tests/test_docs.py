"""The docs stay true: the commands, flags and make targets they quote exist, their links resolve,
and every measured figure sits in docs/benchmarks.md under the date and command that gave it.

Only code spans and code blocks are read for commands: that is what a reader pastes into a shell.
The CLI is introspected in-process (typer's click commands), so this runs in well under a second.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import typer.main

from jobs.cli.app import app

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BENCHMARKS = ROOT / "docs" / "benchmarks.md"

FENCE = re.compile(r"^ *```[^\n]*\n(.*?)^ *```", re.M | re.S)
SPAN = re.compile(r"`([^`\n]+)`")
# `rl-jobs SUB` or `python -m jobs SUB` (not `python -m jobs.head.rearm`, not `rl-jobs-...`).
PROGRAM = re.compile(r"(?:(?<=[\s/(])|^)(?:rl-jobs|python3? -m jobs)(?=\s|$)")
MAKE = re.compile(r"(?:^|&&|;|\$\(|^\$ )\s*make\s+([A-Za-z][\w-]*)")
# A measured figure: a decimal with a unit of time or a ratio, or whole milliseconds.
FIGURE = re.compile(r"(?<![\w.])(?:\d+\.\d+\s?(?:ms|s|x)|\d+\s?ms)(?![\w.])")
DATED = re.compile(r"^Measured (\d{4}-\d{2}-\d{2}) with `([^`]+)`", re.M)
VERSION = re.compile(r"\d+\.\d+\.\d+|v\d+\.\d+|Ray \d+\.\d+|veRL \d+\.\d+|vLLM \d+\.\d+")


@dataclass(frozen=True)
class Quote:
    """A command line quoted in a doc: where, and its words after the program's name."""

    doc: str
    line: int
    words: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.doc}:{self.line}: rl-jobs {' '.join(self.words)}"


def _relative(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _code_lines(text: str) -> list[tuple[int, str]]:
    """Each code block line (a line ending in `\\`, or an indented line of options under a
    command, continues the line before) and each code span, with its line number."""
    found: list[tuple[int, str]] = []
    outside = text
    for block in FENCE.finditer(text):
        first = text.count("\n", 0, block.start(1)) + 1
        joined: list[tuple[int, str]] = []
        for offset, line in enumerate(block.group(1).splitlines()):
            stripped = line.strip()
            continues = joined and (
                joined[-1][1].endswith("\\") or (line[:1].isspace() and stripped[:1] in "[-")
            )
            if continues:
                joined[-1] = (joined[-1][0], joined[-1][1].rstrip("\\") + " " + stripped)
            else:
                joined.append((first + offset, stripped))
        found += joined
        outside = outside.replace(block.group(0), "\n" * block.group(0).count("\n"), 1)
    for span in SPAN.finditer(outside):
        found.append((outside.count("\n", 0, span.start()) + 1, span.group(1)))
    return found


def _words(rest: str) -> tuple[str, ...]:
    """The words of a command up to where it ends (a pipe, a comment, another command); a `|`
    inside `[...]` is a synopsis's "or", not a pipe."""
    rest = re.sub(r"\[[^\]]*\]", lambda m: m.group(0).replace("|", " "), rest)
    rest = re.split(r"\s(?:#|\||&&|;|>)|\)|\$\(", rest)[0]
    return tuple(w.strip("[]{}|,\"'") for w in rest.split())


def quotes() -> list[Quote]:
    found: list[Quote] = []
    for doc in DOCS:
        for line, code in _code_lines(doc.read_text()):
            for m in PROGRAM.finditer(code):
                words = _words(code[m.end() :])
                if words and re.fullmatch(r"[a-z][a-z0-9-]*", words[0]):
                    found.append(Quote(_relative(doc), line, words))
    return found


def _is_group(cmd: Any) -> bool:
    return hasattr(cmd, "commands")  # typer vendors its own click: no isinstance against click's


def _commands() -> dict[str, Any]:
    """Every subcommand, as typer's click command, by the words that name it: `submit`,
    `data gsm8k`, ..."""
    root = typer.main.get_command(app)
    assert _is_group(root)
    found: dict[str, Any] = {}
    for name, cmd in root.commands.items():  # type: ignore[attr-defined]
        found[name] = cmd
        if _is_group(cmd):
            for sub, subcmd in cmd.commands.items():
                found[f"{name} {sub}"] = subcmd
    return found


def _options(cmd: Any) -> set[str]:
    opts = {"--help"}
    for param in cmd.params:
        opts.update(o for o in (*param.opts, *param.secondary_opts) if o.startswith("-"))
    return opts


def problems_with_commands(found: list[Quote]) -> list[str]:
    commands = _commands()
    problems = []
    for q in found:
        name = q.words[0]
        rest = q.words[1:]
        if name in commands and _is_group(commands[name]) and rest:
            if not re.fullmatch(r"[a-z][a-z0-9-]*", rest[0]):
                continue  # `rl-jobs data ...`: the group itself, not one of its commands
            name, rest = f"{name} {rest[0]}", rest[1:]
        if name not in commands:
            problems.append(f"{q}: no subcommand {name!r}")
            continue
        opts = _options(commands[name])
        for word in rest:
            if word == "--":  # the rest is the job's own command (`run -- COMMAND`)
                break
            flag = word.split("=", 1)[0]
            if re.fullmatch(r"--[a-z][a-z0-9-]*", flag) and flag not in opts:
                problems.append(f"{q}: {name} has no option {flag}")
    return problems


def test_the_docs_quote_commands() -> None:
    found = quotes()
    assert len({q.words[0] for q in found}) >= 10, "the command finder finds too little"
    assert [q for q in found if q.words[0] == "run" and "--cluster-gpus" in q.words]


def test_every_quoted_subcommand_and_flag_exists() -> None:
    assert problems_with_commands(quotes()) == []


def test_a_made_up_flag_is_named() -> None:
    """The check itself: a doc that quotes a flag the command lacks fails, naming it."""
    doc = "Run `rl-jobs submit --resume RUN --no-such-flag` or\n```\nrl-jobs frobnicate X\n```\n"
    found = [
        Quote("fake.md", line, _words(code[m.end() :]))
        for line, code in _code_lines(doc)
        for m in PROGRAM.finditer(code)
    ]
    assert sorted(problems_with_commands(found)) == [
        "fake.md:1: rl-jobs submit --resume RUN --no-such-flag: submit has no option --no-such-flag",
        "fake.md:3: rl-jobs frobnicate X: no subcommand 'frobnicate'",
    ]


def _make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    return set(re.findall(r"^([A-Za-z][\w-]*):", text, re.M))


def test_every_quoted_make_target_exists() -> None:
    targets = _make_targets()
    missing = [
        f"{_relative(doc)}:{line}: make {m.group(1)}"
        for doc in DOCS
        for line, code in _code_lines(doc.read_text())
        for m in MAKE.finditer(code)
        if m.group(1) not in targets
    ]
    assert missing == []


@pytest.mark.parametrize("doc", DOCS, ids=_relative)
def test_every_relative_link_resolves(doc: Path) -> None:
    text = doc.read_text()
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    targets += [t for t in SPAN.findall(text) if re.fullmatch(r"docs/[\w-]+\.md", t)]
    broken = [
        t
        for t in targets
        if "://" not in t
        and not t.startswith("mailto:")
        and not (doc.parent / t).exists()
        and not (ROOT / t).exists()
    ]
    assert broken == []


def _sections(text: str) -> list[tuple[str, str]]:
    """(heading, body) for each `##`/`###` section; the text before the first is ''."""
    parts = re.split(r"^(#{2,3} .*)$", text, flags=re.M)
    return [("", parts[0])] + list(zip(parts[1::2], parts[2::2], strict=True))


def _has_figure(text: str) -> bool:
    return bool(re.search(r"(?<![\w.])\d+\.\d+(?![\w.])", VERSION.sub("", text)))


def test_every_benchmark_figure_is_dated_with_its_command() -> None:
    undated, unknown = [], []
    for heading, body in _sections(BENCHMARKS.read_text()):
        dated = DATED.findall(body)
        if _has_figure(body) and not dated:
            undated.append(heading or "(the introduction)")
        for _date, command in dated:
            scripts = re.findall(r"bench/[\w/]+\.py", command)
            targets = re.findall(r"^make ([\w-]+)", command)
            unknown += [s for s in scripts if not (ROOT / s).is_file()]
            unknown += [t for t in targets if t not in _make_targets()]
    assert undated == [], "each section with figures says `Measured YYYY-MM-DD with `command``"
    assert unknown == []


def _paragraphs(text: str) -> list[tuple[int, str]]:
    without_code = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    found, line = [], 1
    for para in without_code.split("\n\n"):
        found.append((line, para))
        line += para.count("\n") + 2
    return found


@pytest.mark.parametrize("doc", [d for d in DOCS if d != BENCHMARKS], ids=_relative)
def test_a_measured_figure_outside_the_benchmarks_page_links_it(doc: Path) -> None:
    """A timing or a ratio (`0.42 x`, `17.7 s`, `2.10 ms`) quoted elsewhere goes stale unless the
    paragraph points at the page that dates it."""
    stray = [
        f"{_relative(doc)}:{line}: {FIGURE.search(para).group(0)}"  # type: ignore[union-attr]
        for line, para in _paragraphs(doc.read_text())
        if FIGURE.search(para) and "benchmarks.md" not in para
    ]
    assert stray == []


SOURCE_PATH = re.compile(r"(?<![\w/.-])((?:jobs|components|policy|tools|bench|tests)/[\w/]+\.py)\b")


@pytest.mark.parametrize("doc", DOCS, ids=_relative)
def test_every_quoted_source_file_exists(doc: Path) -> None:
    # Files are split as they grow: a doc that names one gone sends the reader nowhere.
    gone = sorted(
        {
            f"{_relative(doc)}: {m.group(1)}"
            for m in SOURCE_PATH.finditer(doc.read_text())
            if not (ROOT / m.group(1)).exists()
        }
    )
    assert gone == []


@pytest.mark.parametrize("doc", DOCS, ids=_relative)
def test_every_doc_opens_with_its_title(doc: Path) -> None:
    """A doc is Markdown with a title first: a file overwritten with other text (a module's
    source once replaced docs/deploy.md in an edit, and every other docs test still passed)
    fails here."""
    first = doc.read_text().splitlines()[0]
    assert first.startswith("# "), f"{doc.name} opens with {first[:60]!r}, not a '# ' title"
