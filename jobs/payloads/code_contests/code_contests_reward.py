"""The code-contests reward as veRL loads it: by file path, from the job's working directory.

Recipe verl-grpo-codecontests uploads this folder as the job's working_dir and sets
`custom_reward_function.path=code_contests_reward.py`, which resolves in every Ray worker of the
job (Ray makes the extracted working_dir their cwd). The code itself is the `jobs` package,
shipped with the job as Ray py_modules: this file only names it, so the function veRL gets is
`jobs.rewards.batch.compute_score_batch` (picklable by reference, unlike a function of the
`custom_module` veRL registers this file as).
"""

from jobs.rewards.batch import compute_score_batch
from jobs.rewards.code_contests import compute_score

__all__ = ["compute_score", "compute_score_batch"]
