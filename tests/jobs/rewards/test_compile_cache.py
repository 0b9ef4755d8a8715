"""The compiled-binary cache (jobs/rewards/compile_cache.py): bounded in bytes, never evicting a
binary still in use."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.rewards.compile_cache import CompileCache

pytestmark = pytest.mark.compiler


def test_the_binary_cache_is_bounded_in_bytes_and_keeps_what_is_in_use(tmp_path: Path) -> None:
    """Bounded by count only, a 200 MiB binary per source would fill the disk; and a binary must
    not be deleted while its tests are still queued."""
    cache = CompileCache(tmp_path, max_bytes=3000, max_entries=100)

    def make(name: str):
        def compile_fn() -> tuple[str, str]:
            path = tmp_path / name
            path.write_bytes(b"x" * 1000)
            return str(path), ""

        return compile_fn

    in_use, _ = cache.acquire("a", make("a"))  # held: its tests are queued
    for key in "bcde":
        cache.acquire(key, make(key))
        cache.release(key)
    assert Path(in_use).is_file()
    assert cache.bytes <= 3000 and sum(1 for _ in tmp_path.iterdir()) == 3
    cache.release("a")
    cache.acquire("f", make("f"))
    cache.release("f")
    assert not Path(in_use).exists() and cache.bytes <= 3000
