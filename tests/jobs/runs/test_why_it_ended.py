"""Why a job ended, in one line: the exception at the end of the log tail Ray puts in its message."""

from __future__ import annotations

from jobs.runs.listing import labelled, why_it_ended

# The message Ray 2.60 gives a failed job (ray/dashboard/modules/job/job_supervisor.py L448-455).
HEAD = "Job entrypoint command failed with exit code 1, last available logs (truncated to 20,000 chars):"
TRACEBACK = """(TaskRunner pid=712) step:4 - critic/score/mean:0.25
Traceback (most recent call last):
  File "/app/main_ppo.py", line 12, in <module>
    raise RuntimeError("inner")
RuntimeError: inner

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/app/main_ppo.py", line 14, in <module>
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB
"""


def test_the_last_exception_of_the_tail_is_the_reason() -> None:
    first, error = why_it_ended(f"{HEAD}\n{'x' * 20_000}\n{TRACEBACK}")
    assert first == HEAD
    assert error == "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"


def test_without_an_exception_the_tails_last_line_is_quoted() -> None:
    assert why_it_ended(f"{HEAD}\nloading\nkilled by signal 9\n\n") == (HEAD, "killed by signal 9")


def test_a_one_line_message_has_no_error_line() -> None:
    assert why_it_ended("Job finished successfully.") == ("Job finished successfully.", None)
    no_logs = "Job entrypoint command failed with exit code 3. No logs available."
    assert why_it_ended(no_logs) == (no_logs, None)


def test_a_huge_last_line_is_cut_to_a_line() -> None:
    _, error = why_it_ended(f"{HEAD}\nValueError: {'y' * 5000}")
    assert error is not None and len(error) == 300 and error.startswith("ValueError: y")


def test_a_line_that_says_error_itself_is_labelled_once():
    """`status` printed `error: error: ...` for a log that ended on "error: ..."."""
    _, line = why_it_ended(f"{HEAD}\nloading\nerror: cannot reach the Hub")
    assert labelled(line) == ("error", "cannot reach the Hub")


def test_a_plain_last_line_is_the_logs_end_not_an_error():
    _, line = why_it_ended(f"{HEAD}\nloading\nkilled by signal 9")
    assert labelled(line) == ("log's end", "killed by signal 9")
    _, line = why_it_ended(f"{HEAD}\n{TRACEBACK}")
    assert labelled(line)[0] == "error"
