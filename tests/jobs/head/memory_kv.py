"""Ray's internal KV namespace of the runs' GPU requests (jobs/head/scale_up.py `Store`), in memory."""

from __future__ import annotations


class DictKV:
    def __init__(self) -> None:
        self.data: dict[str, str] = {}

    def put(self, key: str, value: str) -> None:
        self.data[key] = value

    def get(self, key: str) -> str | None:
        return self.data.get(key)

    def keys(self) -> list[str]:
        return list(self.data)

    def delete(self, key: str) -> None:
        self.data.pop(key, None)
