"""The kinds of fact the engine labels its findings' raw material with.

The engine says *what* a source is and *where* a value is used; it never says which rule reports
it. A rule module (`rules/mcj*.py`) declares the kinds it cares about and decides the finding:
severity, message, evidence. A new rule over existing kinds touches nothing here; a rule that
needs a new kind of fact adds the kind here and the place(s) that record it.

Source kinds (`Src.kind`), by the taint a source is in (`Val` fields, see values.py):
- order sources (`Val.order`): `SET_ORDER`, `LISTING_ORDER`;
- hash sources (`Val.hash`): `STRING_HASH`;
- shape sources (`Val.shape`): `ARRAY_SHAPE` (this array's shape differs, the default),
  `LENGTH` (this container's length differs), `ELEMENTS` (its elements' shapes differ);
- process-dependent sources (`Val.pd`) guarded by a parameter of their function carry a
  `guarded(...)` label until a call binds it (index.py), then `""`.

Sink places (`Sink.place`): where a value must agree across processes. Sink facets
(`Sink.facet`): which of the value's taints reached it.
"""

from __future__ import annotations

# ---- what a source is
SET_ORDER = "set-order"  # iterating a set/frozenset (`set.pop()`, an index into its order)
LISTING_ORDER = "listing-order"  # a directory listing or glob, in filesystem order
STRING_HASH = "string-hash"  # `hash()` of a str/bytes (PYTHONHASHSEED differs per process)
ARRAY_SHAPE = ""  # an array whose shape/dtype was computed from a process-dependent value
LENGTH = "len"  # a container (list, slice, repeat) whose length is process-dependent
ELEMENTS = "elem"  # a container whose elements' shapes are process-dependent

GUARD_PREFIX = "?"


def guarded(function: str, param: str) -> str:
    """A process-dependent source read only when `param` of `function` is not left to None."""
    return f"{GUARD_PREFIX}{function}:{param}"


# ---- where a value goes
COLLECTIVE_INPUT = "collective-input"  # an argument of collective work (a jitted call, a collective)
PARTITION = "per-process-partition"  # indexes or slices data by process (`xs[jax.process_index()]`)
SEED = "seed"  # the seed of an RNG (`jax.random.PRNGKey(s)`)
GLOBAL_SHAPE = "global-shape"  # the explicit global shape of a global-array constructor
STATIC_ARGUMENT = "static-argument"  # a static argument of a jitted function (picks the program)
REPLICATED_DATA = "replicated-data"  # host data put on a fully replicated sharding

# ---- which taint of the value reached it (the `Val` field)
ORDER = "order"
HASH = "hash"
SHAPE = "shape"
TREE = "tree"
VALUE = "pd"  # the value itself differs between processes
