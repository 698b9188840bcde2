"""The coordination service's key-value store under the guard's private prefix.

All guard traffic between processes goes through here (never a device collective, which would
hang exactly when the processes have diverged). Keys are overwritten in place or deleted, so the
store stays bounded however long the job runs. Errors are turned into `KVError` so callers decide;
a dead coordinator (process 0 died) shows up as errors on every call.
"""

from __future__ import annotations

import json
from typing import Any

PREFIX = "mcjax/v1/"


class KVError(RuntimeError):
    pass


class KV:
    def __init__(self, client: Any, prefix: str = PREFIX) -> None:
        self.client = client
        self.prefix = prefix
        self.calls = 0  # round trips made (benchmarks report it)

    def _k(self, key: str) -> str:
        return self.prefix + key

    def set(self, key: str, value: Any) -> None:
        self.calls += 1
        try:
            self.client.key_value_set(self._k(key), _dump(value), allow_overwrite=True)
        except Exception as e:
            raise KVError(f"set {key}: {e}") from e

    def get(self, key: str) -> Any | None:
        self.calls += 1
        try:
            raw = self.client.key_value_try_get(self._k(key))
        except Exception as e:
            if "NOT_FOUND" in str(e) or "not found" in str(e).lower():
                return None
            raise KVError(f"get {key}: {e}") from e
        return _load(raw)

    def wait(self, key: str, timeout: float) -> Any | None:
        """Block until `key` exists (None on timeout)."""
        self.calls += 1
        try:
            raw = self.client.blocking_key_value_get(self._k(key), max(1, int(timeout * 1000)))
        except Exception as e:
            if "DEADLINE_EXCEEDED" in str(e) or "timed out" in str(e).lower():
                return None
            raise KVError(f"wait {key}: {e}") from e
        return _load(raw)

    def dir(self, prefix: str) -> dict[str, Any]:
        """Every key under prefix (relative names) with its value."""
        self.calls += 1
        try:
            items = self.client.key_value_dir_get(self._k(prefix))
        except Exception as e:
            raise KVError(f"dir {prefix}: {e}") from e
        out = {}
        for k, v in items:
            out[k[len(self._k(prefix)):]] = _load(v)
        return out

    def delete(self, key: str) -> None:
        self.calls += 1
        try:
            self.client.key_value_delete(self._k(key))
        except Exception as e:
            raise KVError(f"delete {key}: {e}") from e

    def barrier(self, name: str, timeout: float, processes: list[int] | None = None) -> None:
        self.calls += 1
        try:
            if processes is None:
                self.client.wait_at_barrier(self._k(name), max(1, int(timeout * 1000)))
            else:
                self.client.wait_at_barrier(self._k(name), max(1, int(timeout * 1000)), process_ids=processes)
        except Exception as e:
            raise KVError(f"barrier {name}: {e}") from e


def _dump(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def _load(raw: Any) -> Any:
    if isinstance(raw, bytes):
        raw = raw.decode()
    try:
        return json.loads(raw)
    except (ValueError, TypeError):
        return raw
