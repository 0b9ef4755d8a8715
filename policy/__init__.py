"""The rl-on-gke policy pack: guard rails checked on every `pulumi preview` and `pulumi up`.

Rules report with `report(message, None)`: pulumi_policy types the callback as
`ReportViolation = Callable[[str, Optional[str]], None]` (pulumi_policy/policy.py), the urn
positional; None attaches the violation to the resource being validated, as its default does.
"""
