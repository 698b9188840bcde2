"""The kinds of fact the engine labels its findings' raw material with.

The engine says *what* a source is and *where* a value is used; it never says which rule reports
it. A rule module (`rules/mcj*.py`) declares the kinds it cares about and decides the finding:
severity, message, evidence. A new rule over existing kinds touches nothing here; a rule that
needs a new kind of fact adds the kind here and the place(s) that record it.

Source kinds (`Src.kind`), by the taint a source is in (`Val` fields, see values.py):
- process-dependent sources (`Val.pd`, `Val.pdc`): `PROCESS_ID`, `HOST_ID`, `CLOCK`, `RANDOM`,
  `ENVIRONMENT`, `LOCAL_DATA`, `SCHEDULING`, `DRAWN`, `DECLARED`, or `DERIVED` (computed from other values: a length,
  a key, a shape);
- order sources (`Val.order`): `SET_ORDER`, `LISTING_ORDER`;
- hash sources (`Val.hash`): `STRING_HASH`;
- shape sources (`Val.shape`): `ARRAY_SHAPE` (this array's shape differs, the default),
  `LENGTH` (this container's length differs), `ROWS` (this array's first axis differs),
  `ELEMENTS` (its elements' shapes differ);
- a process-dependent source guarded by a parameter of its function (`host is None or
  jax.process_index() == host`) carries a `guarded(...)` label over its kind until a call binds
  the parameter (index.py), then its kind again (`unguarded`).

Sink places (`Sink.place`): where a value must agree across processes. Sink facets
(`Sink.facet`): which of the value's taints reached it.
"""

from __future__ import annotations

# ---- what a source is
PROCESS_ID = "process-id"  # `jax.process_index()`, its pytest fixture, the distributed client's id
HOST_ID = "host-id"  # the host name, the process id (`os.getpid()`), `os.uname()`
CLOCK = "clock"  # the wall clock or a timer
RANDOM = "random"  # unseeded randomness, `uuid4()`, `os.urandom()`
ENVIRONMENT = "environment"  # a per-process environment variable (`RANK`, `LOCAL_RANK`, ...)
LOCAL_DATA = "local-data"  # this process's split or shard of the data, measured or read
SIGNAL = "signal"  # what a signal handler sets: a signal arrives at one process, not at all of them
# Whether another thread got somewhere yet (`thread.is_alive()`, `event.is_set()`, `future.done()`):
# thread scheduling, which no two processes share.
SCHEDULING = "scheduling"
# Numbers drawn into a shape given apart from them (`np.random.normal(size=(4, 8))`, a `jax.random`
# draw from a per-process key): process-local content (`Val.pdc`) whose shape is certainly uniform.
DRAWN = "drawn"
DECLARED = "declared"  # named process-dependent in the configuration
DERIVED = ""  # computed from other process-dependent values
SET_ORDER = "set-order"  # iterating a set/frozenset (`set.pop()`, an index into its order)
LISTING_ORDER = "listing-order"  # a directory listing or glob, in filesystem order
STRING_HASH = "string-hash"  # `hash()` of a str/bytes (PYTHONHASHSEED differs per process)
ARRAY_SHAPE = ""  # an array whose shape/dtype was computed from a process-dependent value
LENGTH = "len"  # a container (list, slice, repeat) whose length is process-dependent
ELEMENTS = "elem"  # a container whose elements' shapes are process-dependent
# An array made from a container whose length differs (`np.asarray(local_rows)`): its first axis
# alone differs, so a row of it, a window `[:n]` of it and an endless iterator over it do not.
ROWS = "rows"
COUNTS = frozenset({LENGTH, ROWS})  # shape sources that are a number of elements (along the first axis)

GUARD_PREFIX = "?"


def guarded(function: str, param: str, kind: str = DERIVED) -> str:
    """A process-dependent source of `kind` read only when `param` of `function` is not left to None."""
    return f"{GUARD_PREFIX}{function}:{param}:{kind}"


def guard_of(kind: str, function: str) -> str | None:
    """The parameter of `function` guarding a source labelled `kind`, None if it is not guarded there."""
    prefix = f"{GUARD_PREFIX}{function}:"
    return kind[len(prefix):].split(":", 1)[0] if kind.startswith(prefix) else None


def drawn(kind: str) -> str:
    """The kind of numbers drawn from a key made from a source of `kind`: other numbers of one
    shape (`DRAWN`), under the source's guard where it has one."""
    return kind[:kind.rindex(":") + 1] + DRAWN if kind.startswith(GUARD_PREFIX) else DRAWN


def unguarded(kind: str) -> str:
    """A source's kind without its guard."""
    return kind.rsplit(":", 1)[1] if kind.startswith(GUARD_PREFIX) else kind


# ---- where a value goes
COLLECTIVE_INPUT = "collective-input"  # an argument of collective work (a jitted call, a collective)
PARTITION = "per-process-partition"  # indexes or slices data by process (`xs[jax.process_index()]`)
SEED = "seed"  # the seed of an RNG (`jax.random.PRNGKey(s)`)
GLOBAL_SHAPE = "global-shape"  # the explicit global shape of a global-array constructor
STATIC_ARGUMENT = "static-argument"  # a static argument of a jitted function (picks the program)
REPLICATED_DATA = "replicated-data"  # host data put on a fully replicated sharding
# a state updated from itself and a cross-process result (`w = w - lr * allreduced_grad`): the
# update presumes every process holds the same state
REPLICATED_STATE = "replicated-state"
BARRIER_NAME = "barrier-name"  # the name or id of a barrier, which every process must pass alike
# a path read on some processes only, named from what each process draws for itself (the clock,
# unseeded randomness): where the others wrote, under their own names, is not where it reads
EXCHANGE_PATH = "exchange-path"
# a path a process writes its own part at (named by its index: `part{rank}.npy`) under a name it
# drew for itself (the clock, unseeded randomness): the parts meant to lie side by side do not
PART_PATH = "part-path"
# Sources a process draws a name from for itself, with no relation to its index: two processes
# name the same thing apart (`EXCHANGE_PATH`).
SELF_DRAWN_NAMES = frozenset({CLOCK, RANDOM})
# read while a traced (jit/pmap/shard_map) function's body runs: compiled into the program as a constant
TRACE_CONSTANT = "trace-constant"

# ---- which taint of the value reached it (the `Val` field)
ORDER = "order"
HASH = "hash"
SHAPE = "shape"
TREE = "tree"
VALUE = "pd"  # the value itself differs between processes
