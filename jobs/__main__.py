"""Entry point of `python -m jobs`: hands over to the typer app."""

from jobs.cli.app import main

if __name__ == "__main__":
    main()
