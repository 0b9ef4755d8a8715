"""The held-out results as the runs library reads them: the schema a file must fit, and the
results a cluster's eval jobs end their logs with."""

from __future__ import annotations

from jobs.client.types import JobDetails, JobStatus
from jobs.head import eval_result
from jobs.runs import eval_results
from tests.jobs.cli.test_eval_views import _evaluated, _record, _result


def test_a_result_file_that_does_not_fit_the_schema_is_reported_not_read(tmp_path):
    _record(tmp_path, "r")
    _evaluated(tmp_path, "r")
    (tmp_path / "r" / "eval" / "step_400.json").write_text('{"score": 2}')
    results, bad = eval_results.read(tmp_path, "r")
    assert [r.step for r in results] == [100, 200, 300, None] and list(bad) == ["step_400.json"]


def _eval_job(sid: str, run: str, content: dict, status: JobStatus) -> tuple[JobDetails, str]:
    job = JobDetails(
        submission_id=sid,
        status=status,
        entrypoint="python3 -m jobs.head.eval_job",
        metadata={"run": run, "kind": "eval"},
    )
    return job, f"eval: done\n{eval_result.log_line(content)}\n"


def test_a_cluster_view_reads_each_succeeded_eval_jobs_last_line_the_later_winning():
    made = [
        _eval_job("r-eval-1", "r", _result("r", 300, 600), JobStatus.SUCCEEDED),
        _eval_job("r-eval-2", "r", _result("r", 300, 712), JobStatus.SUCCEEDED),
        _eval_job("r-eval-3", "r", _result("r", None, 498), JobStatus.SUCCEEDED),
        _eval_job("r-eval-4", "r", _result("r", 400, 900), JobStatus.FAILED),
    ]
    logs = {j.submission_id: text for j, text in made}
    got = eval_results.of_jobs([j for j, _ in made], lambda sid: logs[sid])
    assert eval_results.summary(got) == "GSM8K 71.2% at step 300 (base 49.8%)"
