"""Project index: names resolved across modules and transitive facts over the call graph.

Built from every file's `ModuleSummary` (whichever files are being linted, so findings never
depend on which files were passed). A fixpoint over the call graph computes, for every project
function and method:
- what its return value carries (`returns`): process-dependent / nondeterministic-order / hash
  sources, or object kinds (a collective callable, a checkpointer, a class instance);
- whether calling it does collective work (`collective`), with a description chain for messages;
- whether it touches JAX devices (for MCJ401).
User declarations from `AnalysisSettings` are applied on top of the built-in knowledge.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterable, Sequence
from contextlib import contextmanager
from typing import Any

from mcjax_lint import knowledge as K
from mcjax_lint.analysis import evidence, kinds, semantics
from mcjax_lint.analysis import values as _values
from mcjax_lint.analysis.summary import CALLS_CAP, ELEMENT_CALL, GATE_SEP, SAME_LENGTH_CALL, STAR, TIED_SORT_CALL, TYPE_OF_CALL, ClassFacts, FunctionFacts, ModuleSummary, SIZED_BY_CONTENT, Sym, star_exports
from mcjax_lint.analysis.summary import member_is_count as summary_member_is_count
from mcjax_lint.analysis.values import BOTTOM, Src, Val, applied, join_all, most_certain, replace
from mcjax_lint.settings import AnalysisSettings

MAX_ITERATIONS = 32


# A function's returned value that changed this many times in one fixpoint is widened from then
# on: joined with what it was (a cycle of stored attributes is cut where it is first entered, so
# the value read through it can depend on the order functions are solved in and flip between two
# values forever; the join only grows and so settles, keeping what either order found).
WIDEN_RETURNS_AFTER = 4

MAX_CONSTRUCTOR_DEPTH = 6  # an attribute stored from a construction's argument, nested this deep


def _delegates(f: FunctionFacts, meth: str) -> bool:
    """Whether `f` returns what a method of the same name, called on another object, returns."""
    return any(isinstance(c, dict) and c.get("m") == meth for c in f.returns.get("via", ()))


def _sorted_graph(graph: dict[str, set[str]]) -> dict[str, tuple[str, ...]]:
    return {q: tuple(sorted(ds)) for q, ds in graph.items()}


def _callees_first(graph: dict[str, tuple[str, ...]]) -> dict[str, int]:
    """A rank per node such that the nodes it points to rank lower (a depth-first postorder;
    a cycle is broken where it is entered). Iterative: call chains may be deep. Each node's
    successors come sorted (`_sorted_graph`): the fixpoint ranks again after most rounds, and
    sorting them each time cost as much as the walk."""
    rank: dict[str, int] = {}
    for root in sorted(graph):
        if root in rank:
            continue
        on_path = {root}
        stack = [(root, iter(graph[root]))]
        while stack:
            node, it = stack[-1]
            for d in it:  # (resumed where the last visit of `node` stopped)
                if d not in rank and d not in on_path and d in graph:
                    on_path.add(d)
                    stack.append((d, iter(graph[d])))
                    break
            else:
                stack.pop()
                on_path.discard(node)
                rank[node] = len(rank)
    return rank
_JAX_TRANSFORMS = ("jax.", "flax.", "equinox.", "optax.", "functools.")


def source_call(q: str) -> Val:
    """What calling a held reference to the source function `q` gives (`semantics.source_function`):
    the source, without a position (a summary's call is reached from many places; the precise
    pass names the call it enters this file through, as for any helper's source)."""
    return Val(pd=frozenset({Src(0, 0, K.PROCESS_DEPENDENT_CALLS[q], semantics.process_dependent_kind(q))}))


def short_name(q: str) -> str:
    parts = q.split(".")
    return ".".join(parts[-2:]) if len(parts) >= 2 and parts[-2][:1].isupper() else parts[-1]


def _bind_guards(v: Val, q: str, f: FunctionFacts, given: tuple | None) -> Val:
    """A result of `q` at a call: sources guarded by `param is None or ...` in `q` (values, or
    numbers drawn from them) are dropped when the call leaves that parameter to its default
    None, kept (unguarded) otherwise."""
    if not any(s.kind.startswith(kinds.GUARD_PREFIX) for s in (*v.pd, *v.pdc)) and not (
            v.items and any(s.kind.startswith(kinds.GUARD_PREFIX) for x in v.items for s in (*x.pd, *x.pdc))) and not (
            v.keys and any(s.kind.startswith(kinds.GUARD_PREFIX) for _, x in v.keys for s in (*x.pd, *x.pdc))):
        return v
    supplied = None
    if given is not None:
        offset = 1 if f.cls and f.params and f.params[0] in ("self", "cls") else 0
        supplied = set(f.params[offset:offset + given[0]]) | set(given[1])

    def bind(pd: frozenset[Src]) -> frozenset[Src]:
        out = []
        for s in pd:
            param = kinds.guard_of(s.kind, q)
            if param is not None and supplied is not None and param not in supplied:
                continue
            out.append(replace(s, kind=kinds.unguarded(s.kind)) if s.kind.startswith(kinds.GUARD_PREFIX) else s)
        return most_certain(out)  # (a guarded source and its unguarded twin: one, whatever the set's order)

    items = tuple(replace(x, pd=bind(x.pd), pdc=bind(x.pdc)) for x in v.items) if v.items else v.items
    keys = tuple((k, replace(x, pd=bind(x.pd), pdc=bind(x.pdc))) for k, x in v.keys) if v.keys else v.keys
    return replace(v, pd=bind(v.pd), pdc=bind(v.pdc), items=items, keys=keys)


# Methods that give a container's structure (its keys, its elements as they are), not something
# computed from its content: `bool(tree.keys())` is as process-dependent as the tree's length.
_COUNTING_CALLS = frozenset({"len", "bool", "any", "all"})  # (not followed by `_nested_marks`)
_NESTED_MARK_DEPTH = 4  # calls followed into a returned value's arguments (`_nested_marks`)
_STRUCTURE_METHODS = frozenset({"keys", "values", "items", "__len__", "__iter__", "copy"})


def _reads_file_at_params(sym: Sym) -> bool:
    """Whether `sym` holds a file read at a path a parameter gives (the summary's
    `evidence.FILE_CONTENT_CALL` on a parameter: `open(path)`)."""
    return any(call.get("n") == evidence.FILE_CONTENT_CALL and (call.get("a") or {}).get("params")
               for call in sym.get("via", ()))


def _method_reads_params(sym: Sym | None, depth: int = 3) -> bool:
    """Whether `sym` (an order-free wrapper's argument, not `len`'s: a length of what a method
    gives is not its content) holds a call of a content method on, or with, a parameter
    (`bool(g.all())`, `sorted(x.split())`): as a method called directly, its result is computed
    from the parameter (`ProjectIndex._resolve`)."""
    if not sym or depth <= 0:
        return False
    for call in sym.get("via", ()):
        if "m" in call and call["m"] not in _STRUCTURE_METHODS \
                and any(part and part.get("params") for part in (call.get("r"), call.get("a"))):
            return True
        if any(_method_reads_params(part, depth - 1) for part in (call.get("r"), call.get("a"))):
            return True
    return False


def _env_params(f: FunctionFacts, sym: Sym) -> list:
    """(param, position, line) for each parameter naming an environment variable the function's
    result reads ("envp", see summary._env_read); position counts after `self`."""
    found: list = []

    def collect(x: Sym, depth: int) -> None:
        found.extend(x.get("envp", ()))
        for t in x.get("tup") or ():
            collect(t, depth)
        if depth:
            for c in x.get("via", ()):  # `cast(os.environ[key])`: handed on to a call
                if c.get("a"):
                    collect(c["a"], depth - 1)

    collect(sym, 2)
    params = list(f.params)
    if f.cls and params and params[0] in ("self", "cls"):
        params = params[1:]
    out = []
    for p, line in found:
        entry = [p, params.index(p) if p in params else -1, line]
        if entry not in out:
            out.append(entry)
    return out


def _measures_params(sym: Sym) -> bool:
    """A returned value (or tuple element) with the length of a parameter's longest element."""
    return bool(sym.get("lmax")) or any(_measures_params(x) for x in sym.get("tup") or ())


def _sized_by_content(sym: Sym) -> bool:
    """Whether every "lmax" entry of a returned value says its length follows a parameter's
    content (a mask of it, `np.nonzero` of it: `summary.SIZED_BY_CONTENT`)."""
    entries = list(sym.get("lmax") or ()) + [e for x in sym.get("tup") or () for e in x.get("lmax") or ()]
    return bool(entries) and all(e[0] == SIZED_BY_CONTENT for e in entries)


def _decided_params(summaries: list[ModuleSummary], functions: dict[str, FunctionFacts], follow) -> dict[str, dict[str, str]]:
    """Module-level functions' parameters that hold one literal constant at every call in the
    project (`cleanup(sync=False)` everywhere, or a default `assert_exist=False` no call
    overrides): function -> {parameter: `semantics.constant_repr`}. The precise pass takes a
    branch on such a parameter as decided. Nothing is decided for a function never called by
    name (an entry point, called from outside), used as a value anywhere (stored, passed,
    wrapped: its callers are not seen), a method, or jitted; nor when some function's call records
    were cut short, or a call unpacks `*args`/`**kwargs`."""
    sites: dict[str, list[dict]] = {}
    indirect: set[str] = set()
    for s in summaries:
        indirect.update(follow(q) for q in s.value_refs)
        for f in s.functions.values():
            if len(f.calls) >= CALLS_CAP:
                return {}
            for call in f.calls:
                n = call.get("n")
                if n is not None:
                    sites.setdefault(follow(n), []).append(call)
                for cb in call.get("cb", ()):
                    indirect.add(follow(cb))
    module_level = {q for s in summaries for q in s.functions if q.rpartition(".")[0] == s.module}
    out: dict[str, dict[str, str]] = {}
    for q, calls in sites.items():
        f = functions.get(q)
        if f is None or q not in module_level or q in indirect or f.cls or f.jit:
            continue
        consts: dict[str, str] = {}
        for i, p in enumerate(f.params):
            seen = set()
            for call in calls:
                npos = call.get("np", 0)
                if npos == -1:
                    seen.add(None)
                    break
                kc = call.get("kc", {})
                if i < npos:
                    seen.add(kc.get(str(i)))
                elif p in call.get("kw", ()):
                    seen.add(kc.get(p))
                else:
                    seen.add(f.defaults.get(p))
            if len(seen) == 1 and None not in seen:
                consts[p] = seen.pop()
        if consts:
            out[q] = consts
    return out


def _is_test_module(module: str) -> bool:
    """A test module (`test_*`, `*_test`, `conftest`, or in a `tests`/`test` package), by its module
    name (directories above the project do not count): its classes' attributes are not candidates
    when an attribute is resolved by name."""
    parts = module.split(".")
    name = parts[-1]
    return (name.startswith("test_") or name.endswith("_test") or name == "conftest"
            or any(p in ("tests", "test") for p in parts[:-1]))


def _weakest_order(claims: list) -> bool | str:
    """What every one of several `semantics.set_order` claims holds: none where one is none,
    a guess where one is a guess."""
    if not claims or not all(claims):
        return False
    return semantics.SALTED if all(c is semantics.SALTED for c in claims) else semantics.GUESS


class ProjectIndex:
    """Cross-module facts; query with `call()`, `ref()`, `method()`; see module docstring."""

    def __init__(self, summaries: list[ModuleSummary], settings: AnalysisSettings,
                 libraries: Sequence[ModuleSummary] = (), solve: bool = True):
        """`solve=False`: the tables only; `solve()` then computes the facts (the runner forks
        the precise pass's workers in between: see `solved_state`)."""
        self.settings = settings
        # Facts (and the descriptions in messages) must not depend on the order files came in.
        summaries = sorted(summaries, key=lambda s: (s.module, s.path))
        # Installed libraries' modules (mcjax_lint/libraries.py): their functions are solved with
        # the project's, but a name is never resolved to them by its spelling alone (by-name
        # method and attribute tables), and their import-time device access is theirs.
        own = {s.module for s in summaries}
        libraries = sorted((s for s in libraries if s.module not in own), key=lambda s: s.module)
        self.library_modules = frozenset(s.module for s in libraries)
        self.modules: dict[str, ModuleSummary] = {}
        for s in summaries:
            self.modules[s.module] = s
        self._suffix_map: dict[str, str | None] = {}  # dotted path suffix -> module (None: ambiguous)
        for m, sm in self.modules.items():
            parts = [x for x in os.path.normpath(sm.path).replace("\\", "/").split("/") if x]
            if not parts:
                continue
            stem = parts[-1].rsplit(".", 1)[0]
            parts = parts[:-1] + ([] if stem == "__init__" else [stem])
            for k in range(1, min(8, len(parts)) + 1):
                tail = parts[-k:]
                if not all(x.isidentifier() for x in tail):
                    break
                key = ".".join(tail)
                self._suffix_map[key] = m if self._suffix_map.get(key, m) == m else None
        self.functions: dict[str, FunctionFacts] = {}
        self.fn_path: dict[str, str] = {}
        self.classes: dict[str, ClassFacts] = {}
        self.globals: dict[str, Sym] = {}
        self.methods_by_name: dict[str, list[str]] = {}
        self._props_cache: dict[str, list[str]] = {}  # (`_properties_named`; emptied where methods change)
        self.attrs_by_name: dict[str, list[str]] = {}
        # attr -> [(what a store through another reference carries, its file)] (summary.attr_stores)
        self.attr_stores: dict[str, list[tuple[Sym, str]]] = {}
        # attr -> [(what a draw from the generator it holds carries, its file)] (summary.gen_stores)
        self.gen_stores: dict[str, list[tuple[Sym, str]]] = {}
        # attr -> [(a value stored from the attribute's own by a call, its file)] (summary.restores)
        self.restores: dict[str, list[tuple[Sym, str]]] = {}
        self._restore_checks: set[str] = set()  # (`_restored_agreed` under way)
        self._cut_depth = 0  # (within `_written_under_condition` or `_restored_agreed`: `_GUARDED`)
        self.gen_owners: dict[str, set[str]] = {}  # attr -> classes whose methods draw from `self.attr`
        # (`_written_under_condition`, built at its first use: calls under a condition by the
        # callee's name, and the names of the methods writing each attribute)
        self._cond_calls_by_name: dict[str, list] | None = None
        self._writers: dict[str, set[str]] = {}
        self._in_written_under_condition = False
        # Its answers, `_one_of_several_instances`' and the attributes' stores elsewhere, reused
        # within a fixpoint round (`_round_memo`): key -> (identity, value, what it read, round,
        # the cycle checks it made).
        self._wuc_memo: dict[tuple[str, str], tuple] = {}
        self._several_memo: dict[int, tuple] = {}
        self._elsewhere_memo: dict[tuple[str, bool], tuple] = {}
        # (and, per callee name, its conditional calls that are not on one of several instances,
        # each with the project functions it may call: what every attribute asks of that name)
        self._named_calls_memo: dict[str, tuple] = {}
        self._params_in_memo: dict[int, tuple] = {}  # (`_params_in`)
        self._checks: list[tuple[int, dict[str, bool]]] = []  # (`_round_memo`'s computations under way)
        for s in summaries:
            for q, f in s.functions.items():
                self.functions[q] = f
                self.fn_path[q] = s.path
                if f.cls and q.count(".") == f.cls.count(".") + 1:
                    self.methods_by_name.setdefault(q.rsplit(".", 1)[1], []).append(q)
            test_module = _is_test_module(s.module)
            for q, c in s.classes.items():
                self.classes[q] = c
                self.fn_path[q] = s.path
                if test_module:
                    continue  # a test case's `self.hidden_states` is no model output's attribute
                for a in c.attrs:
                    self.attrs_by_name.setdefault(a, []).append(f"{q}.{a}")
            for name, v in s.globals.items():
                self.globals[f"{s.module}.{name}"] = v
                self.fn_path[f"{s.module}.{name}"] = s.path
            if not test_module:
                for name, v in s.attr_stores.items():
                    if name not in K.GENERIC_ATTRIBUTE_NAMES:
                        # (calls of methods, resolved by name, are left out here and below: they
                        # tied attributes into cycles that kept the fixpoint from settling)
                        self.attr_stores.setdefault(name, []).append((_named_calls_only(v), s.path))
                for name, vals in s.restores.items():
                    for v in vals:
                        self.restores.setdefault(name, []).append((_named_calls_only(v), s.path))
                for name, v in s.gen_stores.items():
                    self.gen_stores.setdefault(name, []).append((_named_calls_only(v), s.path))
                    owner, _, attr = name.rpartition(".")
                    if owner:
                        self.gen_owners.setdefault(attr, set()).add(owner)
        for s in libraries:
            self.modules[s.module] = s
            for q, f in s.functions.items():
                self.functions.setdefault(q, f)
                self.fn_path.setdefault(q, s.path)
            for q, c in s.classes.items():
                self.classes.setdefault(q, c)
                self.fn_path.setdefault(q, s.path)
            for name, v in s.globals.items():
                self.globals.setdefault(f"{s.module}.{name}", v)
                self.fn_path.setdefault(f"{s.module}.{name}", s.path)
        # Resolved facts (filled by the fixpoint).
        self.returns: dict[str, Val] = {}
        self.param_flow: dict[str, str] = {}
        # Per function with a `param_flow`: (the parameters its result is computed from, those of
        # them with a default), None where unknown (`_returned_arguments`).
        self.returned_params: dict[str, tuple | None] = {}
        self.env_params: dict[str, list] = {}  # (param, position, line): reads the env variable it names
        self.item_flow: dict[str, list] = {}  # per element of a returned tuple: how arguments flow in  # "order": arguments flow in with their order; "data": without
        self.collective: dict[str, str] = {}
        self._gates: dict[tuple[str, str], Val | None] = {}  # (function, parameter) -> `param_gate`
        # Functions whose collective work is all jitted computation on these parameters: a call
        # passing process-local data for each of them does no collective work (`local_at`).
        self.local_unless: dict[str, frozenset[str]] = {}
        self.local_guess: set[str] = set()  # of those, the ones whose jitted work may capture global arrays
        # Functions whose every collective work point lies under tests of their own parameters'
        # truth (`if sync: allreduce(x)`, summary "gp"/`dgates`): the tests of each point (one
        # conjunction of (parameter, truth) each). A call whose constant arguments (or the
        # defaults it leaves) fail every point's tests does no collective work (`gated_off`).
        self.work_gates: dict[str, frozenset] = {}
        self._ungated: set[str] = set()  # (some of its work under no such test: never gated again)
        self.device_access: dict[str, str] = {}
        self.callback_params: dict[str, set[str]] = {}
        self._attr_cache: dict[str, Val] = {}
        self._global_cache: dict[str, Val] = {}
        self._resolving: dict[str, str] = {}  # keys being computed (`_cached`) -> their "@" dependency
        # Memos keyed by the identity of summary objects (kept alive by the summaries): (object,
        # value, the functions whose facts it read, the round it was computed or last checked
        # in). Within a round an entry is reused as is; in a later round only if none of those
        # functions' facts changed since (then recomputing it would give the same value), so a
        # round re-derives only what depends on what changed. See `_fresh`.
        self._memo: dict[int, tuple] = {}
        self._call_memo: dict[int, tuple] = {}
        self._coll_memo: dict[int, tuple] = {}
        self._round = 0
        self._round_changes: list[set[str]] = []  # per finished round: functions whose facts changed
        self._since: dict[int, set[str]] = {}  # round -> changes in the finished rounds since then
        self._changed_now: set[str] = set()  # changes so far in this round
        self._static: dict[int, tuple] = {}
        self._cond_stores: dict[str, Sym] = {}  # "class.attr" -> its conditional stores' named calls
        self._mro_cache: dict[str, list[str]] = {}
        self._reexport_cache: dict[str, str] = {}
        self._star_cache: dict[tuple[str, str], str] = {}
        self._dep_stack: list[set[str]] = []
        self._init_sites: dict[str, list[tuple[dict, str, bool, str]]] | None = None
        # Helpers whose callers' arguments an iterable's per-construction count read
        # (`_caller_counts`): a change of a call of one is not re-solved in place.
        self.piece_helpers: set[str] = set()
        # Which file each quoted origin (`utils.py:12`: basename -> line -> path, or a tuple of
        # paths when files of the same name share it) came from, and the files whose sources a
        # cap compared: what `relocate.relocate_index` needs to move lines without a rebuild.
        self._origin_paths: dict[str, dict[int, Any]] = {}
        self._capped_paths: set[str] = set()
        self._unsolved = summaries  # (the project's own, sorted: what `solve` derives facts from)
        if solve:
            self.solve()

    def solve(self) -> None:
        """The call-graph fixpoint and the facts derived from it (once per index)."""
        summaries = self.__dict__.pop("_unsolved")
        # (a first answer, from what construction sites pass as written: what a parameter's
        # attribute reads during the fixpoint, `pool.rng` of `def draw(pool)`, is that class's)
        self._stable = False
        self.param_classes = self._param_classes(summaries)
        with self._logging_caps():
            self._solve()
        self._module_device_access = self._import_device_access()
        self.decided = _decided_params(summaries, self.functions, self._follow_reexport)
        self.param_classes = self._param_classes(summaries)
        del self._param_sites
        # Functions a branch could be decided in (a constant default, or a literal argument at
        # some call): an edit of their calls makes the cached index refuse to relocate.
        self.decision_callees = set(self.work_gates) | {q for q, f in self.functions.items() if f.defaults and not f.cls} | {
            self._follow_reexport(c["n"]) for f in self.functions.values() for c in f.calls if c.get("kc") and "n" in c}

    def _note_origin(self, short: str, line: int, path: str) -> None:
        table = self._origin_paths.setdefault(short, {})
        prev = table.get(line)
        if prev is None:
            table[line] = path
        elif prev != path and not (isinstance(prev, tuple) and path in prev):
            table[line] = tuple(sorted({*(prev if isinstance(prev, tuple) else (prev,)), path}))

    @contextmanager
    def _logging_caps(self):
        prev = _values.CAP_LOG
        log: set[str] = set()
        _values.CAP_LOG = log
        try:
            yield
        finally:
            _values.CAP_LOG = prev
            for origin in log:
                short, _, ln = origin.rpartition(":")
                if not short:
                    continue
                owner = self._origin_paths.get(short, {}).get(int(ln)) if ln.isdigit() else None
                if owner is None:
                    # Not attributable: every file of that name counts as capped.
                    self._capped_paths.update(p for p in set(self.fn_path.values()) if os.path.basename(p) == short)
                else:
                    self._capped_paths.update(owner if isinstance(owner, tuple) else (owner,))

    def instance_call_work(self, v: Val) -> str | bool | None:
        """Calling `v`, an instance of a project class with a `__call__` of its own: that method's
        collective work, named through it, or False where it does none (both passes ask this of
        a callable a helper is given); None for anything else."""
        if not v.cls or v.ext or v.callable or v.fn:
            return None
        m = self.method(v.cls, "__call__")
        if not m or m not in self.functions:
            return None
        self._dep(m)
        work = self.collective.get(m)
        return f"`{short_name(m)}()` → {work}" if work else False

    def _param_class(self, fq: str, param: str) -> str | None:
        """The project class every call passes for `param` of `fq` (`param_classes`), if any."""
        return getattr(self, "param_classes", {}).get(fq, {}).get(param)

    def _param_classes(self, summaries: list[ModuleSummary]) -> dict[str, dict[str, str]]:
        """Module-level functions' and methods' parameters that hold an instance of one project
        class at every call in the project (`run(engine)` where each call passes `DdpEngine(...)`,
        or a parameter of its caller that is one; `trainer.fit(loader)` where every call of a
        method of that name is on a `Trainer` and passes a `StreamingShard`): function ->
        {parameter: class}. A parameter holds what its callers pass, so its methods are that
        class's (`engine.load()`, a name too generic to resolve by name alone) and iterating it
        runs that class's `__iter__`. Nothing for a function never called by name, used as a
        value (its callers are not seen), or jitted; nor where a call unpacks `*args`, leaves
        the parameter to its default, or passes anything else; nor when some function's call
        records were cut short. A method (`_method_sites`) counts only where each call of a
        method of its name is seen: on a receiver of a known project class or on `self`."""
        follow = self._follow_reexport
        # (asked twice, before and after the fixpoint: the call sites are read from the summaries
        # once, `solve` drops them after the second answer)
        got = self.__dict__.get("_param_sites")
        if got is None:
            got = self._param_sites = self._param_call_sites(summaries)
        if not got:
            return {}
        named, by_method, indirect, module_level, forwards = got
        sites = dict(named)  # (the methods' own sites join it below: the shared table stays as read)
        methods = self._method_sites(sites, by_method, indirect)
        sites.update(methods)
        memo: dict[tuple[str, str], str | None] = {}

        def forwarded(caller: str, q: str, key: str) -> str | None:
            # the caller's parameter handed on as it is at `key` by every call of `q` it makes
            f = self.functions.get(caller)
            if f is None:
                return None
            got = forwards.get((caller, q))
            if got is None:
                # (a call in a loop body is recorded once, its forwards once per pass over the
                # body: the same record twice; two calls forwarding alike are then counted as
                # one, and nothing is said)
                got = forwards[caller, q] = (
                    list({repr(fw): fw for fw in f.forwards if "n" in fw and follow(fw["n"]) == q}.values()),
                    sum(1 for c in f.calls if c.get("n") is not None and follow(c["n"]) == q))
            fws = [fw["fw"].get(key) for fw in got[0]]
            return fws[0] if fws and len(fws) == got[1] and len(set(fws)) == 1 else None

        def cls_of(q: str, p: str) -> str | None:
            key = (q, p)
            if key in memo:
                return memo[key]
            memo[key] = None  # (a cycle of calls: nothing)
            f = self.functions.get(q)
            calls = sites.get(q)
            if f is None or not calls or q in indirect or f.jit or p not in f.params:
                return None
            if q not in methods and (q not in module_level or f.cls):
                return None
            i = f.params.index(p)
            if q in methods and i == 0:
                return None  # (`self`)
            seen: set[str] = set()
            for caller, call in calls:
                npos = call.get("np", 0)
                if npos == -1:
                    return None
                # (a call through an instance, `obj.fit(x)` or `self.fit(x)`, binds `self` itself)
                j = i - 1 if q in methods and (call.get("bd") or "m" in call) else i
                k = str(j) if j < npos else p if p in call.get("kw", ()) else None
                if k is None:
                    return None
                c = None
                v = call.get("gv", {}).get(k)
                if v is not None:
                    c = self.resolve(v, self.fn_path.get(caller, "")).cls
                elif "n" in call and (fp := forwarded(caller, q, k)) is not None:
                    c = cls_of(caller, fp)
                if not c or c not in self.classes:
                    return None
                seen.add(c)
                if len(seen) > 1:
                    return None
            memo[key] = seen.pop() if seen else None
            return memo[key]

        out: dict[str, dict[str, str]] = {}
        for q in sorted(sites):
            f = self.functions.get(q)
            if f is None or (q not in methods and (q not in module_level or f.cls)):
                continue
            for p in f.params:
                c = cls_of(q, p)
                if c is not None:
                    out.setdefault(q, {})[p] = c
        return out

    def _param_call_sites(self, summaries: list[ModuleSummary]) -> tuple | None:
        """What `_param_classes` reads of the summaries, which the fixpoint does not change: the
        calls of each function by name, those of each method name on a receiver, the functions
        used as values (callers not seen), the module-level functions, and an empty table of
        each caller's forwards (filled as asked); None when some function's call records were
        cut short."""
        follow = self._follow_reexport
        sites: dict[str, list[tuple[str, dict]]] = {}
        indirect: set[str] = set()
        by_method: dict[str, list[tuple[str, dict, str]]] = {}
        for s in summaries:
            indirect.update(follow(q) for q in s.value_refs)
            for caller, f in s.functions.items():
                if len(f.calls) >= CALLS_CAP:
                    return None
                for call in f.calls:
                    n = call.get("n")
                    if n is not None:
                        sites.setdefault(follow(n), []).append((caller, call))
                    elif "m" in call:
                        by_method.setdefault(call["m"], []).append((caller, call, s.path))
                    for cb in call.get("cb", ()):
                        indirect.add(follow(cb))
        module_level = {q for s in summaries for q in s.functions if q.rpartition(".")[0] == s.module}
        forwards: dict[tuple[str, str], tuple[list[dict], int]] = {}  # (caller, callee) -> (its forwards, its calls)
        return sites, by_method, indirect, module_level, forwards

    def _method_sites(self, sites: dict, by_method: dict, indirect: set) -> dict[str, list[tuple[str, dict]]]:
        """The calls of each method whose every call is seen (`_param_classes`): method -> its
        calls, by name on `self` (`self.run(x)`, recorded with the method) and through receivers
        of a known project class (`Validator(w).run(reader)`, `trainer.fit(loader)`), each
        dispatching to that method by the class's MRO. Nothing for a method whose name some call
        reaches on a receiver of no known class (it may be this method), a method used as a
        value or of a name Python calls implicitly (`__iter__`, `__call__`: the callers are not
        seen), one without `self`, nor for one that a class above or below its own in a
        hierarchy also defines (`self.run(x)` in the base may run the override)."""
        out: dict[str, list[tuple[str, dict]]] = {}
        for name, qs in self.methods_by_name.items():
            if name.startswith("__"):
                continue
            calls = by_method.get(name, [])
            if calls and not any(call.get("gv") for _, call, _ in calls):
                continue  # (no call through a receiver passes an instance: no class to find)
            resolved: list[tuple[str, dict, str]] = []
            for caller, call, path in calls:
                r = call.get("r")
                c = self.resolve(r, path).cls if r else None
                if not c or c not in self.classes:
                    resolved = None
                    break
                resolved.append((caller, call, self.method(c, name) or ""))
            if resolved is None:
                continue
            for q in qs:
                f = self.functions.get(q)
                if f is None or q in indirect or not f.params or f.params[0] != "self" \
                        or any(o != q and (f.cls in self.mro(self.functions[o].cls) or self.functions[o].cls in self.mro(f.cls))
                               for o in qs if self.functions.get(o) is not None and self.functions[o].cls):
                    continue
                mine = [(caller, call) for caller, call in sites.get(q, ()) if call.get("bd")]
                if len(mine) != len(sites.get(q, ())):
                    continue  # (`Class.run(obj, x)`: its own positions; not followed)
                mine += [(caller, call) for caller, call, m in resolved if m == q]
                if mine:
                    out[q] = mine
        return out

    # ---------------------------------------------------------------- pickling
    _TRANSIENT = ("_memo", "_call_memo", "_coll_memo", "_static", "_attr_cache", "_global_cache", "_props_cache",
                  "_wuc_memo", "_several_memo", "_elsewhere_memo", "_named_calls_memo", "_params_in_memo")
    # Tables stored by buckets of keys and unpickled when first read (lazy_table.LazyTable): a
    # one-file run that loads the cached index reads a few hundred of its facts (the prefilter of
    # one file, a re-solve of a few functions); unpickling all of it was most of its time.
    _LAZY = ("functions", "returns", "_attr_cache", "_global_cache", "classes", "modules", "fn_path",
             "attrs_by_name", "methods_by_name", "_suffix_map", "device_access", "globals", "param_flow", "returned_params",
             "_origin_paths", "item_flow", "collective", "_mentions", "_quoting", "env_params")

    # What a copy of this index forked before `solve()` (built from the same summary objects)
    # already holds: the tables built from the summaries, and what it rebuilds by itself on its
    # first question (from the summaries alone, whatever was asked before). Memos keyed by the
    # identity of summary objects (a copy's are other objects) and those kept within a fixpoint
    # round are left behind too: a memo entry is reused only where computing it again would give
    # the same value (`_fresh`), so a copy without them answers the same (as the cached index does).
    _SUMMARY_TABLES = ("settings", "library_modules", "modules", "_suffix_map", "functions", "fn_path", "classes",
                       "globals", "methods_by_name", "attrs_by_name", "attr_stores", "gen_stores", "gen_owners", "restores",
                       "_cond_calls_by_name", "_writers", "_init_sites", "_cond_stores")
    _IDENTITY_MEMOS = ("_memo", "_call_memo", "_coll_memo", "_static", "_wuc_memo", "_several_memo",
                       "_elsewhere_memo", "_named_calls_memo", "_params_in_memo", "_checks", "_dep_stack", "_resolving",
                       "_in_written_under_condition", "_restore_checks", "_cut_depth")

    def solved_state(self) -> dict:
        """Everything `solve()` (and the questions asked since) added to this index, less what a
        copy forked before it keeps or rebuilds alike: a few MB that `adopt_solved` installs in
        that copy (a worker of the precise pass, which parsed its files while this process
        solved). Every other attribute goes, so that a fact table added later is not forgotten."""
        skip = {*self._SUMMARY_TABLES, *self._IDENTITY_MEMOS}
        return {k: v for k, v in self.__dict__.items() if k not in skip}

    def adopt_solved(self, state: dict) -> None:
        """Make this unsolved copy answer as the solved index `state` came from (`solved_state`)."""
        if "_unsolved" not in self.__dict__:
            raise ValueError("adopt_solved: this index is solved already")
        del self.__dict__["_unsolved"]
        for k in self._IDENTITY_MEMOS:
            v = self.__dict__.get(k)
            if isinstance(v, (dict, list, set)):
                v.clear()
        self.__dict__.update(state)

    def __getstate__(self) -> dict:
        """A compact copy for the tooling (which caches it): the per-file analysis needs the
        resolved facts, not the summaries' symbolic values. Class attributes and module globals
        are resolved now (cached by name); memo tables keyed by object identity are dropped;
        summaries keep only what the analysis reads; equal values are stored once; each table in
        `_LAZY` is stored by buckets of keys, unpickled when first read."""
        self._load_parts()
        with self._logging_caps():
            for q, f in self.functions.items():
                for p in {*f.gated, *(p for fwd in f.forwards for p in fwd["fw"].values())}:
                    self.param_gate(q, p)
                    self.param_gate(q, p, forwarded_only=True)
            for c, cf in self.classes.items():
                for a in cf.attrs:
                    self.attr(c, a)
            # (what `FileAnalysis._iterated_instance` asks of an iterable class's attributes: the
            # construction sites it reads are not shipped)
            for c in self.classes:
                if any(self.method(c, m) for m in semantics.ITERATION_METHODS):
                    for b in self.mro(c):
                        for a, sym in self.classes[b].attrs.items():
                            if _sym_ips(sym):
                                self.attr_count_at_some(c, a)
                                self.attr_count_at_some(c, a, start=True)
            for g in self.globals:
                self.ref(g)
        state = dict(self.__dict__)
        for k in self._TRANSIENT:
            if k not in ("_attr_cache", "_global_cache"):
                state[k] = {}
        state["_dep_stack"] = []
        state["_round_changes"], state["_since"], state["_changed_now"] = [], {}, set()
        state["_reexport_cache"] = {}  # cheap to rebuild, large to ship
        state["_star_cache"] = {}
        state["_init_sites"] = {}  # read only to resolve class attributes (resolved above)
        state["_mro_cache"] = {}
        state.pop("_subclass_cache", None)
        state.pop("_calls_by_callee_cache", None)
        state["_importers"] = None  # (rebuilt on the first question)
        state["_importers_of"] = None
        state["_mode_memo"] = {}
        state.pop("_gated_initialize", None)
        state["_cond_stores"] = {}
        state["_cond_calls_by_name"], state["_writers"] = None, {}  # (rebuilt on the first question)
        state["_in_written_under_condition"] = False
        state["_restore_checks"], state["_cut_depth"] = set(), 0
        state["_checks"] = []
        if "_mentions" not in state:
            from mcjax_lint.analysis.relocate import mentions_by_module

            state["_mentions"] = mentions_by_module(self.modules)
        state["functions"] = {q: FunctionFacts(f.name, f.line, list(f.params), f.cls, jit=f.jit, flags=f.flags, prop=f.prop,
                                           statics=list(f.statics), host_defaults=list(f.host_defaults),
                                           param_writes=dict(f.param_writes),  # (`FileAnalysis._method_stores`)
                                           arg_writes=dict(f.arg_writes), sized_by=list(f.sized_by),
                                           path_writes=list(f.path_writes),  # (`FileAnalysis._part_written`)
                                           defaults=dict(f.defaults) if q in self.work_gates else {},
                                           glob_ops=_param_glob_ops(f),  # (`glob_param_work`)
                                           writes=list(f.writes) if f.cls else [])  # (`method_writes`)
                              for q, f in self.functions.items()}
        # (`method_writes`: the methods each method calls on its own object; the calls go)
        state["_self_call_names"] = {q: names for q, f in self.functions.items() if f.cls and (names := _bound_call_names(f))}
        # (`made_instance`, `instance_attrs`: the returns and the class attributes go)
        # (shipped already, its own table, with what facts in place since say: `relocate`)
        state["_returned_calls"] = {**state.get("_returned_calls", {}), **{
            q: r for q, f in self.functions.items() if (r := _returned_call(f)) is not None}}
        # (`_structure_by_arguments`: what of the returns it reads, with the defaulted parameters)
        state["_structure_returns"] = {**state.get("_structure_returns", {}), **{
            q: r for q, f in self.functions.items() if (r := _structure_returns(f)) is not None}}
        state["_param_attrs"] = {**state.get("_param_attrs", {}), **{
            c: a for c, cf in self.classes.items() if (a := _param_attrs(cf))}}
        state["classes"] = {q: ClassFacts(c.name, c.line, list(c.bases), dict.fromkeys(c.attrs, {}), list(c.methods),
                                          dict(c.cond_attrs), list(c.sure_attrs),
                                          dict(c.absent_conds),  # (`absent_unless`)
                                          list(c.counts))  # (`count_member`)
                            for q, c in self.classes.items()}
        state["globals"] = dict.fromkeys(self.globals, {})
        state["modules"] = {m: ModuleSummary(s.path, s.module, dict(s.imports), imported_modules=list(s.imported_modules),
                                             lazy_imports=list(s.lazy_imports),
                                             initialize_line=s.initialize_line,
                                             initialize_script_only=s.initialize_script_only, import_device_access=s.import_device_access,
                                             initialize_gates=list(s.initialize_gates), mode_sets=list(s.mode_sets),
                                             pins_cpu=s.pins_cpu, process_free_test=s.process_free_test,
                                             device_scope=s.device_scope,
                                             test_plugins=list(s.test_plugins),
                                             seeded_rngs=list(s.seeded_rngs))
                            for m, s in self.modules.items()}
        # Most resolved values are one of a few (nothing, an unknown library value): one copy each.
        same: dict[Val, Val] = {}
        for k in ("returns", "_attr_cache", "_global_cache"):
            state[k] = {q: same.setdefault(v, v) for q, v in state[k].items()}
        from mcjax_lint.analysis.lazy_table import pack
        from mcjax_lint.analysis.relocate import quoting_table

        state["_quoting"] = quoting_table(self)
        state["_parts"] = {k: pack(state.pop(k)) for k in self._LAZY}
        return state

    def __setstate__(self, state: dict) -> None:
        from mcjax_lint.analysis.lazy_table import LazyTable

        for k, buckets in state.pop("_parts", {}).items():
            state[k] = LazyTable(buckets)
        state.setdefault("_props_cache", {})
        state.setdefault("_wuc_memo", {})
        state.setdefault("_several_memo", {})
        state.setdefault("_elsewhere_memo", {})
        state.setdefault("_named_calls_memo", {})
        state.setdefault("_params_in_memo", {})
        state.setdefault("_checks", [])
        state.setdefault("_restore_checks", set())
        state.setdefault("_self_call_names", {})
        state.setdefault("_cut_depth", 0)
        self.__dict__.update(state)

    def _load_parts(self) -> None:
        for k in self._LAZY:
            v = self.__dict__.get(k)
            if v is not None and not isinstance(v, dict):
                self.__dict__[k] = dict(v.items())

    # ---------------------------------------------------------------- declarations
    def _declared(self, q: str) -> tuple[Val | None, str | None] | None:
        st = self.settings
        if st.benign_functions and K.matches(q, st.benign_functions):
            return (None, None)
        if st.sanitizers and K.matches(q, st.sanitizers):
            return (BOTTOM, self._declared_collective(q))
        if st.process_dependent_sources and K.matches(q, st.process_dependent_sources):
            return (Val(pd=frozenset({Src(0, 0, f"`{short_name(q)}()` (declared process-dependent)", kinds.DECLARED)})), self._declared_collective(q))
        c = self._declared_collective(q)
        if c:
            return (Val(glob=True), c)
        return None

    def _declared_collective(self, q: str) -> str | None:
        cf = self.settings.collective_functions
        if cf and K.matches(q, cf):
            return f"`{short_name(q)}()` ({K.declared_collective_note(q, self.settings.observed_functions)})"
        return None

    # ---------------------------------------------------------------- lookups
    def mro(self, cls: str) -> list[str]:
        hit = self._mro_cache.get(cls)
        if hit is not None:
            return hit
        out, todo = [], [cls]
        while todo and len(out) < 20:
            c = todo.pop(0)
            if c in out or c not in self.classes:
                continue
            out.append(c)
            todo.extend(self.resolve_class_name(b) for b in self.classes[c].bases)
        self._mro_cache[cls] = out
        return out

    def resolve_class_name(self, q: str) -> str:
        """A base-class name imported through a package re-export resolves to its definition."""
        if q in self.classes:
            return q
        g = self.globals.get(q)
        if g and g.get("refs"):
            r = g["refs"][0]
            if r in self.classes:
                return r
        return self._follow_reexport(q)

    def _follow_reexport(self, q: str) -> str:
        hit = self._reexport_cache.get(q)
        if hit is None:
            self._reexport_cache[q] = q  # cycles (re-exports of re-exports) resolve to themselves
            hit = self._reexport_cache[q] = self._follow_reexport_uncached(q)
        return hit

    def star_resolve(self, module: str, name: str, depth: int = 0) -> str:
        """A global that no import or definition of `module` names, looked up in the modules it
        star-imports (`from common import *`): what they import under that name (`jax`), or
        define (`common.me`); else the name itself (a builtin, or unknown)."""
        s = self.modules.get(module)
        if s is None or depth > 3:
            return name
        key = (module, name)
        hit = self._star_cache.get(key)
        if hit is not None:
            return hit
        out = name
        # The last star import that provides the name wins, as in Python.
        for base in reversed([b for k, b in s.imports.items() if k.startswith(STAR)]):
            # A script's `from common import *` names its sibling first (its directory is on the path).
            sibling = f"{module.rpartition('.')[0]}.{base}" if "." in module else base
            t = self.modules.get(sibling) or self.modules.get(base) or self.modules.get(self._by_path_suffix(base) or "")
            if t is None:
                continue
            exported = star_exports(t.imports)
            if (name not in exported) if exported is not None else name.startswith("_"):
                continue  # not taken by `import *`: `__all__` leaves it out, or it is private
            if name in t.imports:
                out = t.imports[name]
                break
            cand = self._follow_reexport(f"{t.module}.{name}")
            if self._known(cand):
                out = cand
                break
            deeper = self.star_resolve(t.module, name, depth + 1)
            if deeper != name:
                out = deeper
                break
        self._star_cache[key] = out
        return out

    def _known(self, q: str) -> bool:
        return q in self.functions or q in self.classes or q in self.globals

    def _follow_reexport_uncached(self, q: str) -> str:
        # `from pkg.utils import is_main` in pkg/__init__.py: pkg.is_main -> pkg.utils.is_main
        for _ in range(4):
            if self._known(q):
                return q
            mod, _, name = q.rpartition(".")
            s = self.modules.get(mod)
            if s is None:
                break
            if name not in s.imports:
                # `from common import *` in `mod`: the star-imported module that provides it.
                star = self.star_resolve(mod, name)
                star = star if star != name and self._known(self._follow_reexport(star)) else None
                if star is None:
                    break
                q = star
                continue
            q = s.imports[name]
        if not self._known(q):
            hit = self._by_path_suffix(q)
            if hit is not None:
                return hit
        return q

    def _by_path_suffix(self, q: str) -> str | None:
        """Namespace packages (PEP 420: `orbax/` has no __init__.py) make a file's module name
        (`checkpoint.utils`, or even `multihost`) shorter than what other files import
        (`orbax.checkpoint.utils`). Match the longest leading part of the import against the
        trailing directories of the linted files' paths."""
        parts = q.split(".")
        for k in range(len(parts), 0, -1):
            m = self._suffix_map.get(".".join(parts[:k]))
            # `q` already names something under `m` (a file named like its top directory,
            # `byol/configs/byol.py`): mapping again would only lengthen the name, forever.
            if m and not q.startswith(m + "."):
                cand = ".".join([m] + parts[k:])
                if self._known(cand) or cand in self.modules:
                    return cand
                hit = self._follow_reexport(cand) if cand != q else cand
                if self._known(hit):
                    return hit
        return None

    def method(self, cls: str, name: str) -> str | None:
        for c in self.mro(cls):
            q = f"{c}.{name}"
            if q in self.functions:
                return q
        return None

    def count_member(self, cls: str, attr: str, called: bool) -> bool:
        """Whether `obj.attr` (`obj.attr()` where `called`) of an object of class `cls` holds the
        number of processes (`summary.member_is_count` along its MRO)."""
        return summary_member_is_count([self.classes[c] for c in self.mro(cls)], attr, called)

    def attr(self, cls: str, name: str) -> Val | None:
        for c in self.mro(cls):
            cf = self.classes[c]
            if name in cf.attrs:
                key = f"{c}.{name}"
                v = self._resolve_cached(key, cf.attrs[name], self._attr_cache)
                # Assigned elsewhere under a process-dependent condition, or through another
                # reference to the object (semantics.IMPLICIT_KEYS): a guess, joined.
                # (once per round and context: it asks `_written_under_condition`, whose answer
                # depends on whether that is being answered already)
                extra = self._round_memo(self._elsewhere_memo, (key, self._in_written_under_condition), None,
                                         lambda: self._resolve_cached_all(key + "!elsewhere",
                                                                          lambda: self._stores_elsewhere(c, cf, name),
                                                                          self._attr_cache))
                if extra.pd or extra.pdc:
                    v = v.join(evidence.mark(extra, evidence.IMPLICIT_ATTRIBUTE, f"`.{name}`"))
                if (v.pd or v.pdc) and name in self.restores and self._restored_agreed(name):
                    v = evidence.mark(v, evidence.RESTORED_ATTRIBUTE, f"`.{name}`")
                if v.rng:
                    # A generator some draw advances by a process-dependent amount (its size, or a
                    # draw under a per-process condition or loop): its later draws differ.
                    drawn = self._resolve_cached_all(key + "!drawn", lambda: self._draws_from(c, name), self._attr_cache)
                    if drawn.pd:  # (not content: a loop over this process's rows may run as often everywhere)
                        v = v.join(evidence.mark(Val(pd=drawn.pd), evidence.ADVANCED_GENERATOR, f"`.{name}`"))
                return v
        return None

    def _restored_agreed(self, name: str) -> bool:
        """Whether attribute `name` is somewhere stored again from a value a call computes from its
        own (`summary.restores`) that agrees across processes although the attribute does not
        (`cfg.out = broadcast(cfg.out)`): the program makes it agree there. Its own reads inside
        that value see it without this check (asked again within, the answer is no)."""
        if name in self._restore_checks:
            self._dep(_GUARDED)  # (a read within it: unmarked here, so not reused outside)
            return False
        self._restore_checks.add(name)
        self._cut_depth += 1
        try:
            return self._uncut(lambda: any(not ((r := self.resolve(sym, path)).pd or r.pdc)
                                           for sym, path in self.restores[name]))
        finally:
            self._restore_checks.discard(name)
            self._cut_depth -= 1

    def method_writes(self, q: str) -> frozenset[str] | None:
        """The attributes of its object method `q` assigns or changes in place
        (`FunctionFacts.writes`), with those of the methods it calls on its own object, and so on
        (16 methods at most); None for no project method or past that bound."""
        f = self.functions.get(q)
        if f is None or not f.cls:
            return None
        shipped = self.__dict__.get("_self_call_names")
        out: set[str] = set()
        seen, todo = {q}, [q]
        while todo:
            m = todo.pop()
            g = self.functions.get(m)
            if g is None:
                continue
            out.update(g.writes)
            names = shipped[m] if shipped is not None and m in shipped else _bound_call_names(g)
            for n in names:
                cls, _, meth = n.rpartition(".")
                t = (self.method(cls, meth) if cls in self.classes else None) or n
                if t not in seen:
                    seen.add(t)
                    todo.append(t)
                    if len(seen) > 16:
                        return None
        return frozenset(out)

    def absent_unless(self, cls: str, name: str) -> Val | None:
        """The process-dependent conditions without which an object of class `cls` has no
        attribute `name` (reading it raises AttributeError): every binding of it in the class
        and its bases is under such a condition (`if jax.process_index() == 0: self.client =
        Client()`), none in a class body nor in a method's straight line (`ClassFacts.
        sure_attrs`), none through another reference (`obj.client = ...`), no `__getattr__`,
        and every base a project class. None where the attribute may be there everywhere.
        (A shipped index keeps each class's `absent_conds` and `sure_attrs` for it.)"""
        if not any(name in self.classes[c].absent_conds for c in self.mro(cls)):
            return None
        return self._absent_unless_now(cls, name)

    def _absent_unless_now(self, cls: str, name: str, private_ok: bool = False) -> Val | None:
        if name in self.attr_stores or name.startswith("__"):
            return None
        out, bound = BOTTOM, False
        for c in self.mro(cls):
            cf = self.classes.get(c)
            if cf is None or name in cf.sure_attrs or name in cf.methods \
                    or {"__getattr__", "__getattribute__", "__setattr__"} & set(cf.methods):
                return None
            if not (private_ok and name.startswith("_")) and any(
                    self.resolve_class_name(b) not in self.classes for b in cf.bases if b != "object"):
                return None  # (a library base may define it, or `__getattr__`)
            if name in cf.attrs:
                bound = True
                cond = cf.absent_conds.get(name)
                if not cond:
                    return None
                v = self.resolve(cond, self.fn_path.get(c, ""))
                if not v.pd:
                    return None
                out = out.join(Val(pd=v.pd))
        return out if bound and out.pd else None

    def _draws_from(self, c: str, name: str) -> list[tuple[Sym, str]]:
        """What the draws from the generator in attribute `name` of class `c` carry
        (`ModuleSummary.gen_stores`): those through `self` in `c` or a class related to it, and
        those through another object whose class was not known."""
        out = list(self.gen_stores.get(name, ()))
        related = set(self.mro(c))
        for owner in self.gen_owners.get(name, ()):
            if owner in related or c in set(self.mro(owner)):
                out.extend(self.gen_stores.get(f"{owner}.{name}", ()))
        return out

    def _stores_elsewhere(self, c: str, cf: ClassFacts, name: str) -> list[tuple[Sym, str]]:
        """The stores of attribute `name` of class `c` under a condition or through another
        reference (what `attr` joins as a guess), each with its file."""
        key = f"{c}.{name}"
        cond = self._cond_stores.get(key)
        if cond is None:  # (one dict per attribute: `resolve` memoizes by identity)
            cond = self._cond_stores[key] = _named_calls_only(cf.cond_attrs.get(name) or {})
        return [(cond, self.fn_path.get(c, "")), *self.attr_stores.get(name, []), *self._written_under_condition(c, name)]

    def _written_under_condition(self, c: str, name: str) -> list[tuple[Sym, str]]:
        """The conditions of calls, made under conditions that may differ between processes
        (`FunctionFacts.cond_calls`), of a method of class `c` (or one related to it) that writes
        attribute `name` of its object (`FunctionFacts.writes`, or of a method it calls on
        `self`): bookkeeping done on some processes only (`if is_main:
        self.manager.prune()`), each with the caller's file. Not asked again while it is being
        answered: telling two instances apart resolves other attributes, whose own answer would
        ask this again (exponential on a real corpus); there, conditional writes claim nothing."""
        if getattr(self, "_in_written_under_condition", False):
            self._dep(_GUARDED)  # (an answer cut short: what is computed from it is not reused outside)
            return []
        self._in_written_under_condition = True
        self._cut_depth += 1
        try:
            return self._round_memo(self._wuc_memo, (c, name), None, lambda: self._written_under_condition_whole(c, name))
        finally:
            self._in_written_under_condition = False
            self._cut_depth -= 1

    def _written_under_condition_whole(self, c: str, name: str) -> list[tuple[Sym, str]]:
        # Its answer (which calls, which conditions) reads only the classes of what it resolves,
        # which no cut-short answer changes: the cuts within it do not make it contextual.
        return self._uncut(lambda: self._written_under_condition_once(c, name))

    def _uncut(self, compute: Callable[[], Any]) -> Any:
        # (`compute()`, whose answer no cut within it changes: what it read, less `_GUARDED`)
        self._dep_stack.append(set())
        try:
            return compute()
        finally:
            deps = self._pop_deps()
            if _GUARDED in deps:
                deps = deps - {_GUARDED}  # (a new set: this one may be shared)
            if self._dep_stack and deps:
                self._merge_deps(deps)

    def _round_memo(self, table: dict, key: Any, ident: object, compute: Callable[[], Any]) -> Any:
        """`compute()` for `key`, answered once per fixpoint round and context: asked again in the
        same round, the answer is reused and what it read (its dependencies) is added to the
        asker's. Exact (what recomputing it would give, with the same dependencies): within a
        round every `resolve`/`call` memo entry a computation consulted or made is stamped with
        that round and reused as is (`_fresh`), and what else it reads is fixed for the index's
        life, except whether each key it resolves through `_cached` is already being resolved by
        an asker (a cycle, cut short): the answer is kept with those outcomes (`_cached` notes
        each key's first check in the innermost computation here, `_checks`) and reused only
        where every one of them is the same. After the fixpoint (`_cached` keeps answers then)
        it is computed each time. `ident`: the object the key is the identity of (kept alive by
        the entry), None for a key by value."""
        if self._stable:
            return compute()
        depth = len(self._dep_stack)
        hit = table.get(key)
        if hit is not None and hit[0] is ident and hit[3] == self._round \
                and (_GUARDED not in hit[2] or self._cut_depth) \
                and (not hit[4] or all((k in self._resolving) == cut for k, cut in hit[4].items())):
            if depth and hit[2]:
                self._merge_deps(hit[2])
            seen = hit[4]
        else:
            self._dep_stack.append(set())
            self._checks.append((depth + 1, {}))
            try:
                v = compute()
            finally:
                deps = self._pop_deps()
                seen = self._checks.pop()[1]
            if depth and deps:
                self._merge_deps(deps)
            hit = table[key] = (ident, v, deps, self._round, seen)
        if seen and self._checks and self._checks[-1][0] == depth:
            # (asked directly by another such computation: its answer is as contextual)
            outer = self._checks[-1][1]
            for k, cut in seen.items():
                outer.setdefault(k, cut)
        return hit[1]

    def _written_under_condition_once(self, c: str, name: str) -> list[tuple[Sym, str]]:
        if self._cond_calls_by_name is None:
            by_name: dict[str, list] = {}
            writers: dict[str, set[str]] = {}  # attribute -> names of methods that write it
            for q, f in self.functions.items():
                for e in f.cond_calls:
                    short = (e.get("n") or e.get("m") or "").rpartition(".")[2]
                    by_name.setdefault(short, []).append((e, self.fn_path.get(q, "")))
                for g in (f, *self._self_callees(f)):
                    for w in g.writes:
                        writers.setdefault(w, set()).add(q.rpartition(".")[2])
            self._cond_calls_by_name, self._writers = by_name, writers
        out = []
        related = set(self.mro(c))
        for short in self._writers.get(name, ()):
            for e, path, targets in self._round_memo(self._named_calls_memo, short, None,
                                                     lambda: self._calls_named(short)):
                for target in targets:
                    f = self.functions.get(target)
                    if f is None or f.cls is None or not (f.cls in related or c in set(self.mro(f.cls))):
                        continue
                    self._dep(target)
                    if name in f.writes or any(name in g.writes for g in self._self_callees(f)):
                        out.append((e["c"], path))
                        break
        return out

    def _calls_named(self, short: str) -> list[tuple[dict, str, list[str]]]:
        """The conditional calls of callee name `short` (`_written_under_condition_once`) that are
        not on one of several instances, each with its file and the functions it may call: the
        same for every attribute a method of that name writes, so asked once per round."""
        out = []
        for e, path in self._cond_calls_by_name.get(short, ()):
            if not self._one_of_several_instances(e, path) and not self._held_where_gated(e, path):
                out.append((e, path, self._call_targets(e, path)))
        return out

    def _held_where_gated(self, e: dict, path: str) -> bool:
        """A call on an object held in an attribute that is bound only under a process-dependent
        condition, made under a condition on that same value (`if self.in_primary: self.
        persistent.save()`, where `self.persistent` exists only `if self.in_primary`): every
        process holding the object makes the call, so what it writes into the object agrees among
        the processes that can read it (`semantics.group_chosen_by`: the condition reads nothing
        but the value the binding was gated on). A library base of the owner is taken not to bind
        a private name (`_x`) of the project's own."""
        refs = (e.get("r") or {}).get("refs", ())
        if "m" not in e or len(refs) != 1 or not e.get("c"):
            return False
        owner, _, attr = refs[0].rpartition(".")
        if owner not in self.classes or not any(attr in self.classes[c].absent_conds for c in self.mro(owner)):
            return False
        held = self._absent_unless_now(owner, attr, private_ok=True)
        if held is None:
            return False
        cond = self.resolve(e["c"], path)
        return semantics.group_chosen_by(held.pd | held.pdc, cond.pd | cond.pdc)

    def _one_of_several_instances(self, e: dict, path: str) -> bool:
        """A call on an object held in an attribute (`self.eval_tracker.record()`) whose owner
        holds another instance of that class in another attribute (`self.train_tracker`): which
        of them a later read reaches is not followed, so the write claims nothing."""
        return self._round_memo(self._several_memo, id(e), e, lambda: self._one_of_several_instances_now(e, path))

    def _one_of_several_instances_now(self, e: dict, path: str) -> bool:
        refs = (e.get("r") or {}).get("refs", ())
        if "m" not in e or len(refs) != 1:
            return False
        owner, _, attr = refs[0].rpartition(".")
        cf = self.classes.get(owner)
        if cf is None or attr not in cf.attrs:
            return False
        cls = self.resolve(e["r"], path).cls
        return bool(cls) and any(other != attr and (v := self.attr(owner, other)) is not None and v.cls == cls
                                 for other in cf.attrs)

    def _call_targets(self, e: dict, path: str) -> list[str]:
        """The project functions a call record (`{"n": q}` or `{"m": meth, "r": receiver}`) may
        call: a method of a receiver of unknown class by its name, as `call_method` does."""
        if "n" in e:
            q = self._follow_reexport(e["n"])
            mod, _, meth = q.rpartition(".")
            q = self.method(mod, meth) if q not in self.functions and mod in self.classes else q
            return [q] if q else []
        recv = self.resolve(e.get("r", {}), path)
        if recv.cls:
            q = self.method(recv.cls, e["m"])
            return [q] if q else []
        cands = self.methods_by_name.get(e["m"]) if e["m"] not in K.GENERIC_METHOD_NAMES and not recv.ext else None
        return list(cands) if cands and len(cands) <= 6 else []

    def _self_callees(self, f: FunctionFacts) -> list[FunctionFacts]:
        """The methods `f` calls on its own object (`self.helper()`), one level."""
        return [g for call in f.calls if call.get("bd") and "n" in call and (g := self.functions.get(call["n"])) is not None]

    def _resolve_cached_all(self, key: str, syms_of: Callable[[], list[tuple[Sym, str]]], cache: dict[str, Val]) -> Val:
        """The process dependence (`pd`, `pdc`) the symbolic values `syms_of()` (each with its
        file) carry together, cached under `key` as `_resolve_cached` does."""
        def pd_of_all() -> Val:
            out = BOTTOM
            for sym, path in syms_of():
                if sym:
                    r = self.resolve(sym, path)
                    if r.pd or r.pdc:
                        out = out.join(Val(pd=r.pd, pdc=r.pdc))
            return out

        return self._cached(key, cache, pd_of_all)

    def _resolve_cached(self, key: str, sym: Sym, cache: dict[str, Val]) -> Val:
        # A global's own path; a class attribute's is its class's.
        return self._cached(key, cache, lambda: self.resolve(
            sym, self.fn_path.get(key) or self.fn_path.get(key.rsplit(".", 1)[0], ""), key))

    def _cached(self, key: str, cache: dict[str, Val], compute: Callable[[], Val]) -> Val:
        """`compute()`, cached under `key` once the index is stable; BOTTOM for a key met again
        while it is being computed (a cycle)."""
        if key in cache:
            return cache[key]
        cut = key in self._resolving
        if self._checks and self._checks[-1][0] == len(self._dep_stack):
            self._checks[-1][1].setdefault(key, cut)  # (what `_round_memo` reuses an answer under)
        if cut:
            self._dep(_CYCLE)  # a value cut short here is not reused in a later round
            return BOTTOM
        # Values computed through this key are not reused across rounds while it is being
        # resolved (recomputing them then would cut the cycle here).
        self._dep("@" + key)
        self._resolving[key] = "@" + key
        try:
            v = compute()
        finally:
            self._resolving.pop(key, None)
        if self._stable and not self._cut_depth:
            cache[key] = v  # (one computed inside `_written_under_condition` may be cut short there)
        return v

    # ---------------------------------------------------------------- resolution
    def resolve(self, sym: Sym, path: str, owner: str = "", mark_params: list | None = None) -> Val:
        """Concrete value of a symbolic summary value (`path` locates its direct sources)."""
        if not sym:
            return BOTTOM
        if mark_params is None:
            key = id(sym)
            memo, stack = self._memo, self._dep_stack
            hit = memo.get(key)
            if hit is not None and hit[0] is sym and (hit[3] == self._round or self._fresh(hit, memo, key)) \
                    and (_GUARDED not in hit[2] or self._cut_depth):
                if stack and hit[2]:
                    self._merge_deps(hit[2])
                return hit[1]
            stack.append(set())
            try:
                v = self._resolve(sym, path)
            finally:
                deps = self._pop_deps()
            if stack and deps:
                self._merge_deps(deps)
            memo[key] = (sym, v, deps, self._round)
            return v
        return self._resolve(sym, path, mark_params)

    def _direct(self, sym: Sym, path: str) -> Val:
        """The part of a symbolic value known without other files (cached for good)."""
        hit = self._static.get(id(sym))
        if hit is not None and hit[0] is sym:
            return hit[1]
        if sym.keys().isdisjoint(_DIRECT_KEYS):  # (most: only calls, references, parameters)
            self._static[id(sym)] = (sym, BOTTOM)
            return BOTTOM
        short = os.path.basename(path)
        for key in ("pd", "pdc", "order", "hash", "tr"):
            for ln in sym.get(key, ()):
                self._note_origin(short, ln[1], path)

        def srcs(key: str, kind: str = "") -> frozenset[Src]:
            # (A set's order is a guess when its elements' type was unknown: `set_order_guess`.)
            return frozenset(evidence.set_order_guess(Src(ln[1], 0, ln[0], ln[2] if len(ln) > 2 else kind,
                                                          origin=f"{short}:{ln[1]}"))
                             for ln in sym.get(key, ()))

        v = Val(
            pd=srcs("pd"),
            pdc=srcs("pdc"),
            tree=srcs("tr"),
            order=srcs("order", kinds.LISTING_ORDER),
            hash=srcs("hash", kinds.STRING_HASH),
            unordered=sym["u"] if sym.get("u") == semantics.GUESS else bool(sym.get("u")),
            callable=sym.get("callable"),
            statics=tuple(tuple(x) for x in sym.get("statics", ())) if sym.get("callable") else (),
            factory=(sym["jitf"][0], tuple(sym["jitf"][1]), tuple(sym["jitf"][2])) if sym.get("jitf") else (),
            ckpt=sym["ckpt"] if sym.get("ckpt") == semantics.SYNC else bool(sym.get("ckpt")),
            sharding=bool(sym.get("sharding")),
            replicated=bool(sym.get("rep")) and bool(sym.get("sharding")),
            glob=bool(sym.get("glob")),
            cls=sym.get("cls"),
            sanitized=bool(sym.get("san")),
            subgroup=bool(sym.get("sub")),
            hostable=(sym.get("hl") or False) if sym.get("callable") else False,
            rng=bool(sym.get("rng")),
            device=bool(sym.get("dev")),
        )
        self._static[id(sym)] = (sym, v)
        return v

    def _dep(self, name: str) -> None:
        stack = self._dep_stack
        if stack:
            top = stack[-1]
            if top.__class__ is tuple:  # (shared: `_merge_deps`)
                if name in top[0]:
                    return
                top = stack[-1] = set(top[0])
            top.add(name)

    def _merge_deps(self, deps: set[str]) -> None:
        """Add what a computation read to its asker's frame (the top of `_dep_stack`). A frame that
        has read nothing yet holds the set itself, shared, as `(deps,)`, and copies it at its first
        write: most frames read through one computation, and copying its set up every level of
        the stack was most of the fixpoint's bookkeeping. A set popped off the stack or kept in a
        memo entry is never written again (`_pop_deps`)."""
        stack = self._dep_stack
        top = stack[-1]
        if top.__class__ is tuple:
            if top[0] is deps:
                return
            top = stack[-1] = set(top[0])
        elif not top:
            stack[-1] = (deps,)
            return
        top.update(deps)

    def _pop_deps(self) -> set[str]:
        """The top frame's dependencies, popped (a shared set as it is: read-only from here)."""
        deps = self._dep_stack.pop()
        return deps[0] if deps.__class__ is tuple else deps

    def _resolve(self, sym: Sym, path: str, mark_params: list | None = None) -> Val:
        v = self._direct(sym, path)
        if sym.get("params") and mark_params is not None:
            mark_params.append(any(not p.endswith("!o") for p in sym["params"]))
        extra = BOTTOM
        for r in sym.get("refs", ()):
            extra = extra.join(self.ref(r))
        for call in sym.get("via", ()):
            res, _ = self.call(call, path)
            extra = extra.join(res)
            if mark_params is not None and "m" in call and not res.sanitized:
                # `return labels.sum()`: a method of a value whose type is unknown here computes
                # from its receiver and arguments (`call_method`), so the parameters they hold
                # flow into the result as a parameter returned directly does.
                for part in (call.get("r"), call.get("a")):
                    if part and part.get("params"):
                        mark_params.append(any(not p.endswith("!o") for p in part["params"]))
                    elif part and _reads_file_at_params(part):
                        mark_params.append(None)  # (`open(path).read()`: as below)
                    elif part and part.get("via"):
                        # (`h.hexdigest()` of `h = sha256(); h.update(t.tobytes())`: the
                        # parameters reach the receiver through calls that carry them)
                        self._nested_marks(part, path, mark_params, False, _NESTED_MARK_DEPTH)
            elif mark_params is not None and call.get("n") in (evidence.EQUAL_PIECES_CALL, evidence.SPLIT_POINTS_CALL):
                # `return xs[offset::n]` / `range(offset, stop, n)`: a piece of equal ones taken
                # from a parameter's start holds as many elements as that start leaves
                # (`_returned_params` passes the argument on as such a piece, a guess).
                a = (call.get("a") or {}).get("params")
                if a:
                    mark_params.append(any(not p.endswith("!o") for p in a))
            elif mark_params is not None and call.get("n") == TYPE_OF_CALL:
                # `return isinstance(x, jax.Array)`: the parameters' structure decides the result
                # (a flow of their structure alone where it is the only one: `_solve_one`)
                if (call.get("a") or {}).get("params"):
                    mark_params.append("t")
            elif mark_params is not None and call.get("n") == ELEMENT_CALL:
                # `yield offset + i` in a loop of a parameter's count: the parameters an element
                # reads flow into the result as its content (`_params_in`: not its count).
                a = (call.get("a") or {}).get("params")
                if a:
                    mark_params.append(any(not p.endswith("!o") for p in a))
            elif mark_params is not None and call.get("n") == SAME_LENGTH_CALL:
                # `return xs[:n]` / `xs[i * n:(i + 1) * n]`: n long, so a parameter n reads
                # decides the result's length; the parameters xs reads flow into it as content
                # (`_returned_params` passes on only those).
                b = (call.get("b") or {}).get("params", []) + (call.get("a") or {}).get("params", [])
                if b:
                    mark_params.append(any(not p.endswith("!o") for p in b))
            elif mark_params is not None and _reads_file_at_params({"via": [call]}):
                # `return open(path)`: a file read at a parameter's path holds what that path
                # carries, as a guess (`evidence.file_content`): None, a flow without order
                # that `_solve_one` marks as read from a file where it is the only one.
                mark_params.append(None)
            elif mark_params is not None and call.get("n") in K.ORDER_INSENSITIVE and call.get("n") != "len" \
                    and not res.sanitized and _method_reads_params(call.get("a")):
                # `return bool(grads.all())`: the order-free wrapper (summary._strip_order) of a
                # method of a parameter carries the parameter's data, not its order.
                mark_params.append(False)
            elif mark_params is not None and "m" not in call and not res.sanitized and call.get("a"):
                # `return json.dumps(t)`, `return helper(t)`: a function whose result is computed
                # from its arguments (a project function that carries them, `param_flow`; a
                # library's data function; an unresolved call, assumed to, as the precise pass
                # assumes, a guess) hands on the parameters they read, at any depth of calls.
                self._nested_marks({"via": [call]}, path, mark_params, False, _NESTED_MARK_DEPTH)
        if sym.keys().isdisjoint(_COMPOSITE_KEYS):  # (most: none of what follows applies)
            return v.join(extra)
        for ip in sym.get("ip", ()):
            a = self._constructor_args(ip)
            # (what is computed from the argument is no set: only the parameter itself is the object)
            extra = extra.join(a if sym.get("ipi") or not a.unordered else replace(a, unordered=False))
        if sym.get("trs"):
            # None or a value, chosen by a condition resolved here (summary `_none_structure`).
            t = self._resolve(sym["trs"], path)
            if t.pd or t.pdc:
                extra = extra.join(replace(BOTTOM, tree=t.pd | t.pdc))
        if sym.get("elem") and extra.pd:
            extra = Val(frozenset(), extra.pd | extra.pdc, extra.order, extra.hash)
        out = v.join(extra)
        if sym.get("tup") is not None:
            # One level of tuple elements (nested tuples from recursive helpers would grow forever).
            out = replace(out, items=tuple(_flat(self.resolve(x, path)) for x in sym["tup"]))
        if sym.get("keys") is not None and len(sym["keys"]) <= _values.MAX_KEYS:
            # A dict built with constant keys: each key's value apart (`Val.keys`; one level).
            out = replace(out, keys=tuple(sorted((str(k), _leaf(self.resolve(x, path))) for k, x in sym["keys"].items())))
        if sym.get("host") is True and not out.host:
            out = replace(out, host=True)  # (where it lives does not depend on what it was computed from)
        cnt = sym.get("cnt")
        if cnt is not None and out.struct is None:
            # A list or dict built by a display or comprehension (summary "cnt"): as many elements
            # as what decided its count says, whatever they hold (`Val.count_sources`).
            count = self.resolve(cnt, path) if cnt else BOTTOM
            out = replace(out, struct="list", shape=_values._cap(
                _values.rekinded(out.shape, kinds.ELEMENTS) | _values.rekinded(count.count_sources, kinds.LENGTH)))
        if sym.get("ecls") and not out.ecls:
            # A container an attribute holds, every element stored a construction of one project
            # class (summary `attribute_holds`): its elements are instances of it.
            made = {self.resolve_class_name(self._follow_reexport(n)) if n != "?" else None for n in sym["ecls"]}
            if len(made) == 1 and (c := next(iter(made))) in self.classes:
                out = replace(out, ecls=c)
        if sym.get("elem") and out.ecls and not out.cls:
            out = replace(out, cls=out.ecls, ecls=None)  # (`self.by_step[k]`: an element of such a container)
        if sym.get("one"):
            # (one number or truth value made of what it reads, `len(self.xs)`, `any(self.xs)`:
            # what their lengths decide is its value, never its shape: `values.one_number`)
            out = _values.one_number(out)
        return out

    def _nested_marks(self, part: Sym, path: str, marks: list, guess: bool, depth: int,
                      unordered: bool = False) -> None:
        """`_resolve`'s marks for the parameters `part` reads through calls that carry their
        arguments into their results (`_carries_arguments`): a parameter read inside
        `json.dumps(x.tolist())` or `h.hexdigest()` of a hash updated with it reaches the result
        as one read directly does. Through an unresolved call the mark is a guess ("go"/"gd":
        order or data; `_solve_one` makes the flow a guess where every mark is one)."""
        if not part or depth <= 0:
            return
        if part.get("params"):
            o = not unordered and any(not p.endswith("!o") for p in part["params"])
            marks.append(("go" if o else "gd") if guess else o)
        for c in part.get("via", ()):
            kind = self._carries_arguments(c, path)
            if kind is None:
                continue
            g = guess or kind == "g"
            for sub in ((c.get("r"), c.get("a")) if "m" in c else (c.get("a"),)):
                if sub:
                    self._nested_marks(sub, path, marks, g, depth - 1, unordered or kind == "d")

    def _carries_arguments(self, call: dict, path: str) -> str | None:
        """Whether a summarized call's result is computed from its receiver and arguments: "d"
        (their content without its order: an order-free call), "c"
        (a method of a value of unknown type, `call_method`; a library's or builtin's data
        function; a project function whose result carries its arguments, `param_flow`), "g" (as
        a guess: an unresolved call, or a project function that carries them only as a guess),
        None (it does not, or which function runs is not known here: a value or a parameter
        called, a construction, a jitted function, a result agreed by a collective)."""
        if "v" in call or "pf" in call:
            return None
        n = call.get("n")
        if "m" not in call and (not isinstance(n, str) or n.startswith("<")):
            return None
        res, _ = self.call(call, path)
        if res.sanitized:
            return None
        if "m" in call:
            return "c"
        q = self._follow_reexport(n)
        f = self.functions.get(q)
        if f is not None:
            if f.jit or self._declared(q) is not None:
                return None
            self._dep(q)
            flow = self.param_flow.get(q)
            if not flow or "~file" in flow:
                return None
            return "g" if "~guess" in flow else "c"
        mod = q.rpartition(".")[0]
        if q in self.classes or q in self.globals or mod in self.classes or mod in self.functions:
            return None
        if q in K.ORDER_INSENSITIVE:
            # (`sorted(xs)`, `max(xs)`: their content without its order. The summary writes
            # `len(...)`, `bool(...)` as this order-free wrapper too: of a structure method's
            # result, `len(tree.keys())`, it counts keys that may be the same everywhere, so a
            # wrapper of structure methods alone is not followed, as `_resolve` does not follow
            # one returned directly)
            if q in _COUNTING_CALLS:
                return None
            a = call.get("a") or {}
            inner = a.get("via", ())
            if not a.get("params") and inner and all(c.get("m") in _STRUCTURE_METHODS for c in inner):
                return None
            return "d"
        if _is_known_library(q) or q in _BUILTIN_NAMES:
            return "c"
        return "g"

    def _returned_arguments(self, q: str, args: Sequence[tuple[object, Val]], given: tuple, bound: bool,
                            argv: Val) -> Val:
        """Of a call of project function `q` passing `args`, what flows into its result: the
        arguments bound to the parameters its returned value names (a step counter passed beside
        a data iterator comes back without the iterator's taint; which branch a function took
        is not its result's data, see summary `_control`); `argv` (all of them) where that is
        not known (a parameter gathering several arguments, a nested function's free names)."""
        returned = self.returned_params.get(q)
        if returned is None or any(k == "*" for k, _ in args):
            return argv
        return self._arguments_for(q, returned[0], returned[1], returned[2], args, given, bound, argv, returned[3],
                                   returned[4], returned[5], returned[6])

    def _item_arguments(self, q: str, args: Sequence[tuple[object, Val]], given: tuple, bound: bool,
                        n: int) -> list[Val | None]:
        """Of a call of project function `q` returning a tuple of `n` elements, what flows into
        each element: the arguments bound to the parameters that element names (`return idx,
        padded`: padded, computed from `total_len` alone, gets no taint of a `rank` argument only
        `idx` reads); None for an element where that is not known (then `_returned_arguments`)."""
        returned = self.returned_params.get(q)
        per_item = returned[7] if returned is not None and len(returned) > 7 else None
        if per_item is None or len(per_item) != n or any(k == "*" for k, _ in args):
            return [None] * n
        return [None if it is None else self._arguments_for(q, it[0], returned[1], it[1], args, given, bound, None, it[2],
                                                            it[3], it[4], it[5])
                for it in per_item]

    def _arguments_for(self, q: str, names: Collection[str], defaulted: Collection[str], pieces: Collection[str],
                       args: Sequence[tuple[object, Val]], given: tuple, bound: bool, argv: Val | None,
                       elements: Collection[str] = (), windows: Collection[str] = (),
                       padded: Collection[str] = (), filed: Collection[str] = ()) -> Val | None:
        """The arguments of a call of `q` bound to `names` (`_returned_arguments`); `argv` where a
        parameter gathers several arguments. Those bound to `elements` reach the result only
        inside what a generator yields (`_params_in`): as an element's content, not its count;
        those bound to `windows` only as the value a window of one length takes (`xs[:n]`): as
        content of that length (`Val.same_length`); those bound to `padded` as the size a padding
        brings the result up to (`np.concatenate([x, zeros(size - len(x))])`): a size that
        differs by process is a length that differs. Those bound to `filed` decide how many
        elements a list built in `q` has only through a file read at a path they give
        (`[os.path.join(d, n) for n in json.load(open(os.path.join(d, "f.json")))]`): as what
        that file holds, a guess (`evidence.file_content`), beside what the elements read."""
        keys = self._param_keys(q, names, given[0], given[1], bound)
        if any(key is None and p not in defaulted for p, key in keys.items()):
            return argv  # (a parameter gathering arguments: `*args`, `**kwargs`)
        by_key = {key: p for p, key in keys.items() if key is not None}

        def passed(p: str, v: Val) -> Val:
            # (an argument reaching the result only as the start of a piece of equal ones, `x[i::n]`:
            # how many elements by it is a guess, as where the piece is taken in the caller)
            if p in pieces:
                return evidence.equal_pieces(v.data())
            if "@" + p in pieces:
                return evidence.split_points(v.data())  # (of a split at given points)
            # (read only inside a yielded element, `yield rng.normal(size=k)`: how many elements
            # the generator yields is decided by its loops, which do not read it)
            if p in padded and v.pd:
                # (named at the call, as its pd is: `FileAnalysis.anchor`)
                made = frozenset(replace(x, kind=kinds.LENGTH, end_line=0, end_column=0) for x in v.pd)
                return replace(v.data(), shape=_values._cap(v.shape | made))
            if p in filed:
                counted = evidence.file_content(v.data(), f"a file read in `{short_name(q)}()`")
                return counted.join(v.data().element()) if p in elements else counted
            if p in elements:
                return v.data().element()
            return v.data().same_length() if p in windows else v.data()
        return join_all(passed(by_key[str(k)], v) for k, v in args if str(k) in by_key)

    def _structure_by_arguments(self, q: str, f: FunctionFacts, res: Val, args: Sequence[tuple[object, Val]],
                                given: tuple, bound: bool) -> Val:
        """Of a call of project function `q`, what its arguments decide of its result's structure
        rather than its content (summary `_none_structure`, `either`, `bound_under`): the
        parameters a test reads that chooses between None and a value (`return x if rank == 0
        else None`, "trs" of the result or of one of its constant keys, `{"pix": ... if rank == 0
        else None}`) make the structure differ where the arguments bound to them do, as the test
        made in the caller would ("tree"); those a test reads under which the function gives a
        container a key or an element ("kp": `if item > 3: metrics["big"] = item`) make how many
        it holds differ, as a guess (the data may agree: `evidence.KEYS_FROM_CONTENT`)."""
        shipped = self.__dict__.get("_structure_returns")
        # (shipped for the facts the compact form drops; a function relocated since has its own)
        got = shipped[q] if shipped is not None and q in shipped else _structure_returns(f)
        if got is None:
            return res
        ret, defaulted = got

        def bound_to(sym: object) -> Val | None:
            names = sym.get("params") if isinstance(sym, dict) else None
            if not names:
                return None
            # (a parameter read for its order only, "!o", decides no structure: `sorted(listdir(d))`)
            names = tuple(sorted({p for p in names if not p.endswith("!o")} & set(f.params)))
            if not names:
                return None
            return self._arguments_for(q, names, defaulted, (), args, given, bound, None)

        t = bound_to(ret.get("trs"))
        if t is not None and (t.pd or t.pdc):
            res = replace(res, tree=_values._cap(res.tree | t.pd | t.pdc))
        keys = ret.get("keys")
        if res.keys is not None and isinstance(keys, dict):
            chosen = {str(k): bound_to(x.get("trs")) for k, x in keys.items() if isinstance(x, dict)}
            if any(v is not None and (v.pd or v.pdc) for v in chosen.values()):
                res = replace(res, keys=tuple(
                    (k, replace(x, tree=_values._cap(x.tree | c.pd | c.pdc)) if (c := chosen.get(k)) is not None else x)
                    for k, x in res.keys))
        n = bound_to(ret.get("kp"))
        if n is not None and (n.pd or n.pdc):
            short = os.path.basename(self.fn_path.get(q, ""))
            self._note_origin(short, f.line, self.fn_path.get(q, ""))
            src = evidence.derived(Src(f.line, 0, "the keys its result is given under a condition on "
                                       "its arguments", kinds.LENGTH, origin=f"{short}:{f.line}"), n.pd | n.pdc)
            grown = evidence.mark(Val(shape=frozenset({src})), evidence.KEYS_FROM_CONTENT, f"`{short_name(q)}()`")
            res = replace(res, shape=_values._cap(res.shape | grown.shape))
        return res

    def _returned_params(self, f: FunctionFacts) -> tuple | None:
        """The parameters of `f` its returned value is computed from (every "params" its return
        summary names, at any depth, but the arguments of a call whose result carries none of
        them, `_drops_arguments`, and those a window of one length reads only as the sliced
        value, `xs[:n]`'s xs: not its length, resolved in `_call`), those of them that have a
        default, and those it names only as the start of a piece of equal ones (inside an
        `evidence.EQUAL_PIECES_CALL` record: `x[rank::world]`); None when one is not its own (a
        closure's) or unknown."""
        got = self._params_in(f.returns, f)
        if got is None:
            return None
        names, pieces, elements, windows, padded, filed = got
        return (names, tuple(sorted(p for p in names if p in f.defaults or p in f.host_defaults)), pieces, elements,
                windows, padded, filed)

    def _params_in(self, sym: object, f: FunctionFacts) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]] | None:
        """The parameters of `f` that `sym` (its return summary, or one element of a returned
        tuple) is computed from, and those of them it names only as the start of a piece of equal
        ones (`_returned_params`); None when one is not its own or unknown.

        A list or dict built by a display or comprehension (the summary's "cnt": what decides how
        many elements it has) holds as many elements as its count says, whatever they hold: the
        parameters only its elements read reach it as their content (`elements`), as a yielded
        element's do; those its count reads, as they are; those its count reads only through a
        file read at a path they give, as that file's content (`filed`)."""
        # Asked again every fixpoint round for every function: the walk reads nothing of the
        # index's state but which called functions carry their arguments (`_drops_arguments`),
        # so an answer is reused while each of those answers is still the same (exact; the
        # dependencies the walk recorded are recorded again).
        hit = self._params_in_memo.get(id(sym))
        if hit is not None and hit[0] is sym and all((q not in self.param_flow) == dropped for q, dropped in hit[2]):
            for q, _ in hit[2]:
                self._dep(q)
            return hit[1]
        checks: list[tuple[str, bool]] = []
        got = self._params_in_walk(sym, f, checks)
        self._params_in_memo[id(sym)] = (sym, got, tuple(checks))
        return got

    def _params_in_walk(self, sym: object, f: FunctionFacts, checks: list[tuple[str, bool]]
                        ) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]] | None:
        names: set[str] = set()
        pieces: set[str] = set()
        elements: set[str] = set()
        windows: set[str] = set()
        padded: set[str] = set()
        points: set[str] = set()
        counted: set[str] = set()  # (read by a built container's count: `_params_in`)
        filed: set[str] = set()  # (read by that count only through a file read)
        if isinstance(sym, dict) and sym.get("cnt") is not None and not sym.get("elem") and sym.get("keys") is None:
            # (a dict of constant keys: `_call` hands the arguments to each key's value as they
            # are, and keeps its count, `struct`)
            stack: list = [({k: v for k, v in sym.items() if k != "cnt"}, elements), (sym["cnt"], counted)]
        else:
            stack = [(sym, names)]
        while stack:
            x, into = stack.pop()
            if isinstance(x, dict):
                n = x.get("n")
                if n == evidence.FILE_CONTENT_CALL and into is counted:
                    into = filed  # (`len(json.load(open(path)))`: what the file at that path holds)
                if n == evidence.EQUAL_PIECES_CALL:
                    into = pieces
                elif n == evidence.SPLIT_POINTS_CALL:
                    into = points
                elif n == ELEMENT_CALL and into is names:
                    into = elements  # (what a generator yields: `_Summarizer._yield_count`)
                if n == SAME_LENGTH_CALL and into is names:
                    # (the sliced value of a window of one length, `xs[:n]`'s xs: its content,
                    # not its length, which `_call` resolves; n, its "b", is read as it is, and
                    # as the length a padding up to n gives, "pad")
                    stack.append((x.get("a"), windows))
                    if x.get("pad"):
                        stack.append((x.get("b"), padded))
                elif n == SAME_LENGTH_CALL:
                    stack.append((x.get("a"), into))  # (inside an element or a count: as read)
                skip_args = n == SAME_LENGTH_CALL or self._drops_arguments(x, checks)
                for k, v in x.items():
                    if k == "params":
                        into.update(p.removesuffix("!o") for p in v)
                    elif k == "ip":
                        return None
                    elif not (skip_args and k == "a"):
                        stack.append((v, into))
            elif isinstance(x, list):
                stack.extend((y, into) for y in x)
        names |= counted
        filed -= names
        pieces -= names
        points -= names | pieces
        # (the start of a piece of a split at given points: as a piece's, named "@p" among them)
        pieces |= points
        elements -= names | pieces
        windows -= names | pieces | elements | padded
        names |= pieces | elements | windows | padded | filed
        if not names <= set(f.params):
            return None
        return (tuple(sorted(names)), tuple(sorted(("@" + p if p in points else p) for p in pieces)),
                tuple(sorted(elements)), tuple(sorted(windows)), tuple(sorted(padded)), tuple(sorted(filed)))

    def _drops_arguments(self, call: dict, checks: list[tuple[str, bool]] | None = None) -> bool:
        """Whether `call` (a summary's call record) names a project function whose result carries
        none of its arguments (no `param_flow`: `def gmax(v): return float(np.max(
        process_allgather(v)))`, a value agreed by a collective), so that the parameters its
        arguments read do not reach a result computed from it."""
        name = call.get("n")
        if not isinstance(name, str) or "m" in call or "v" in call or name.startswith("<"):
            return False
        q = self._follow_reexport(name)
        g = self.functions.get(q)
        if g is None or g.jit or self._declared(q) is not None:
            return False
        self._dep(q)
        dropped = q not in self.param_flow
        if checks is not None:
            checks.append((q, dropped))
        return dropped

    _return_changes: dict[str, int] | None = None  # per function, while `_solve` widens (see WIDEN_RETURNS_AFTER)
    _ctor_depth = 0  # constructions being followed (dataclasses nest deep: a bound keeps the stack)

    def _constructor_args(self, ip: str) -> Val:
        if self._ctor_depth >= MAX_CONSTRUCTOR_DEPTH:
            return BOTTOM  # (not followed further: no finding rather than a crash)
        self._ctor_depth += 1
        try:
            return self._constructor_args_at(ip)
        finally:
            self._ctor_depth -= 1

    def _constructor_args_at(self, ip: str) -> Val:
        """What the constructions of a class pass for a parameter of its `__init__` (`ip`:
        "init:position:param", see summary.py), for an attribute `__init__` stores from it.

        The index does not follow which instance reaches which method, so a taint counts only
        when *every* construction in the project passes it: then every instance holds it. A
        construction that leaves the parameter to its default, passes a value the same on every
        process, or cannot be matched to parameters (`*args`, `**kwargs`) makes the attribute
        say nothing more than its own value (no finding rather than a false one), and so does one
        that hands the object collective work to run (see `_hands_collective_work`).
        Constructions in test modules count only when there are no others."""
        init, pos, param = ip.rsplit(":", 2)
        order_free = param.endswith("!o")
        param = param.removesuffix("!o")
        pos_i = int(pos)
        sites = self.init_sites().get(init, ())
        if not any(not test for _, _, test, _ in sites):
            return BOTTOM
        vals = []
        classes = set()
        for call, path, test, maker in sites:
            if test:
                continue
            if call.get("np") == -1:
                return BOTTOM
            pa = call.get("pa") or ({call["pk"]: call.get("a")} if "pk" in call else {})
            arg = pa.get(param) if param in call.get("kw", ()) else (
                pa.get(str(pos_i)) if 0 <= pos_i < call.get("np", 0) else None)
            if not arg or self._hands_collective_work(call, pa):
                return BOTTOM
            arg_v = self.resolve(arg, path)
            if not arg_v.divergent and (outer := self._outer_init_param(maker, arg)) is not None:
                # `self.solver = WaveProp(rank)` in `App.__init__(self, rank)`: the parameter holds
                # what every construction of App passes for it (one level per construction,
                # bounded as the constructions followed are: MAX_CONSTRUCTOR_DEPTH)
                # A guess (`evidence.IMPLICIT_ATTRIBUTE`): the outer argument reaches the
                # attribute through a construction the reader does not see.
                arg_v = arg_v.join(evidence.mark(self._constructor_args(outer), evidence.IMPLICIT_ATTRIBUTE,
                                                 f"`{short_name(maker)}`"))
            classes.add(arg_v.cls)
            vals.append(replace(arg_v.taint(), glob=arg_v.glob, unordered=arg_v.unordered))
        out = BOTTOM
        for v in vals:
            out = out.join(v)
        glob = bool(vals) and all(v.glob for v in vals)  # (`resolve` keeps it: `taint()` drops it)
        out = Val(pd=out.pd if all(v.pd for v in vals) else frozenset(),
                  pdc=out.pdc | out.pd if all(v.pd or v.pdc for v in vals) else frozenset(),
                  order=out.order if all(v.order for v in vals) and not order_free else frozenset(),
                  hash=out.hash if all(v.hash for v in vals) else frozenset(),
                  shape=out.shape if all(v.shape for v in vals) else frozenset(), glob=glob,
                  # (an instance of one project class at every construction: its methods, e.g. the
                  # `__iter__` a `for` over the attribute runs, are that class's)
                  cls=next(iter(classes)) if len(classes) == 1 else None,
                  # (a set at every construction: iterating the attribute follows its hash order,
                  # certainly so only where every construction's is certain)
                  unordered=_weakest_order([v.unordered for v in vals]))
        if out.pd:
            out = replace(out, pdc=out.pdc - out.pd)
        return out

    def _outer_init_param(self, maker: str, arg: dict) -> str | None:
        """The "ip" reference (`_constructor_args_at`) of a construction's argument that is a
        parameter of the `__init__` making it, passed as it is (`App.__init__(self, rank)`
        building `WaveProp(rank)`); None for anything else."""
        if not maker.endswith(".__init__") or not set(arg) <= {"params", "lp"} or len(arg.get("params", ())) != 1:
            return None
        p = arg["params"][0].removesuffix("!o")
        f = self.functions.get(maker)
        if f is None or p not in f.params or f.params[:1] != ["self"]:
            return None
        return f"{maker}:{f.params.index(p) - 1}:{p}"

    def attr_count_at_some(self, cls: str, name: str, start: bool = False) -> Val:
        """Why the length of attribute `name` of `cls`, stored in `__init__` from its parameters,
        differs between processes at *some* constructions of the class (`DS(all_files)` and
        `DS(all_files[rank::n])`): the count sources (a per-process value, a length that differs)
        of what those constructions pass, where `attr` (every construction) says nothing. Which
        construction reaches a use is not followed: a guess for the caller to mark. A construction
        in a helper from the helper's parameters counts what its callers pass where it cuts a
        piece of them (`x[rank::n]`, `np.array_split(x, n)[i]`), or where the attribute is the
        start of a piece `__iter__` cuts (`start`: `self.files[self.rank::self.world]`)."""
        for c in self.mro(cls):
            cf = self.classes[c]
            if name in cf.attrs:
                # (one fact per attribute, as `attr`'s: the shipped index keeps it, and its sources'
                # lines move with the cached index; the attribute's summary and the construction
                # sites it reads are not shipped)
                key = f"{c}.{name}!some{int(start)}"
                if key not in self._attr_cache and not _sym_ips(cf.attrs[name]):
                    return BOTTOM  # (stored from no parameter: nothing to ask, nothing cached)
                return self._cached(key, self._attr_cache, lambda: self._count_at_some(cf.attrs[name], start))
        return BOTTOM

    def _count_at_some(self, sym: object, start: bool) -> Val:
        out: frozenset = frozenset()
        for ip in sorted(_sym_ips(sym)):
            out |= self._some_constructions(ip, start).pd
        return Val(pd=out) if out else BOTTOM

    def _some_constructions(self, ip: str, start: bool = False) -> Val:
        if self._ctor_depth >= MAX_CONSTRUCTOR_DEPTH:
            return BOTTOM
        init, pos, param = ip.rsplit(":", 2)
        param, pos_i = param.removesuffix("!o"), int(pos)
        out: frozenset = frozenset()
        sites = 0
        self._ctor_depth += 1
        try:
            for caller, call, path, test in self._calls_by_callee().get(init, ()):
                if test:
                    continue
                pa = call.get("pa") or ({call["pk"]: call.get("a")} if "pk" in call else {})
                arg = _argument(pa, call, param, pos_i)
                if self._hands_collective_work(call, pa):
                    continue
                v = self.resolve(arg, path) if arg else BOTTOM  # (no argument recorded: one carrying nothing)
                counts = v.count_sources
                if arg and arg.get("argcnt") is not None:
                    # (a list built by a display or comprehension, `[xs[(rank + k) % n] for k in
                    # range(K)]`: as many elements as what decided its count says, whatever they hold)
                    counts = self.resolve(arg["argcnt"], path).count_sources if arg["argcnt"] else frozenset()
                if not counts and arg and (start or _cuts_piece(arg)):
                    # (made in a helper from its parameters, `split(ds, rank, world)` building
                    # `DS(ds.files[rank::world])`: what the helper's callers pass for them)
                    counts = self._caller_counts(caller, _sym_params(arg))
                out |= counts
                sites += 1
        finally:
            self._ctor_depth -= 1
        # (only where the class is constructed more than once: of one construction `attr` answers,
        # and where it says nothing then, something else made the attribute agree)
        return Val(pd=out) if sites > 1 else BOTTOM

    def _caller_counts(self, q: str, params: set[str]) -> frozenset:
        """The count sources of what the calls of function `q` by name pass it, where the value
        reads its `params` (one level: a helper making an instance from its parameters), marked as
        a guess; a call's arguments are kept joined, so what any of them carries counts."""
        f = self.functions.get(q)
        if f is None or not params or f.cls:
            return frozenset()
        # (a fact read from the calls of `q` anywhere: a function changed to call it otherwise is
        # not re-solved in place, `relocate.plan_change`)
        self.piece_helpers.add(q)
        out: frozenset = frozenset()
        for caller, call, path, test in self._calls_by_callee().get(q, ()):
            if test or not call.get("a"):
                continue
            # (a call of a function keeps its arguments joined, "a": what any of them carries)
            out |= self.resolve(call["a"], path).count_sources
        if not out:
            return out
        return evidence.mark(Val(pd=out), evidence.HELPER_PARAMETER_PIECE, f"`{short_name(q)}()`").pd

    def _calls_by_callee(self) -> dict[str, list[tuple[str, dict, str, bool]]]:
        """Calls by name of each project function or class (by its `__init__`), with the calling
        function, its file and whether that file is a test module."""
        by = self.__dict__.get("_calls_by_callee_cache")
        if by is None:
            by = {}
            for m, s in self.modules.items():
                test = _is_test_module(m)
                for caller, f in s.functions.items():
                    for call in f.calls:
                        if "n" not in call:
                            continue
                        q = self.resolve_class_name(self._follow_reexport(call["n"]))
                        if q in self.classes:
                            q = self.method(q, "__init__") or q
                        by.setdefault(q, []).append((caller, call, s.path, test))
            self.__dict__["_calls_by_callee_cache"] = by
        return by

    def made_instance(self, q: str, args: Sequence[tuple[object, Val]], bound: bool,
                      depth: int = 0) -> tuple[str, dict[str, Val]] | None:
        """The instance a call of `q` passing `args` ((position or keyword, value) pairs) holds:
        a construction of a project class (`Args(rank=r)`), or of a helper returning one
        (`return Args(rank=rank, steps=10)`, `return cls(rank)` in a classmethod, a helper
        returning another such helper's result), the helper's parameters bound to this call's
        arguments. Its class and, for each `__init__` parameter a value is known for, that value
        (what this construction, not any other, hands `__init__`). None where not known (`*args`,
        a helper returning something else, collective work handed to the object: see
        `_hands_collective_work`)."""
        if depth > 3 or any(k == "*" for k, _ in args):
            return None
        target = self._follow_reexport(q)
        cls = self.resolve_class_name(target)
        if cls in self.classes:
            init = self.method(cls, "__init__")
            f = self.functions.get(init) if init else None
            if f is None or any(v.callable or v.fn for _, v in args):
                return None
            return cls, self._bound_params(f, args, True)
        f = self.functions.get(target)
        shipped = self.__dict__.get("_returned_calls")
        got = shipped[target] if shipped is not None and target in shipped else (
            _returned_call(f) if f is not None else None)
        if got is None:
            return None
        callee, handed = got
        mine = self._bound_params(f, args, bound)
        inner: list[tuple[object, Val]] = []
        for key, p in handed.items():
            if p in mine:  # (what the helper computes or passes itself: the class's answer)
                inner.append((int(key) if key.isdigit() else key, mine[p]))
        return self.made_instance(callee, inner, False, depth + 1)

    @staticmethod
    def _bound_params(f: FunctionFacts, args: Sequence[tuple[object, Val]], bound: bool) -> dict[str, Val]:
        """Parameter name -> the value a call passing `args` binds to it (`self` and a
        classmethod's `cls` bound already where `bound`, or always for a classmethod)."""
        ps = list(f.params)
        offset = 1 if (bound or ps[:1] == ["cls"]) and f.cls and ps[:1] in (["self"], ["cls"]) else 0
        out: dict[str, Val] = {}
        for k, v in args:
            if isinstance(k, str):
                if k in ps:
                    out[k] = v
            elif isinstance(k, int) and 0 <= offset + k < len(ps):
                out[ps[offset + k]] = v
        return out

    def instance_attrs(self, cls: str, given: dict[str, Val]) -> dict[str, Val]:
        """What the attributes of one instance of `cls` hold from its own construction, `given`
        its `__init__` parameters' values (`made_instance`): an attribute `__init__` stores from
        a parameter as it is (`self.rank = rank`, a dataclass / NamedTuple / attrs field) holds
        what this construction passed, whatever other constructions pass (`_constructor_args`
        joins them all). Only where nothing else writes it (another method, a store under a
        condition): those keep the class's answer alone."""
        init = self.method(cls, "__init__")
        out: dict[str, Val] = {}
        if not init or not any(v.divergent for v in given.values()):
            return out
        mro = self.mro(cls)
        shipped = self.__dict__.get("_param_attrs")
        seen: set[str] = set()
        for c in mro:
            cf = self.classes[c]
            stored = shipped.get(c, {}) if shipped is not None else _param_attrs(cf)
            for attr in cf.attrs:
                if attr in seen:
                    continue
                seen.add(attr)
                if attr not in stored or attr in cf.cond_attrs:
                    continue
                ip, ipi = stored[attr]
                where, _, param = ip.rsplit(":", 2)
                v = given.get(param.removesuffix("!o"))
                if where != init or v is None or not v.divergent or self._written_after_init(mro, attr):
                    continue
                a = replace(v.taint(), glob=v.glob, unordered=v.unordered if ipi else False)
                a = replace(a, order=frozenset()) if param.endswith("!o") else a
                # (what the class's answer carries already, every construction passing it, is
                # told as it is: only what it lacks is added)
                every = self.attr(cls, attr) or BOTTOM
                a = replace(a, **{k: frozenset() for k in ("pd", "pdc", "order", "hash", "shape") if getattr(every, k)})
                if a.divergent:
                    out[attr] = a
        return out

    def _written_after_init(self, mro: list[str], attr: str) -> bool:
        """Whether a method of these classes other than `__init__` writes attribute `attr`."""
        for c in mro:
            for m in self.classes[c].methods:
                f = self.functions.get(f"{c}.{m}")
                if m != "__init__" and f is not None and attr in f.writes:
                    return True
        return False

    def _hands_collective_work(self, call: dict, pa: dict) -> bool:
        """A construction that hands the object collective work (a jitted or collective function
        passed as an argument): the object may run it itself on the processes its attributes
        gate off (a leader/worker controller whose workers run the step through the callback),
        so its attributes do not tell which processes skip that work."""
        if call.get("cbc"):
            return True
        for arg in pa.values():
            for r in (arg or {}).get("refs", ()):
                c = self.ref(r)
                if c.callable or (c.fn and self.collective.get(c.fn)):
                    return True
        return False

    def init_sites(self) -> dict[str, list[tuple[dict, str, bool, str]]]:
        """Construction sites by the `__init__` they run: calls by name of a project class, each
        with its file, whether that file is a test module, and the function it is made in. A
        construction whose arguments carry nothing still counts (it passes something the same on
        every process)."""
        if self._init_sites is None:
            sites: dict[str, list[tuple[dict, str, bool]]] = {}
            for m, s in self.modules.items():
                test = _is_test_module(m)
                for f in s.functions.values():
                    for call in f.calls:
                        if "n" not in call:
                            continue
                        c = self.resolve_class_name(self._follow_reexport(call["n"]))
                        if c in self.classes:
                            init = self.method(c, "__init__")
                            if init:
                                sites.setdefault(init, []).append((call, s.path, test, f.name))
            # A subclass with its own `__init__` runs the base's through `super().__init__(...)`
            # with arguments not followed here: an unknown construction of the base.
            for c in self.classes:
                own = f"{c}.__init__"
                if own in self.functions:
                    for b in self.mro(c)[1:]:
                        init = self.method(b, "__init__")
                        if init and init != own:
                            sites.setdefault(init, []).append(({"np": -1}, "", False, ""))
                            break
            self._init_sites = sites
        return self._init_sites

    def param_gate(self, q: str, param: str, forwarded_only: bool = False, depth: int = 0) -> Val | None:
        """The process-dependent condition under which `q` calls its parameter `param` (its own
        call, or a nested wrapper's: `def rank_zero_only(fn): def wrapped(...): if
        jax.process_index() == 0: return fn(...)`), or hands it on to a parameter some function
        calls so (`self._run(cb)`, a thread's `args`); None when it runs it on every process
        (`semantics.GATED_CALL`). `forwarded_only`: only a gate reached by handing it on."""
        q = self._follow_reexport(q)
        gates = self.__dict__.setdefault("_gates", {})
        key = (q, param, forwarded_only)
        if key in gates:
            return gates[key]
        gates[key] = None  # (a cycle of forwards gates nothing)
        f = self.functions.get(q)
        v = None
        sym = f.gated.get(param) if f is not None and not forwarded_only else None
        if sym:
            r = self.resolve(sym, self.fn_path[q])
            if r.pd:
                v = Val(pd=r.pd)
        if v is None and f is not None and depth < 4:
            for fwd in f.forwards:
                for k, p in fwd["fw"].items():
                    if p != param:
                        continue
                    target = self._forward_target(fwd, k, self.fn_path[q])
                    if target is not None:
                        v = self.param_gate(target[0], target[1], False, depth + 1)
                    if v is not None:
                        break
                if v is not None:
                    break
        gates[key] = v
        return v

    def _hands_to_gate(self, call: dict, path: str) -> bool:
        """A summary's call passing a callable (its "cba" keys) to a parameter that the callee
        hands on to a gated call (`param_gate(..., forwarded_only=True)`)."""
        spec = {k: call[k] for k in ("n", "m", "r", "bd") if k in call}
        if "m" in spec:
            spec["bd"] = 1
        for key in call["cba"]:
            target = self._forward_target(spec, key, path)
            if target is not None and self.param_gate(target[0], target[1], forwarded_only=True) is not None:
                return True
        return False

    def _forward_target(self, fwd: dict, key: str, path: str) -> tuple[str, str] | None:
        """(function, parameter) that a forward record (summary `_forwards`) hands argument `key` to."""
        bound = bool(fwd.get("bd"))
        q = None
        if "n" in fwd:
            q = self._follow_reexport(fwd["n"])
            mod, _, name = q.rpartition(".")
            if q not in self.functions and mod in self.classes:
                q = self.method(mod, name)
        elif "m" in fwd:
            recv = self.resolve(fwd.get("r", {}), path)
            q, bound = (self.method(recv.cls, fwd["m"]) if recv.cls else None), True
        elif "t" in fwd:
            t = self.resolve(fwd["t"], path)
            q = t.fn
            bound = True
        f = self.functions.get(q) if q else None
        if f is None:
            return None
        self._dep(q)
        offset = 1 if bound and f.cls and f.params and f.params[0] in ("self", "cls") else 0
        if key.isdigit():
            i = offset + int(key)
            return (q, f.params[i]) if i < len(f.params) else None
        return (q, key) if key in f.params else None

    def decorator_gate(self, q: str) -> Val | None:
        """`q` used as a decorator (`@q`) whose wrapper runs the decorated function only where a
        process-dependent condition holds: that condition."""
        f = self.functions.get(self._follow_reexport(q))
        if f is None or not f.params or f.cls:
            return None
        return self.param_gate(q, f.params[0])

    def property_read_work(self, cls: str | None, attr: str) -> tuple[str | None, str | None]:
        """(getter, collective work) of reading `.attr` on an instance of `cls` (None: a receiver
        of unknown class) when that runs a property's getter doing collective work
        (`semantics.property_read_work`). By name only where every project definition of the name
        is such a property (no plain attribute, no method of that name): a guess."""
        if semantics.never_property(attr):
            return None, None
        if cls:
            m = self.method(cls, attr)
            f = self.functions.get(m) if m else None
            if f is None or not f.prop:
                return None, None
            self._dep(m)
            c = self.collective.get(m)
            return (m, semantics.property_read_work(attr, c, cached=f.prop == semantics.CACHED_PROPERTY)) if c else (None, None)
        if attr in K.GENERIC_ATTRIBUTE_NAMES or attr in self.attrs_by_name:
            return None, None
        methods = self.methods_by_name.get(attr, ())
        props = self._properties_named(attr)
        if not props or len(props) != len(methods) or len(props) > 6:
            return None, None
        for m in props:
            self._dep(m)
        colls = [self.collective.get(m) for m in props]
        if not all(colls):
            return None, None
        return props[0], semantics.property_read_work(attr, colls[0], evidence.BY_NAME_NOTE,
                                                      cached=any(self.functions[m].prop == semantics.CACHED_PROPERTY for m in props))

    def _property_reads_work(self, f: FunctionFacts, path: str) -> str | None:
        """The first collective work among `f`'s property reads (a certain one first)."""
        guess = None
        for read in f.prop_reads:
            cls = read.get("c")
            if cls is None and read.get("r"):
                cls = self.resolve(read["r"], path).cls
            _, work = self.property_read_work(cls, read["a"])
            if work:
                if evidence.collective_guess(work) is None:
                    return work
                guess = guess or work
        return guess

    def _properties_named(self, name: str) -> list[str]:
        """The properties among the methods called `name` (`.apply`, `.__call__`: thousands of
        methods, read at every `.name` reference: listed once per name, `_props_cache`)."""
        props = self._props_cache.get(name)
        if props is None:
            props = self._props_cache[name] = [m for m in self.methods_by_name.get(name, ()) if self.functions[m].prop]
        return props

    def ref(self, r: str) -> Val:
        """Value of a reference: a project global, function, class attribute or `.attr` by name."""
        if r.startswith("."):
            name = r[1:]
            if name in K.GENERIC_ATTRIBUTE_NAMES:
                return BOTTOM
            props = self._properties_named(name)
            cands = self.attrs_by_name.get(name, []) + props
            if not cands or len(cands) > 8:
                return BOTTOM
            for m in props:
                self._dep(m)
            vals = [_bind_guards(self.returns.get(c, BOTTOM), c, self.functions[c], None) if c in self.functions else (self.attr(c.rsplit(".", 1)[0], name) or BOTTOM)
                    for c in cands]
            # Only when every class that has this attribute agrees it is process-dependent (or a
            # string's hash: a property seeding from `hash(self.name)`).
            if all(x.pd or x.hash for x in vals):
                out = BOTTOM
                for x in vals:
                    out = out.join(x)
                return out.taint()
            return BOTTOM
        r = self._follow_reexport(r)
        if r in self.globals:
            return self._resolve_cached(r, self.globals[r], self._global_cache)
        if r in self.functions:
            self._dep(r)
            f = self.functions[r]
            if f.prop:
                return _bind_guards(self.returns.get(r, BOTTOM), r, f, None)  # reading a property calls it
            if f.jit:
                return Val(callable=f"`{short_name(r)}` ({f.jit})", fn=r, hostable="l" in f.flags)
            return Val(fn=r)
        if r in self.classes:
            return BOTTOM
        mod, _, name = r.rpartition(".")
        if mod in self.classes:
            v = self.attr(mod, name)
            if v is not None:
                return v
            m = self.method(mod, name)
            if m is not None:
                return self.ref(m)
        if semantics.source_function(r):
            return Val(srcq=r)  # (the function itself: its calls read the source, `source_call`)
        if r in K.PROCESS_DEPENDENT_CALLS and not K.PROCESS_DEPENDENT_CALLS[r].endswith("()`"):
            return Val(pd=frozenset({Src(0, 0, K.PROCESS_DEPENDENT_CALLS[r], semantics.process_dependent_kind(r))}))
        return BOTTOM

    def call(self, call: dict, path: str) -> tuple[Val, str | None]:
        """(result value, collective description or None) of a summarized call."""
        key = id(call)
        memo, stack = self._call_memo, self._dep_stack
        hit = memo.get(key)
        if hit is not None and hit[0] is call and (hit[3] == self._round or self._fresh(hit, memo, key)) \
                and (_GUARDED not in hit[2] or self._cut_depth):
            if stack and hit[2]:
                self._merge_deps(hit[2])
            return hit[1]
        stack.append(set())
        try:
            r = self._call(call, path)
        finally:
            deps = self._pop_deps()
        if stack and deps:
            self._merge_deps(deps)
        memo[key] = (call, r, deps, self._round)
        return r

    def call_collective(self, call: dict, path: str) -> str | None:
        """Only whether a summarized call does collective work (its arguments left unresolved:
        they change the result, never the collectiveness)."""
        return self.call_without_args(call, path)[1]

    def call_without_args(self, call: dict, path: str) -> tuple[Val, str | None]:
        """(result, collective) of a call ignoring what its arguments carry (cheaper; enough
        where the arguments' own taint is already known to the caller)."""
        key = id(call)
        stack = self._dep_stack
        hit = self._call_memo.get(key)
        if hit is None or hit[0] is not call or not (hit[3] == self._round or self._fresh(hit, self._call_memo, key)) \
                or not (_GUARDED not in hit[2] or self._cut_depth):
            hit = self._coll_memo.get(key)
            if hit is not None and (hit[0] is not call or not (hit[3] == self._round or self._fresh(hit, self._coll_memo, key))
                                    or not (_GUARDED not in hit[2] or self._cut_depth)):
                hit = None
        if hit is not None:
            if stack and hit[2]:
                self._merge_deps(hit[2])
            return hit[1]
        stack.append(set())
        try:
            r = self._call(call, path, with_args=False)
        finally:
            deps = self._pop_deps()
        if stack and deps:
            self._merge_deps(deps)
        self._coll_memo[key] = (call, r, deps, self._round)
        return r

    def _fresh(self, hit: tuple, memo: dict, key: int) -> bool:
        """Whether a memo entry still holds: computed this round, or nothing it read changed since
        the round it was computed in, this round's changes so far included (it is then
        re-stamped with this round: exactly what recomputing it now would give)."""
        r = hit[3]
        if r == self._round:
            return True
        since = self._since.get(r)
        if since is None:
            since = self._since[r] = set().union(*self._round_changes[r - 1:])
        deps = hit[2]
        if self._resolving and not deps.isdisjoint(self._resolving.values()):
            return False
        if deps.isdisjoint(since) and deps.isdisjoint(self._changed_now):
            memo[key] = hit[:3] + (self._round,)
            return True
        return False

    def _call(self, call: dict, path: str, with_args: bool = True) -> tuple[Val, str | None]:
        args = call.get("a") if with_args else None
        argv = self.resolve(args, path).taint() if args else BOTTOM
        res, coll = BOTTOM, None
        np_ = call.get("np", 0)
        given = None if np_ == -1 else (np_, tuple(call.get("kw", ())))
        if call.get("n") == SAME_LENGTH_CALL:
            # the summary's window `x[:n]` (`_Summarizer.window`): where n (its "b") is the same
            # everywhere, as long everywhere (its content differs); else as long as n says
            bound = self.resolve(call["b"], path).taint() if call.get("b") else BOTTOM
            if bound.pd or bound.shape:
                res = argv.join(Val(pd=bound.pd))
            else:
                res = argv.same_length()  # (as the precise pass's window: `Val.same_length`)
        elif call.get("n") == TIED_SORT_CALL:
            # the summary's sort by a key of few values (`_Summarizer.tied_order`): the order its
            # input had, a set's iteration, kept where the key ties
            whole = self.resolve(args, path) if args else BOTTOM
            order = whole.order
            if whole.unordered:
                short = os.path.basename(path)
                self._note_origin(short, call.get("l", 0), path)
                order = order | frozenset({Src(call.get("l", 0), 0, semantics.set_iteration_desc(whole.unordered)
                                               + semantics.TIED_SORT_DESC, kinds.SET_ORDER,
                                               origin=f"{short}:{call.get('l', 0)}")})
            res = Val(order=evidence.tied_order(order)) if order else BOTTOM
        elif "n" in call:
            res, coll = self.call_name(call["n"], argv, given, call)
            if call.get("ks"):
                res = res.join(self.env_read_by(call["n"], lambda p, pos: call["ks"].get(p) or call["ks"].get(str(pos))))
        elif "m" in call:
            recv = self.resolve(call.get("r", {}), path)
            res, coll = self.call_method(call["m"], recv, argv, given, call)
            if call["m"] == "__iter__" and recv.unordered and not recv.cls:
                # `for x in self.names` of a set (or a list made of one in its order): the elements
                # come in its hash order, a source of their own (as the precise pass's `_set_iteration`);
                # a guess, as what is built of them is followed further than the loop that reaches
                # the collective work
                line = call.get("l", 0)
                self._note_origin(os.path.basename(path), line, path)
                s = evidence.set_order_guess(Src(line, 0, semantics.set_iteration_desc(recv.unordered), kinds.SET_ORDER,
                                                 origin=f"{os.path.basename(path)}:{line}"))
                s = replace(s, guess=s.guess + ((0, evidence.ITERATED_ELSEWHERE_TEXT, evidence.ITERATED_ELSEWHERE),))
                res = res.join(Val(order=frozenset({s})))
        elif "ga" in call:
            # an attribute of an attribute (`self.meta.buckets`, summary.any_member): of the class
            # the inner one holds, where the index knows it
            if "pf" in call:
                # (of a parameter: the class every call in the project passes for it)
                fq, param = call["pf"]
                cls = getattr(self, "param_classes", {}).get(fq, {}).get(param)
            else:
                cls = self.resolve(call.get("r", {}), path).cls
            got = self.attr(cls, call["ga"]) if cls else None
            res = got.taint() if got is not None else BOTTOM
        elif "v" in call:
            fv = self.resolve(call["v"], path)
            if fv.callable:
                res, coll = self._jitted_at(fv, call)
            elif fv.fn and call.get("ex"):
                res, coll = self.call_name(fv.fn, argv, given, call)  # a def called by its own name
            elif fv.fn:
                res, coll = self.call_name(fv.fn, argv)  # arguments unknown: maybe a partial()
            elif fv.cls and self.method(fv.cls, "__call__"):
                res, coll = self.call_method("__call__", fv, argv, given, dict(call, bd=1))  # an instance called
            elif "pf" in call and (pc := self._param_class(*call["pf"])) and self.method(pc, "__call__"):
                # a parameter called that holds an instance of one project class at every call
                # (`param_classes`): that class's `__call__` runs, as it does for the instance
                res, coll = self.call_method("__call__", Val(cls=pc), argv, given, dict(call, bd=1))
            elif fv.srcq:
                res = source_call(fv.srcq)  # a source function held in a name or parameter, called
            else:
                res = argv
        ix = call.get("ix")
        if ix is not None:
            # One element of a returned tuple (`a, b = f()`): that element when the callee's tuple
            # is known, else an element of the whole result (content only).
            if res.items is not None and ix < len(res.items):
                res = res.items[ix]
            elif res.pd:
                res = Val(frozenset(), res.pd | res.pdc, res.order, res.hash)
        if coll is None and call.get("cbc") and ("n" not in call or self._callbacks_count(call["n"])):
            coll = f"{call['cbc'][0]} passed as a callback"
        if coll is None and call.get("cb") and ("n" not in call or self._callbacks_count(call["n"])):
            for cb in call["cb"]:
                c = self.ref(cb)
                cq = c.fn
                if cq:
                    self._dep(cq)
                d = c.callable or (self.collective.get(cq) if cq else None)
                if d:
                    coll = f"{d} passed as a callback"
                    break
        if coll and coll.startswith(semantics.CALLBACK_WORK) and "n" in call:
            coll = self._callback_work(call, coll, path)
        if coll:
            # Applying a jitted function: certain only on an input known to be a global array
            # (directly, or through a parameter its jitted work runs on), as the precise pass
            # decides on its arguments' values: a result of jitted work is one ("gv", resolved).
            gkeys = self._global_keys(call, path)
            if semantics.UNKNOWN_INPUTS_NOTE in coll and "n" in call and call.get("np", 0) != -1 \
                    and self.global_at(call["n"], gkeys, call.get("np", 0), call.get("kw", ()), bool(call.get("bd"))):
                coll = semantics.known_global_inputs(coll)
            coll, _ = semantics.jitted_work(coll, bool(gkeys))
        return res, coll

    def _global_keys(self, call: dict, path: str) -> list[str]:
        """The keys of a summary's call whose arguments are global arrays: known where the call
        was made ("g"), or results of calls that the index resolves to one ("gv")."""
        keys = list(call.get("g", ()))
        for k, v in call.get("gv", {}).items():
            if k not in keys and self.resolve(v, path).glob:
                keys.append(k)
        return keys

    def _callback_work(self, call: dict, coll: str, path: str | None = None) -> str | None:
        """A summary's call of a function collective only through the callables it calls
        (`semantics.callback_call_work`, as the precise pass asks at its calls): what the call
        passes for each, from its callable arguments ("cba": a lambda, a reference, a callable's
        work)."""
        q = self._follow_reexport(call["n"])
        f = self.functions.get(q)
        called = self.callback_params.get(q, set())
        if f is None or not called or call.get("np") == -1 or "cba" not in call:
            passed = call["cbc"][0] if call.get("cbc") else None
            for cb in call.get("cb", ()) if passed is None else ():
                c = self.ref(cb)
                passed = c.callable or (f"`{short_name(c.fn)}()` → {self.collective[c.fn]}" if c.fn and self.collective.get(c.fn) else None)
                if passed:
                    break
            for v in call.get("gv", {}).values() if passed is None and path is not None else ():
                passed = self.instance_call_work(self.resolve(v, path)) or None  # (an instance with a collective `__call__`)
                if passed:
                    break
            return semantics.callback_call_work(coll, short_name(call["n"]), [passed] if passed else [None])
        ps = list(f.params)
        offset = 1 if f.cls and ps and ps[0] in ("self", "cls") else 0
        given = set(range(call.get("np", 0))) | set(call.get("kw", ()))
        out: list[str | bool | None] = []
        for p in sorted(called):
            key = semantics.argument_for(p, ps, offset, given)
            arg = call["cba"].get(str(key)) if key is not None else None
            if arg is None:
                v = call.get("gv", {}).get(str(key)) if key is not None and path is not None else None
                out.append(self.instance_call_work(self.resolve(v, path)) if v is not None else None)
            elif arg == "λ":
                out.append(False)
            elif arg.startswith("c:"):
                out.append(arg[2:])
            else:
                c = self.ref(arg[2:])
                if c.fn:
                    self._dep(c.fn)
                d = c.callable or (f"`{short_name(c.fn)}()` → {self.collective[c.fn]}" if c.fn and self.collective.get(c.fn) else None)
                out.append(d if d else (False if c.fn and c.fn in self.functions else None))
        return semantics.callback_call_work(coll, short_name(call["n"]), out)

    def _callbacks_count(self, callee: str) -> bool:
        """Passing a collective function to `callee` counts as collective work (it may call it).
        Both passes ask this."""
        callee = self._follow_reexport(callee)
        if callee in self.functions:
            return False  # project functions: precise, via the parameters they call
        if self.resolve_class_name(callee) in self.classes:
            # A project class stores what it is given: its `__init__` is a project function
            # (precise, as above), and a method that calls the stored function later is
            # collective work where that method is called.
            return False
        if callee in K.JIT_WRAPPERS or callee.startswith(_JAX_TRANSFORMS):
            return False
        return True

    def env_read_by(self, q: str, key_of: Any) -> Val:
        """A helper reading the environment variable its caller names, handed a per-process one:
        `key_of(param, position)` gives the name passed for that parameter (or None)."""
        q = self._follow_reexport(q)
        out = BOTTOM
        for p, pos, line in self.env_params.get(q, ()):
            key = key_of(p, pos)
            if key:
                short = os.path.basename(self.fn_path.get(q, ""))
                self._note_origin(short, line, self.fn_path.get(q, ""))
                out = out.join(Val(pd=frozenset({evidence.set_order_guess(Src(
                    line, 0, f"{K.env_desc(key, quote='')} via `{short_name(q)}()`", kinds.ENVIRONMENT,
                    origin=f"{short}:{line}"))})))
        return out

    def call_name(self, q: str, argv: Val = BOTTOM, given: tuple | None = None,
                  site: dict | None = None, args: Sequence[tuple[object, Val]] | None = None) -> tuple[Val, str | None]:
        """`_call_name`; a method called on an instance (`self._evaluate(...)` in a base class's
        loop, `trainer.fit()`), whose result differs between processes while an override in a
        subclass of its class returns a value made the same everywhere (`return bool(broadcast(
        super()._evaluate(...)))`: a collective's agreed result, or a value the same everywhere from
        an override that does collective work): which class's method runs is not followed, so that result's process dependence is a guess (`evidence.OVERRIDDEN_METHOD`)."""
        res, coll = self._call_name(q, argv, given, site, args)
        if (res.pd or res.pdc) and site is not None and site.get("bd"):
            f = self.functions.get(q)
            if f is not None and f.cls:
                for o in self._overrides(f.cls, q):
                    r, work = self._call_name(o, argv, given, site, args)
                    if not (r.pd or r.pdc) and (r.sanitized or work):  # (made to agree: not a call left unfollowed)
                        res = evidence.mark(res, evidence.OVERRIDDEN_METHOD,
                                            f"`{short_name(q)}()` (overridden by `{short_name(o)}()`)")
                        break
        return res, coll

    def _overrides(self, cls: str, q: str) -> list[str]:
        """The methods of subclasses of `cls` (project classes with it in their MRO) that override
        method `q` (by name), sorted."""
        subs = self.__dict__.get("_subclass_cache")
        if subs is None:
            subs = {}
            for c in self.classes:
                for b in self.mro(c)[1:]:
                    subs.setdefault(b, []).append(c)
            self.__dict__["_subclass_cache"] = subs
        name = q.rpartition(".")[2]
        return sorted({m for d in subs.get(cls, ()) if (m := self.method(d, name)) is not None and m != q})

    def _call_name(self, q: str, argv: Val = BOTTOM, given: tuple | None = None,
                   site: dict | None = None, args: Sequence[tuple[object, Val]] | None = None) -> tuple[Val, str | None]:
        """`given`: (number of positional arguments, keyword names) when known; `site`: where this
        call's arguments live (`semantics.arg_locality`: "h", "np", "kw", "bd" as in a summary's
        call), to analyse the callee in its context; `args`: each argument apart ((position or
        keyword, value)), when known, so that only those bound to the parameters its result is
        computed from flow into it (`_returned_arguments`)."""
        if q in K.ORDER_INSENSITIVE:
            return argv.without_order(), None  # the summary's order-free wrapper (`sorted(...)`)
        if q == ELEMENT_CALL:
            return argv.element(), None  # the summary's yielded element (`_Summarizer._yield_count`)
        if q == TYPE_OF_CALL:
            # the summary's type predicate (`isinstance(x, T)`): differs where x's structure does
            return (Val(pd=argv.tree) if argv.tree else BOTTOM), None
        if q == evidence.EQUAL_PIECES_CALL:
            return evidence.equal_pieces(argv), None  # the summary's piece of equal ones (`x[i::n]`)
        if q == evidence.SPLIT_POINTS_CALL:
            return evidence.split_points(argv), None  # the summary's piece of a split at points
        if q == evidence.FILE_CONTENT_CALL:
            return evidence.file_content(argv), None  # the summary's file read at a path
        if q == evidence.STORED_ATTRIBUTE_CALL:
            return evidence.stored_attribute(argv), None  # the summary's `param.attr = value`
        if q == evidence.STORED_ELEMENT_CALL:
            return evidence.stored_element(argv), None  # the summary's `self.attr[k] = value`
        if q == evidence.POSSIBLY_EMPTY_CALL:
            return evidence.possibly_empty(argv), None  # the summary's `itertools.cycle(xs)`
        if q == evidence.BOUNDED_COUNT_CALL:
            return evidence.bounded_count(argv), None  # the summary's `zip(range(n), data)`
        q = self._follow_reexport(q)
        d = self._declared(q)
        if d is not None:
            v, c = d
            return (argv if v is None else v), c
        if q in self.functions:
            self._dep(q)
            f = self.functions[q]
            if f.jit:
                if "l" in f.flags and site is not None and self.site_need(site, None) == frozenset():
                    return Val(host=True), None  # a jit-decorated function on process-local data
                kind = f.jit
                if kind in semantics.PMAP_KINDS and q not in self.collective:
                    # (a pmap whose body, as followed, does no collective: `semantics.NO_REDUCTION`)
                    kind += semantics.NO_REDUCTION
                return applied(None, kind), f"`{short_name(q)}` ({kind})"
            ret = self.returns.get(q, BOTTOM)
            res = _bind_guards(ret, q, f, given)
            if (res.ckpt or res.cls) and argv.subgroup:
                # A factory handed a process-subset configuration builds a subgroup checkpointer.
                res = replace(res, subgroup=True)
            flow = self.param_flow.get(q)
            if flow:
                flow, *marks = flow.split("#")  # (what `_solve_one` noted of its result: "one")
                flow, _, lens = flow.partition("+")
                flow, _, elem = flow.partition(":")
                flow, _, read = flow.partition("~")
                sized = BOTTOM
                if lens and (argv.pd or argv.pdc or argv.length_sources):
                    # `max(len(s) for s in xs)` over this call's process-local argument.
                    # Its result is that length or, usually, an array padded to it: a shape of
                    # this process's own.
                    short = os.path.basename(self.fn_path.get(q, ""))
                    self._note_origin(short, f.line, self.fn_path.get(q, ""))
                    if lens == "sel":
                        # (a selection by a mask of their content: its number of rows differs)
                        src = Src(f.line, 0, f"the rows a mask of this process's values selects, in `{short_name(q)}()`",
                                  origin=f"{short}:{f.line}")
                        sized = Val(pd=frozenset({src}), shape=frozenset({replace(src, kind=kinds.ROWS)}))
                    else:
                        src = frozenset({Src(f.line, 0, f"a value sized by the longest of this process's elements, in `{short_name(q)}()`",
                                             origin=f"{short}:{f.line}")})
                        sized = Val(pd=src, shape=src)
                # Arguments flow into the result (without their order if the function sorts them);
                # as content only when it returns (or yields) their elements (`elem`).
                items, keys = res.items, res.keys
                per_item: list[Val | None] = [None] * len(items) if items is not None else []
                if args is not None and given is not None and site is not None:
                    if items is not None:
                        per_item = self._item_arguments(q, args, given, bool(site.get("bd")), len(items))
                    argv = self._returned_arguments(q, args, given, bool(site.get("bd")), argv)

                def taken(a: Val) -> Val:
                    if elem and (a.pd or a.shape):
                        # (how many it yields is not theirs either: their lengths count for nothing)
                        a = replace(a, pd=frozenset(), pdc=a.pd | a.pdc,
                                    shape=frozenset(s for s in a.shape if s.kind not in kinds.COUNTS))
                    if read == "file":  # (read from a file at a path they name: `evidence.file_content`)
                        a = evidence.file_content(a, f"`{short_name(q)}()`")
                    elif read == "type":  # (only their structure decides it: `TYPE_OF_CALL`)
                        # (the precise pass hands on the arguments' data apart from their
                        # structure: `args`, where given, still hold it)
                        tree = a.tree.union(*(v.tree for _, v in args)) if args is not None else a.tree
                        a = Val(pd=tree) if tree else BOTTOM
                    elif read == "guess":
                        # (only through calls assumed to compute from their arguments)
                        a = evidence.mark(a, evidence.UNRESOLVED_CALL, f"a call in `{short_name(q)}()`")
                    return a
                argv = taken(argv)
                per_item = [argv if a is None else taken(a) for a in per_item]
                res = res.join(argv if flow == "order" else argv.without_order())
                # (a returned number made of them, `int(x)`, `len(x)`: what their lengths decide is
                # its value, never its shape: `values.one_number`, as where it is made in the caller;
                # "#one" in its flow, `_solve_one`)
                if items is not None:
                    # Multiple return values: only those computed from parameters get the
                    # arguments (each only those bound to the parameters it names,
                    # `_item_arguments`), and only those sized by the longest element that size.
                    flows = self.item_flow.get(q, ())
                    res = replace(res, items=tuple(
                        _values.one_number(y) if fl and fl.endswith("#one") else y
                        for y, fl in zip(
                            ((x.join(a if fl.startswith("order") else a.without_order())
                              .join(sized if fl.partition("#")[0].endswith(("+len", "+sel")) else BOTTOM)) if fl else x
                             for x, fl, a in zip(items, flows or ("order",) * len(items), per_item)),
                            flows or (None,) * len(items))))
                else:
                    res = res.join(sized)
                    if "one" in marks:
                        res = _values.one_number(res)
                if keys is not None:
                    # (a dict with constant keys: the arguments reach each key as they reach the whole)
                    extra = argv if flow == "order" else argv.without_order()
                    res = replace(res, keys=tuple((k, x.join(extra).join(sized)) for k, x in keys))
                    if ret.struct is not None:
                        # A display of constant keys (summary "cnt" decided by nothing): the
                        # arguments reach its values (their shapes are its elements'), never
                        # how many keys it has.
                        res = replace(res, struct=ret.struct, shape=_values.rekinded(res.shape, kinds.ELEMENTS))
                elif ret.struct == "list" and "ln" in marks:
                    # Every return a list display of one length (summary "ln"): as many elements
                    # on every process; the arguments reach its elements (their shapes are its
                    # elements'), never its length.
                    res = replace(res, struct=ret.struct, shape=_values.rekinded(res.shape, kinds.ELEMENTS))
            if args is not None and given is not None and site is not None:
                res = self._structure_by_arguments(q, f, res, args, given, bool(site.get("bd")))
            if ret.host and (not res.host or res.glob):
                # A helper returning host data on every path (`np.asarray(step(x))`): a host
                # copy, never a global array, whatever it was computed from.
                res = replace(res, host=True, glob=False)
            coll = self.collective.get(q)
            if coll and site is not None and q in self.work_gates and self.gated_off(q, site):
                return res, None  # its collective work runs only where this call's constants do not take it
            if coll and site is not None and self.local_at(q, site):
                # Its jitted work runs on the process-local data this call passes.
                coll = f"{coll} {semantics.CAPTURES_NOTE}" if q in self.local_guess else None
            return res, coll
        if q in self.classes:
            init = self.method(q, "__init__")
            if init:
                self._dep(init)
            # An instance configured for a process subset (by its arguments, or by its own
            # __init__) does its collective work in that subset.
            sub = argv.subgroup or bool(init and "g" in self.functions[init].flags)
            coll = self.collective.get(init) if init else None
            if coll and site is not None and init in self.work_gates and self.gated_off(init, dict(site, bd=1)):
                coll = None  # (`Loader(data, distributed=False)`: its `__init__`'s work is not taken)
            return Val(cls=q, subgroup=sub), coll
        if q in self.globals:
            g = self.ref(q)
            if g.factory:  # applying a jit decorator of the project's own: a jitted function
                return Val(callable=f"`jitted function` ({g.factory[0]})"), None
            if g.callable:
                return self._jitted_at(g, site)
            if g.fn:
                return self.call_name(g.fn, argv)
            if g.srcq:
                return source_call(g.srcq), None  # (`NOW = time.time` ... `NOW()`)
            if g.cls:
                m = self.method(g.cls, "__call__")
                if m:
                    return self.call_name(m, argv, given, dict(site, bd=1) if site is not None else None)
            return argv, None
        mod, _, name = q.rpartition(".")
        if mod in self.classes:
            m = self.method(mod, name)
            if m is not None:
                return self.call_name(m, argv, given, site)
            v = self.attr(mod, name)
            if v is not None and v.callable:
                return self._jitted_at(v, site)
            if v is not None and v.fn:
                return self.call_name(v.fn, argv)
            if v is not None and v.srcq:
                return source_call(v.srcq), None  # (`self._now = time.time` ... `self._now()`)
            if v is not None and v.cls and (m := self.method(v.cls, "__call__")) is not None:
                # an instance held in an attribute and called (`self.proj(x)`): its `__call__`
                return self.call_name(m, argv, given, dict(site, bd=1) if site is not None else None)
            return argv, None
        if not _is_known_library(q) and q not in _BUILTIN_NAMES:
            # A library the engine knows nothing about: assume its result is computed from its
            # arguments (a guess; a known library's data functions are taken as certain).
            argv = evidence.mark(argv, evidence.UNRESOLVED_CALL, f"`{short_name(q)}()`")
            if self.settings.assume_unknown_calls_collective:
                return _with_ext(argv), f"`{short_name(q)}()` (unknown call assumed collective)"
        return _with_ext(argv), None

    # ---------------------------------------------------------------- call-site context
    def _jitted_at(self, v: Val, site: dict | None) -> tuple[Val, str | None]:
        """Calling the jitted function `v` (a global or an attribute) at `site`."""
        if v.hostable and site is not None and self.site_need(site, None) == frozenset():
            if v.hostable is True:
                return Val(host=True), None  # on process-local data: this process's work
            return BOTTOM, f"{v.callable} {semantics.CAPTURES_NOTE}"
        return applied(v.callable), v.callable

    @staticmethod
    def site_need(site: dict, keys: Collection[str] | None) -> frozenset[str] | None:
        """For a call (`site`): the enclosing function's parameters that must hold process-local
        data for the arguments at `keys` (None: every argument passed) all to be process-local;
        None when one of them is not, whatever the parameters hold."""
        np_ = site.get("np", 0)
        if np_ == -1:
            return None
        if keys is None:
            keys = [str(i) for i in range(np_)] + list(site.get("kw", ()))
        hosts, needs = site.get("h", ()), site.get("hp", {})
        out: set[str] = set()
        for k in keys:
            if k in hosts:
                continue
            if k not in needs:
                return None
            out.update(needs[k])
        return frozenset(out)

    def _param_keys(self, q: str, params: Collection[str], np_: int, kw: Collection[str], bound: bool) -> dict[str, str | None]:
        """For each of `params` of project function `q`, the key (a keyword, or a position as a
        string) under which a call giving `np_` positional arguments and the keywords `kw` passes
        it, None when it leaves it to its default (`semantics.argument_for`). `bound`: called
        through an instance (`self.m(...)`), so `self` is not among the arguments; a classmethod
        is bound either way."""
        f = self.functions[q]
        ps = list(f.params)
        bound = bound or bool(ps and ps[0] == "cls" and f.cls)
        offset = 1 if bound and f.cls and ps and ps[0] in ("self", "cls") else 0
        given = set(range(np_)) | set(kw)
        out: dict[str, str | None] = {}
        for p in params:
            key = semantics.argument_for(p, ps, offset, given)
            out[p] = None if key is None else str(key)
        return out

    def _site_keys(self, q: str, params: Collection[str], site: dict) -> list[str] | None:
        """The argument keys of a call of project function `q` (at `site`) that supply `params`;
        None when one of them is not supplied and its default is not a literal (host data)."""
        keys: list[str] = []
        for p, key in self._param_keys(q, params, site.get("np", 0), site.get("kw", ()), bool(site.get("bd"))).items():
            if key is not None:
                keys.append(key)
            elif p not in self.functions[q].host_defaults:
                return None
        return keys

    def global_at(self, q: str | None, gkeys: Collection[str], np_: int, kw: Collection[str], bound: bool) -> bool:
        """Whether a call of `q` (collective through jitted work on its parameters, see
        `local_unless`) passes a global array (the arguments at `gkeys`) for one of those
        parameters: that jitted work certainly spans the processes."""
        q = self._follow_reexport(q) if q else q
        params = self.local_unless.get(q) if q else None
        if not params or not gkeys or np_ == -1 or q not in self.functions:
            return False
        return any(key in gkeys for key in self._param_keys(q, params, np_, kw, bound).values())

    def glob_param_work(self, q: str | None, gkeys: Collection[str], np_: int, kw: Collection[str],
                        bound: bool) -> str | None:
        """The array work `q` does on one of its parameters (`jnp.sum(x)`, `x.mean()`) where a
        call passes a global array (the arguments at `gkeys`) for it: an array operation on a
        global array is collective work, in a helper as in its caller."""
        q = self._follow_reexport(q) if q else q
        f = self.functions.get(q) if q else None
        if f is None or not gkeys or np_ == -1:
            return None
        for desc, line, operand in f.glob_ops:
            params = operand.get("params")
            if params and any(key in gkeys for key in self._param_keys(q, params, np_, kw, bound).values()):
                return f"{desc} ({os.path.basename(self.fn_path[q])}:{line})"
        return None

    def local_at(self, q: str, site: dict) -> bool:
        """Whether a call of `q` (collective through jitted work on its parameters) passes
        process-local data for every parameter that work runs on."""
        cond = self.local_unless.get(q)
        if cond is None:
            return False
        keys = self._site_keys(q, cond, site)
        return keys is not None and self.site_need(site, keys) == frozenset()

    def _call_need(self, call: dict, path: str) -> tuple[frozenset[str] | None, bool]:
        """A collective call of a function: the function's parameters that, all holding
        process-local data, make it no collective work (None: collective whatever they hold),
        and whether that is a guess (the jitted work may capture global arrays)."""
        if "v" in call and "n" not in call:
            fv = self.resolve(call["v"], path)
            m = self.method(fv.cls, "__call__") if fv.cls and not fv.callable and not fv.fn else None
            if m is not None:
                return self._call_need(dict(call, n=m, bd=1), path)
            if fv.fn and not fv.callable and call.get("ex"):
                return self._call_need(dict(call, n=fv.fn), path)
            if fv.callable and fv.hostable:
                return self.site_need(call, None), fv.hostable is not True
            return None, False
        if "n" in call:
            q = self._follow_reexport(call["n"])
            if q not in self.functions and q in self.classes:
                return None, False
            mod, _, name = q.rpartition(".")
            if q not in self.functions and mod in self.classes and (m := self.method(mod, name)) is not None:
                q = m
            f = self.functions.get(q)
            if f is not None and f.jit:
                return (self.site_need(call, None) if "l" in f.flags else None), False
            if f is not None:
                cond = self.local_unless.get(q)
                keys = self._site_keys(q, cond, call) if cond is not None else None
                return (self.site_need(call, keys) if keys is not None else None), q in self.local_guess
            mod, _, name = q.rpartition(".")
            g = self.ref(q) if q in self.globals else (self.attr(mod, name) if mod in self.classes else None)
            if g is not None and g.callable and g.hostable:
                return self.site_need(call, None), g.hostable is not True
        return None, False

    def call_method(self, meth: str, recv: Val, argv: Val = BOTTOM, given: tuple | None = None,
                    site: dict | None = None, args: Sequence[tuple[object, Val]] | None = None) -> tuple[Val, str | None]:
        """`args`: each argument apart, as `call_name` takes them, when known."""
        if meth == "__getitem__" and not (recv.cls and self.method(recv.cls, meth)):
            # (summary `element_at`: `obj[k]` of a class without `__getitem__` of its own, or not
            # of the project: an element of it, as any subscript)
            return recv.element().join(argv), None
        if recv.cls:
            m = self.method(recv.cls, meth)
            if m is not None:
                return self.call_name(m, argv, given, dict(site, bd=1) if site is not None else None, args)
            v = self.attr(recv.cls, meth)
            if v is not None and v.callable:
                return applied(v.callable), v.callable
            if v is not None and v.srcq:
                return source_call(v.srcq), None  # (`self._now = time.time` ... `self._now()`)
        if recv.subgroup:
            return recv.data().join(argv), None  # work among a configured subset of processes
        if recv.ckpt and semantics.pending_wait_is_local(meth, recv.ckpt):
            return BOTTOM, None  # (a synchronous checkpointer has no save pending)
        if recv.ckpt and meth in K.CHECKPOINTER_COLLECTIVE_METHODS:
            return BOTTOM, f"checkpointer `.{meth}()`"
        if recv.callable:
            if meth in K.JIT_STAGING_METHODS:
                return Val(callable=recv.callable), None
            return BOTTOM, None
        if meth in K.COLLECTIVE_METHOD_NAMES:
            return BOTTOM, f"`.{meth}()`"
        res = recv.data().join(argv)
        if recv.unordered and meth in semantics.DICT_VIEWS:
            # (`self.d.items()` of a dict filled in a set's order: its views iterate in that order,
            # as the precise pass's `view_of` keeps it)
            res = replace(res, unordered=recv.unordered)
        if recv.ecls and not recv.cls and meth == "__iter__":
            return replace(res, cls=recv.ecls), None  # (`for w in writers.values()`: each an instance)
        if recv.ecls and not recv.cls and meth in semantics.ELEMENT_READS:
            # `self.items.setdefault(k, Item(k))`, `d.get(k)`: an element of a container whose
            # elements are instances of one project class (`Val.ecls`); `d.values()`: its elements
            return (replace(res, ecls=recv.ecls) if meth in ("values", "copy") else replace(res, cls=recv.ecls)), None
        if recv.cls or meth.startswith("__"):
            return res, None
        if meth in K.SANITIZER_METHODS:
            return BOTTOM, None
        # Unknown receiver: resolve by method name when every project method of that name agrees
        # (not for generic names every other library also uses, nor on a library object).
        cands = self.methods_by_name.get(meth) if meth not in K.GENERIC_METHOD_NAMES and not recv.ext else None
        if cands and len(cands) <= 6:
            for c in cands:
                self._dep(c)
            colls = [self.collective.get(c) for c in cands]
            if all(colls):
                return res, f"`.{meth}()` {evidence.BY_NAME_NOTE} → {colls[0]}"
            # (A method that only hands the call on to another object's method of the same name,
            # `return self.policy.should_save(...)`, says nothing of its own.)
            own = [c for c in cands if not _delegates(self.functions[c], meth)] or cands
            rets = [_bind_guards(self.returns.get(c, BOTTOM), c, self.functions[c], None) for c in own]
            if all(r.pd or r.hash or r.unordered for r in rets):
                out = BOTTOM
                for c, r in zip(own, rets):
                    if r.unordered:
                        # (a dict or set in a set's order, `return self.buffers`: the order its
                        # iteration takes, as a source of its own, so that the guess stays on it)
                        line = self.functions[c].line
                        short = os.path.basename(self.fn_path.get(c, ""))
                        self._note_origin(short, line, self.fn_path.get(c, ""))
                        r = r.data().join(Val(order=frozenset({evidence.set_order_guess(Src(
                            line, 0, f"{semantics.set_iteration_desc(r.unordered)} via `{short_name(c)}()`",
                            kinds.SET_ORDER, origin=f"{short}:{line}"))})))
                    out = out.join(r)
                return res.join(evidence.mark(out, evidence.METHOD_BY_NAME, f"`.{meth}()`")), None
        elif not cands and meth not in K.GENERIC_METHOD_NAMES and meth not in K.GENERIC_ATTRIBUTE_NAMES \
                and not recv.ext and (keys := self.attrs_by_name.get(meth)) and len(keys) <= 6:
            # No project method of that name, but attributes of it holding a callable: calling
            # `obj.name(...)` calls what the attribute holds (`self._fwd = jax.jit(f)` in
            # `__init__`, then `model._fwd(x)` elsewhere), by name as a method is (a guess).
            held = [self.attr(k.rsplit(".", 1)[0], meth) for k in keys]
            if all(v is not None and v.callable for v in held):
                return applied(held[0].callable), f"`.{meth}()` {evidence.BY_NAME_NOTE} → {held[0].callable}"
        if self.settings.assume_unknown_calls_collective:
            return res, f"`.{meth}()` (unknown call assumed collective)"
        return res, None

    # ---------------------------------------------------------------- fixpoint
    def _solve(self) -> None:
        """Fixpoint over the call graph with a worklist: a function is recomputed only when a
        project function it consulted changed. Collectiveness and device access only grow."""
        self._stable = False
        self.iterations = 0
        self._return_changes = {}
        deps: dict[str, set[str]] = {}
        readers: dict[str, set[str]] = {}  # the inverse of `deps` (its functions: nothing else changes)
        graph: dict[str, set[str]] = {}  # `deps` restricted to project functions
        successors: dict[str, tuple[str, ...]] = {}  # the same, sorted (`_callees_first`)
        pending = set(self.functions)
        # Callees before callers: an acyclic chain of helpers settles in one round however deep
        # (in name order a 50-deep chain needed 50 rounds and was cut off).
        rank = _callees_first(_sorted_graph({q: self._called_by_name(f) for q, f in self.functions.items()}))
        while pending and self.iterations < MAX_ITERATIONS:
            self.iterations += 1
            self._round += 1
            self._since = {}
            self._attr_cache.clear()
            self._global_cache.clear()
            changed: set[str] = set()
            self._changed_now = changed
            again: set[str] = set()
            solved = sorted(pending, key=lambda q: (rank.get(q, 0), q))
            for q in solved:
                deps[q] = self._solve_one(q, changed, again)
            self._dep_stack = []
            self._round_changes.append(changed | {_CYCLE})
            # The graph, its inverse and the order change only where a function was solved
            # again (late rounds solve a few dozen of ~20k functions).
            regraphed = self.iterations == 1
            for q in solved:
                g = deps[q] & self.functions.keys()
                for d in g:  # (only functions are ever changed: the rest of what it read is never looked up)
                    readers.setdefault(d, set()).add(q)
                if graph.get(q) != g:
                    graph[q] = g
                    successors[q] = tuple(sorted(g))
                    regraphed = True
            maybe = set().union(*(readers.get(c, ()) for c in changed))  # (`readers` keeps stale entries)
            pending = again | {q for q in maybe if not deps[q].isdisjoint(changed)}
            if pending and regraphed:  # what each function read, as found: the order for the next round
                rank = _callees_first(successors)
        self._return_changes = None
        self.converged = not pending
        self.unsettled = sorted(pending)
        self._stable = True
        self._attr_cache.clear()
        self._global_cache.clear()
        # The facts are final: from here on entries are checked against the last round's
        # changes once, then reused for good (the prefilter and the analysis query them).
        self._round += 1
        self._since = {}
        self._changed_now = set()

    def resolve_again(self, names: list[str]) -> bool:
        """Re-solve these functions' facts to a fixpoint with every other fact fixed (see
        relocate.resolve_changes, which decides when that is the same as a rebuild). False when
        it does not settle within MAX_ITERATIONS rounds."""
        self._stable = False
        self._round, self._round_changes, self._since = 0, [], {}
        self._memo, self._call_memo, self._coll_memo = {}, {}, {}
        self._wuc_memo, self._several_memo, self._elsewhere_memo = {}, {}, {}
        self._named_calls_memo, self._params_in_memo = {}, {}
        settled = False
        with self._logging_caps():
            for _ in range(MAX_ITERATIONS):
                self._round += 1
                self._since = {}
                changed: set[str] = set()
                self._changed_now = changed
                again: set[str] = set()
                for q in sorted(names):
                    self._solve_one(q, changed, again)
                self._dep_stack = []
                self._round_changes.append(changed | {_CYCLE})
                if again:
                    return False  # a callback made another function collective: not followed here
                if not changed:
                    settled = True
                    break
        self._stable = True
        self._round += 1
        self._since = {}
        self._changed_now = set()
        return settled

    def _solve_one(self, q: str, changed: set[str], again: set[str]) -> set[str]:
        """One function's facts from the current ones (a fixpoint step); what it read."""
        f = self.functions[q]
        path = self.fn_path[q]
        self._dep_stack = [set()]
        marks: list = []
        ret = self.resolve(f.returns, path, q, marks) if f.returns else BOTTOM
        old = self.returns.get(q, BOTTOM)
        if ret != old and self._return_changes is not None:
            n = self._return_changes[q] = self._return_changes.get(q, 0) + 1
            if n > WIDEN_RETURNS_AFTER:
                ret = old.join(ret)
        if ret != old:
            self.returns[q] = ret
            changed.add(q)
        envs = _env_params(f, f.returns) if f.returns else []
        if envs != self.env_params.get(q, []):
            self.env_params[q] = envs
            changed.add(q)
        flow = ("order" if any(m is True or m == "go" for m in marks) else "data") if marks else None
        if flow and all(m is None for m in marks):
            flow += "~file"  # (every parameter reaches the result through a file read: see call_name)
        elif flow and all(m == "t" for m in marks):
            flow += "~type"  # (every one as a type predicate's argument: see call_name)
        elif flow and all(m in ("go", "gd") for m in marks):
            flow += "~guess"  # (every one through an unresolved call: `_nested_marks`)
        returned = self._returned_params(f) if flow else None
        if flow and (f.returns.get("elem") or returned is not None and returned[3] and not returned[6]
                     and set(returned[0]) <= set(returned[3]) | {p.removeprefix("@") for p in returned[2]}):
            # their elements only: content (see call_name); so too where every parameter it reads
            # is read only inside what it yields, or as the start of a piece (`_params_in`)
            flow += ":elem"
        if flow and f.returns and _measures_params(f.returns):
            # and the length of the arguments' longest element, or of a selection by their values
            # (see call_name)
            flow += "+sel" if _sized_by_content(f.returns) else "+len"
        if flow and f.returns.get("one"):
            flow += "#one"  # (one number made of them: see call_name; kept here, as the cached
            # index keeps no summary of the function)
        if flow and f.returns.get("ln"):
            flow += "#ln"  # (a list display of one length on every path: see call_name)
        if flow and self.param_flow.get(q) != flow:
            self.param_flow[q] = flow
            changed.add(q)
        tup = f.returns.get("tup") if f.returns else None
        if flow:
            if returned is not None and tup is not None:
                # (each element of a returned tuple: the parameters it is computed from,
                # `_item_arguments`)
                returned = returned + (tuple(self._params_in(x, f) for x in tup),)
            self.returned_params[q] = returned
        if tup is not None and flow:
            flows = []
            for x in tup:
                m: list = []
                self.resolve(x, path, q, m)
                fl = ("order" if any(x is True or x == "go" for x in m) else "data") if m else None
                fl = fl + ("+sel" if _sized_by_content(x) else "+len") if fl and _measures_params(x) else fl
                flows.append(fl + "#one" if fl and x.get("one") else fl)
            if self.item_flow.get(q) != flows:
                self.item_flow[q] = flows
                changed.add(q)
        if q not in self.collective or q in self.local_unless:
            # (collectiveness only grows: none, then jitted work on some parameters, more of
            # them, then collective whatever the parameters hold)
            coll, need, guess = self._collective_of(f, path)
            if coll is not None and q not in self.collective:
                self.collective[q] = coll
                changed.add(q)
                if need is not None:
                    self.local_unless[q] = need
                    if guess:
                        self.local_guess.add(q)
            elif coll is not None:  # it was jitted work on some parameters
                was = self.local_unless[q]
                if need is None:
                    del self.local_unless[q]
                    self.local_guess.discard(q)
                    changed.add(q)
                elif not need <= was or guess and q not in self.local_guess:
                    self.local_unless[q] = was | need
                    if guess:
                        self.local_guess.add(q)
                    changed.add(q)
        if q in self.collective and q not in self._ungated and (f.dgates or any("gp" in c for c in f.calls)):
            # (gated work only widens: more points, then a point under no test, for good)
            gates = self._work_gates(f, path)
            old = self.work_gates.get(q)
            if gates is None:
                self._ungated.add(q)
                if old is not None:
                    del self.work_gates[q]
                    changed.add(q)
            elif old is None or not gates <= old:
                self.work_gates[q] = gates | old if old is not None else gates
                changed.add(q)
        for call in f.calls:
            if (call.get("cb") or call.get("cbc") or call.get("gv")) and "n" in call:
                g = self._follow_reexport(call["n"])
                if self.resolve_class_name(g) in self.classes:
                    g = self.method(self.resolve_class_name(g), "__init__") or g  # a constructor: its __init__
                gf = self.functions.get(g)
                if gf is not None and gf.called_params and not self.callback_params.get(g):
                    if call.get("cbc") or any((self.ref(cb).callable or self.collective.get(self.ref(cb).fn or ""))
                                              for cb in call.get("cb", ())) \
                            or (not all(self._param_class(g, p.removesuffix("!o")) for p in gf.called_params)
                                and any(isinstance(self.instance_call_work(self.resolve(v, path)), str)
                                        for v in call.get("gv", {}).values())):
                        # (an instance with a collective `__call__` handed to a parameter it calls,
                        # where `param_classes` does not already say which class every call passes)
                        self.callback_params[g] = set(gf.called_params)
                        again.add(g)
        if q not in self.device_access:
            dev = self._device_of(f)
            if dev:
                self.device_access[q] = dev
                changed.add(q)
        return self._pop_deps()

    def gated_off(self, q: str, site: dict) -> bool:
        """Whether a call (`site`: "np", "kw", "kc", "bd" as in a summary's call record) of `q`
        takes none of its collective work: each work point's tests of `q`'s parameters
        (`work_gates`) fail on a constant the call passes there, or on the literal default it
        leaves (`sync=False`, `log(name, v)` with `sync_dist=False` by default); one not known
        (a variable, `*args`) may pass."""
        np_ = site.get("np", 0)
        if np_ == -1:
            return False
        f = self.functions[q]
        kc, kw = site.get("kc") or {}, site.get("kw") or ()
        offset = 1 if site.get("bd") and f.cls and f.params and f.params[0] in ("self", "cls") else 0

        def constant(p: str) -> str | None:
            if p not in f.params:
                return None
            i = f.params.index(p) - offset
            if 0 <= i < np_:
                return kc.get(str(i))
            if p in kw:
                return kc.get(p)
            return f.defaults.get(p)

        def fails(key: str, truth: bool) -> bool:
            # (`summary._param_gate`: a parameter tested by its truth, or `param\top\tliteral`)
            name, _, test = key.partition(GATE_SEP)
            c = constant(name)
            if c is None:
                return False
            if not test:
                return semantics.truthy_constant(c) != truth
            op, _, lit = test.partition(GATE_SEP)
            holds = semantics.literal_test_holds(c, op, lit)
            return holds is not None and holds != truth

        return all(any(fails(p, truth) for p, truth in conj) for conj in self.work_gates[q])

    def _work_gates(self, f: FunctionFacts, path: str) -> frozenset | None:
        """The tests of `f`'s parameters each of its collective work points lies under (see
        `work_gates`); None when one lies under none, or is work the summary records no place
        for (jitted work on parameters, array work on attributes, properties, callbacks)."""
        if f.param_jits or self._declared(f.name) is not None:
            return None
        if any(self.resolve(operand, path).glob for _, _, operand in f.glob_ops):
            return None
        if f.prop_reads and self._property_reads_work(f, path) is not None:
            return None
        if f.called_params and self.callback_params.get(f.name, set()) & set(f.called_params):
            return None
        out = set()
        if f.collective:
            if not f.dgates or any(not g for g in f.dgates):
                return None
            out.update(frozenset((p, t) for p, t in g) for g in f.dgates)
        for call in f.calls:
            if self.call_collective(call, path):
                g = call.get("gp")
                if not g:
                    return None
                out.add(frozenset((p, t) for p, t in g))
        return frozenset(out) if out else None

    def _called_by_name(self, f: FunctionFacts) -> set[str]:
        """The project functions `f` calls by name (the static call graph, before any solving)."""
        out = set()
        for call in f.calls:
            n = call.get("n")
            if n:
                n = self._follow_reexport(n)
                if n in self.functions and n != f.name:
                    out.add(n)
        return out

    def _collective_of(self, f: FunctionFacts, path: str) -> tuple[str | None, frozenset[str] | None, bool]:
        """(the first collective work `f` does or None; when all of it is jitted work on some of
        its parameters, those parameters (see `local_unless`); whether that work may capture
        global arrays)."""
        d = self._declared(f.name)
        if d is not None:
            return d[1], None, False
        short = os.path.basename(path)
        # Its own collective work; when that is only guessed, certain work in a helper it calls
        # is named instead (a finding is only as certain as the work it names).
        own = f"{f.collective[0]} ({short}:{f.collective[1]})" if f.collective else None
        if own is not None and evidence.collective_guess(own) is None:
            self._note_origin(short, f.collective[1], path)
            return own, None, False
        for desc, line, operand in f.glob_ops:
            if self.resolve(operand, path).glob:
                # Array work on an attribute or global that holds a global array.
                self._note_origin(short, line, path)
                return f"{desc} ({short}:{line})", None, False
        first: str | None = None
        need: set[str] = set()
        guess = False
        for desc, line, params, *captures in f.param_jits:
            if first is None:
                self._note_origin(short, line, path)
                first = f"{desc} ({short}:{line})"
            need.update(params)
            guess = guess or bool(captures)
        for call in f.calls:
            c = self.call_collective(call, path)
            if c:
                n, g = self._call_need(call, path)
                if n is None and (own is None or evidence.collective_guess(_chain(c, call, f, short)) is None):
                    return _chain(c, call, f, short), None, False
                if n is None:
                    continue
                first = first or _chain(c, call, f, short)
                need.update(n)
                guess = guess or g
        pw = self._property_reads_work(f, path) if f.prop_reads else None
        if pw is not None and (evidence.collective_guess(pw) is None or (first is None and own is None)):
            return pw, None, False
        if own is not None:
            self._note_origin(short, f.collective[1], path)
            return own, None, False
        if f.called_params:
            cb = self.callback_params.get(f.name)
            if cb and cb & set(f.called_params):
                return f"a collective callback passed as `{sorted(cb & set(f.called_params))[0]}`", None, False
        return first, (frozenset(need) if first is not None else None), guess

    def _device_of(self, f: FunctionFacts) -> str | None:
        if f.device_access:
            path = self.fn_path[f.name]
            self._note_origin(os.path.basename(path), f.device_access[1], path)
            return f"{f.device_access[0]} ({os.path.basename(path)}:{f.device_access[1]})"
        for call in f.calls:
            n = call.get("n")
            if n:
                n = self._follow_reexport(n)
                if n in self.functions:
                    self._dep(n)
                if n in self.device_access and n != f.name:
                    return self.device_access[n]
        return None

    def _import_device_access(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for m, s in self.modules.items():
            if s.import_device_access and m not in self.library_modules:
                self._note_origin(os.path.basename(s.path), s.import_device_access[1], s.path)
                out[m] = f"{s.import_device_access[0]} ({os.path.basename(s.path)}:{s.import_device_access[1]})"
        changed = True
        while changed:
            changed = False
            for m, s in self.modules.items():
                if m in out:
                    continue
                lazy = s.lazy_imports
                for im in s.imported_modules:
                    if lazy and im in lazy:
                        continue  # (imported in a function: loads when it is called, not with m)
                    im = self.module_alias(im)
                    if im in out and im != m:
                        out[m] = out[im]
                        changed = True
                        break
        return out

    def import_device_access(self, module: str) -> str | None:
        """Device access that happens when `module` is imported (transitively), for MCJ401."""
        return self._module_device_access.get(self.module_alias(module))

    def module_alias(self, name: str) -> str:
        """The linted module an import names (through namespace packages, see _by_path_suffix)."""
        if name in self.modules:
            return name
        return self._suffix_map.get(name) or name

    # ---------------------------------------------------------------- prefilter
    def single_process_script(self, s: ModuleSummary) -> bool:
        """A program that runs as one process, so nothing in it is cross-process work: a script
        pinned to the CPU backend (on the CPU, JAX is multi-process only through `initialize()`),
        or a pytest module that names no multi-process API, plugin or per-process fixture
        (`ModuleSummary.process_free_test`: pytest runs it in one process). Either only when no
        `jax.distributed.initialize()` call is reachable from it (in it or in the project modules
        it imports, transitively, outside their `__main__` blocks; for a test, its conftests too)
        and no project module imports
        it: a module imported by a multi-process program runs in that program. Or a script whose
        every device set is its own process's (`ModuleSummary.device_scope` "local": a mesh of
        `jax.local_devices()`), with no project module it imports naming a global one: nothing it
        runs spans another process's devices, whether or not the job has several."""
        local = s.device_scope == "local"
        if s.pins_cpu or local:
            roots = [s]
        elif s.process_free_test:
            roots = self._with_plugins([s, *self._conftests_above(s.path)])
            if roots is None:
                return False
        else:
            return False
        if self._imported_by_project(s.module):
            return False
        seen, todo = {m.module for m in roots}, list(roots)
        while todo:
            m = todo.pop()
            # (an imported module's `__main__` block does not run on import)
            if m.initialize_line and (m is s or m.path.endswith("conftest.py") or not m.initialize_script_only):
                return False
            if local and m.device_scope == "global":
                return False
            for name in m.imported_modules:
                name = self.module_alias(name)
                if name not in seen and name in self.modules:
                    seen.add(name)
                    todo.append(self.modules[name])
        return True

    def mode_not_selected(self, s: ModuleSummary) -> str | None:
        """Where the program `s` belongs to brings up several processes only in a mode that
        nothing in it selects: every `jax.distributed.initialize()` call reachable from it is
        gated by a test of a mode value (`if cfg.backend != "multi": return`,
        `ModuleSummary.initialize_gates`) whose value no module of the program produces
        (`ModuleSummary.mode_sets`: the literal passed, assigned, returned or given as a default
        under any name; a command-line option or a keyword value not literal of the tested name
        counts as any). The program: `s`, the project modules that import it (transitively) and
        those any of these imports (transitively; an imported module's `__main__` block does not
        run). Then whether it runs as several processes is a guess (`evidence.MODE_NOT_SELECTED`):
        the gate's text ("backend=multi"), None where an initialization is not so gated, where
        one's mode is selected, or where there is none (then nothing here tells)."""
        memo = self.__dict__.setdefault("_mode_memo", {})
        key = s.module
        if key in memo:
            return memo[key]
        if not self._any_gated_initialize():  # (no program of the project can have a gate)
            memo[key] = None
            return None
        importers = self._importers_of_map()
        roots, todo = {s.module: s}, [s.module]
        while todo:
            for m in importers.get(todo.pop(), ()):
                if m not in roots and m in self.modules:
                    roots[m] = self.modules[m]
                    todo.append(m)
        seen, todo = dict(roots), list(roots.values())
        while todo:
            m = todo.pop()
            for name in m.imported_modules:
                name = self.module_alias(name)
                if name not in seen and name in self.modules:
                    seen[name] = self.modules[name]
                    todo.append(self.modules[name])
        gates: list[str] = []
        for name, m in seen.items():
            if m.initialize_line and (name in roots or not m.initialize_script_only):
                if not m.initialize_gates or "" in m.initialize_gates:
                    memo[key] = None
                    return None
                gates += m.initialize_gates
        out = None
        if gates:
            given = {x for m in seen.values() for x in m.mode_sets}
            if not any("=" + g.split("=", 1)[1] in given or g.split("=", 1)[0] + "=*" in given for g in gates):
                out = gates[0]
        memo[key] = out
        return out

    def _any_gated_initialize(self) -> bool:
        """Whether some module has a gated `initialize()` (`mode_not_selected` can answer other
        than None only then); computed once per index."""
        out = self.__dict__.get("_gated_initialize")
        if out is None:
            out = self.__dict__["_gated_initialize"] = any(
                m.initialize_line and m.initialize_gates and "" not in m.initialize_gates for m in self.modules.values())
        return out

    def _importers_of_map(self) -> dict[str, set[str]]:
        """module -> the project modules importing it (built once per index, as `_importers`)."""
        out = self.__dict__.get("_importers_of")
        if out is None:
            out = {}
            for m, s in self.modules.items():
                for name in s.imported_modules:
                    name = self.module_alias(name)
                    if name != m:
                        out.setdefault(name, set()).add(m)
            self._importers_of = out
        return out

    def _imported_by_project(self, module: str) -> bool:
        """Whether another project module imports `module` (the importers' set is built once per
        index, on the first question, and dropped where imports change: relocate.py)."""
        imported = self.__dict__.get("_importers")
        if imported is None:
            imported = set()
            for m, s in self.modules.items():
                for name in s.imported_modules:
                    name = self.module_alias(name)
                    if name != m:
                        imported.add(name)
            self._importers = imported
        return module in imported

    def _with_plugins(self, roots: list[ModuleSummary]) -> list[ModuleSummary] | None:
        """`roots` and the plugin modules their `pytest_plugins` load, transitively (an autouse
        fixture of a plugin runs in the test's process); None where one is not a project module
        or not named by a literal: it may initialize, unseen."""
        out, todo = list(roots), list(roots)
        while todo:
            for name in todo.pop().test_plugins:
                m = self.modules.get(self.module_alias(name))
                if m is None:
                    return None
                if all(m is not o for o in out):
                    out.append(m)
                    todo.append(m)
        return out

    def _conftests_above(self, path: str) -> list[ModuleSummary]:
        """The `conftest.py` modules pytest loads for a test file at `path` (its directory and those
        above it)."""
        d = os.path.dirname(os.path.abspath(path))
        return [s for s in self.modules.values() if os.path.basename(s.path) == "conftest.py"
                and (d + os.sep).startswith(os.path.dirname(os.path.abspath(s.path)) + os.sep)]

    def needs_full_analysis(self, s: ModuleSummary) -> bool:
        """Whether the file can produce a finding. Per function (module body included): it must
        touch a divergent value — directly, from a project helper, attribute or global — and do
        collective work (directly or through any call), or mix order and process dependence
        (per-process partitions), or hash strings (seeds). Divergent values passed between
        functions of the file are covered: the caller then touches the value *and* calls the
        collective callee. MCJ401 files (calling `jax.distributed.initialize()`) and files with
        star imports (usually scripts) always qualify."""
        if s.initialize_line:
            return True
        if any(k.startswith(STAR) for k in s.imports):
            return True  # names from `from common import *` resolve only in the file pass
        traced = None  # (the functions traced in the module, read once it matters)
        for q, f in s.functions.items():
            pd, order, hashed, collective = self.function_claims(q, f, s.path, all_refs=False)
            if collective and (pd or order or hashed):
                return True
            if (pd and order and "x" in f.flags) or (hashed and "s" in f.flags):
                return True
            if pd and traced is None:
                traced = [g.name for g in s.functions.values() if g.jit or "j" in g.flags]
            if pd and any(q == t or q.startswith(t + ".") or t.startswith(q + ".") for t in traced):
                return True  # a process-dependent value read (or closed over) while a traced body runs (MCJ304)
            if "d" in f.flags and collective:
                return True  # a collective's result may be dropped (MCJ305)
            if "r" in f.flags and collective:
                return True  # a local read's failure sends one process past a `return` (MCJ104)
            if "t" in f.flags and any(self.function_claims(g, gf, s.path, all_refs=False)[3] for g, gf in s.functions.items()):
                return True  # a thread started where collective work is done (MCJ105)  # a per-process partition of an unordered listing; a hashed seed
        return False

    def function_claims(self, q: str, f: FunctionFacts, path: str, all_refs: bool = True) -> tuple[bool, bool, bool, bool]:
        """What the summary pass claims about one function's body: (touches process-dependent
        values, touches an order, hashes strings, does collective work), directly or through
        the calls and project references it makes. The precise pass never finds more in it
        (tests/lint/test_pass_agreement.py). `all_refs=False`: the prefilter's shortcut, which
        stops reading references once both of the first two are known."""
        pd, order, hashed = "p" in f.flags, "o" in f.flags, "h" in f.flags
        collective = q in self.collective or bool(f.jit)
        if not pd and any(self.decorator_gate(d) is not None for d in f.decos):
            pd = True  # its body runs where its decorator's process-dependent condition holds
        if not pd and any(self._hands_to_gate(call, path) for call in f.calls if call.get("cba")):
            pd = True  # it hands a callable on to where a process-dependent condition gates it
        for call in f.calls:
            # The arguments' taint is already in the function's flags.
            res, coll = self.call_without_args(call, path)
            pd = pd or res.process_dependent
            order = order or bool(res.order) or res.unordered
            hashed = hashed or bool(res.hash)
            collective = collective or coll is not None or bool(call.get("cbc"))
        if all_refs or not (pd and order):
            for r in f.refs:
                v = self.ref(r)
                pd = pd or v.process_dependent
                order = order or bool(v.order) or v.unordered
                hashed = hashed or bool(v.hash)
                collective = collective or bool(v.callable)
        return pd, order, hashed, collective


def _structure_returns(f: FunctionFacts) -> tuple[Sym, tuple] | None:
    """What `ProjectIndex._structure_by_arguments` reads of `f`'s return summary (the tests
    choosing None or a value, "trs", of the whole and of each constant key; the keys added under
    a test, "kp") and its parameters with a default; None where it has none of them."""
    ret = f.returns
    if not ret:
        return None
    out: Sym = {}
    if ret.get("trs"):
        out["trs"] = ret["trs"]
    if ret.get("kp"):
        out["kp"] = ret["kp"]
    keys = ret.get("keys")
    if isinstance(keys, dict):
        chosen = {k: {"trs": x["trs"]} for k, x in keys.items() if isinstance(x, dict) and x.get("trs")}
        if chosen:
            out["keys"] = chosen
    if not out:
        return None
    return out, tuple(p for p in f.params if p in f.defaults or p in f.host_defaults)


def _param_glob_ops(f: FunctionFacts) -> list:
    """The reductions of its parameters a function does (`FunctionFacts.glob_ops` entries on
    `params`): what `ProjectIndex.glob_param_work` asks at each call, kept where the index ships."""
    return [list(g) for g in f.glob_ops if "params" in g[2]]


# Pseudo-dependency of a value computed where `_written_under_condition` (or `_restored_agreed`)
# was cut short (inside another of its answers): it holds less than the same question asked anywhere else gives, so a
# memo entry holding it is reused only there (`_GUARDED not in deps or _cut_depth`
# at each memo). Without this the answers depended on the order the questions came in: an
# incremental run's index, which asks in another order, disagreed with a rebuild (certain vs guess).
_GUARDED = "<cut short by the written-under-condition guard>"
_CYCLE = "<cycle>"  # pseudo-dependency of values a resolution cycle cut short (never reused across rounds)


def _returned_call(f: FunctionFacts) -> tuple[str, dict[str, str]] | None:
    """Of a function returning one call by name (`return Args(rank=rank, steps=10)`, `return
    cls(rank)`, `return build(rank, 4)`): the callee and, for each of its arguments that is one
    of this function's parameters as it is, that parameter by the argument's key (a position
    as a string, or a keyword); None for any other return (`ProjectIndex.made_instance`)."""
    ret = f.returns
    if not ret or set(ret) != {"via"} or len(ret["via"]) != 1:
        return None
    call = ret["via"][0]
    if "n" not in call or call.get("np", 0) == -1:
        return None
    pa = call.get("pa") or ({call["pk"]: call.get("a")} if "pk" in call else {})
    handed: dict[str, str] = {}
    for key, sym in pa.items():
        ps = (sym or {}).get("params", ())
        if sym and set(sym) <= {"params", "lp"} and len(ps) == 1:
            handed[key] = ps[0].removesuffix("!o")
    if not pa and sum(c.get("n") == call["n"] for c in f.calls) == 1:
        # (a call of a helper keeps no argument apart: what the function's one call of it hands
        # on as it is, `FunctionFacts.forwards`)
        for fw in f.forwards:
            if fw.get("n") == call["n"]:
                handed.update(fw["fw"])
    return call["n"], handed


def _param_attrs(cf: ClassFacts) -> dict[str, tuple[str, bool]]:
    """The attributes of a class `__init__` stores from one of its parameters as it is (`self.rank
    = rank`, a dataclass / NamedTuple / attrs field): attribute -> (its `"ip"`, whether `ipi`)."""
    out = {}
    for attr, sym in cf.attrs.items():
        ip = sym.get("ip", ())
        if len(ip) == 1 and set(sym) <= {"ip", "ipi"}:
            out[attr] = (ip[0], bool(sym.get("ipi")))
    return out


def _bound_call_names(f: FunctionFacts) -> list[str]:
    """The methods `f` calls on its own object (`self.helper()`: summary calls with "bd" and "n")."""
    return sorted({c["n"] for c in f.calls if c.get("bd") and "n" in c})


def _named_calls_only(sym: Sym) -> Sym:
    """`sym` without the results of method calls (`{"m": ...}`)."""
    out = {k: v for k, v in sym.items() if k != "via"}
    via = [c for c in sym.get("via", ()) if "n" in c]
    if via:
        out["via"] = via
    return out


# The keys of a symbolic value `ProjectIndex._direct` reads ("statics", "hl" only with "callable").
_DIRECT_KEYS = frozenset({"pd", "pdc", "order", "hash", "tr", "u", "callable", "jitf", "ckpt", "sharding", "glob", "cls",
                          "san", "sub", "rng", "dev", "rep"})
# What `_resolve` reads of a symbolic value after its references and calls (none: their join).
_COMPOSITE_KEYS = frozenset({"ip", "trs", "elem", "tup", "keys", "host", "cnt", "ecls", "one"})
_EXT = Val(ext=True)


def _with_ext(v: Val) -> Val:
    """`replace(v, ext=True)` (Vals are immutable: an equal one may be shared)."""
    return _EXT if v is BOTTOM else v if v.ext else replace(v, ext=True)


def _flat(v: Val) -> Val:
    return replace(v, items=None) if v.items is not None else v


def _leaf(v: Val) -> Val:
    """A value kept under a dict's key: one level (a helper returning a dict of its own result
    would nest deeper each round of the fixpoint)."""
    return replace(v, items=None, keys=None) if v.items is not None or v.keys is not None else v


def _chain(c: str, call: dict, f: FunctionFacts, short: str) -> str:
    """`save()` → checkpointer `.save()` (ckpt.py:12): how a function reaches collective work."""
    callee = call.get("n") or call.get("m")
    if not callee:
        return c
    if c.count("→") >= 2:  # the innermost steps are kept; the ones between are elided, visibly
        return c if c.startswith("… → ") else f"… → {c}"
    name = f"`{short_name(callee)}()`"
    return c if c.startswith(name) else f"{name} → {c}"


_BUILTIN_NAMES = frozenset(dir(__import__("builtins")))


def _is_known_library(q: str) -> bool:
    return q.split(".")[0] in {"jax", "numpy", "os", "sys", "logging", "math", "time", "json", "re", "collections",
                               "functools", "itertools", "typing", "dataclasses", "abc", "pathlib", "print", "len",
                               "isinstance", "str", "int", "float", "list", "dict", "tuple", "set", "range", "super",
                               "getattr", "setattr", "hasattr", "type", "enumerate", "zip", "sorted", "min", "max"}


def build_project_index(summaries: Iterable[ModuleSummary], settings: AnalysisSettings,
                        libraries: Sequence[ModuleSummary] = (), solve: bool = True) -> ProjectIndex:
    index = ProjectIndex(list(summaries), settings, libraries, solve=solve)
    return index


def _sym_names_at(sym: object, key: str) -> set[str]:
    """The names a stored value's summary holds under `key`, at any depth (in the calls it is
    made by: `list(files)`)."""
    out: set[str] = set()
    if isinstance(sym, dict):
        out.update(sym.get(key, ()))
        for k, v in sym.items():
            if k != key and isinstance(v, (dict, list)):
                out |= _sym_names_at(v, key)
    elif isinstance(sym, list):
        for v in sym:
            out |= _sym_names_at(v, key)
    return out


def _sym_ips(sym: object) -> set[str]:
    """The `__init__` parameter references (`"ip"`) a stored value's summary holds, at any depth."""
    return _sym_names_at(sym, "ip")


def _sym_params(sym: object) -> set[str]:
    """The parameters of its function a value's summary reads (`"params"`), at any depth."""
    return {p.removesuffix("!o") for p in _sym_names_at(sym, "params")}


def _argument(pa: dict, call: dict, param: str, pos: int) -> object:
    """A recorded call's argument for parameter `param` at position `pos` (`pa`: its arguments by
    key), None where it is not passed or not recorded."""
    if param in pa or param in call.get("kw", ()):
        return pa.get(param)
    return pa.get(str(pos)) if 0 <= pos < call.get("np", 0) else None


def _cuts_piece(sym: object) -> bool:
    """Whether a value's summary cuts a per-process piece (`x[i::n]`, `np.array_split(x, n)[i]`)."""
    if isinstance(sym, dict):
        if sym.get("n") in (evidence.EQUAL_PIECES_CALL, evidence.SPLIT_POINTS_CALL):
            return True
        return any(_cuts_piece(v) for k, v in sym.items() if isinstance(v, (dict, list)))
    if isinstance(sym, list):
        return any(_cuts_piece(v) for v in sym)
    return False
