"""The Ray Jobs REST client: HTTP calls, the types they carry, and failures classified by HTTP status."""
