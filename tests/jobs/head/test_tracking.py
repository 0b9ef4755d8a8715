"""The run's one W&B id: kept from the record, given to attempts, a user's own id kept."""

from __future__ import annotations

from jobs.head import tracking


def test_the_id_is_the_one_the_record_keeps_from_any_life():
    recs = [{"event": "armed"}, {"event": "submitted", "wandb_run_id": "abc"}, {"event": "armed"}]
    assert tracking.kept_id(recs) == "abc"
    assert tracking.kept_id([{"event": "armed"}]) is None
    assert tracking.new_id() != tracking.new_id()


def test_attempts_get_the_id_unless_the_user_set_one():
    env = tracking.with_run_id({"env_vars": {"A": "1"}, "pip": ["x"]}, "abc")
    assert env == {
        "env_vars": {"A": "1", "WANDB_RUN_ID": "abc", "WANDB_RESUME": "allow"},
        "pip": ["x"],
    }
    mine = tracking.with_run_id({"env_vars": {"WANDB_RUN_ID": "mine"}}, "abc")
    assert mine["env_vars"] == {"WANDB_RUN_ID": "mine"}
