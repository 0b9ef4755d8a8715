"""Code shipped to the Ray head (standard library + Ray): the supervisor, its restart policy, run events, and the protocol shared with the CLI."""
