"""A table of the cached project index, unpickled by buckets of keys when first read.

A one-file run on a large project reads a few hundred facts of the cached index (the prefilter
of one file, a re-solve of a few functions); unpickling all of it (~18 MB, ~0.35 s on a 687 kLOC
corpus) was most of that run's time. Each big table is stored as buckets (keys grouped by a
stable hash), and a bucket is unpickled the first time a key of it is read or written;
iterating, or asking the length, loads everything. Behaves as the dict it replaces.
"""

from __future__ import annotations

import gc
import pickle
import zlib
from collections.abc import Iterator, MutableMapping
from typing import Any

_MISSING = object()
_PER_BUCKET = 8  # keys per bucket, about: small enough that a few hundred reads load little


def _bucket(key: str, n: int) -> int:
    return zlib.crc32(key.encode("utf-8", "surrogatepass")) % n


def pack(table: dict[str, Any]) -> list[bytes]:
    """`table` as pickled buckets (what `LazyTable` loads)."""
    n = max(1, len(table) // _PER_BUCKET)
    groups: list[list] = [[] for _ in range(n)]
    for k, v in table.items():
        groups[_bucket(k, n)].append((k, v))
    return [pickle.dumps(g, protocol=pickle.HIGHEST_PROTOCOL) for g in groups]


class LazyTable(MutableMapping):
    """A dict of str keys whose entries are unpickled from `pack()`'s buckets on first use."""

    __slots__ = ("_d", "_buckets", "_left")

    def __init__(self, buckets: list[bytes]) -> None:
        self._d: dict[str, Any] = {}
        self._buckets: list[bytes | None] = list(buckets)
        self._left = len(self._buckets)

    def _load(self, key: str) -> None:
        """Load the bucket `key` belongs to (before any read or write of that key, so a later
        load never brings back a key that was deleted or overwrites one that was set)."""
        if not isinstance(key, str):
            self._load_all()
            return
        i = _bucket(key, len(self._buckets))
        blob = self._buckets[i]
        if blob is not None:
            self._buckets[i] = None
            self._left -= 1
            enabled = gc.isenabled()
            gc.disable()  # long-lived objects, no garbage (see cache._loads)
            try:
                self._d.update(pickle.loads(blob))
            finally:
                if enabled:
                    gc.enable()

    def _load_all(self) -> dict[str, Any]:
        if self._left:
            for i, blob in enumerate(self._buckets):
                if blob is not None:
                    self._buckets[i] = None
                    self._d.update(pickle.loads(blob))
            self._left = 0
        return self._d

    def __getitem__(self, key: str) -> Any:
        v = self._d.get(key, _MISSING)
        if v is _MISSING:
            if self._left:
                self._load(key)
            return self._d[key]
        return v

    def get(self, key: str, default: Any = None) -> Any:
        v = self._d.get(key, _MISSING)
        if v is _MISSING:
            if not self._left:
                return default
            self._load(key)
            return self._d.get(key, default)
        return v

    def __contains__(self, key: object) -> bool:
        if key in self._d:
            return True
        if self._left:
            self._load(key)
            return key in self._d
        return False

    def __setitem__(self, key: str, value: Any) -> None:
        if self._left:
            self._load(key)
        self._d[key] = value

    def __delitem__(self, key: str) -> None:
        if self._left:
            self._load(key)
        del self._d[key]

    def pop(self, key: str, *default: Any) -> Any:
        if self._left:
            self._load(key)
        return self._d.pop(key, *default)

    def setdefault(self, key: str, default: Any = None) -> Any:
        if self._left:
            self._load(key)
        return self._d.setdefault(key, default)

    def __iter__(self) -> Iterator[str]:
        return iter(self._load_all())

    def __len__(self) -> int:
        return len(self._load_all())

    def keys(self):
        return self._load_all().keys()

    def values(self):
        return self._load_all().values()

    def items(self):
        return self._load_all().items()

    def clear(self) -> None:
        self._buckets, self._left = [], 0
        self._d.clear()

    def __eq__(self, other: object) -> bool:
        return self._load_all() == (other._load_all() if isinstance(other, LazyTable) else other)

    def __repr__(self) -> str:
        return f"LazyTable({len(self._d)} loaded, {self._left} buckets left)"

    def __reduce__(self):
        return dict, (self._load_all(),)  # pickled again: a plain dict
