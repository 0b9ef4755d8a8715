"""Model staging: a model's pinned snapshot and its one-time Megatron conversion, once, on Lustre.

Shipped to the cluster with the rest of `jobs` (standard library here; `huggingface_hub` is
imported only where a download happens, and every framework image has it). Runs then load the
staged copy with HF_HUB_OFFLINE=1, so no worker of any attempt downloads anything.
"""
