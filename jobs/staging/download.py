"""Downloading a model's snapshot once, pinned to a commit, resumable, with progress a log can show.

huggingface_hub does the transfer: it resumes a file from its `.incomplete` blob with an HTTP
Range request and skips files already in the cache, so a stage that was stopped (a preempted
pod, a lost connection) continues where it stopped when run again. Its progress bars redraw
with carriage returns, which a Ray job log shows as one growing line; this module prints its
own progress lines instead, from the bytes in the repo's blob folder.
"""

from __future__ import annotations

import fnmatch
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from jobs.staging import layout, record
from jobs.staging.record import StagedModel

# Files a PyTorch load never reads (other frameworks' weights, GGUF/ONNX exports, the original
# consolidated *.pth some repos carry beside the safetensors); skipping them saves Lustre and time.
IGNORED = [
    "*.h5",
    "*.msgpack",
    "*.ot",
    "*.onnx",
    "*.onnx_data",
    "*.gguf",
    "original/*",
    "*.pth",
    "*.tflite",
    "*.mlmodel",
    "coreml/*",
]
PROGRESS_EVERY_S = 10.0

Say = Callable[[str], None]


class StageError(Exception):
    """A stage that could not finish; the message says what and what to do."""


class HubUnreachable(StageError):
    """The Hub did not answer at all (no route, DNS, refused, timed out): nothing was staged."""


# huggingface_hub's default endpoint (constants.ENDPOINT when HF_ENDPOINT is unset).
DEFAULT_ENDPOINT = "https://huggingface.co"


def endpoint() -> str:
    return os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT


# The transport errors of the HTTP clients huggingface_hub has used: requests' are OSErrors;
# httpx's (huggingface_hub 1.x and later: httpx, here vendored as httpx2) are not, and reached the
# user as a traceback ("httpx2.ConnectError: [Errno 111] Connection refused").
_TRANSPORT_ERRORS = frozenset(
    {"TransportError", "ConnectError", "ConnectTimeout", "TimeoutException", "NetworkError"}
)


def no_answer(e: BaseException) -> bool:
    """The Hub did not answer at all (DNS, refused, timed out), whichever HTTP client asked."""
    return isinstance(e, OSError) or any(c.__name__ in _TRANSPORT_ERRORS for c in type(e).__mro__)


def unreachable_message(model: str, e: BaseException) -> str:
    """One paragraph, no traceback: which endpoint, why, and the two ways on without it."""
    where = endpoint()
    source = "HF_ENDPOINT" if os.environ.get("HF_ENDPOINT") else "the default; HF_ENDPOINT unset"
    return (
        f"cannot reach the Hugging Face Hub at {where} ({source}) for {model!r}: "
        f"{_first_line(e)[:200]}. The pods need egress to it (the stack's Cloud NAT), or set "
        "HF_ENDPOINT to a Hub mirror they can reach; or copy the model's files to a directory "
        "on Lustre and give that directory as the model (`--set policy.model_name=DIR` for "
        "NeMo RL, `--set actor_rollout_ref.model.path=DIR` for veRL): a directory is loaded as "
        "it is, without the Hub"
    )


def wanted(name: str) -> bool:
    return not any(fnmatch.fnmatch(name, pattern) for pattern in IGNORED)


def _gib(n: int) -> str:
    return f"{n / 2**30:.2f} GiB"


def _bytes_present(blobs: Path) -> int:
    total = 0
    try:
        entries = list(os.scandir(blobs))
    except OSError:
        return 0
    for entry in entries:
        try:
            total += entry.stat().st_size
        except OSError:
            continue
    return total


class Progress:
    """Prints `downloaded X of Y` every few seconds while a download runs, from the blob folder."""

    def __init__(self, blobs: Path, total: int, say: Say, every_s: float = PROGRESS_EVERY_S):
        self.blobs, self.total, self.say, self.every_s = blobs, total, say, every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="stage-progress")
        self.start_bytes = _bytes_present(blobs)

    def __enter__(self) -> Progress:
        if self.start_bytes:
            self.say(
                f"resuming: {_gib(min(self.start_bytes, self.total))} of "
                f"{_gib(self.total)} already on disk"
            )
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        started = time.monotonic()
        while not self._stop.wait(self.every_s):
            have = min(_bytes_present(self.blobs), self.total)
            rate = (have - self.start_bytes) / max(time.monotonic() - started, 1e-6)
            self.say(
                f"downloaded {_gib(have)} of {_gib(self.total)} "
                f"({100 * have / max(self.total, 1):.0f}%, {rate / 2**20:.1f} MiB/s)"
            )


def resolve(model: str, revision: str) -> tuple[str, dict[str, int]]:
    """The commit `revision` names now, and the wanted files of that commit with their sizes."""
    from huggingface_hub import HfApi
    from huggingface_hub.errors import (
        HfHubHTTPError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    try:
        info = HfApi().model_info(model, revision=revision, files_metadata=True)
    except RepositoryNotFoundError:
        raise StageError(
            f"model {model!r} is not on the Hub (or is gated and the pod's HF_TOKEN cannot read it)"
        ) from None
    except RevisionNotFoundError:
        raise StageError(f"model {model!r} has no revision {revision!r}") from None
    except HfHubHTTPError as e:
        raise StageError(f"the Hub refused {model!r}: {_first_line(e)}") from None
    except Exception as e:
        if not no_answer(e):
            raise
        raise HubUnreachable(unreachable_message(model, e)) from None
    if not info.sha:
        raise StageError(f"the Hub gave no commit for {model!r} at {revision!r}")
    files = {s.rfilename: int(s.size or 0) for s in info.siblings or [] if wanted(s.rfilename)}
    return info.sha, files


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


def download(model: str, revision: str, home: Path, say: Say) -> StagedModel:
    """Stage `model` at `revision` under `home`; returns the record written last."""
    from huggingface_hub import snapshot_download

    commit, sizes = resolve(model, revision)
    say(
        f"staging {model} at {revision} = commit {commit}: {len(sizes)} file(s), "
        f"{_gib(sum(sizes.values()))}"
    )
    blobs = layout.repo_folder(home, model) / "blobs"
    try:
        with Progress(blobs, sum(sizes.values()), say):
            path = snapshot_download(
                model,
                revision=commit,
                cache_dir=home / "hub",
                ignore_patterns=IGNORED,
                max_workers=4,
            )
    except Exception as e:  # huggingface_hub raises many kinds; all mean "not staged yet"
        raise StageError(
            f"download of {model} stopped: {_first_line(e)}; run the stage "
            "again and it resumes from what is on disk"
        ) from None
    root = Path(str(path))
    files = {name: (root / name).stat().st_size for name in sizes if (root / name).exists()}
    missing = sorted(set(sizes) - set(files))
    if missing:
        raise StageError(
            f"{model}@{commit}: {len(missing)} file(s) missing after the download "
            f"(first: {missing[0]})"
        )
    # Runs load by name with HF_HUB_OFFLINE=1, which reads refs/main: point it at this commit
    # (huggingface_hub writes refs only when asked for a branch, _snapshot_download.py L430-437).
    ref = layout.ref_file(home, model)
    ref.parent.mkdir(parents=True, exist_ok=True)
    ref.write_text(commit, encoding="utf-8")
    staged = StagedModel(
        model=model, revision=revision, commit=commit, files=files, staged_at=record.now()
    )
    record.save(home, staged)
    say(
        f"staged {model}@{commit}: {len(files)} file(s), {_gib(staged.total_bytes)} "
        f"in {layout.snapshot_dir(home, model, commit)}"
    )
    return staged
