"""The rl-on-gke policy pack: guard rails checked on every `pulumi preview` and `pulumi up`."""
