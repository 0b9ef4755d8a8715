"""The recipe catalogue, composition with the frameworks' own config code, fit rules, overrides and checkpoint sizing (no I/O to a cluster)."""
