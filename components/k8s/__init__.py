"""The Kubernetes layer: everything `pulumi up` puts inside the GKE cluster.

One concern per module: `provider` (how objects reach the cluster and die with it), `names`
(the deterministic object names jobs rely on), `networks`, `nccl`, `identity`, `storage`,
`raycluster`, `metrics`, `sandbox` / `sandbox_service` (the code-contests executor, when enabled),
and `layer`, which composes them. Builders are pure functions
returning manifest dicts; the ComponentResources only wire them to the engine.
"""
