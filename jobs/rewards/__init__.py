"""Rewards that run on the cluster with the job (shipped as part of the `jobs` package).

Standard library only at import: the package is loaded inside the trainer's Python.
"""

# Where the trainer finds the code-execution service (set from the stack's codeSandboxUrl).
SANDBOX_URL_ENV = "CODE_SANDBOX_URL"
# The bearer token the service requires; the Ray pods and the service read it from one Kubernetes
# Secret (secretKeyRef), and no box ever sees it (boxes start with an empty environment).
SANDBOX_TOKEN_ENV = "CODE_SANDBOX_TOKEN"
