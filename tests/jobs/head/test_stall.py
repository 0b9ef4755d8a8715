"""The stall timeout from a run's own rhythm: configured until the attempt
showed steps and a save, then 10 x its median step or 2 x its longest save, bounded."""

from __future__ import annotations

from jobs.head.stall import FLOOR_S, Rhythm


def _rhythm(step_s: float, steps: int, save_s: float | None) -> Rhythm:
    r, t = Rhythm(), 0.0
    r.observe(t, 0, frozenset())
    for n in range(1, steps + 1):
        t += step_s
        r.observe(t, n, frozenset())
    if save_s is not None:
        r.observe(t, steps, frozenset({"tmp_step_9"}))
        r.observe(t + save_s, steps, frozenset({"step_9"}))
    return r


def test_configured_until_steps_and_a_save_were_seen():
    assert _rhythm(120, 2, 60).timeout(7200) == 7200  # two intervals only
    assert _rhythm(120, 10, None).timeout(7200) == 7200  # no save seen: it may be long
    assert _rhythm(120, 10, 60).timeout(0) == 0  # off stays off


def test_a_multiple_of_the_median_step_bounded_by_the_floor_the_save_and_the_configured():
    assert _rhythm(120, 10, 60).timeout(7200) == 1200
    assert _rhythm(10, 10, 60).timeout(7200) == FLOOR_S
    assert _rhythm(120, 10, 1800).timeout(7200) == 3600  # 2 x a 30-min save
    assert _rhythm(1200, 10, 60).timeout(7200) == 7200  # never above the configured one


def test_a_new_attempts_load_is_not_a_step():
    r = _rhythm(120, 10, 60)
    r.new_attempt()
    r.observe(10_000, 0, frozenset())  # the next attempt, after a long load
    r.observe(10_120, 1, frozenset())
    assert r.timeout(7200) == 1200
