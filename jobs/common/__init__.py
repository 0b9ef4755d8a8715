"""What every room of jobs shares: the error types with their exit codes, secret redaction, command hints (standard library only)."""
