"""The typer commands of `python -m jobs` and their rendering: the only place that prints."""
