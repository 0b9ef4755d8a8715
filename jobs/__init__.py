"""`rl-jobs`: submit, follow and restart GRPO runs (NeMo RL, veRL) on a Ray cluster."""
