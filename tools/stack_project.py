"""Print the Google Cloud project a stack deploys into (`gcp:project` in `Pulumi.<stack>.yaml`).

For shell steps that run before the Pulumi CLI is installed (the deploy workflow enables the APIs
the first `pulumi up` needs with it). Exits 2 naming the key when the stack file does not set it.
"""

from __future__ import annotations

import sys

import typer

from tools.render import load_stack_file

PROJECT_KEY = "gcp:project"


def stack_project(stack: str) -> str:
    config, _ = load_stack_file(stack)
    project = config.get(PROJECT_KEY)
    if not isinstance(project, str) or not project:
        raise ValueError(
            f"{PROJECT_KEY} is not set in Pulumi.{stack}.yaml; run "
            f"`pulumi config set {PROJECT_KEY} <your-project> --stack {stack}` and commit the file"
        )
    return project


def main(stack: str = typer.Argument(..., help="Stack name: reads Pulumi.<stack>.yaml.")) -> None:
    """Print the stack's gcp:project."""
    try:
        sys.stdout.write(stack_project(stack) + "\n")
    except (ValueError, FileNotFoundError) as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(2) from None


if __name__ == "__main__":
    typer.run(main)
