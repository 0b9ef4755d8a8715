"""`rl-jobs report` on a real local Ray: two attempts whose actor prints veRL's step lines."""

from __future__ import annotations

import json
import sys
import textwrap
import uuid
from pathlib import Path

import pytest
from ray.job_submission import JobStatus, JobSubmissionClient

from tests.jobs import browser
from tests.jobs.conftest import run_cli, wait_until
from tests.jobs.html_page import Page
from tests.jobs.runs.framework_lines import verl_saving, verl_step_line

pytestmark = pytest.mark.ray

# veRL runs its trainer in the TaskRunner actor (verl/trainer/main_ppo.py L82-95 @v0.6.0): the
# step lines reach the job's log through Ray's actor-log forwarding, with its prefix.
TRAINER = textwrap.dedent(
    """
    import json, sys
    import ray

    @ray.remote(num_cpus=0)
    class TaskRunner:
        def run(self, lines):
            for line in lines:
                print(line, flush=True)

    lines = json.load(open(sys.argv[1]))
    ray.init()
    runner = TaskRunner.remote()
    ray.get(runner.run.remote(lines))
    import time; time.sleep(2)  # let the actor's output reach the driver's log
    sys.exit(int(sys.argv[2]))
    """
)


def _lines(steps: range, run: str = "r") -> list[str]:
    out = []
    for s in steps:
        if s % 3 == 0:  # trainer.save_freq 3: the save starts in the step, before its line
            out.append(verl_saving(f"/lustre/runs/{run}/checkpoints", s))
        out.append(_step(s))
    return out


def _step(s: int) -> str:
    return verl_step_line(
        {
            "training/global_step": s,
            "critic/score/mean": 0.05 * s,
            "actor/kl_loss": 0.002 * s,
            "response_length/mean": 180.0 + s,
            "timing_s/step": 20.0,
            "perf/throughput": 1500.0 + s,
        },
        s,
    )


def _attempt(
    client: JobSubmissionClient, tmp: Path, run: str, n: int, steps: range, code: int
) -> None:
    data = tmp / f"a{n}.json"
    data.write_text(json.dumps(_lines(steps)))
    script = tmp / "trainer.py"
    script.write_text(TRAINER)
    sid = client.submit_job(
        entrypoint=f"{sys.executable} {script} {data} {code}",
        submission_id=f"{run}-a{n}",
        metadata={
            "run": run,
            "attempt": str(n),
            "kind": "recipe",
            "recipe": "verl-grpo-gsm8k",
            "framework": "verl",
            "framework_version": "0.6.0",
            "nodes": "1",
            "gpus_per_node": "2",
            "checkpoint_dir": f"/lustre/runs/{run}/checkpoints",
            "overrides": "[]",
        },
    )
    wait_until(lambda: client.get_job_status(sid).is_terminal(), timeout=180, what=f"{sid} to end")
    want = JobStatus.SUCCEEDED if code == 0 else JobStatus.FAILED
    assert client.get_job_status(sid) == want, client.get_job_logs(sid)


@pytest.fixture(scope="module")
def reported(ray_url: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A two-attempt run's report: its file and the command's JSON summary."""
    tmp = tmp_path_factory.mktemp("report")
    client = JobSubmissionClient(ray_url)
    run = f"report-{uuid.uuid4().hex[:6]}"
    _attempt(client, tmp, run, 1, range(1, 5), code=1)  # dies after step 4
    _attempt(client, tmp, run, 2, range(4, 9), code=0)  # resumes: re-runs 4, on to 8
    out = tmp / "report.html"
    done = run_cli("report", run, "--address", ray_url, "--out", str(out), "--json", timeout=120)
    assert done.returncode == 0, done.stderr
    return out, done.stdout


def test_report_draws_both_attempts_curves_from_the_job_logs(reported: tuple[Path, str]) -> None:
    out, stdout = reported
    summary = json.loads(stdout)
    assert summary["attempts"] == 2
    assert summary["curves"] == {
        "reward": 8,
        "kl": 8,
        "response_length": 8,
        "step_time": 8,
        "throughput": 8,
    }
    # attempt 2 re-ran step 4: redone work (its 20 s step lines scaled into the short attempts)
    seconds = summary["goodput"]["seconds"]
    assert seconds["productive"] > 0 and seconds["redone"] > 0, seconds
    page = Page(out.read_text(encoding="utf-8"))
    assert "Goodput:" in out.read_text(encoding="utf-8")
    assert page.errors == []
    assert page.loads() == [] and page.links_out() == []
    # in the report's order (the JSON summary's keys are sorted)
    assert [p["data-metric"] for p in page.all("figure")] == [
        "reward",
        "kl",
        "response_length",
        "step_time",
        "throughput",
    ]
    assert len(page.all("circle")) == 5 * 8
    rewards = [
        float(c["data-value"] or "nan") for c in page.all("circle")[:8]
    ]  # the first plot is the reward
    assert rewards == [0.05 * s for s in range(1, 9)]
    saves = page.all("g", **{"class": "save"})
    assert [(m["data-attempt"], m["data-step"]) for m in saves] == [("1", "3"), ("2", "6")]
    bars = page.all("g", **{"class": "attempt"})
    assert [(b["data-attempt"], b["data-status"]) for b in bars] == [
        ("1", "FAILED"),
        ("2", "SUCCEEDED"),
    ]


def test_report_of_an_unknown_run_names_it_and_writes_nothing(ray_url: str, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    done = run_cli("report", "no-such-run-x", "--address", ray_url, "--out", str(out))
    assert done.returncode != 0
    assert "no-such-run-x" in done.stderr
    assert not out.exists()


# ---------------------------------------------------------------------------------- in a browser


@pytest.mark.browser
def test_the_report_opens_offline_in_chromium_with_every_curve_drawn(
    reported: tuple[Path, str], tmp_path: Path
) -> None:
    """Headless Chromium (Debian's, `make browser`) opens the file with every
    host unresolvable: the screenshot has a drawn curve in each of the five charts, the DOM the
    browser built has every point, and its network log holds no request the page made."""
    out, _ = reported
    shot = browser.open_offline(out, tmp_path)
    assert shot.requests == [], shot.requests
    dom = Page(shot.dom)
    assert len(dom.all("circle")) == 5 * 8
    assert len(dom.all("figure")) == 5
    # Each chart draws its curve in the report's line colour (jobs/runs/run_report.py); five
    # charts stacked down the page are five separate bands of rows holding that colour.
    # A flat curve (step time, 20 s at every step) is a band of two rows; every curve crosses
    # its chart: 8 points over a plot about 560 px wide.
    bands = browser.row_bands(shot.png, browser.CURVE_RGB)
    assert len(bands) == 5, bands
    assert all(columns >= 400 for _, _, columns in bands), bands


# A probe added to a copy of the page (the report itself runs no script): how the browser laid
# it out, written into the DOM that --dump-dom prints. Headless Chromium's window is never
# narrower than 500 px, so the copy is shown in a 390-px frame (a phone's screen) of a wrapper
# page; `srcdoc` gives the frame its parent's origin, so the probe can write there.
_LAYOUT_PROBE = """<script>
const story = document.getElementById("story").getBoundingClientRect();
parent.document.body.setAttribute("data-layout", JSON.stringify({
  scroll_width: document.documentElement.scrollWidth, width: window.innerWidth,
  story_top: story.top, story_bottom: story.bottom,
  first: document.body.firstElementChild.id,
}));
</script>"""
PHONE = (390, 2400)
SUCCEEDED_RGB = (0x2E, 0x7D, 0x32)  # jobs/runs/report_story.py STATE_COLOUR


@pytest.mark.browser
def test_the_report_tells_the_story_first_and_fits_a_phones_width(
    reported: tuple[Path, str], tmp_path: Path
) -> None:
    """The report opened on its attempts' curves; the run's state, outcome, goodput
    and each attempt's end come first now, on a 390-pixel-wide screen without sideways scroll."""
    import html as html_lib
    import re

    out, summary = reported
    name = json.loads(summary)["run"]
    probed = out.read_text().replace("</body>", _LAYOUT_PROBE + "</body>")
    page = tmp_path / "phone.html"
    page.write_text(
        '<!DOCTYPE html><html><body style="margin:0">'
        f'<iframe width="{PHONE[0]}" height="{PHONE[1]}" style="border:0;display:block" '
        f'srcdoc="{html_lib.escape(probed, quote=True)}"></iframe></body></html>'
    )
    shot = browser.open_offline(page, tmp_path, window=f"600,{PHONE[1]}")
    (tmp_path / "phone.png").write_bytes(shot.png)
    found = re.search(r'data-layout="([^"]*)"', shot.dom)
    assert found, shot.dom[:2000]
    layout = json.loads(html_lib.unescape(found[1]))
    assert layout["width"] == PHONE[0], layout
    assert layout["scroll_width"] <= layout["width"], layout  # nothing wider than the screen
    assert layout["first"] == "story" and layout["story_top"] < 60, layout
    # The state's badge (SUCCEEDED, green) is drawn at the top of the screenshot.
    bands = browser.row_bands(shot.png, SUCCEEDED_RGB)
    assert bands and bands[0][0] < 150, bands
    # The page itself, as the frame shows it: the story, then each attempt's end.
    text = out.read_text()
    story = text[text.index('id="story"') : text.index("How each attempt ended")]
    assert "SUCCEEDED" in story and "goodput" in story and "step 8" in story, story
    ends = [li for li in Page(text).all("li") if li.get("data-attempt")]
    assert [li["data-attempt"] for li in ends] == [f"{name}-a1", f"{name}-a2"]
    assert text.count("<details>") == 2  # each attempt's log tail, folded
