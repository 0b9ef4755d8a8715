"""The typer commands of `rl-jobs` and their rendering: the only place that prints."""
