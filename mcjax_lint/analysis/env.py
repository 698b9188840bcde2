"""A scope's name bindings, in layers: each branch of a conditional writes to its own layer over
the enclosing one, so entering a branch and merging its result cost what the branch binds, not
the whole scope. (Copying the scope per branch made a long function with many branches cost
names × branches: a 60k-line module took over a minute.) Both passes keep their bindings here.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

_GONE = object()  # a name deleted in a layer while an outer layer still binds it


class Env:
    """Bindings of one layer over an optional parent. The mapping operations a pass uses (`get`,
    `[]`, `in`, assignment, `del`) see through the layers; writes go to this layer only."""

    __slots__ = ("own", "parent")

    def __init__(self, own: dict | None = None, parent: Env | None = None) -> None:
        self.own: dict = {} if own is None else own
        self.parent = parent

    def get(self, name: str, default: Any = None) -> Any:
        e: Env | None = self
        while e is not None:
            v = e.own.get(name, _GONE)
            if v is not _GONE:
                return v
            if name in e.own:  # deleted here: outer layers no longer count
                return default
            e = e.parent
        return default

    def __getitem__(self, name: str) -> Any:
        v = self.get(name, _GONE)
        if v is _GONE:
            raise KeyError(name)
        return v

    def __contains__(self, name: object) -> bool:
        return self.get(name, _GONE) is not _GONE  # type: ignore[arg-type]

    def __setitem__(self, name: str, value: Any) -> None:
        self.own[name] = value

    def __delitem__(self, name: str) -> None:
        if name not in self:
            raise KeyError(name)
        if self.parent is not None and name in self.parent:
            self.own[name] = _GONE
        else:
            del self.own[name]

    def child(self) -> Env:
        """A new layer over this one (a branch's bindings)."""
        return Env(None, self)

    def written(self) -> Iterator[str]:
        """The names this layer binds or deletes, in the order it first did."""
        return iter(self.own)

    def set_or_delete(self, name: str, value: Any) -> None:
        """Bind `name`, or delete it where `value` is None (merging a branch's result back)."""
        if value is not None:
            self.own[name] = value
        elif name in self:
            del self[name]

    def flat(self) -> dict:
        """Every visible binding as a plain dict (outermost layer's order first)."""
        layers = []
        e: Env | None = self
        while e is not None:
            layers.append(e.own)
            e = e.parent
        out: dict = {}
        for own in reversed(layers):
            for k, v in own.items():
                if v is _GONE:
                    out.pop(k, None)
                else:
                    out[k] = v
        return out


def branch_changes(before: Env, results: list[Env]) -> dict[str, list]:
    """For the names some branch (a layer over `before`) rebound or deleted to something else
    than it was: the value each branch leaves (None: unbound), in branch order. Names every
    branch left as the very object they were are not listed: an enclosing branch must still see
    them as unchanged."""
    out: dict[str, list] = {}
    for r in results:
        for k in r.written():
            if k in out:
                continue
            old = before.get(k)
            vals = [x.get(k) for x in results]
            if any(v is not old for v in vals):
                out[k] = vals
    return out
