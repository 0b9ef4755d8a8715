"""The executor's own files are its own, and boxinit's named limits."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from jobs.rewards import box, uids
from jobs.rewards.sandbox import Executor
from jobs.rewards.state_dir import remove_dead_executors

pytestmark = pytest.mark.compiler

REPO = Path(__file__).resolve().parents[3]
NOBODY = 65534
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="other owners need root to arrange")


@root_only
def test_a_state_directory_another_user_created_is_refused(tmp_path: Path) -> None:
    """A planted boxinit in a folder someone else made first ran as root in every box."""
    root = tmp_path / "rl-sandbox"
    root.mkdir(mode=0o755)
    planted = Path(box.build_init(tmp_path / "real")).name
    (root / planted).write_text("#!/bin/sh\nexit 0\n")
    os.chmod(root / planted, 0o755)
    os.chown(root, NOBODY, NOBODY)
    with pytest.raises(RuntimeError, match=rf"{root} is owned by uid {NOBODY} with mode 0755"):
        Executor(workers=1, root=root, precompile=False)


@pytest.mark.parametrize("mode", [0o777, 0o1777, 0o770, 0o722])
def test_a_state_directory_others_can_write_is_refused(tmp_path: Path, mode: int) -> None:
    """A state directory writable by others is as good as theirs."""
    root = tmp_path / "rl-sandbox"
    root.mkdir()
    os.chmod(root, mode)
    with pytest.raises(RuntimeError, match="writable by no one else: refusing"):
        Executor(workers=1, root=root, precompile=False)


def test_a_symlink_in_place_of_the_state_directory_is_refused(tmp_path: Path) -> None:
    """A symlink in its place is never followed to wherever it points."""
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    (tmp_path / "rl-sandbox").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(RuntimeError, match="is not a directory of ours"):
        Executor(workers=1, root=tmp_path / "rl-sandbox", precompile=False)


def test_a_dead_executors_folder_is_removed_and_a_live_ones_kept(tmp_path: Path) -> None:
    """Executors that died never removed their `executor-*` folders."""
    root = uids.private_dir(tmp_path / "root")
    dead = root / "executor-dead"
    (dead / "bin").mkdir(parents=True)
    (dead / "bin" / "big").write_bytes(b"\0" * 4096)
    (dead / "alive.lock").touch()
    live = Executor(workers=1, root=root, precompile=False)
    try:
        assert not dead.exists() and live.removed_dead == 1
        other = Executor(workers=1, root=root, precompile=False)
        other.close()
        assert live._dir.is_dir()  # its flock is held: the second executor left it alone
        assert remove_dead_executors(root, root / "quarantine") == 0
    finally:
        live.close()
    assert not live._dir.exists()


def test_boxinit_refuses_unknown_missing_or_repeated_keys(tmp_path: Path) -> None:
    """Named limits across the Python/C seam; a key one side lacks fails loudly."""
    init = box.build_init(tmp_path / "init")
    good = dict.fromkeys(box.INIT_KEYS, 1)
    argv = box.init_argv(good)
    cases = {
        "missing key 'fsize'": [w for w in argv if not w.startswith("fsize=")],
        "unknown key in 'swap=1'": [*argv, "swap=1"],
        "key 'uid' given twice": [*argv, "uid=2"],
        "key 'as': 'lots' is not an integer": [
            w if not w.startswith("as=") else "as=lots" for w in argv
        ],
    }
    for message, words in cases.items():
        done = subprocess.run([init, *words, "--", "/bin/true"], capture_output=True, text=True)
        assert done.returncode == 2 and message in done.stderr, (message, done.stderr)
    with pytest.raises(ValueError, match="expected exactly"):
        box.init_argv({**good, "swap": 1})


GOOD_FILTER = b"\x06\x00\x00\x00\x00\x00\xff\x7f"  # one instruction: ret ALLOW


@pytest.mark.parametrize(
    ("filter_bytes", "disk_bytes", "step"),
    [
        (b"", 2**20, "seccomp:22"),  # empty
        (GOOD_FILTER[:6], 2**20, "seccomp:22"),  # torn
        (GOOD_FILTER * 4097, 2**20, "seccomp:22"),  # past BPF_MAXINSNS
        (GOOD_FILTER, 0, "mount:22"),  # a /box of no size: refused before mount(2)
    ],
)
def test_a_box_whose_filter_or_mount_fails_runs_nothing(
    tmp_path: Path, filter_bytes: bytes, disk_bytes: int, step: str
) -> None:
    """boxinit mounts /box and installs the seccomp filter itself: a filter it cannot read whole,
    or a /box it cannot mount, is the box's start_error, and the program never runs (fail closed)."""
    init = box.build_init(tmp_path / "init")
    out = tmp_path / "out"
    out.mkdir()
    os.chmod(out, 0o777)
    spec = box.BoxSpec(
        argv=["/bin/sh", "-c", "echo ran > /out/ran"],
        cpu_s=5,
        wall_s=30,
        memory_bytes=2**30,
        processes=None,
        open_files=64,
        file_bytes=2**20,
        disk_bytes=disk_bytes,
        rw_binds=[(str(out), "/out")],
    )
    filter_r, filter_w = os.pipe()
    report_r, report_w = os.pipe()
    writer = subprocess.Popen(  # the long filter is past a pipe's buffer: written beside the box
        [sys.executable, "-c", "import os, sys; os.write(1, sys.stdin.buffer.read())"],
        stdin=subprocess.PIPE,
        stdout=filter_w,
    )
    os.close(filter_w)
    try:
        writer.communicate(filter_bytes, timeout=30)
        done = subprocess.run(
            box.box_command(spec, None, init, filter_r, report_w),
            pass_fds=(filter_r, report_w),
            env={},
            capture_output=True,
            timeout=60,
        )
    finally:
        os.close(filter_r)
        os.close(report_w)
    with os.fdopen(report_r) as report:
        lines = report.read().splitlines()
    assert len(lines) == 1 and f"start_error={step} " in lines[0], (lines, done.stderr)
    assert done.returncode == 3, done
    assert not (out / "ran").exists(), "the program ran in a box that was not sealed"


def test_the_start_steps_boxinit_names_read_as_reasons() -> None:
    assert box.start_error_text("seccomp:22") == "seccomp: EINVAL (Invalid argument)"
    assert box.start_error_text("mount:1") == "mount: EPERM (Operation not permitted)"
    assert box.start_error_text("capabilities:1").startswith("capabilities: EPERM")


def test_nothing_is_bound_below_the_box_directory(tmp_path: Path) -> None:
    """boxinit mounts /box over whatever bwrap put there: a bind below it would silently vanish."""
    spec = box.BoxSpec(
        argv=["/prog"],
        cpu_s=1,
        wall_s=5,
        memory_bytes=2**28,
        processes=1,
        open_files=16,
        file_bytes=2**20,
        disk_bytes=2**20,
        ro_binds=[(str(tmp_path), "/box/data")],
    )
    with pytest.raises(ValueError, match="nothing may be bound at or below /box"):
        box.box_command(spec, None, "/init", 3, 4)
