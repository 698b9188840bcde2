"""Abstract values shared by the summary, the index and the per-file analysis.

`Src` is one origin of a taint: where it comes from (a description for the message) and where
it is in the file being analysed. `Val` is what the analysis knows about a value: which taints
it carries and what kind of object it is (a collective callable, a checkpointer, a sharding, a
global array, an instance of a project class, an unordered collection).

Taint kinds:
- `pd`: differs between processes (`jax.process_index()`, hostname, clock, per-process env,
  unseeded randomness, lengths of process-local data);
- `pdc`: process-local *content* (elements of a process-local dataset): differs as data but its
  shape is assumed uniform, so it steers control flow but does not make a shape differ;
- `order`: nondeterministic order (set iteration, directory listings);
- `hash`: `hash()` of a string (PYTHONHASHSEED is random per process);
- `shape`: an array whose shape/dtype was computed from a `pd` value;
- `tree`: a pytree whose structure differs by process (None on some processes, pd keys).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field, fields, replace as _dataclass_replace

from mcjax_lint.analysis import semantics
from mcjax_lint.analysis.kinds import ARRAY_SHAPE, COUNTS, DERIVED, ELEMENTS
from mcjax_lint.model import Fix

MAX_SOURCES = 3  # per kind; enough for a message, bounded for speed

# `Src` and `Val` are immutable by convention (never assigned after construction; derive new
# ones with `dataclasses.replace`), hashable, and not `frozen=True`: a frozen dataclass sets each
# field through `object.__setattr__`, which made construction ~6x slower, and the index and the
# analysis make millions of them.

@dataclass(order=True, unsafe_hash=True, slots=True)
class Src:
    line: int
    column: int
    desc: str  # e.g. "`jax.process_index()`" or "`jax.process_index()` via `is_main()` (utils.py:12)"
    kind: str = ""  # what the source is, for order/hash/shape sources (analysis/kinds.py)
    end_line: int = 0
    end_column: int = 0
    origin: str = ""  # "utils.py:12" for a source found in another function or file
    fix: Fix | None = field(default=None, compare=False)
    # Guesses the engine took to reach this source's value, (line, text, why) each (see
    # `evidence.py`); not part of its identity: the same source reached two ways is one source.
    guess: tuple = field(default=(), compare=False)

    def describe(self) -> str:
        return f"{self.desc} ({self.origin})" if self.origin else self.desc

    @property
    def located(self) -> bool:
        """Whether `line`/`column` are a position in the file being analysed. Sources resolved from
        summaries (another function or file) keep their own file's line for ordering only, with
        `end_line` 0, until `FileAnalysis.anchor` moves them to where they enter this file."""
        return self.end_line > 0


# The origins of the sources a cap compared, while the project index records them (a cap keeps
# the smallest lines, so moving those lines could change what it keeps; see index.py).
CAP_LOG: set[str] | None = None


def _cap(s: frozenset[Src]) -> frozenset[Src]:
    if len(s) <= MAX_SOURCES:
        return s
    if CAP_LOG is not None:
        CAP_LOG.update(x.origin for x in s)
    return frozenset(sorted(s)[:MAX_SOURCES])


def union_sources(a: frozenset[Src], b: frozenset[Src]) -> frozenset[Src]:
    """Both sets' sources, capped; a source reached both ways (certainly and by a guess) keeps
    its most certain way (`Src.guess` is not part of a source's identity)."""
    if not b or a is b:
        return _cap(a)
    if not a:
        return _cap(b)
    u = a | b
    return _cap(most_certain((*a, *b)) if len(u) < len(a) + len(b) else u)


def most_certain(srcs: Iterable[Src]) -> frozenset[Src]:
    """The sources, each equal pair (the same source reached two ways, or two sources made one by
    a change of kind) kept by its way with the fewest guesses, and of two with as many the one
    whose guesses sort first: never the one a set's iteration order (its hash seed) met first."""
    best: dict[Src, Src] = {}
    for x in srcs:
        y = best.get(x)
        if y is None or (y.guess != x.guess and _certainty(x) < _certainty(y)):
            best[x] = x
    return frozenset(best.values())


def _certainty(s: Src) -> tuple:
    return len(s.guess), repr(s.guess)


def least_certain(srcs: Iterable[Src]) -> frozenset[Src]:
    """The sources, two that an operation made equal (`rekinded`, a move to a call site) kept by
    the way with the most guesses (ties: the guesses that sort last): the merge is no evidence that
    the certain one of two distinct sources is what reaches here, and whichever a set's iteration
    order met first must not decide."""
    best: dict[Src, Src] = {}
    for x in srcs:
        y = best.get(x)
        if y is None or (y.guess != x.guess and _certainty(x) > _certainty(y)):
            best[x] = x
    return frozenset(best.values())


def rekinded(srcs: Iterable[Src], kind: str | Callable[[Src], str]) -> frozenset[Src]:
    """`srcs` as sources of `kind` (a kind, or a function of each source giving its new kind):
    two that differed by kind alone become one source, kept by its least certain way."""
    new = (lambda s: kind) if isinstance(kind, str) else kind
    return least_certain(s if s.kind == (k := new(s)) else replace(s, kind=k) for s in srcs)


@dataclass(unsafe_hash=True, slots=True)
class Val:
    pd: frozenset[Src] = frozenset()
    pdc: frozenset[Src] = frozenset()
    order: frozenset[Src] = frozenset()
    hash: frozenset[Src] = frozenset()
    shape: frozenset[Src] = frozenset()
    tree: frozenset[Src] = frozenset()
    # A set/frozenset: iterating it imposes an arbitrary order; True when its elements are
    # strings, "guess" when their type is unknown (`semantics.set_order`).
    unordered: bool | str = False
    callable: str | None = None  # applying it is collective work (e.g. "`train_step` (jit)")
    # A checkpointer/manager whose save/restore are collective; `semantics.SYNC` where it saves
    # synchronously (no save left pending to wait for).
    ckpt: bool | str = False
    sharding: bool = False
    glob: bool = False  # a global jax.Array
    cls: str | None = None  # instance of this project class
    fn: str | None = None  # a reference to this project function (for callbacks)
    struct: str | None = None  # literal pytree structure ("none", "dict:a,b", "seq:2") when known
    numeric: bool = False  # holds numbers only (a set of numbers has a deterministic order)
    items: tuple | None = None  # a tuple's elements (multiple return values), when known
    sanitized: bool = False  # the direct result of a sanitizer (broadcast, allgather, ...)
    subgroup: bool = False  # configured for a subset of processes (`active_processes=...`)
    ext: bool = False  # made by a library call: its methods are the library's, not the project's
    # With `callable`: the (position, name) pairs its `static_argnums` / `static_argnames` make static.
    statics: tuple = ()
    # Conditional expressions on a process-dependent value that picked this function (`f = a if
    # rank == 0 else b`): calling it runs another program on some processes (MCJ101).
    chosen: frozenset = frozenset()
    # A container whose elements are collective callables (a dispatch table `{"train": step}`):
    # what calling an element does.
    elems: str | None = None
    # A jit decorator of the project's own (`functools.partial(jax.jit, donate_argnums=0)`):
    # (kind, static nums, static names); applying it makes a jitted function.
    factory: tuple = ()
    # Host data (numpy, Python values) or an array a jitted call made from host data alone on this
    # process's default device (`semantics.is_host_data`): a jitted call given only such inputs is
    # process-local work. Kept only where every joined value is host data.
    host: bool = False
    # With `callable`: a jitted function that runs on this process alone when its inputs are all
    # host data (`semantics.jit_may_run_locally`); kept only where every joined callable is one.
    # `semantics.CAPTURES_UNKNOWN` when it may capture global arrays (a guess either way).
    hostable: bool | str = False
    # With `sharding`: fully replicated (`NamedSharding(mesh, P())`): every process holds the
    # whole array, so host data put there must be the same everywhere.
    replicated: bool = False
    # A dict built with constant str keys: ((key, value), ...) sorted by key, each key's value
    # kept apart (`cfg["steps"]` is not process-dependent because `cfg["log"]` is). The value's
    # own taint stays the join of all of them: what a read with a computed key, or any use of the
    # dict as a whole, sees.
    keys: tuple | None = None
    # The same value on every process by construction: bound to an expression of literals
    # (`semantics.is_constant`: `np.full((1,), 7)`). Kept only where every joined value is one.
    const: bool = False
    # A stateful random generator (`np.random.default_rng(seed)`, `random.Random(seed)`): each draw
    # advances it (`semantics.StatementRules.method_call`).
    rng: bool = False
    # One device (`SingleDeviceSharding(d)`): an array put or built there lives on that device
    # alone, so placing data there is no cross-process work. Kept only where every joined value is one.
    device: bool = False
    # A reference to a library function whose calls differ between processes (`time.time`,
    # `datetime.datetime.now`, `jax.process_index`), not yet called: bound to a name, a default
    # parameter or an attribute (`self._now = now` ... `self._now()`), calling it reads the source.
    srcq: str | None = None
    # A container whose elements are instances of one project class (`{path: Engine(path)}`,
    # filled by `d[k] = Engine(k)`, `d.setdefault(k, Engine(k))`, `xs.append(Engine(p))`): an
    # element taken from it (`d[k]`, `for e in d.values()`) is an instance of that class.
    ecls: str | None = None

    def join(self, other: Val) -> Val:
        if other is self:
            return self
        if _is_bottom(other):
            # (BOTTOM may be an unknown value)
            return replace(self, host=False, const=False, device=False) if self.host or self.const or self.device else self
        if _is_bottom(self):
            return replace(other, host=False, const=False, device=False) if other.host or other.const or other.device else other
        # (a source reached both ways, certainly and by a guess, keeps its most certain way)
        return Val(
            union_sources(self.pd, other.pd),
            union_sources(self.pdc, other.pdc),
            union_sources(self.order, other.order),
            union_sources(self.hash, other.hash),
            union_sources(self.shape, other.shape),
            union_sources(self.tree, other.tree),
            True if self.unordered is True or other.unordered is True else (self.unordered or other.unordered),
            self.callable or other.callable,
            self.ckpt if self.ckpt == other.ckpt or not other.ckpt else other.ckpt if not self.ckpt else True,
            self.sharding or other.sharding,
            self.glob or other.glob,
            self.cls if self.cls == other.cls else (self.cls or other.cls),
            self.fn or other.fn,
            self.struct if self.struct == other.struct else semantics.joined_struct(self.struct, other.struct),
            self.numeric and other.numeric,
            tuple(a.join(b) for a, b in zip(self.items, other.items))
            if self.items is not None and other.items is not None and len(self.items) == len(other.items) else None,
            self.sanitized and other.sanitized,
            self.subgroup or other.subgroup,
            self.ext or other.ext,
            self.statics if self.callable else other.statics,
            self.chosen | other.chosen,
            self.elems or other.elems,
            self.factory or other.factory,
            self.host and other.host,
            semantics.join_hostable(self.hostable if self.callable else True, other.hostable if other.callable else True)
            if self.callable or other.callable else False,
            self.replicated and other.replicated,
            _join_keys(self.keys, other.keys),
            self.const and other.const,
            self.rng or other.rng,
            self.device and other.device,
            self.srcq or other.srcq,
            self.ecls if self.ecls == other.ecls or not other.ecls else (other.ecls if not self.ecls else None),
        )

    # Taint only (drops object kinds): what flows into a value computed from this one.
    def taint(self) -> Val:
        if not (self.unordered or self.callable or self.ckpt or self.sharding or self.glob or self.cls or self.fn
                or self.struct or self.items is not None or self.sanitized or self.ext or self.elems
                or self.factory or self.host or self.keys is not None or self.const or self.rng or self.device or self.srcq
                or self.ecls) and not self.subgroup:
            return self
        return Val(self.pd, self.pdc, self.order, self.hash, self.shape, self.tree, subgroup=self.subgroup)

    def data(self) -> Val:
        """Taint of something computed from this value (no object kinds, no pytree structure)."""
        return Val(self.pd, self.pdc, self.order, self.hash, self.shape, subgroup=self.subgroup)

    def element(self) -> Val:
        """An element taken from a container: process-local containers give process-local content."""
        # An element of a differing array or of a container of differing elements differs; a
        # container's length says nothing about it (shape kinds: analysis/kinds.py).
        shape = rekinded((s for s in self.shape if s.kind not in COUNTS), ARRAY_SHAPE)
        # An element of a global array, or of the tuple of global arrays a jitted call returns,
        # is a global array.
        # An element of process-local data (host data, a pmap's outputs) is process-local.
        return Val(frozenset(), union_sources(self.pdc, self.pd), self.order, self.hash, shape, glob=self.glob, callable=self.elems,
                   host=self.host, cls=self.ecls)

    def key(self, k: str) -> Val | None:
        """The value stored under the constant key `k`, None when keys are not tracked (then a
        read sees the whole dict's content)."""
        if self.keys is None:
            return None
        for name, v in self.keys:
            if name == k:
                return v
        return None

    def with_key(self, k: str, v: Val, whole: Val) -> Val:
        """This dict after `d[k] = v` with a constant key: `k` holds `v` alone (a strong update);
        `whole` is the dict's own taint after the store (the fallback)."""
        if self.keys is None or len(self.keys) >= MAX_KEYS and self.key(k) is None:
            return replace(whole, keys=None)
        return replace(whole, keys=tuple(sorted([(n, x) for n, x in self.keys if n != k] + [(k, v)], key=lambda e: e[0])))

    def taint_keys(self, written: Collection[str], imp: Val) -> Val:
        """After a branch on a divergent condition: the keys the branch wrote take the
        condition's sources, the others keep theirs."""
        if self.keys is None:
            return self
        return replace(self, keys=tuple((n, x.join(imp) if n in written else x) for n, x in self.keys))

    def same_length(self) -> Val:
        """This value with one length everywhere (a window `x[:n]` of agreed n): what made it
        differ becomes content (`pdc`), its count sources go, its elements' shapes stay."""
        return replace(self, pd=frozenset(), pdc=_cap(self.pd | self.pdc),
                       shape=frozenset(x for x in self.shape if x.kind not in COUNTS))

    def without_order(self) -> Val:
        if not self.order and self.unordered is False:
            return self  # (nothing to drop: the same value)
        return replace(self, order=frozenset(), unordered=False)

    def as_elements(self) -> Val:
        """This value put into a container: its shape sources describe the container's elements
        (a row whose length differs makes a container of rows of differing lengths: numpy builds
        an array of another shape from it)."""
        if not self.shape:
            return self
        return replace(self, shape=rekinded(self.shape, ELEMENTS))

    @property
    def count_sources(self) -> frozenset[Src]:
        """Why iterating this value can take a different number of steps on different processes.

        A literal or comprehension has a known length (its `struct`), and so has a tuple whose
        elements are known (`items`: a helper's `return a, b`, kept through calls where `struct`
        is not): only explicit length sources count. For an opaque process-dependent value (a
        dataset shard, a local iterator) the length is as process-dependent as the value.
        """
        if self.struct is None and self.items is None:
            return _cap(self.pd | self.length_sources)
        return self.length_sources

    @property
    def length_sources(self) -> frozenset[Src]:
        """Why the number of elements (iterations) differs between processes."""
        return frozenset(s for s in self.shape if s.kind != ELEMENTS)

    @property
    def process_dependent(self) -> bool:
        return bool(self.pd or self.pdc)

    @property
    def divergent(self) -> bool:
        """Differs between processes for any reason (steers control flow differently)."""
        return bool(self.pd or self.pdc or self.order or self.hash)

    def divergence_sources(self) -> list[tuple[str, Src]]:
        """(kind, source) pairs, strongest first, for messages."""
        out = [("pd", s) for s in sorted(self.pd)] + [("pdc", s) for s in sorted(self.pdc)]
        out += [("order", s) for s in sorted(self.order)] + [("hash", s) for s in sorted(self.hash)]
        return out


MAX_KEYS = 32  # constant keys tracked apart per dict (a bigger one falls back to the whole)


def _join_keys(a: tuple | None, b: tuple | None) -> tuple | None:
    """Keys of a dict that is one of two dicts: each key's values joined (a key only one side has
    keeps its value there: reading it on the other path fails anyway)."""
    if a is None or b is None:
        return None
    if a is b or a == b:
        return a
    merged = dict(a)
    for n, v in b:
        merged[n] = merged[n].join(v) if n in merged else v
    return tuple(sorted(merged.items(), key=lambda e: e[0])) if len(merged) <= MAX_KEYS else None


BOTTOM = Val()


def _val_replace_function() -> Callable[..., Val]:
    """`dataclasses.replace` for a `Val`, compiled for its fields: the same object (every field
    passed to `Val` in order, a changed one from the keywords), without the generic version's
    loop over the fields' metadata on every call (the analysis replaces ~100k values a run)."""
    names = [f.name for f in fields(Val)]
    src = ("def val_replace(v, /, **changes):\n"
           f"    new = Val({', '.join(f'changes.pop({n!r}, v.{n})' for n in names)})\n"
           "    if changes:\n"
           "        raise TypeError(f'Val has no field {sorted(changes)[0]!r}')\n"
           "    return new\n")
    ns: dict = {"Val": Val}
    exec(compile(src, "<Val replace>", "exec"), ns)
    return ns["val_replace"]


_val_replace = _val_replace_function()


def replace(obj, /, **changes):
    """`dataclasses.replace`, faster for a `Val` (`_val_replace_function`)."""
    if type(obj) is Val:
        return _val_replace(obj, **changes)
    return _dataclass_replace(obj, **changes)


def _is_bottom(v: Val) -> bool:
    """`v == BOTTOM`, without comparing every field where a common one already differs (a
    non-empty source set or a callable, class or function is never BOTTOM's)."""
    return v is BOTTOM or not (v.pd or v.pdc or v.order or v.callable or v.cls or v.fn or v.srcq) and v == BOTTOM


def applied(desc: str | None, kind: str | None = None) -> Val:
    """What calling a jitted function gives (`desc` its description, `kind` its wrapper when
    known): a global array, or process-local arrays for a `pmap` (`semantics.result_is_local`)."""
    return Val(host=True) if semantics.result_is_local(kind or semantics.callable_kind(desc)) else Val(glob=True)
SANITIZED = Val(sanitized=True)


def join_all(vals) -> Val:
    out = BOTTOM
    for v in vals:
        out = out.join(v)
    return out


def with_binding(env: dict, name: str, value, old, thunk):
    """`thunk()` with `env[name]` bound to `value` (a narrowed value, e.g. a set known to hold one
    element in a conditional's branch), then `old` restored (removed if None) unless the
    evaluation rebound the name itself."""
    env[name] = value
    try:
        return thunk()
    finally:
        if env.get(name) is value:
            if old is None:
                del env[name]
            else:
                env[name] = old


def one_number(v: Val) -> Val:
    """One number made of `v` (`int(x)`, `len(x)`, `bool(x)`): why v's length differs between
    processes is part of the number's value now; the number itself has no shape, no structure."""
    if not v.shape and not v.tree:
        return v
    return replace(v, pd=union_sources(v.pd, rekinded(v.length_sources, DERIVED)), shape=frozenset(), tree=frozenset())
