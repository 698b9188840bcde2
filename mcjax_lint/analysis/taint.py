"""Shared per-file taint/dataflow analysis on libcst (the precise pass every rule reads).

A forward abstract interpretation over each function body (and the module body): environments
map names to `Val`s, branches are analysed separately and joined, loop bodies twice (loop-carried
values), names assigned under a divergent condition take that condition's sources (implicit
flow). Calls are resolved through the file's imports, the built-in knowledge and the project
index. What the rules need is recorded per node:

- `conds[node]`: the value of an `if`/`while`/ternary/`match`/`and`/`or` condition;
- `iters[node]`: the value of a `for`/comprehension iterable;
- `calls[node]`: a `CallInfo` (resolved name, whether and which collective work it is, args);
- `sinks`: divergent values reaching collective work, seeds or per-process partitions.

Values from a helper in another function/file are re-anchored at the call site ("`jax.
process_index()` via `is_main()` (utils.py:12)"), so every location a finding names is in the
file being analysed.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import libcst as cst

from mcjax_lint.analysis.tree import OWN_SCOPE, children, walk as _walk, walk_own_scope
from mcjax_lint.analysis.positions import Range

from mcjax_lint import knowledge as K
from mcjax_lint.analysis import evidence, kinds, local_uses, semantics
from mcjax_lint.analysis.env import Env, branch_changes
from mcjax_lint.analysis.index import ProjectIndex, short_name
from mcjax_lint.analysis import read_cst
from mcjax_lint.analysis.read_cst import last_statement, read
from mcjax_lint.analysis.summary import FunctionFacts, jit_statics
from mcjax_lint.analysis.values import (BOTTOM, MAX_KEYS, SANITIZED, Src, Val, _cap, applied, join_all, least_certain,
                                        one_number, rekinded, replace, union_sources)
from mcjax_lint.model import Edit, Fix
from mcjax_lint.settings import AnalysisSettings

MAX_LOOP_DEPTH_TWICE = 3


@dataclass
class CallInfo:
    node: cst.Call
    name: str | None = None  # qualified callee when known
    collective: str | None = None  # description of the collective work it does
    token: str | None = None  # identity used to compare collective sequences
    args: list[tuple[object, Val]] = field(default_factory=list)  # (position or keyword, value)
    result: Val = BOTTOM
    exits: bool = False  # sys.exit() and friends
    may_raise_pd: bool = False  # raises depending on process-local state (next() on local data, ...)
    never_raises: bool = False  # a method that only waits and returns (`semantics.never_raising_method`)
    raise_guess: str = ""  # (may_raise_pd by a guess: the method named here raises StopIteration)
    exit_collective: str | None = None  # for context managers: collective work in __exit__
    enter_collective: str | None = None  # for context managers: collective work in __enter__
    callee: str | None = None  # the project method a call on a known class runs (collective or not)
    via_project: bool = False  # collective through a project function (not a primitive)
    # (`len(x)` of a name that holds None on some processes: the sources that decide where; it
    # raises TypeError there, `Divergence._none_use_point`)
    none_use: frozenset = frozenset()


@dataclass
class Sink:
    """A divergent value used where it must agree across processes. The engine says where
    (`place`) and which of the value's taints got there (`facet`, with `src.kind` saying what
    the source is: analysis/kinds.py); the rule modules decide which they report."""

    place: str  # kinds.COLLECTIVE_INPUT, PARTITION, SEED, GLOBAL_SHAPE, STATIC_ARGUMENT, REPLICATED_DATA
    facet: str  # kinds.ORDER, HASH, SHAPE, TREE, VALUE
    src: Src  # the divergence source (for order/hash: where the finding goes)
    node: cst.CSTNode  # where the value is used
    what: str  # e.g. "collective `train_step` (jit)"


@dataclass
class _Scope:
    env: Env
    outer: _Scope | None
    is_module: bool = False
    cls: str | None = None  # qualified class of a method's `self`
    qualname: str = ""
    params: frozenset = frozenset()  # a function's own parameters (in its scope only)
    strings: dict = field(default_factory=dict)  # names assigned to a str literal (semantics.note_string_binding)
    peeks: dict = field(default_factory=dict)  # names assigned `next(it)` (semantics.StatementRules.note_peek)
    sized: dict = field(default_factory=dict)  # what made each name's value last (semantics.note_sized)
    attr_owner: dict = field(default_factory=dict)  # an agreed attribute store's object (`stored_attribute`)
    decided: dict = field(default_factory=dict)  # parameters constant at every call (index.decided), never reassigned
    node: object = None  # the function (or module) whose body this scope runs (`_scope_bindings`)
    # Parameters to which every call that handed this function divergent values passed a literal
    # constant (`FileAnalysis.fn_consts`: the constants they passed), while not yet reassigned:
    # analysed again for those calls, an `if` they all decide alike runs that arm (`decided`).
    context: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.env, Env):
            self.env = Env(self.env)


_BUILTINS = frozenset(dir(__import__("builtins")))


@dataclass
class _Comprehension:
    """What a comprehension's result gathers (`FileAnalysis.comp_*`): its value, and what decides
    how many elements it has."""

    kind: str
    out: Val = BOTTOM
    length: Val = BOTTOM


def _code(module: cst.Module, node: cst.CSTNode) -> str:
    return module.code_for_node(node)


class FileAnalysis(semantics.StatementRules):
    def __init__(self, module: cst.Module, positions, path: str, modname: str, index: ProjectIndex,
                 settings: AnalysisSettings, imports: dict[str, str], source: str | None = None):
        self.module = module
        self._text = source  # the file's text when the caller has it (else regenerated from `module`)
        self._names_count: bool | None = None  # whether the file names the process count (`decided`)
        self._globals_declared: frozenset[str] | None = None  # (`declared_global`)
        # Whether a `global`/`nonlocal` statement may be in the file (`may_declare`, read when a
        # question needs it): where none is, the walks that look for them are not needed.
        self._may_declare_: bool | None = None
        self.positions = positions
        self.path = path
        self.modname = modname
        self.index = index
        self.settings = settings
        self.imports = imports
        self.conds: dict[cst.CSTNode, Val] = {}
        # attribute reads of an object that has the attribute only where a process-dependent
        # condition held (`ProjectIndex.absent_unless`): the read raises on the other processes
        self.absent_reads: dict[cst.Attribute, Val] = {}
        self.none_uses = False  # some call's `CallInfo.none_use` is set, or `none_reads` has one
        # `x[k]` of a name that holds None on some processes: the sources that decide where
        self.none_reads: dict[cst.Subscript, frozenset] = {}
        # A conditional expression on a process-dependent value that chose between functions ->
        # the first call that runs the chosen one as collective work.
        self.chosen_calls: dict[cst.IfExp, cst.Call] = {}
        self.iters: dict[cst.CSTNode, Val] = {}
        self.calls: dict[cst.Call, CallInfo] = {}
        # Defs whose decorator runs their body only where a process-dependent condition holds
        # (`semantics.GATED_CALL`): def -> (the decorator, that condition).
        self.gated_defs: dict[cst.FunctionDef, tuple[cst.Decorator, Val]] = {}
        # Calls handing collective work on to where such a condition gates it (`_gated_callback`):
        # call -> (that condition, the argument, its work).
        self.gated_calls: dict[cst.Call, tuple[Val, cst.CSTNode, str]] = {}
        self._cached_reads: dict[tuple[str, str], tuple[int, int]] = {}  # first read of a cached property
        # A call making an instance of a project class: what its attributes hold from this
        # construction (`ProjectIndex.instance_attrs`; `bound_instance` keeps it with the name)
        self._made: dict[cst.Call, dict[str, Val]] = {}
        self._info: CallInfo | None = None  # the library call `library_call` decides now, and its work
        self._work: str | None = None
        self.sinks: list[Sink] = []
        # names each scope bound from an agreed cross-process result (`_note_agreed`)
        self._agreed: dict[str, set[str]] = {}
        self._shared_results = 0  # calls so far that certainly did collective work (`_note_agreed`)
        self.except_conds: dict[cst.ExceptHandler, Val] = {}
        self.module_defs: dict[str, str] = {}
        for stmt in module.body:
            if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                self.module_defs[stmt.name.value] = f"{modname}.{stmt.name.value}"
        self.module_scope = _Scope({}, None, is_module=True, qualname=f"{modname}.<module>", node=module)
        self.scope = self.module_scope
        self.cls_stack: list[str] = []
        self.pending: list[tuple] = []
        self.loop_depth = 0
        # The orders of the loops whose bodies are being run (`enter_iteration`), and the order
        # sources that reached a project helper doing collective work from inside such a loop
        # as its own (`_per_element_collective`).
        self._iter_orders: list[frozenset[Src]] = []
        self._element_orders: set[Src] = set()
        # Order sources an array's shape was computed from (`np.zeros((n, n))` with n the size of
        # the element a set's iteration reached): the shape, not only the content, differs.
        self._shape_orders: set[Src] = set()
        self.fn_params: dict[str, dict[str, Val]] = {}  # same-file function -> tainted params from callers
        self._glob_params: dict[str, frozenset[str]] = {}  # same-file function -> params every call gives a global array
        # same-file function -> the literal constants each parameter holds at the calls recorded in
        # `fn_params` (`semantics.constant_repr`; None where a call passes something else)
        self.fn_consts: dict[str, dict[str, frozenset[str] | None]] = {}
        self.fn_nodes: dict[str, tuple] = {}
        self._sink_keys: set = set()
        # A comprehension whose filter is process-dependent -> the filter's taint (which elements
        # it keeps differs by process).
        self.comp_filters: dict[cst.CSTNode, Val] = {}
        # Calls that start collective work on another thread -> (what it does, the starting
        # scope's qualname, the target project function); collective calls per scope qualname.
        self.thread_starts: dict[cst.Call, tuple[str, str, str | None]] = {}
        self.row_displays: set[cst.CSTNode] = set()  # displays of arrays whose first axis alone differs
        self.concurrent_starts: set[cst.Call] = set()  # of those, the ones run on several threads at once
        self.collective_scopes: dict[str, set[cst.Call]] = {}
        self.scope_calls: dict[str, set[str]] = {}  # project functions each scope calls
        self.key_writes: set[tuple[str, str]] = set()  # (dict name, constant key) written in the current branch
        self.keys_added: set[str] = set()  # containers a `d[k] = v` may have given a new key in the current branch
        self.grown: set[str] = set()  # containers a method (`xs.append(v)`) grew in the current branch
        self.decided_ifs: dict[cst.If, bool] = {}  # `if` on parameters constant at every call -> the arm taken
        self._counts: dict[int, tuple[set[str], set[str], dict]] = {}  # `semantics.scope_counts` of a scope's function or module
        self.seeded_modules: set[str] = set()
        self.seeded_per_process: set[str] = set()  # modules seeded with a process-dependent value
        self._full_positions = None
        self._mesh_context: bool | None = None  # (semantics.mesh_context_in, read once when needed)
        self._local_call_nodes: set[int] = set()  # jitted calls found to run on this process alone
        # name -> (test, arm, tree source): None on the processes of that arm of a process-dependent `if`
        self._placeholders: dict[str, tuple] = {}
        # the tree sources of names bound to None in exactly one arm of a process-dependent `if`
        self.none_arm_sources: set[Src] = set()
        self._def_values: dict[str, Val] = {}  # each def's own value (a call through it is a call of the def)
        # Functions traced by jit/pmap/shard_map (decorated, or a def of this file given to a
        # wrapper) -> how they are traced (a guess where the wrapper may run them on host data
        # alone): their bodies run once per process, at trace time.
        self.traced: dict[str, str] = {}
        # Functions defined in an arm of an `if` whose test differs between processes: they exist
        # only on the processes that took that arm (`_trace_constant`); how deep such arms nest here.
        self.defined_per_process: set[str] = set()
        self._per_process_arms = 0
        self._loop_nodes: list = []  # the loops the statement being analysed is in, innermost last
        # `if`s one arm of which sets a `while` loop's counter back and `continue`s, under a
        # process-dependent test (`semantics.rewound_counters`): -> whether every value it set
        # back to is agreed (a guess for the counter, `evidence.REWOUND_COUNTER`).
        self.rewinds: dict[cst.If, bool] = {}
        # Collective work called as an expression statement (its result dropped) -> the scope's
        # body it is in (a FunctionDef or the module).
        self.discarded: dict[cst.Call, cst.CSTNode] = {}

    # ================================================================ positions & sources
    def pos(self, node: cst.CSTNode):
        """(start line, start column, end line, end column) of a node; `.start`/`.end` too."""
        r = self.positions.get(node)
        if r is None:  # a node type the lean provider skips: ask libcst's full provider once
            if self._full_positions is None:
                from libcst.metadata import MetadataWrapper, PositionProvider

                self._full_positions = MetadataWrapper(self.module, unsafe_skip_copy=True).resolve(PositionProvider)
            c = self._full_positions[node]
            r = Range((c.start.line, c.start.column, c.end.line, c.end.column))
        return r

    def line(self, node: cst.CSTNode) -> int:
        return self.pos(node)[0]

    # ================================================================ facts rules ask
    def read_after(self, call: cst.Call, name: str) -> bool:
        """Whether the variable `name` of the scope of `call`, a collective whose result is
        dropped (`discarded`), is read after the call before it is bound again."""
        scope = self.discarded.get(call)
        return scope is not None and local_uses.read_after(scope, name, self.pos(call)[2], self.line)

    def src(self, node: cst.CSTNode, desc: str, kind: str = "", fix: Fix | None = None) -> Src:
        r = self.pos(node)
        return Src(r[0], r[1], desc, kind, r[2], r[3], "", fix)

    def _set_iteration(self, node: cst.CSTNode, v: Val) -> Src:
        """The source of an order taken from iterating the set `v` (`semantics.set_order`)."""
        s = self.src(node, semantics.set_iteration_desc(v.unordered), kinds.SET_ORDER, self.wrap_sorted_fix(node))
        return evidence.set_order_guess(s)

    def wrap_sorted_fix(self, node: cst.CSTNode, key: str | None = None) -> Fix:
        r = self.pos(node)
        text = _code(self.module, node).strip()
        repl = f"sorted({text}, key={key})" if key else f"sorted({text})"
        return Fix("Wrap in `sorted(...)` so every process sees the same order",
                   (Edit(r[0], r[1], r[2], r[3], repl),))

    def anchor(self, v: Val, node: cst.CSTNode, via: str, call: bool = True, unlocated_only: bool = False) -> Val:
        """Re-anchor sources found in a helper (or attribute) at the use site, naming it.

        Every value that comes from the project index goes through here: its sources carry
        lines of other files (`Src.located` is false) until moved. `unlocated_only` keeps the
        sources already located in this file (a library call's arguments, a receiver's taint)."""
        if not (v.pd or v.pdc or v.order or v.hash or v.items is not None or v.keys):
            return v
        r = self.pos(node)
        name = f"`{via}()`" if call else f"`{via}`"

        def move(s: frozenset[Src]) -> frozenset[Src]:
            if unlocated_only and all(x.located for x in s):
                return s
            return least_certain(x if unlocated_only and x.located else
                             Src(r[0], r[1], f"{x.desc} via {name}" if " via " not in x.desc else x.desc,
                                 x.kind, r[2], r[3], x.origin or (f"line {x.line}" if x.line else ""), guess=x.guess) for x in s)

        items = tuple(self.anchor(x, node, via, call, unlocated_only) for x in v.items) if v.items is not None else None
        keys = tuple((k, self.anchor(x, node, via, call, unlocated_only)) for k, x in v.keys) if v.keys else v.keys
        shape = v.shape
        if any(x.kind == kinds.LENGTH and not x.located for x in shape):
            # (what decides the count of a container a helper built: `ProjectIndex` "cnt")
            length = frozenset(x for x in shape if x.kind == kinds.LENGTH and not x.located)
            shape = _cap((shape - length) | move(length))
        return replace(v, pd=move(v.pd), pdc=move(v.pdc), order=move(v.order), hash=move(v.hash), items=items,
                       shape=shape, keys=keys)

    # ================================================================ names
    def local(self, name: str) -> Val | None:
        return semantics.lookup_local(self.scope, name)

    def stored_attribute(self, value: cst.BaseExpression, attr: str) -> Val | None:
        """`obj.attr` read back after `obj.attr = v` stored an agreed v on this very object (the
        local name still bound to what it was then, in this function): v. (Only agreed values
        are kept: an alias or a call given `obj` may store again, and silence is the safe side.)"""
        if not isinstance(value, cst.Name):
            return None
        key = semantics.stored_attribute_key(value.value, attr)
        v = self.scope.env.get(key)
        if v is None or self.scope.attr_owner.get(key) is not self.local(value.value):
            return None
        return v

    def stored_by_call(self, value: cst.BaseExpression, attr: str) -> Val | None:
        """`obj.attr` read after `obj.update(loss)` called a method that stores into that
        attribute from its parameters (`FunctionFacts.param_writes`), on this very object (the
        local name still bound to what it was then, in this function): what the call passed
        for them (`_method_stores`), to be joined with what the attribute holds otherwise."""
        if not isinstance(value, cst.Name):
            return None
        key = _call_stored_key(value.value, attr)
        v = self.scope.env.get(key)
        if v is None or self.scope.attr_owner.get(key) is not self.local(value.value):
            return None
        return v

    def bound_instance(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        """`p = Plain(rank, 10)` (or a helper returning such a construction): each attribute
        `__init__` stored from this construction's arguments holds what they carry, joined with
        what the class's attribute holds otherwise, read back from this object in this function
        as a method's store is (`stored_by_call`): the index's class-wide answer keeps a taint
        only where every construction passes it."""
        attrs = self._made.get(value) if isinstance(value, cst.Call) and isinstance(target, cst.Name) else None
        owner = self.local(target.value) if attrs else None
        if owner is None:
            return
        for attr, v in attrs.items():
            key = _call_stored_key(target.value, attr)
            self.scope.env[key] = v
            self.scope.attr_owner[key] = owner

    def carried_attributes(self, value: cst.BaseExpression) -> dict[str, Val]:
        """What the attributes of the object `value` is hold from this object's own history, where
        they differ by process: a construction's (`Seq(rank)`, `ProjectIndex.instance_attrs`), or
        a name bound to one (`bound_instance`) or given stores by its methods (`stored_by_call`),
        still bound to that object. Handed to a callee's parameter with the object
        (`_record_param_taint`): the callee's `seq.sid` reads that same object's attribute."""
        if isinstance(value, cst.Call):
            return self._made.get(value) or {}
        if not isinstance(value, cst.Name) or not self.scope.attr_owner:
            return {}
        owner = self.local(value.value)
        if owner is None:
            return {}
        prefix = value.value + ":"
        out: dict[str, Val] = {}
        for key, o in self.scope.attr_owner.items():
            if o is owner and key.startswith(prefix) and (v := self.scope.env.get(key)) is not None and v.divergent:
                out[key[len(prefix):]] = v
        return out

    def _method_stores(self, func: cst.BaseExpression, q: str | None, args, node: cst.Call, bound: bool) -> None:
        """`obj.update(loss)` of a project method that stores into attributes of its object from
        its parameters (`self.stop = loss > self.best`, or under a condition on them): those
        attributes of `obj` now hold what this call passed (`stored_by_call`). A guess
        (`evidence.METHOD_STORE`): the method's other inputs, and whether the store runs, are
        not followed."""
        f = self.index.functions.get(q) if q else None
        if f is None or not (f.param_writes or f.arg_writes):
            return
        offset = 1 if bound and f.params and f.params[0] in ("self", "cls") else 0
        given: dict[str, Val] = {}
        passed: dict[str, cst.BaseExpression] = {}
        for (k, v), a in zip(args, node.args):
            if k == "*":
                return  # (which parameter gets what is not known)
            p = k if isinstance(k, str) else (f.params[offset + k] if offset + k < len(f.params) else None)
            if p is not None:
                given[p], passed[p] = v, a.value
        for p, params in f.arg_writes.items():
            # `callback.on_evaluate(control, metrics)` storing into `control` under a test of
            # `metrics`: the caller's `control` now holds what `metrics` carries.
            target = passed.get(p)
            v = join_all(given[x].data() for x in params if x in given)
            if isinstance(target, cst.Name) and v.divergent and (cur := self.local(target.value)) is not None:
                v = evidence.mark(v, evidence.METHOD_STORE, f"`{short_name(q)}()`", self.line(node))
                self.scope.env[target.value] = replace(cur.join(v), keys=None)
        if not f.param_writes or not bound or not isinstance(func, cst.Attribute) \
                or not isinstance(func.value, cst.Name):
            return
        name = func.value.value
        owner = self.local(name)
        if owner is None:
            return
        for attr, params in f.param_writes.items():
            v = join_all(given[p].data() for p in params if p in given)
            if not v.divergent:
                continue
            v = evidence.mark(v, evidence.METHOD_STORE, f"`.{func.attr.value}()`", self.line(node))
            key = _call_stored_key(name, attr)
            if self.scope.attr_owner.get(key) is owner and key in self.scope.env:
                v = self.scope.env[key].join(v)
            self.scope.env[key] = v
            self.scope.attr_owner[key] = owner
            self.scope.env.set_or_delete(semantics.stored_attribute_key(name, attr), None)

    def raised_where(self, body) -> Val:
        """Whether a `try` body raises, where a step of it that can fail runs under a
        process-dependent condition inside it (`try: if rank == 0: write(path)`, then `except
        OSError: failed = True`): that condition's sources, so what the handlers bind differs
        between processes. A guess (`evidence.FAILS_WHERE_RUN`): whether the step fails is never
        known. A step that can fail: a `raise`, or a call that is not collective work, logging,
        or known not to raise. Also where a step raises on some processes only (`next(it)` of
        this process's own iterator: `except StopIteration: has_batch = 0`): what decides it."""
        out = BOTTOM
        stack = [body]
        while stack:
            n = stack.pop()
            if type(n) in OWN_SCOPE:
                continue
            if isinstance(n, cst.If):
                c = self.conds.get(n, BOTTOM)
                if c.divergent and self._can_fail(n):
                    out = out.join(evidence.mark(c.data(), evidence.FAILS_WHERE_RUN, f"`if` at line {self.line(n)}",
                                                 self.line(n)))
                    continue
            elif isinstance(n, cst.Call):
                info = self.calls.get(n)
                if info is not None and info.may_raise_pd and info.args:
                    # `next(it)` of this process's own iterator: StopIteration where its data
                    # runs out, a value on the others (what `divergence.pd_raise` reads there)
                    v = Val(pdc=_cap(info.args[0][1].pd | info.args[0][1].pdc))
                    if info.raise_guess:
                        v = evidence.mark(v, evidence.ENDS_ITERATION, info.raise_guess, self.line(n))
                    out = out.join(v)
            stack.extend(children(n))
        return out

    def _can_fail(self, block: cst.CSTNode) -> bool:
        for n in _walk(block):
            if isinstance(n, cst.Raise):
                return True
            if isinstance(n, cst.Call):
                info = self.calls.get(n)
                name = (info.name if info is not None else None) or _code(self.module, n.func)
                if semantics.can_fail_call(name, info is not None and info.collective) \
                        and not (info is not None and info.never_raises):
                    return True
        return False

    # `qualify`: semantics.StatementRules; an unknown global may come from a star import.
    name_parts = staticmethod(read_cst.name_parts)

    def global_name(self, n: str) -> str:
        return self.index.star_resolve(self.modname, n) if n not in _BUILTINS else n

    # ================================================================ expressions
    def ev(self, node: cst.BaseExpression | None) -> Val:
        if node is None:
            return BOTTOM
        m = getattr(self, "ev_" + type(node).__name__, None)
        if m is not None:
            return m(node)
        out = BOTTOM
        for child in children(node):
            if isinstance(child, cst.BaseExpression):
                out = out.join(self.ev(child).data())
        return out

    def ev_Integer(self, node):
        return BOTTOM

    def ev_Subscript(self, node: cst.Subscript) -> Val:
        if self.none_arm_sources and isinstance(node.value, cst.Name):
            # `x[k]` with x None on some processes: TypeError there (`Divergence._absent_reads`)
            cur = self.local(node.value.value)
            srcs = frozenset(x for x in cur.tree if x in self.none_arm_sources) if cur is not None else ()
            if srcs:
                self.none_reads[node] = srcs
                self.none_uses = True
        return super().ev_Subscript(node)

    ev_Float = ev_Imaginary = ev_SimpleString = ev_Ellipsis = ev_Integer

    def ev_Name(self, node: cst.Name) -> Val:
        n = node.value
        v = self.local(n)
        if v is None:
            v = self.module_scope.env.get(n)
            if not self.scope.is_module and self.declared_global(n):
                # (a name functions declare global: also what they store into it, with the
                # conditions they store it under, as the index resolves it: summary `bind`)
                q = f"{self.modname}.{n}"
                stored = self.index.ref(q)
                if stored.divergent:
                    stored = evidence.mark(self.anchor(stored, node, n, call=False), evidence.GLOBAL_STORE,
                                           f"`{n}`", self.line(node))
                v = stored if v is None else v.join(stored)
        if v is not None:
            if v.pd and (traced := self._traced_scope()) is not None and not semantics.bound_within(self.scope, traced[0], n):
                self._trace_constant(v.pd, node, traced)  # (a closure over a process-dependent value)
            return v
        if n == "None":
            return Val(struct="none")
        q = self.qualify(node)
        if semantics.source_function(q) and n not in self.module_defs:
            return Val(srcq=q)  # (`from time import time` ... `clock=time`: the function itself)
        if q and (q != n or n in self.module_defs):
            return self.anchor(self.index.ref(q), node, short_name(q), call=False) if not q.startswith("jax.") else BOTTOM
        return BOTTOM

    # `ev_Attribute` (semantics.StatementRules): attributes resolve through the project index,
    # re-anchored here where they differ between processes.
    class_of = staticmethod(lambda v: v.cls if v is not None else None)

    def member(self, cls: str, attr: str, node: cst.Attribute, through_self: bool) -> Val:
        self._property_read(cls, attr, node)
        absent = self.index.absent_unless(cls, attr)
        if absent is not None:
            self.absent_reads[node] = self.anchor(absent, node, f".{attr}", call=False)
        label = f"self.{attr}" if through_self else attr
        v = self.index.attr(cls, attr)
        if v is not None:
            return self.anchor(v, node, label, call=False) if v.divergent else v
        m = self.index.method(cls, attr)
        if not m:
            return BOTTOM
        v = self.index.ref(m)  # a property: its return value
        return self.anchor(v, node, label, call=False) if v.divergent or not through_self else v

    def source(self, desc: str, node: cst.CSTNode, kind: str) -> Val:
        # (a description that says it is a guess is one here too, as in the index: a thread's state)
        return Val(pd=frozenset({evidence.set_order_guess(self.src(node, desc, kind))}))

    def global_value(self, q: str, node: cst.Attribute) -> Val:
        if semantics.source_function(q):
            return Val(srcq=q)  # (`datetime.datetime.now` not called: the function itself)
        if q.startswith(("jax.", "numpy.", "os.", "sys.")):
            return BOTTOM
        v = self.index.ref(q)
        return self.anchor(v, node, short_name(q), call=False) if v.divergent else v

    def _property_read(self, cls: str | None, attr: str, node: cst.Attribute) -> None:
        """Reading a property runs its getter (`semantics.property_read_work`): its collective
        work is recorded as work at the read, in order with the calls around it."""
        getter, work = self.index.property_read_work(cls, attr)
        if work and semantics.CACHED_PROPERTY_NOTE in work:
            # A cached property read again in the same function (the same expression, read
            # earlier): the getter ran at the earlier read, this one hits the cache.
            key = (self.scope.qualname, _code(self.module, node))
            first = self._cached_reads.setdefault(key, self.pos(node)[:2])
            if first < self.pos(node)[:2]:
                return
        if work:
            info = self.calls.get(node)
            if info is None:
                info = self.calls[node] = CallInfo(node)
            info.name, info.collective, info.via_project = getter, work, True

    def any_member(self, attr: str, base: Val, node: cst.Attribute) -> Val | None:
        if not base.ext and not base.callable:
            self._property_read(None, attr, node)
        out = None
        if base == BOTTOM:
            v = self.index.ref("." + attr)
            out = self.anchor(v, node, attr, call=False) if v.divergent else None
        if attr in K.LOCAL_SHARD_ATTRIBUTES:
            shards = self._local_shards(attr, base, node)
            out = shards if out is None else out.join(shards)
        return out

    @staticmethod
    def attribute_of(out: Val, base: Val, attr: str) -> Val:
        if attr in semantics.SHAPE_ATTRIBUTES:
            # a draw's shape is the size it was given (semantics.shape_keeps)
            out = replace(out, pdc=frozenset(s for s in out.pdc if semantics.shape_keeps(s.kind)))
            shape = base.shape
            if attr == "dtype" and shape:
                # How many rows or elements an array has is not its dtype: a count's sources
                # (`x[mask]`, a slice of this process's length) leave `x.dtype` alone.
                counts = {(s.line, s.column, s.desc) for s in shape if s.kind in kinds.COUNTS}
                shape = frozenset(s for s in shape if s.kind not in kinds.COUNTS)
                out = replace(out, pd=frozenset(s for s in out.pd if (s.line, s.column, s.desc) not in counts))
            if shape:
                out = replace(out, pd=_cap(out.pd | shape))
        if attr in semantics.NUMERIC_ATTRIBUTES and (out.shape or out.tree):
            # `x.size`, `x.ndim`: one Python int, of one shape everywhere (its value differs
            # where x's shape does: `pd` above), as `len(x)` is.
            out = replace(out, shape=frozenset(), tree=frozenset())
        elif attr == "shape" and out.shape:
            # `x.shape`: x.ndim ints; how many rows x has is one of their values (`pd` above),
            # not how many there are (`np.array(x.shape)` gathered to agree on a padding)
            out = replace(out, shape=frozenset(s for s in out.shape if s.kind not in kinds.COUNTS))
        if attr in semantics.AXIS_MOVING_ATTRIBUTES:
            out = _rows_anywhere(out)  # (`arr.T`: the count of rows is its last axis now)
        if attr in semantics.SHARD_PLACEMENT_ATTRIBUTES and out.pdc:
            out = replace(out, pdc=frozenset(replace(x, desc=d) if x.kind == kinds.LOCAL_DATA and (
                d := semantics.shard_placement(x.desc)) is not None else x for x in out.pdc))
        return out

    def _local_shards(self, member: str, array: Val, node: cst.CSTNode) -> Val:
        """This process's shards of `array` (`x.addressable_shards`, `x.addressable_data(0)`):
        process-local content (`semantics.local_shards_desc`)."""
        desc = semantics.local_shards_desc(member, True if array.glob else semantics.GUESS)
        return Val(pdc=frozenset({evidence.set_order_guess(self.src(node, desc, kinds.LOCAL_DATA))}))

    # `ev_Subscript` (semantics.StatementRules): a per-process index into a collection the same
    # everywhere but for its order is a partition sink; a slice bounded by a per-process length
    # has that length's shape; a per-process key into a table of functions chooses another program.
    def indexed(self, node: cst.Subscript, base: Val, idx: Val, slicing: bool) -> None:
        if _partition(base, idx):
            how = "sliced" if slicing else "indexed"
            self._sink(kinds.PARTITION, kinds.ORDER, base, node, f"a per-process partition ({how} by process)")
        elif _partition_of_drawn_whole(base, idx):
            how = "sliced" if slicing else "indexed"
            self._sink(kinds.PARTITION, kinds.VALUE, base, node, f"a per-process partition ({how} by process)")

    def element_at(self, out: Val, base: Val, idx: Val, node: cst.Subscript) -> Val:
        first = _first_key(node)
        if first == "index" and (rows := _index_count(idx)) and not self.is_numeric(node.slice[0].slice.value):
            # `x[idx]` with idx a sequence of positions whose length differs between processes
            # (a per-process piece of indices, a list grown per process): as many rows as idx
            # holds (numpy's integer-array indexing), whatever x held
            out = replace(out, shape=_cap(out.shape | rekinded(rows, kinds.ROWS)))
        if first != "index" and base.shape:
            # `arr[None]` (a new first axis) is all of arr, `arr[..., 0]` keeps arr's rows
            rows = frozenset(x for x in base.shape if x.kind in kinds.COUNTS)
            out = replace(out, shape=_cap(out.shape | (rows if first == "..." else _rows_anywhere(Val(shape=rows)).shape)))
        if base.callable or base.cls:
            out = out.join(Val(callable=base.callable))
        if base.elems and idx.divergent:  # `STEPS[mode]` with a per-process mode: another program
            self.conds[node] = self.conds.get(node, BOTTOM).join(idx)
            out = replace(out, chosen=out.chosen | {node})
        return out

    def slice_of(self, out: Val, length: Val, node: cst.Subscript) -> Val:
        if _first_key(node) == "new":
            out = _rows_anywhere(out)  # (`arr[None, :]`: its rows are on the second axis)
        if not length.pd:
            return out
        return replace(out, shape=_cap(out.shape | frozenset({evidence.derived(self.src(node, f"{_SLICE_BOUNDED} {_why(length.pd)}", kinds.LENGTH), length.pd)})))

    def selected(self, out: Val, mask: Val, node: cst.Subscript, by_name: bool) -> Val:
        # (semantics.StatementRules.selected) how many rows `x[mask]` holds: as the mask's content
        srcs = mask.pd | mask.pdc
        if not srcs:
            return out
        # (the mask's own sources, where they were read: a caller's, for a mask it passed)
        count = Val(pd=_cap(srcs))
        if by_name:
            count = evidence.mark(count, evidence.MASK_BY_NAME, evidence.MASK_BY_NAME_TEXT, self.line(node))
        rows = rekinded(count.pd, kinds.ROWS)
        return replace(out, pd=_cap(out.pd | count.pd), shape=_cap(out.shape | rows))

    varies = staticmethod(lambda v: bool(v.pd))

    def equal_pieces(self, v: Val, node: cst.CSTNode) -> Val:
        return evidence.equal_pieces(v, self.line(node))

    @staticmethod
    def padded_list(v: Val, node: cst.CSTNode) -> Val:
        """(semantics: `xs + [pad] * (K - len(xs))`, K the greatest length of xs over the
        processes) a list of K elements on every process, built here: its content, no count.
        (Of a K agreed otherwise, a longer xs keeps its own length: `ev_BinaryOperation`.)"""
        return replace(v.same_length(), struct="list")

    def piece_content(self, v: Val, node: cst.CSTNode) -> Val:
        """(semantics: the start of a piece of equally long ones) which elements, not how many."""
        return v.same_length()

    def split_piece(self, v: Val, node: cst.CSTNode) -> Val:
        return evidence.split_points(v, self.line(node))
    same_length = staticmethod(lambda v: v.same_length())
    def window(self, v: Val, node: cst.CSTNode, bound: cst.BaseExpression | None = None, length: Val = BOTTOM) -> Val:
        """A window `x[:n]` holds min(len(x), n) elements: of an array's rows whose count differs,
        that count stays (`np.asarray(kept)[:K]`); of a container whose length differs, n
        elements where every process holds n or more: a bound computed on the way (the smallest
        length every process agreed on, `local[:n_min]`) is taken as such; a constant bound
        (`kept[:K]`) says nothing of the lengths, so the length stays, as a guess."""
        lengths = frozenset(x for x in v.shape if x.kind == kinds.LENGTH)
        out = replace(v, pd=frozenset(), pdc=_cap(v.pd | v.pdc), shape=v.shape - lengths)
        # (`x[s:][:K]` is the window `x[s:s + K]`, taken as K long as that one is: `window_length`)
        lengths = frozenset(x for x in lengths if not x.desc.startswith(_SLICE_BOUNDED))
        if lengths and bound is not None and semantics.is_constant(bound, read, self._const, self.qualify,
                                                                  self.index.functions.__contains__):
            short = evidence.mark(Val(shape=lengths), evidence.SHORT_WINDOW, evidence.SHORT_WINDOW_TEXT, self.line(node))
            out = replace(out, shape=out.shape | short.shape)
        return out
    # An iterator that never ends: no count; an array's shape that differed can only be its
    # elements' now (`itertools.cycle(rows)`, `ds.repeat()`).
    endless = staticmethod(lambda v: replace(v, pd=frozenset(), pdc=_cap(v.pd | v.pdc), shape=rekinded(
        (x for x in v.shape if x.kind not in kinds.COUNTS), kinds.ELEMENTS)))

    # A value that differs between processes for no reason this pass knows of.
    carries_nothing = staticmethod(lambda v: not (v.pd or v.pdc or v.order or v.hash or v.shape or v.tree))

    def zipped(self, out: Val, node: cst.Call, args: list, bounded: bool | str) -> Val:
        """`zip(a, b, ...)`: what the arguments hold, as content; how many tuples, as many as the
        shortest argument: what made any argument's count differ (`Val.count_sources`: of a list
        built here its length sources alone, `[x * rank for x in TABLE]` is as long as TABLE).
        `bounded` (a `range(n)` among them, n agreed): those counts only as a guess
        (`evidence.bounded_count`); "least" (n the least count over the processes,
        `semantics.least_over_processes`): none."""
        _, _, nodes, every = read(node)
        if len(nodes) != len(every):
            return out  # (`zip(*rows)`: which argument is which is not known)
        counts = BOTTOM
        for k, v in args:
            if isinstance(k, int):
                counts = counts.join(Val(pd=v.pd, shape=v.shape) if v.struct is None else Val(shape=v.shape))
        if bounded == "least":
            return self.endless(out)  # (n the least count over processes: n tuples everywhere)
        length = Val(pd=counts.pd, shape=rekinded((s for s in counts.shape if s.kind != kinds.ELEMENTS), kinds.LENGTH))
        if bounded:
            length = evidence.bounded_count(length, self.line(node))
        return self.endless(out).join(length)

    def with_fields(self, obj: Val, fields: Val | None, node: cst.Call) -> Val:
        """A copy of `obj` with some fields set anew from `fields` (`semantics.COPY_WITH_FIELDS_CALLS`):
        obj (its class kept), and what the new fields carry as a store into one attribute of it
        (`evidence.stored_attribute`, a guess: a read of another field does not see it)."""
        if fields is None:
            return obj
        return obj.join(evidence.stored_attribute(fields.element(), self.line(node)))

    def file_content(self, v: Val, node: cst.Call, text: str) -> Val:
        """What a file read at a path carrying `v` holds: `v`, as a guess (`evidence.file_content`).
        Read on some processes only (under a process-dependent `if`) at a path each process named
        from its own clock or randomness: an exchange sink (`kinds.EXCHANGE_PATH`; MCJ106 reports
        it where a barrier ran before the read in the function: what the others wrote under the
        names they drew is looked for under this process's name)."""
        if self._per_process_arms and not v.sanitized:
            drawn = frozenset(s for s in v.pd | v.pdc if kinds.unguarded(s.kind) in kinds.SELF_DRAWN_NAMES)
            if drawn:
                self._sink(kinds.EXCHANGE_PATH, kinds.VALUE, Val(pd=drawn), node, f"the path read by {text}")
        return evidence.file_content(v, text, self.line(node))

    def listed_content(self, v: Val, node: cst.Call, text: str) -> Val:
        """What a directory listing at a path carrying `v` holds: what `v` carries, except that a
        fresh temporary directory's name (never empty, `semantics.names_a_fresh_temporary`) is
        now the names the filesystem holds there, which may be none."""
        def listed(srcs: frozenset) -> frozenset:
            return frozenset(replace(s, desc=f"the names {text} gives under {s.desc}")
                             if semantics.names_a_fresh_temporary(s) else s for s in srcs)
        if not any(semantics.names_a_fresh_temporary(s) for s in v.pd | v.pdc):
            return v
        return replace(v, pd=listed(v.pd), pdc=listed(v.pdc))

    def _part_written(self, node: cst.Call, info: CallInfo, args: list, bound: bool) -> None:
        """A file written at a path that holds this process's index (its own part: `rank{r}.npz`)
        and a name the process drew for itself (the clock, unseeded randomness): a sink
        (`kinds.PART_PATH`; MCJ106 reports it where collective work follows in the function: the
        parts meant to lie side by side lie under as many names as there are processes). The
        write is a call that writes at its path argument (`semantics.written_path`) or a project
        function that does at a parameter (`FunctionFacts.path_writes`)."""
        paths: list[Val] = []
        written = semantics.written_path(node, self.qualify, read)
        if written is not None:
            positional = [a.value for a in node.args if a.keyword is None and not a.star]
            paths += [v for k, v in args if isinstance(k, int) and k < len(positional) and positional[k] is written]
        q = info.callee or info.name
        cands = [q] if q else []
        by_name = not q and isinstance(node.func, cst.Attribute) and not node.func.attr.value.startswith("__")
        if by_name:
            # `obj.save(path)` on a receiver of no known class: the project's methods of that name,
            # where every one writes at that argument (a guess: `evidence.METHOD_BY_NAME`)
            cands = list(self.index.methods_by_name.get(node.func.attr.value, ()))
        found: list[list[Val]] = []
        for c in cands:
            f = self.index.functions.get(c)
            if f is None or not f.path_writes:
                found = []
                break
            offset = 1 if (bound or by_name) and f.params and f.params[0] in ("self", "cls") else 0
            found.append([v for k, v in args if (f.params[k + offset] if isinstance(k, int) and k + offset < len(f.params)
                                                 else k) in f.path_writes])
        if found and all(found) and (not by_name or all(len(x) == len(found[0]) for x in found)):
            for v in found[0]:
                paths.append(evidence.mark(v, evidence.METHOD_BY_NAME, f"`.{node.func.attr.value}()`", self.line(node))
                             if by_name else v)
        for v in paths:
            if v.sanitized:
                continue
            srcs = v.pd | v.pdc
            # (a temporary directory is this host's own, not a place meant to be shared)
            drawn = frozenset(s for s in srcs if kinds.unguarded(s.kind) in kinds.SELF_DRAWN_NAMES and "temporary" not in s.desc)
            if drawn and any(kinds.unguarded(s.kind) == kinds.PROCESS_ID for s in srcs):
                self._sink(kinds.PART_PATH, kinds.VALUE, Val(pd=drawn), node,
                           f"the path `{_code(self.module, node.func)}()` writes this process's part at")
                return

    def endless_unless_empty(self, whole: Val, node: cst.CSTNode) -> Val:
        """`itertools.cycle(xs)`, `ds.repeat()`: endless, but empty where xs is: of a list built
        here (`struct`) only its count says so (`[train, extra]` holds two elements whatever
        they hold), of other data its content too (a shard may be empty)."""
        v = whole.data()
        counts = v if whole.struct is None else Val(shape=v.shape)
        return self.endless(v).join(evidence.possibly_empty(counts, self.line(node)))

    def _iteration_element(self, iterable: cst.BaseExpression, elem: Val) -> Val:
        """What one iteration over `iterable` gives: `elem` (an element of the whole), with the
        tuple's elements kept apart for `zip(...)`/`enumerate(...)` (`for step, batch in
        zip(range(n), loader)`: `step` is not process-local because `batch` is)."""
        parts = semantics.iteration_parts(iterable, read)
        if parts and any(a.star for a in iterable.args):
            return elem  # `zip(*rows)`: which argument gives which element is not known
        info = self.calls.get(iterable) if parts else None
        if info is None:
            return elem
        given = [(a.value, v) for a, (_, v) in zip(iterable.args, info.args) if a.keyword is None]
        items = []
        for p in parts:
            if p is None:
                items.append(Val(numeric=True))  # enumerate's counter: the same at each iteration
                continue
            node, v = given[p]
            e = v.element()
            if v.unordered:
                s = self.src(node, "iteration over a set", kinds.SET_ORDER, self.wrap_sorted_fix(node))
                e = replace(e, order=_cap(e.order | {s}))
            elif _is_range(node):
                e = replace(e, numeric=True)
            items.append(self._iteration_element(node, e))
        return replace(elem, items=tuple(items))

    def picked(self, base: Val, index: cst.BaseExpression) -> Val | None:
        """`d["k"]` of a dict with tracked constant keys, `t[1]` of a tuple with known elements:
        that one value, None when the analysis knows only the whole container."""
        k = semantics.constant_key(index, read)
        if k is not None:
            return base.key(k)
        i = _small_int(index)
        if i is not None and base.items is not None and -len(base.items) <= i < len(base.items):
            return base.items[i]
        return None

    def _same_work(self, a: Val, b: Val) -> bool:
        """Two project functions whose collective work is the same (a verbose and a quiet wrapper
        of one jitted step): choosing between them does not change the program."""
        if a.callable or b.callable or not (a.fn and b.fn):
            return False
        ca, cb = self.index.collective.get(a.fn), self.index.collective.get(b.fn)
        return bool(ca) and ca == cb

    def _elems(self, vals: list[Val]) -> str | None:
        """What calling an element of a container of these values does, if collective work."""
        descs = list(dict.fromkeys(d for d in map(self._callable_desc, vals) if d))
        if len(descs) > 3:
            descs = descs[:2] + ["…"]
        return " or ".join(descs) or None

    def ev_Set(self, node: cst.Set) -> Val:
        return replace(join_all(self.ev(e.value).data() for e in node.elements), unordered=semantics.set_order(node, read, self._num))

    def star_iterated(self, v: Val, at: cst.CSTNode) -> Val:
        """`*x` (`f(*x)`, `[*x]`, `zip(*d.items())`) iterates x: a set's order, as `list(x)`
        (`semantics.set_order`; the summary pass's `star_iterated`)."""
        if not v.unordered:
            return v
        return replace(v, unordered=False).join(Val(order=frozenset({self._set_iteration(at, v)})))

    def ev_List(self, node) -> Val:
        vals = [self.star_iterated(self.ev(e.value), e.value) if isinstance(e, cst.StarredElement) else self.ev(e.value)
                for e in node.elements]
        out = join_all(v.data().as_elements() for v in vals)
        # (`[*xs]`, `[a, *xs]`: as long as xs and the rest, no fixed length)
        starred = any(isinstance(e, cst.StarredElement) for e in node.elements)
        out = replace(out, struct=None if starred else f"seq:{len(node.elements)}", elems=self._elems(vals),
                      ecls=None if starred else _one_class(vals))
        if out.shape and not starred and all(x.kind == kinds.ROWS for v in vals for x in v.shape):
            self.row_displays.add(node)  # (arrays whose rows alone differ: `_shaped_result`)
        if isinstance(node, cst.List):
            out = self._whole_container(out, vals, node)
        if isinstance(node, cst.Tuple) and 1 < len(vals) <= 16 and not any(isinstance(e, cst.StarredElement) for e in node.elements):
            out = replace(out, items=tuple(replace(v, items=None) for v in vals))  # multiple return values
        return out

    ev_Tuple = ev_List

    def ev_Dict(self, node: cst.Dict) -> Val:
        out = BOTTOM
        keys = []
        values = []
        kept: dict[str, Val] | None = {}  # constant keys and their values (None: a key is not)
        for e in node.elements:
            if isinstance(e, cst.DictElement):
                k = self.ev(e.key)
                values.append(self.ev(e.value))
                ck = semantics.constant_key(e.key, read)
                if kept is not None and ck is not None and ck not in kept:
                    kept[ck] = values[-1]
                else:
                    kept = None
                out = out.join(values[-1].data().as_elements())  # (a value's shape is its own, not the dict's length)
                if k.pd:
                    out = replace(out, tree=_cap(out.tree | frozenset({evidence.derived(self.src(e.key, f"a dict key from {_why(k.pd)}"), k.pd)})))
                keys.append(_const_str(e.key) or "?")
            else:
                out = out.join(self.ev(e.value).data())
                keys.append("**")
                kept = None
        out = self._whole_container(out, values, node)
        tracked = tuple(sorted(kept.items())) if kept is not None and len(kept) <= MAX_KEYS else None
        return replace(out, struct="dict:" + ",".join(sorted(keys)), elems=self._elems(values), keys=tracked,
                       ecls=_one_class(values) if "**" not in keys else None)

    def _whole_container(self, out: Val, vals: list[Val], node: cst.CSTNode) -> Val:
        """A literal mixing process-dependent and uniform elements: the engine tracks the
        container as one value, so reading any element of it later is a guess."""
        if out.divergent and not all(v.divergent for v in vals):
            return evidence.mark(out, evidence.WHOLE_CONTAINER, "a container literal", self.line(node))
        return out

    def ev_FormattedString(self, node: cst.FormattedString) -> Val:
        out = BOTTOM
        for p in node.parts:
            if isinstance(p, cst.FormattedStringExpression):
                out = out.join(self.ev(p.expression).data())
        return out

    def ev_ConcatenatedString(self, node):
        return self.ev(node.left).data().join(self.ev(node.right).data())

    def ev_BinaryOperation(self, node: cst.BinaryOperation) -> Val:
        a, b = self.ev(node.left), self.ev(node.right)
        out = a.data().join(b.data())
        if a.glob or b.glob:
            out = replace(out, glob=True)  # arithmetic on a global jax.Array gives a global array
        if isinstance(node.operator, (cst.BitOr, cst.BitAnd, cst.Subtract, cst.BitXor)):
            # (a set, or a dict's keys/items view, on either side: a set, `semantics.view_set_order`)
            u = semantics.stronger_order(a.unordered or semantics.view_set_order(node.left, read),
                                         b.unordered or semantics.view_set_order(node.right, read))
            if u:
                out = replace(out, unordered=u)
        if isinstance(node.operator, cst.Multiply) and isinstance(node.left, (cst.List, cst.Tuple)) and b.pd:
            out = replace(out, shape=_cap(out.shape | frozenset({evidence.derived(self.src(node, f"a sequence repeated {_why(b.pd)} times", kinds.LENGTH), b.pd)})))
        if isinstance(node.operator, cst.Add) and self.padded_to_greatest(node.left, [node.right]):
            return self.padded_list(out, node)
        if isinstance(node.operator, cst.Add) and (width := _repeat_count(node.right)) is not None:
            k, padded = self._pad_width(width, node.left)
            if padded and not k.pd:  # (K the same everywhere)
                # `xs[:K] + [0] * (K - len(xs[:K]))` is K long (min(n, K) + K - min(n, K)); a list
                # repeated a negative number of times is empty, so of a longer xs it is max(n, K):
                # only a count a constant-bound window made (`window`) is cleared.
                out = replace(out, shape=frozenset(x for x in out.shape if x.kind not in kinds.COUNTS
                                                   or not any(g[2] == evidence.SHORT_WINDOW for g in x.guess)))
        return out

    without_order = staticmethod(lambda v: v.without_order() if v.order else v)
    length_only = staticmethod(evidence.length_only)

    def emptiness(self, whole: Val, node=None) -> Val:
        """Whether a list built here (a literal, a comprehension: `struct`) is empty is whether a
        loop over it runs at all: its count alone (`Val.count_sources`), not its elements'
        content (`[cfg(p) for p in ps]` is as long as `ps` whatever `cfg` puts in each)."""
        if _built_here(whole):
            return Val(pd=whole.count_sources)
        out = super().emptiness(whole, node)
        name_only = semantics.names_a_fresh_temporary
        if any(name_only(s) for s in out.pd | out.pdc):
            # a path under a fresh temporary directory: another name on each process, never empty
            # (what a listing there holds is another source: `listed_content`)
            out = replace(out, pd=frozenset(s for s in out.pd if not name_only(s)),
                          pdc=frozenset(s for s in out.pdc if not name_only(s)))
        return out

    def ev_UnaryOperation(self, node):
        v = self.ev(node.expression)
        if isinstance(node.operator, cst.Not):
            return self.emptiness(v) if semantics.truth_of_whole(node, read) else v.data()
        return replace(v.data(), glob=True) if v.glob and not isinstance(node.operator, cst.Not) else v.data()

    def ev_Comparison(self, node: cst.Comparison) -> Val:
        left = self.ev(node.left)
        ops = [t.operator for t in node.comparisons]
        if semantics.none_tested(node, read) is not None:
            return Val(pd=left.tree)  # (whether it is None: its structure, not its content)
        out = left.data()
        sides = [(left.pd, left.pdc)]
        for t in node.comparisons:
            r = self.ev(t.comparator)
            if isinstance(t.operator, (cst.In, cst.NotIn)):
                r = r.without_order()  # membership does not depend on order
            out = out.join(r.data())
            sides.append((r.pd, r.pdc))
            if isinstance(t.operator, (cst.Is, cst.IsNot)) and out.tree:
                out = replace(out, pd=_cap(out.pd | out.tree))
        if semantics.layout_check(sides, all(isinstance(o, (cst.Equal, cst.NotEqual)) for o in ops)):
            out = evidence.mark(out, evidence.LAYOUT_CHECK, evidence.LAYOUT_CHECK_TEXT, self.line(node))
        return replace(out, tree=frozenset(), shape=frozenset())

    def ev_BooleanOperation(self, node: cst.BooleanOperation) -> Val:
        left = self.ev(node.left)
        if left.divergent:
            self.conds[node] = self.conds.get(node, BOTTOM).join(left.data())
        right = self.ev(node.right)
        if left.tree and isinstance(node.operator, cst.Or) and self.none_arm_sources \
                and semantics.never_none(node.right, read, self.qualify):
            # `x or []`: never None, where x is None on some processes
            left = replace(left, tree=frozenset(x for x in left.tree if x not in self.none_arm_sources))
        return left.join(right).data() if not (left.struct or right.struct) else left.join(right)

    # `ev_IfExp` (semantics.StatementRules): a per-process choice between functions is another
    # program; between arrays of other shapes or values of other structures, a shape or
    # structure source.
    def code(self, node: cst.CSTNode) -> str:
        return _code(self.module, node)

    def either(self, out: Val, c: Val, a: Val, b: Val, node: cst.IfExp) -> Val:
        if c.divergent and _picks_function(self.module, node, a, b) and not self._same_work(a, b):
            if not self._callable_desc(a) and self._callable_desc(b):
                out = b.join(a).join(c)  # a value keeps one function: the one that does collective work
            out = replace(out, chosen=out.chosen | {node})
        if c.process_dependent and _array_shapes_differ(a.struct, b.struct):
            out = replace(out, shape=_cap(out.shape | frozenset({evidence.derived(self.src(node, f"an array whose shape/dtype depends on {_why(c.pd | c.pdc)}"), c.pd | c.pdc)})))
        elif c.process_dependent and semantics.structures_differ(a.struct, b.struct):
            out = replace(out, tree=_cap(out.tree | frozenset({evidence.derived(self.src(node, f"a value whose structure depends on {_why(c.pd | c.pdc)}"), c.pd | c.pdc)})))
        return replace(out, struct=a.struct if a.struct == b.struct else None)

    def ev_Await(self, node):
        return self.ev(node.expression)

    def ev_Lambda(self, node: cst.Lambda) -> Val:
        # A lambda's body runs when called: collective if its body is (analysed like a nested def).
        saved = self.scope
        self.scope = _Scope({p.name.value: BOTTOM for p in _all_params(node.params)}, saved, qualname=saved.qualname + ".<lambda>")
        try:
            body = self.ev(node.body)
            coll = self._collective_in(node.body)
        finally:
            self.scope = saved
        return Val(callable=f"`lambda` calling {coll}" if coll else None) if coll else Val(pd=body.pd, pdc=body.pdc)

    def _collective_in(self, expr: cst.CSTNode) -> str | None:
        for n in _walk_calls(expr):
            info = self.calls.get(n)
            if info is not None and info.collective:
                return info.collective
        return None

    # `comprehension` (semantics.StatementRules): the result carries the iterables' and filters'
    # order; its length, what decides how many elements there are; a filter deciding per process
    # which elements are kept is recorded (`comp_filters`).
    def enter_comp_scope(self) -> _Scope:
        saved = self.scope
        self.scope = _Scope({}, saved, cls=saved.cls, qualname=saved.qualname)
        return saved

    def enter_lambda_scope(self) -> _Scope:
        # (as `ev_Lambda`'s: the lambda's reads are its own, not its enclosing function's)
        saved = self.scope
        self.scope = _Scope({}, saved, cls=saved.cls, qualname=saved.qualname + ".<lambda>")
        return saved

    def leave_comp_scope(self, saved: _Scope) -> None:
        self.scope = saved

    comp_start = staticmethod(lambda kind: _Comprehension(kind))

    def comp_iteration(self, acc: _Comprehension, it: Val, order: frozenset, iterable: cst.BaseExpression,
                       at: cst.CompFor) -> None:
        it = self._counted(it, iterable)  # (`range(n)` runs n steps, as in a `for` statement)
        self.iters[at] = self.iters.get(at, BOTTOM).join(it)
        if order and order - it.order:  # (a set's iteration order)
            acc.out = replace(acc.out, order=_cap(acc.out.order | (order - it.order)))
        acc.out = acc.out.join(Val(order=it.order, hash=it.hash))
        acc.length = acc.length.join(Val(pd=it.count_sources))

    def comp_filter(self, acc: _Comprehension, c: Val, cif: cst.CompIf, node: cst.BaseExpression) -> None:
        if c.divergent:
            self.conds[cif] = self.conds.get(cif, BOTTOM).join(c)
        # (a filter of process-local content, `e["label"] >= 0` of a shard's element, keeps
        # another number of elements on each process; one process's devices are as many as
        # `jax.local_device_count()`)
        if not semantics.selects_one_process_devices(cif.test, _filtered_iterable(node, cif), read, self.qualify):
            acc.length = acc.length.join(Val(pd=union_sources(c.pd, c.pdc)))
        # Which elements are kept follows the filter: an element of an arbitrarily ordered
        # iteration in it selects different elements on each process.
        acc.out = acc.out.join(Val(order=c.order, hash=c.hash))
        if c.process_dependent:
            self.comp_filters[node] = self.comp_filters.get(node, BOTTOM).join(Val(pd=c.pd, pdc=c.pdc))

    @staticmethod
    def comp_element(acc: _Comprehension, v: Val, e: cst.BaseExpression, elts: list) -> None:
        acc.out = acc.out.join(v.data().as_elements() if acc.kind != "gen" else v.data())

    def comp_result(self, acc: _Comprehension, node: cst.BaseExpression) -> Val:
        out, kind = acc.out, acc.kind
        if kind == "dict" and out.order:
            # A dict keyed by an arbitrarily ordered iteration: same mapping, insertion order
            # only — unless a value carries an order of its own (a position in that order).
            rest = frozenset(x for x in out.order if x.desc.startswith(_POSITION))
            out = replace(out.without_order(), unordered=True, order=rest)
        if kind in ("list", "dict") and acc.length.pd:
            out = replace(out, shape=_cap(out.shape | frozenset({evidence.derived(self.src(node, f"a {kind} whose length depends on {_why(acc.length.pd)}", kinds.LENGTH), acc.length.pd)})))
        return replace(out, struct=kind) if kind in ("list", "dict", "set") else out

    element = staticmethod(lambda v: v.element())

    @staticmethod
    def tree_leaf(tree: Val) -> Val:
        """(semantics.StatementRules.tree_leaf) A leaf of a dict of known keys or a tuple of known
        elements (`{"w": rng.normal(...)}`, `(params, opt_state)`) is one of the values stored
        there, as it is: a value that differs by process is a leaf that differs (an element of an
        unknown container is only content, `Val.element`). Of a tree of unknown parts, what makes
        it differ is in some leaf, or in its structure (and then the map's calls differ): its
        leaves together differ as it does."""
        parts = [v for _, v in tree.keys] if tree.keys else list(tree.items) if tree.items else None
        if not parts:
            el = tree.element()
            return replace(el, pd=tree.pd, pdc=el.pdc - tree.pd)
        return join_all(replace(v, keys=None, items=None) if not (v.keys or v.items) else FileAnalysis.tree_leaf(v)
                        for v in parts)
    unordered_set = staticmethod(lambda v, order: replace(v, unordered=order))

    # ---------------------------------------------------------------- calls
    def ev_Call(self, node: cst.Call) -> Val:
        result = self._ev_call(node)
        self._unconstant_written(node)
        traced = self._traced_scope()
        if traced is not None and result is not None and result.pd:
            info = self.calls[node]
            given = join_all(v for _, v in info.args).pd
            if isinstance(node.func, cst.Attribute):
                given |= self.ev_cached(node.func.value).pd
            self._trace_constant(result.pd - given, node, traced)
        return result

    def _ev_call(self, node: cst.Call) -> Val:
        info = self.calls.get(node)
        if info is None:
            info = CallInfo(node)
            self.calls[node] = info
        args: list[tuple[object, Val]] = []
        pos = 0
        for a in node.args:
            v = self.ev(a.value)
            if a.keyword is not None:
                args.append((a.keyword.value, v))
            elif a.star:
                args.append(("*", self.star_iterated(v, a.value) if a.star == "*" else v))
            else:
                args.append((pos, v))
                pos += 1
        func = node.func
        if args and (self.qualify(func) or "") in K.MEMBERSHIP_ARRAY_OPS:
            args = [args[0]] + [(k, v.without_order()) for k, v in args[1:]]
        argu = join_all(v.data() for _, v in args)
        info.args = args
        if any(a.keyword is not None and a.keyword.value in K.SUBGROUP_KWARGS and not _is_none(a.value) for a in node.args):
            # Work on a configured subset of processes (`active_processes=...`, `processes=...`):
            # collective only among the processes that take this path by design.
            if isinstance(func, cst.Attribute):
                self.ev(func.value)
            info.result = replace(argu, subgroup=True)
            return info.result
        q = self.qualify(func)
        result: Val | None = None
        coll: str | None = None
        jitted_fv: Val | None = None  # (a jitted function applied here: `_replicated_host_args`)
        bound = False  # (called through an instance: `self` is not among the arguments)
        if q is not None:
            info.name = q
            self.leaf_map(q, node, args)
            result, coll = self._known_call(q, node, args, argu, info)
            if q == "iter" and result is not None and len(args) == 1 and args[0][1].cls:
                # `iter(obj)` is `obj.__iter__()`: as process-dependent as what that iterates
                result = result.join(self._iterated_instance(args[0][1].cls, node))
                coll = coll or self._protocol_call(args[0][1].cls, "__iter__", info)
            elif q == "next" and result is not None and args and args[0][1].cls:
                coll = coll or self._protocol_call(args[0][1].cls, "__next__", info)
            if result is None and self._local_jit(q) and self._runs_locally(True, node):
                # A jit-decorated function on host data: this process's work, computed from its
                # inputs (a pure function of them: what differs in them differs in its content;
                # its structure is its trace's).
                result = replace(argu, pd=frozenset(), pdc=_cap(argu.pd | argu.pdc), host=True)
            elif result is None:
                result, coll = self._project_call(q, argu, node)
                if (fn := self.index.functions.get(q)) is not None and fn.jit:
                    jitted_fv = self._decorated_jit(fn, q, node)  # (a jit-decorated project function)
                if result.divergent:  # an unresolved call's guess (or a helper's file read) is taken here
                    result = evidence.locate(result, f"`{short_name(q)}()`", self.line(node))
        elif isinstance(func, cst.Attribute):
            meth = func.attr.value
            cls = self.self_class(func.value)
            if cls is not None:
                m = self.index.method(cls, meth)
                if m is not None:
                    info.name = m
                    bound = True
                    result, coll = self._project_call(m, argu, node, bound=True)
                else:
                    v = self.index.attr(cls, meth)
                    if v is not None and v.callable and self._runs_locally(v.hostable, node):
                        result = replace(argu, pd=frozenset(), pdc=_cap(argu.pd | argu.pdc), host=True)
                    elif v is not None and v.callable:
                        info.name = f"{cls}.{meth}"
                        result, coll = self._jitted_call(v, node)
                        self._bound_statics(v, node)
                        jitted_fv = v
                    elif v is not None and v.cls and (call_m := self.index.method(v.cls, "__call__")):
                        # An instance of a project class held in an attribute (`self.fc1 = Linear()`)
                        # and called: its `__call__` runs.
                        info.name = call_m
                        bound = True
                        result, coll = self._project_call(call_m, argu, node, bound=True)
                    elif v is not None and v.fn and self.index.collective.get(v.fn):
                        # A project function stored in an attribute (`self.on_eval = sync_eval`)
                        # and called through it.
                        info.name = v.fn
                        result, coll = self._project_call(v.fn, argu, node, exact=False)
                    elif v is not None and v.srcq:
                        # A source function stored in an attribute (`self._now = time.time`)
                        # and called through it: that function's call.
                        result, coll = self._known_call(v.srcq, node, args, argu, info)
                    else:
                        result = evidence.mark(argu, evidence.UNRESOLVED_CALL, f"`{_code(self.module, func)}()`", self.line(node))
            else:
                recv = self.ev(func.value)
                bound = True
                result, coll = self._method_call(meth, recv, node, args, argu, info)
                if coll is None and not recv.cls:
                    info.never_raises = semantics.never_raising_method(node, read, self.scope, self.qualify)
        else:
            fv = self.ev(func)
            if fv.factory:  # applying a jit decorator of the project's own: a jitted function
                target = node.args[0].value if node.args else None
                result = Val(callable=f"`{_expr_name(target)}` ({fv.factory[0]})",
                             statics=self._statics_for(fv.factory[1], fv.factory[2], target),
                             chosen=args[0][1].chosen if args else frozenset())
            elif fv.callable and self._runs_locally(fv.hostable, node):
                result = replace(argu, pd=frozenset(), pdc=_cap(argu.pd | argu.pdc), host=True)
            elif fv.callable:
                result, coll = self._jitted_call(fv, node)
                self._bound_statics(fv, node)
                jitted_fv = fv
                self._chosen_call(fv, node)
                # Two names for callables from one factory are still two programs.
                info.token = f"{_code(self.module, func)}: {fv.callable}"
            elif fv.fn:
                info.name = fv.fn
                # (the def's own value: its arguments are this call's; else maybe a partial())
                result, coll = self._project_call(fv.fn, argu, node, exact=fv is self._def_values.get(fv.fn))
                if coll:
                    self._chosen_call(fv, node)
            elif fv.cls and (call_m := self.index.method(fv.cls, "__call__")):
                # Calling an instance of a project class (`collate(examples)`): its `__call__`.
                info.name = call_m
                bound = True
                result, coll = self._project_call(call_m, argu, node, bound=True)
            elif fv.srcq:
                # A source function held in a name or a parameter (`clock=time.time` ...
                # `clock()`): that function's call.
                result, coll = self._known_call(fv.srcq, node, args, argu, info)
            else:
                result = evidence.mark(argu, evidence.UNRESOLVED_CALL, f"`{_code(self.module, func)}()`", self.line(node))
        self._thread_start(q, func, node, args)
        if coll is None:
            coll = self._callback_collective(q or info.name, args)
        if coll and node not in self.thread_starts:
            self.collective_scopes.setdefault(self.scope.qualname, set()).add(node)
        if info.name is not None and info.name in self.index.functions:
            self.scope_calls.setdefault(self.scope.qualname, set()).add(info.name)
        if not coll and result is not None:
            result = self._shaped_result(info.name or q, node, args, result)
        info.args = args
        self._part_written(node, info, args, bound)
        if coll and info.name and (self.index.collective.get(self.index._follow_reexport(info.name)) or "").startswith(
                semantics.CALLBACK_WORK):
            coll = self._callback_work(info.name, coll, node, args)
        if coll:
            # Applying a jitted function: certain only on an input known to be a global array
            # (directly, or through a parameter a helper's jitted work runs on).
            gkeys = [str(k) for k, v in args if v.glob and k != "*"]
            given = _given(node)
            if semantics.UNKNOWN_INPUTS_NOTE in coll and given is not None and self.index.global_at(
                    info.name, gkeys, given[0], given[1], bound):
                coll = semantics.known_global_inputs(coll)
            work, _ = semantics.jitted_work(coll, bool(gkeys))
            coll = work  # (its result stays a possible global array: what is computed from it is judged by its own chain)
            if gkeys and jitted_fv is not None:
                self._replicated_host_args(jitted_fv, node, args)
        if coll and info.via_project and self._iter_orders:
            self._per_element_collective(args)
        if coll and not info.collective:
            info.collective = coll
            info.token = info.token or info.name or coll
        if result is not None and result.host is True:
            self._local_call_nodes.add(id(node))  # (its result is host data: `is_host`)
        info.result = info.result.join(result) if info.result != BOTTOM else result
        if info.collective:
            self._check_collective_args(info, coll)
            if semantics.UNKNOWN_INPUTS_NOTE not in info.collective and semantics.CAPTURES_NOTE not in info.collective \
                    and info.token != "construct a global array":
                # (a certain cross-process result: `_note_agreed`; a global array built of each
                # process's data is not a result they share)
                self._shared_results += 1
        if info.name or info.callee:
            self._gated_callback(info, node, bound)
            self._method_stores(func, info.callee or info.name, args, node, bound)
        return result

    def _protocol_call(self, cls: str, meth: str, info: CallInfo) -> str | None:
        """`iter(obj)` runs `type(obj).__iter__(obj)`, `next(obj)` `type(obj).__next__(obj)` (a
        rule of Python): a project method of this file doing collective work does it at this
        call (as the summary records these calls: `_iterates_instance`). Not a generator
        function's: calling it runs none of its body until its result is advanced."""
        m = self.index.method(cls, meth)
        entry = self.fn_nodes.get(m) if m else None
        if entry is None or _is_generator_def(entry[0]):
            return None
        _, coll = self.index.call_method(meth, Val(cls=cls))
        if not coll:
            return None
        info.name = m
        info.via_project = True
        name = f"`{short_name(m)}()`"
        return coll if coll.startswith(name) else f"{name} → {coll}"

    def _per_element_collective(self, args) -> None:
        """A project helper doing collective work, called in a loop with arguments carrying
        that loop's order (an element, or what was computed from it): where the helper hands
        them to a collective of per-process data, the collective runs once per element in this
        process's order (`_check_collective_args`)."""
        active = frozenset().union(*self._iter_orders)
        for _, v in args:
            self._element_orders.update(x for x in v.order if x in active)

    def enter_iteration(self, it: Val) -> None:
        self._iter_orders.append(it.order)

    def leave_iteration(self) -> None:
        self._iter_orders.pop()

    def _gated_callback(self, info: CallInfo, node: cst.Call, bound: bool) -> None:
        """Collective work handed to a project function that hands it on to one calling it only
        where a process-dependent condition holds (a manager whose commit thread runs
        `on_commit_callback` on process 0: `semantics.GATED_CALL`): it runs on some processes
        only. (A callee calling it under the condition itself is reported at that condition.)"""
        q = self.index._follow_reexport(info.callee or info.name)
        f = self.index.functions.get(q)
        if f is None or node in self.gated_calls:
            return
        offset = 1 if bound and f.cls and f.params and f.params[0] in ("self", "cls") else 0
        for (k, v), a in zip(info.args, node.args):
            if k == "*":
                break
            p = k if isinstance(k, str) else (f.params[offset + k] if offset + k < len(f.params) else None)
            work = v.callable or (self.index.collective.get(v.fn) if v.fn else None)
            if p is None or not work:
                continue
            gate = self.index.param_gate(q, p, forwarded_only=True)
            if gate is not None:
                self.gated_calls[node] = (self.anchor(gate, node, short_name(q)), a.value, work)
                return

    def _project_call(self, q: str, argu: Val, node: cst.Call, exact: bool = True,
                      bound: bool = False) -> tuple[Val, str | None]:
        info = self.calls.get(node)
        args = info.args if exact and info is not None else None
        if args and any(v.cls and not v.pd for _, v in args):
            argu, args = self._iterable_instances(q, argu, args, node)
        res, coll = self.index.call_name(q, argu, _given(node) if exact else None,
                                         self._site(node, bound) if exact else None, args)
        target = self.index._follow_reexport(q)
        if args and argu.divergent and (made := self.index.made_instance(q, args, bound)) is not None:
            self._made[node] = self.index.instance_attrs(*made)
        if coll is None and exact and (given := _given(node)) is not None:
            # a helper reducing a parameter, given a global array for it
            gkeys = [a.keyword.value if a.keyword is not None else str(i)
                     for i, a in enumerate(node.args) if self.ev_cached(a.value).glob]
            coll = self.index.glob_param_work(target, gkeys, given[0], given[1], bound) if gkeys else None
        if self.index.env_params.get(target):
            res = res.join(self.index.env_read_by(target, lambda p, pos: _env_key_arg(node, p, pos)))
        if res.divergent:
            # Sources found inside a project helper: name it at this call site. (A library call's
            # result carries its arguments' sources, already located in this file: only what the
            # index adds, e.g. from a helper whose result was also made by a library, is moved.)
            res = self.anchor(res, node, short_name(q), unlocated_only=res.ext)
        if res.pd and not coll and self._callable_desc(res):
            # A helper returning a function that differs by process (`return clipped if
            # host.startswith("a") else plain`): calling it runs another program there.
            self.conds[node] = self.conds.get(node, BOTTOM).join(Val(pd=res.pd))
            res = replace(res, chosen=res.chosen | {node})
        # Same-file functions: remember tainted arguments to analyse the callee with them.
        fn = self.index.functions.get(target)
        if fn is not None and exact and not coll and fn.sized_by:
            res = self._sized_by_arguments(fn, target, node, res, bound)
        if fn is not None and fn.jit and coll and not semantics.result_is_local(semantics.callable_kind(f"({fn.jit})")):
            res = res.join(self._host_inputs(node))
        if fn is not None and fn.jit and fn.statics:
            self._static_args(fn, target, node)
        elif fn is None and coll:
            self._bound_statics(self._bound_callable(target), node)
        if coll and ((fn is not None and not fn.jit) or target in self.index.classes):
            self.calls[node].via_project = True
            name = f"`{short_name(target)}()`"
            if not coll.startswith(name) and (coll.count("→") < 3 or coll.startswith("… → ")):
                coll = f"{name} → {coll}"  # name the function the reader sees called here
        if fn is not None and "i" in fn.flags:
            res = self._runs_out_in_helper(target, node, res)
        if target in self.fn_nodes:
            self._note_global_arguments(target, node)
            info = self.calls.get(node)
            # (`info.args` are this call's arguments from an earlier pass; on the first, the
            # union of the arguments says whether one of them is collective work)
            # (a container whose element count alone differs by process, `{}` on some: its
            # iteration in the callee runs a different number of times)
            if argu.divergent or self._callable_desc(argu) or (info and any(self._callable_desc(v) for _, v in info.args)) \
                    or any(self.ev_cached(a.value).unordered for a in node.args) or argu.length_sources \
                    or (fn is not None and not fn.jit and any(self.ev_cached(a.value).glob for a in node.args)) \
                    or self._carries_attributes(node):
                # (a global array handed on: the callee's jitted calls given it and a host value
                # span the processes, `_replicated_host_args`)
                self._record_param_taint(target, node)
        elif exact and target in self.index.classes and (argu.divergent or argu.length_sources
                                                          or self._carries_attributes(node)):
            # A construction runs the class's `__init__` with its arguments (`Table(own_rows)`):
            # analysed again with them, as a function called by name is.
            init = self.index.method(target, "__init__")
            if init in self.fn_nodes:
                self._record_param_taint(init, node)
        return res, coll

    def _carries_attributes(self, node: cst.Call) -> bool:
        """Whether an argument of `node` is an object whose own attributes differ by process
        (`carried_attributes`)."""
        return any(not a.star and self.carried_attributes(a.value) for a in node.args)

    def _iterable_instances(self, q: str, argu: Val, args: list, node: cst.Call) -> tuple[Val, list]:
        """Arguments that are instances of a project class iterating process-local data (a
        loader whose `__iter__` walks this process's share, `_iterated_instance`), handed to a
        helper of the project (`batches(dataset)`): what iterating them gives, as the helper
        most likely iterates them; a guess (`evidence.ITERATED_BY_HELPER`). Not for a method of
        the instance's own class, whose reads of `self` are followed as they are."""
        target = self.index._follow_reexport(q)
        fn = self.index.functions.get(target)
        if fn is None or fn.jit:
            return argu, args
        out = []
        for k, v in args:
            if v.cls and not v.pd and v.cls != fn.cls:
                it = self._iterated_instance(v.cls, node)
                if it.pd:
                    v = v.join(evidence.mark(it, evidence.ITERATED_BY_HELPER, f"`{short_name(v.cls)}` given to `{short_name(q)}()`",
                                             self.line(node)))
                    argu = argu.join(Val(pd=v.pd))
            out.append((k, v))
        return argu, out

    def _runs_out_in_helper(self, q: str, node: cst.Call, res: Val) -> Val:
        """A helper that takes `next()` of an iterator it is given inside a `try` and returns
        something else from its `StopIteration` handler (`has_next(it)` returning `(False,
        None)`; summary flag "i"): given an iterator whose length differs by process (this
        process's share), what it returns is chosen by where that iterator runs out, as
        `next(it, None)` is. A guess (`evidence.ENDS_ITERATION`): the helper may first agree with
        the others when to stop, and which argument it iterates is not told apart."""
        info = self.calls.get(node)
        counts = frozenset()
        for _, v in (info.args if info is not None else ()):
            counts |= v.count_sources
        if not counts:
            return res
        chosen = evidence.mark(Val(pdc=_cap(counts)), evidence.ENDS_ITERATION, f"`{short_name(q)}()`", self.line(node))
        if res.items is not None:
            return replace(res.join(chosen), items=tuple(x.join(chosen) for x in res.items))
        return res.join(chosen)

    def _host_inputs(self, node: cst.Call) -> Val:
        """What a jitted call's result computes from the data it is given where none of its
        arguments is a global array: their taint, as content (its pytree structure and count
        are fixed by the trace). A jitted function is a pure function of its
        inputs; inputs that differ between processes make results that differ (computed on this
        process alone, or as a 'replicated' input each process holds its own copy of). With a
        global array among the inputs the computation is the mesh's, its result one array."""
        info = self.calls.get(node)
        if info is None or any(v.glob for _, v in info.args):
            return BOTTOM
        return join_all(Val(pdc=_cap(v.pd | v.pdc)) for _, v in info.args)

    def _sized_by_arguments(self, fn: FunctionFacts, target: str, node: cst.Call, res: Val, bound: bool) -> Val:
        """A helper returning an array it allocated with a shape made of its parameters
        (`np.full((n, max_len), pad)`, `FunctionFacts.sized_by`): the result is as large as this
        call's arguments for them say, so a size that differs between processes makes a shape
        that does, as the constructor called here would."""
        info = self.calls.get(node)
        if info is None or any(k == "*" for k, _ in info.args):
            return res
        given = {k: v for k, v in info.args}
        offset = 1 if bound and fn.params and fn.params[0] in ("self", "cls") else 0
        for p in fn.sized_by:
            key = semantics.argument_for(p, fn.params, offset, given)
            if key is None:
                continue
            v = given[key]
            size = semantics.as_size(v.pd, v.pdc)
            if size:
                src = evidence.derived(self.src(node, f"a shape computed from {_why(size)}, given to `{short_name(target)}()` as `{p}`"), size)
                res = replace(res, shape=_cap(res.shape | frozenset({src})))
        return res

    def _static_args(self, fn: FunctionFacts, target: str, node: cst.Call) -> None:
        """A process-dependent value passed as a static argument of a jit-decorated function."""
        v = self._decorated_jit(fn, target, node)
        self._check_statics(v.statics, v.callable, node)

    def _decorated_jit(self, fn: FunctionFacts, target: str, node: cst.Call) -> Val:
        """A jit-decorated project function as called here: its description and its static
        arguments' (position, name) pairs, positions as this call counts them."""
        params = list(fn.params)
        if fn.cls and params and params[0] in ("self", "cls") and isinstance(node.func, cst.Attribute) \
                and self.qualify(node.func.value) not in self.index.classes:
            params = params[1:]  # called through an instance (not `Class.method(obj, ...)`)
        statics = tuple((params.index(n) if n in params else None, n) for n in fn.statics)
        return Val(callable=f"`{short_name(target)}` ({fn.jit})", statics=statics)

    def _chosen_call(self, fv: Val, node: cst.Call) -> None:
        for n in fv.chosen:
            self.chosen_calls.setdefault(n, node)

    def _bound_callable(self, target: str) -> Val | None:
        """The value of a project global or class attribute that `target` names (e.g. a
        `jax.jit(f, static_argnums=...)` bound at module level), None for anything else."""
        if target in self.index.globals:
            return self.index.ref(target)
        owner, _, name = target.rpartition(".")
        return self.index.attr(owner, name) if owner in self.index.classes else None

    def _bound_statics(self, v: Val | None, node: cst.Call) -> None:
        if v is not None and v.callable and v.statics:
            self._check_statics(v.statics, v.callable, node)

    def _check_statics(self, statics: tuple, label: str, node: cst.Call) -> None:
        """A process-dependent value passed as a static argument of a jitted function: every value
        compiles another program, so the processes run different computations (MCJ301).
        `statics`: (position, name) pairs, either may be None."""
        info = self.calls.get(node)
        if info is None:
            return
        for k, v in info.args:
            if not v.pd:
                continue
            hit = next((st for st in statics if (st[0] == k if isinstance(k, int) else st[1] == k)), None)
            if hit is None:
                continue
            name = f"`{hit[1]}`" if hit[1] else f"at position {hit[0]}"
            for s in sorted(v.pd):
                self._add_sink(Sink(kinds.STATIC_ARGUMENT, kinds.VALUE, s, node, f"static argument {name} of {label}"))

    def _jit_static_literals(self, node: cst.Call) -> tuple[list[int], list[str]]:
        """The literal `static_argnums` / `static_argnames` of a jit (or `partial(jax.jit)`) call."""
        nums: list[int] = []
        names: list[str] = []
        for a in node.args:
            if a.keyword is None or a.keyword.value not in ("static_argnums", "static_argnames"):
                continue
            items = [e.value for e in a.value.elements] if isinstance(a.value, (cst.Tuple, cst.List)) else [a.value]
            for it in items:
                if a.keyword.value == "static_argnums" and isinstance(it, cst.Integer):
                    nums.append(int(it.evaluated_value))
                elif a.keyword.value == "static_argnums" and isinstance(it, cst.UnaryOperation) \
                        and isinstance(it.operator, cst.Minus) and isinstance(it.expression, cst.Integer):
                    nums.append(-int(it.expression.evaluated_value))  # the last positional parameter(s)
                elif a.keyword.value == "static_argnames" and _const_str(it) is not None:
                    names.append(_const_str(it))
        return nums, names

    def _statics_for(self, nums, names, target: cst.BaseExpression | None) -> tuple:
        """(position, name) pairs for static nums/names of a jitted `target`, named both ways where
        `target` is a function of this file."""
        if not nums and not names:
            return ()
        positional = None
        q = self.qualify(target) if isinstance(target, (cst.Name, cst.Attribute)) else None
        if q is not None:
            fdef = self.fn_nodes.get(self.index._follow_reexport(q), (None,))[0]
            if fdef is not None:
                positional = [p.name.value for p in fdef.params.posonly_params + fdef.params.params]
        return tuple(tuple(x) for x in jit_statics(nums, names, positional))

    def _record_param_taint(self, q: str, node: cst.Call, guess: str | None = None,
                            receiver: Val | None = None) -> None:
        fdef, _, _ = self.fn_nodes[q]
        params = [p.name.value for p in fdef.params.posonly_params + fdef.params.params]
        cur = self.fn_params.setdefault(q, {})
        if params and params[0] in ("self", "cls"):
            if receiver is not None and receiver.order and params[0] == "self":
                # the receiver is the method's `self`: only the order it was taken in flows on
                # (its class stays the method's own, `run_function`)
                val = Val(order=receiver.order)
                if guess is not None:
                    val = evidence.mark(val, evidence.METHOD_ARGUMENT, guess, self.line(node))
                cur["self"] = _joined_arg(cur["self"], val) if "self" in cur else val
            params = params[1:]
        kwonly = {p.name.value for p in fdef.params.kwonly_params}
        self._record_call_constants(q, fdef, params, node)
        facts = self.index.functions.get(q)
        # A jitted function's body runs at trace time: only its static parameters carry the
        # caller's host values into it.
        host = semantics.host_params_of_traced(params + sorted(kwonly), facts.statics) if facts and facts.jit else None
        i = 0
        # The `*args` and `**kwargs` parameters (`_star_args_value`, `_kwargs_value`): what the
        # positional arguments past the named parameters, and the keywords none of them names,
        # bind there.
        star = fdef.params.star_arg.name.value if isinstance(fdef.params.star_arg, cst.Param) else None
        kwstar = fdef.params.star_kwarg.name.value if fdef.params.star_kwarg is not None else None
        extra_pos: list = []  # Vals, or ("*", Val) for a starred tail of unknown length
        extra_kw: list = []  # (keyword or None for `**d` of unknown keys, Val)
        for a in node.args:
            if a.star == "*" and a.keyword is None:
                # `f(*xs)`: xs's elements bind to the positional parameters from here on, each
                # to its own where the elements are known (`f(*load())`, a returned tuple); else
                # each of them may take any element (`evidence.WHOLE_CONTAINER`). The position
                # of a later positional argument is not known.
                before = i
                i = self._bind_starred(a, params, i, host, cur, guess, node)
                if star is not None:
                    whole = self.star_iterated(self.ev_cached(a.value), a.value)
                    if guess is not None:
                        whole = evidence.mark(whole, evidence.METHOD_ARGUMENT, guess, self.line(node))
                    if before is not None and whole.items is not None:
                        extra_pos.extend(whole.items[max(0, len(params) - before):])
                    else:
                        extra_pos.append(("*", whole))
                continue
            if a.star == "**":
                if star is not None or kwstar is not None or params or kwonly:
                    d = self.ev_cached(a.value)
                    if guess is not None:
                        d = evidence.mark(d, evidence.METHOD_ARGUMENT, guess, self.line(node))
                    if d.keys is not None:
                        for k, v in d.keys:
                            if (k in params or k in kwonly) and (host is None or k in host):
                                v = v.taint()
                                cur[k] = _joined_arg(cur[k], v) if k in cur else v
                            else:
                                extra_kw.append((k, v))
                    else:
                        extra_kw.append((None, d))
                continue
            val = orig = self.ev_cached(a.value)
            orig_struct = val.struct
            desc = self._callable_desc(val)
            # (with its structure: `emit=writer.write if rank == 0 else None` is None on some
            # processes, so the callee's `if emit is not None` differs between them)
            # And a function chosen per process (`run(a if rank == 0 else b)`): the callee's call
            # of its parameter runs another program there.
            val = val.taint().join(Val(callable=desc, chosen=val.chosen)) if desc else \
                (replace(val.taint(), host=True) if self.is_host(a.value) else val.taint())
            if orig.unordered and not desc:
                # a set (or a dict filled in a set's order) handed on: the callee's iteration of
                # it runs in this process's order, as the caller's would
                val = replace(val, unordered=orig.unordered)
            if orig_struct == "list":
                # a list built by a comprehension: the callee's `if not xs:` tests its length alone
                # (`emptiness`), as long where only its elements' content differs
                val = replace(val, struct="list")
            if orig.cls and not orig.ext and not desc and not val.divergent:
                # an instance of a project class: the callee's parameter is that object, and its
                # methods are that class's (`scaler.step(opt, grads)`, then `optimizer.step()`).
                # (Not for a process-dependent one: its class would derive again, from its
                # construction, what the value carries already with this call's caveats.)
                val = replace(val, cls=orig.cls)
            if orig.glob and not desc:
                # a global array: the callee's array work on it spans the processes, and a host
                # value it hands a jitted function with it is taken as replicated (`_joined_arg`:
                # only where every such call passes one)
                val = replace(val, glob=True)
            if guess is not None:
                val = evidence.mark(val, evidence.METHOD_ARGUMENT, guess, self.line(node))
            # (process-local data at every such call stays so in the callee: `Val.join`; an
            # object's class only where every such call passes one of the same class)
            if a.keyword is not None:
                name = a.keyword.value
                if (name in params or name in kwonly) and (host is None or name in host):
                    cur[name] = _joined_arg(cur[name], val) if name in cur else val
                    self._carry_attributes(cur, name, a.value, guess, node)
                elif name not in params and name not in kwonly:
                    extra_kw.append((name, val))
            elif not a.star and i is not None:
                if i < len(params) and (host is None or params[i] in host):
                    cur[params[i]] = _joined_arg(cur[params[i]], val) if params[i] in cur else val
                    self._carry_attributes(cur, params[i], a.value, guess, node)
                elif i >= len(params):
                    extra_pos.append(val)
                i += 1
            elif not a.star:
                extra_pos.append(val)  # (after a starred argument of unknown length)
        for name, bound in ((star, _star_args_value(extra_pos, self._whole_container, node)),
                            (kwstar, _kwargs_value(extra_kw, self._whole_container, node))):
            if name is not None and (host is None or name in host):
                cur[name] = _joined_arg(cur[name], bound) if name in cur else bound

    def _carry_attributes(self, cur: dict[str, Val], param: str, value: cst.BaseExpression, guess: str | None,
                          node: cst.Call) -> None:
        """An object handed to parameter `param` takes its own attributes' values along
        (`carried_attributes`): the callee reads them through the parameter as the caller would
        through its name (`run_function` binds them beside it). Joined over the calls, as the
        parameter itself is: an attribute one call's object holds per process may be read; a
        guess (`evidence.IMPLICIT_ATTRIBUTE`), so at most a warning."""
        for attr, v in self.carried_attributes(value).items():
            # (a guess: which call's object reaches a read is not followed, and what the caller
            # stored may rest on a value taken as per-process only by its parameter)
            v = evidence.mark(v, evidence.IMPLICIT_ATTRIBUTE, f"`.{attr}` of the object passed", self.line(node))
            if guess is not None:
                v = evidence.mark(v, evidence.METHOD_ARGUMENT, guess, self.line(node))
            key = _call_stored_key(param, attr)
            cur[key] = cur[key].join(v) if key in cur else v

    def _note_global_arguments(self, q: str, node: cst.Call) -> None:
        """The parameters of `q` every call seen so far passes a global array for
        (`_glob_params`; `run` keeps that fact on a helper analysed again only for those)."""
        fdef = self.fn_nodes[q][0]
        params = [p.name.value for p in fdef.params.posonly_params + fdef.params.params]
        if params and params[0] in ("self", "cls") and isinstance(node.func, cst.Attribute):
            params = params[1:]
        here = {p for p, v in (_arguments_by_parameter(params, node) or {}).items() if self.ev_cached(v).glob}
        cur = self._glob_params.get(q)
        self._glob_params[q] = frozenset(here) if cur is None else cur & here

    def _record_call_constants(self, q: str, fdef: cst.FunctionDef, params: list[str], node: cst.Call) -> None:
        """The literal constant each parameter of `q` takes at this call (its argument, or the
        default it is left to), joined into `fn_consts[q]`: where every such call agrees, the
        analysis of `q` for them runs the arm of an `if` those constants decide."""
        bound = _arguments_by_parameter(params, node)  # (None for `f(*xs)`, `f(**kw)`: not read)
        here: dict[str, str | None] = {}
        for p in _all_params(fdef.params):
            here[p.name.value] = None if bound is None or p.default is None else semantics.constant_repr(p.default, read)
        for name, v in (bound or {}).items():
            if name in here:
                here[name] = semantics.constant_repr(v, read)
        cur = self.fn_consts.get(q)
        self.fn_consts[q] = {p: None if c is None or (cur is not None and cur.get(p) is None)
                             else (frozenset({c}) if cur is None else cur[p] | {c}) for p, c in here.items()}

    def _bind_starred(self, a: cst.Arg, params: list[str], i: int | None, host, cur: dict, guess: str | None,
                      node: cst.Call) -> int | None:
        """`f(*xs)` (`_record_param_taint`): the positional parameters from index `i` on take xs's
        elements; returns the next positional argument's index, None where the number of elements
        is not known (nor, then, where a later positional argument goes)."""
        if i is None:
            return None
        whole = self.ev_cached(a.value)
        known = whole.items is not None
        rest = params[i:]
        parts = list(whole.items) if known else [evidence.mark(whole.element(), evidence.WHOLE_CONTAINER,
                                                                 "`f(*args)`", self.line(node))] * len(rest)
        for name, val in zip(rest, parts):
            val = val.taint()
            if not val.divergent or (host is not None and name not in host):
                continue
            if guess is not None:
                val = evidence.mark(val, evidence.METHOD_ARGUMENT, guess, self.line(node))
            cur[name] = cur[name].join(val) if name in cur else val
        return i + len(parts) if known else None

    def _callable_desc(self, v: Val) -> str | None:
        """A value that does collective work when called (a jitted function, a collective helper)."""
        if v.callable:
            return v.callable
        if v.fn and self.index.collective.get(v.fn):
            return f"`{short_name(v.fn)}()` → {self.index.collective[v.fn]}"
        return None

    def ev_cached(self, expr: cst.BaseExpression) -> Val:
        # Arguments were just evaluated; re-evaluating is side-effect free for names and cheap.
        if isinstance(expr, cst.Call) and expr in self.calls:
            return self.calls[expr].result
        return self.ev(expr)

    def _thread_start(self, q: str | None, func: cst.BaseExpression, node: cst.Call, args) -> None:
        """`threading.Thread(target=f)`, `executor.submit(f, ...)`, ...: record where a callable
        that does collective work is started on another thread (MCJ105)."""
        where = K.THREAD_STARTERS.get(q or "")
        pool = None
        if where is None and isinstance(func, cst.Attribute) and (q is None or q not in self.index.functions):
            where = K.THREAD_SUBMIT_METHODS.get(func.attr.value)
            pool_map = K.THREAD_POOL_MAP_METHODS.get(func.attr.value)
            if where is not None or pool_map is not None:
                pool = self._thread_pool(func.value)
            if where is None and pool is not None:
                where = pool_map
        if where is None:
            return
        target = next((v for k, v in args if k in where), None)
        desc = self._callable_desc(target) if target is not None else None
        if desc is None:
            return
        self.thread_starts[node] = (desc, self.scope.qualname, target.fn)
        # Several pool threads run it at once: `pool.map(f, xs)`, `pool.submit(f)` in a loop.
        if pool is not None and pool != 1 and (func.attr.value in K.THREAD_POOL_MAP_METHODS
                                               or any(a <= self.line(node) <= b for a, b in self._loop_spans(self.scope.qualname))):
            self.concurrent_starts.add(node)

    def _thread_pool(self, recv: cst.BaseExpression) -> int | None:
        """The number of threads of the pool `recv` names (0: not a literal), where this function
        (or the module) makes it in sight: `with ThreadPoolExecutor(4) as pool`, `pool =
        ThreadPool()`, `ThreadPoolExecutor().map`; None when not seen made by a thread pool."""
        made: list[cst.Call] = []
        if isinstance(recv, cst.Call):
            made.append(recv)
        elif isinstance(recv, cst.Name):
            root = self.fn_nodes.get(self.scope.qualname, (self.module,))[0]
            name = recv.value
            for n in _walk(root):
                if isinstance(n, cst.WithItem) and isinstance(n.asname, cst.AsName) \
                        and isinstance(n.asname.name, cst.Name) and n.asname.name.value == name and isinstance(n.item, cst.Call):
                    made.append(n.item)
                elif isinstance(n, cst.Assign) and isinstance(n.value, cst.Call) and any(
                        isinstance(t.target, cst.Name) and t.target.value == name for t in n.targets):
                    made.append(n.value)
        for c in made:
            if self.qualify(c.func) in K.THREAD_POOLS:
                size = read_cst.argument(c, 0, "max_workers") or read_cst.argument(c, 0, "processes")
                return int(size.value) if isinstance(size, cst.Integer) else 0
        return None

    def main_thread_collective(self, node: cst.Call) -> tuple[cst.Call | None, str]:
        """For a thread start: collective work this file dispatches outside the thread's target
        (the first found, preferring the starting function's own), and where: "after" (the
        starting function's, at or after the start, or in a loop around it: it runs while the
        thread may), "before" (the starting function's, all done before the thread starts: it
        overlaps the thread only if the function runs again meanwhile), "elsewhere"."""
        _, scope, fn = self.thread_starts[node]
        # What the threads run: their targets and every function of this file they call.
        on_threads: set[str] = set()
        todo = [t[2] for t in self.thread_starts.values() if t[2]]
        while todo:
            q = todo.pop()
            if q not in on_threads:
                on_threads.add(q)
                todo.extend(self.scope_calls.get(q, ()))
        starters = {t[1] for t in self.thread_starts.values()}

        def main(calls) -> list[cst.Call]:
            # (a call of a function that starts a thread is collective through that thread)
            out = []
            for c in calls:
                info = self.calls.get(c)
                name = self.index._follow_reexport(info.name) if info is not None and info.name else None
                if name not in starters:
                    out.append(c)
            return sorted(out, key=self.pos)  # (source order: two calls on a line, the first written)

        own = main(self.collective_scopes.get(scope, ())) if scope not in on_threads else []
        if own:
            start = self.line(node)
            loops = self._loop_spans(scope)
            after = [c for c in own if self.line(c) >= start
                     or any(a <= self.line(c) and start <= b for a, b in loops)]
            return (after[0], "after") if after else (own[0], "before")
        for sc, calls in sorted(self.collective_scopes.items()):
            if sc in on_threads or any(sc.startswith(t + ".") for t in on_threads):
                continue
            rest = main(calls)
            if rest:
                return rest[0], "elsewhere"
        return None, "elsewhere"

    def _loop_spans(self, scope: str) -> list[tuple[int, int]]:
        """(first, last) lines of the `for`/`while` loops of a function of this file (or the module)."""
        root = self.fn_nodes.get(scope, (self.module,))[0]
        spans: list[tuple[int, int]] = []
        pos = self.pos

        class Loops(cst.CSTVisitor):
            def visit_For(self, n: cst.For) -> None:
                r = pos(n)
                spans.append((r[0], r[2]))

            def visit_While(self, n: cst.While) -> None:
                r = pos(n)
                spans.append((r[0], r[2]))

        root.visit(Loops())
        return spans

    def _callback_work(self, q: str, coll: str, node: cst.Call, args: list[tuple[object, Val]]) -> str | None:
        """A call of `q`, collective only through the callables it calls: `semantics.callback_call_work`
        on what this call passes for each of them (the index asks the same of a summary's call)."""
        q = self.index._follow_reexport(q)
        f = self.index.functions.get(q)
        called = self.index.callback_params.get(q, set())
        if f is None or not called or any(a.star for a in node.args):
            return coll
        ps = list(f.params)
        offset = 1 if f.cls and ps and ps[0] in ("self", "cls") else 0
        by_key = {k: v for k, v in args}
        nodes = {k: a.value for k, a in zip([k for k, _ in args], node.args)}
        passed: list[str | bool | None] = []
        for p in sorted(called):
            key = semantics.argument_for(p, ps, offset, by_key)
            v = by_key.get(key) if key is not None else None
            if v is None:
                passed.append(None)  # its default: not followed here
            elif v.callable or (v.fn and self.index.collective.get(v.fn)):
                passed.append(v.callable or f"`{short_name(v.fn)}()` → {self.index.collective[v.fn]}")
            elif (work := self.index.instance_call_work(v)) is not None:
                passed.append(work)  # (an instance whose `__call__` is collective work)
            else:
                passed.append(False if isinstance(nodes.get(key), cst.Lambda) or v.fn and v.fn in self.index.functions else None)
        return semantics.callback_call_work(coll, short_name(q), passed)

    def _callback_collective(self, q: str | None, args: list[tuple[object, Val]]) -> str | None:
        if q is None:
            return None
        q = self.index._follow_reexport(q)
        if not self.index._callbacks_count(q):
            return None
        if q in ("print", "isinstance", "getattr", "setattr", "hasattr", "len", "str", "repr", "id", "type"):
            return None
        for _, v in args:
            if v.callable:
                return f"{v.callable} passed as a callback"
            if v.fn and self.index.collective.get(v.fn):
                return f"`{short_name(v.fn)}()` passed as a callback → {self.index.collective[v.fn]}"
        return None

    def _known_call(self, q: str, node: cst.Call, args, argu: Val, info: CallInfo) -> tuple[Val | None, str | None]:
        """Built-in knowledge about library calls (`semantics.StatementRules.library_call`, after
        what the settings declare and what this pass knows more); (None, None) for calls
        resolved by the index."""
        st = self.settings
        if st.benign_functions and K.matches(q, st.benign_functions):
            return argu, None
        if st.sanitizers and K.matches(q, st.sanitizers):
            return SANITIZED, self.index._declared_collective(q)
        if st.process_dependent_sources and K.matches(q, st.process_dependent_sources):
            return Val(pd=frozenset({self.src(node, f"`{short_name(q)}()` (declared process-dependent)", kinds.DECLARED)})), None
        if st.collective_functions and K.matches(q, st.collective_functions):
            return Val(glob=True), self.index._declared_collective(q)
        if q == "dict" and node.args and all(a.keyword is not None for a in node.args) and len(node.args) <= MAX_KEYS:
            # `dict(steps=100, log=is_main)`: constant keys, as a literal.
            vals = [v for _, v in args]
            return replace(argu, struct="dict:" + ",".join(sorted(str(k) for k, _ in args)), elems=self._elems(vals),
                           keys=tuple(sorted((str(k), v) for k, v in args))), None
        if q in _EMPTY_SEQUENCES and not any(a.keyword is None for a in node.args):
            # `deque(maxlen=10)`, `list()`: an empty sequence, as `[]` is; what the program
            # appends to it decides how many elements it holds, not what they are (`_built_here`).
            return replace(argu.data(), struct="seq:0"), None
        if q in _RE_MATCH_ANY and node.args and _alternation(node.args[0].value):
            # `re.compile("|".join(NO_DECAY))`: which alternative matches may follow their order,
            # whether one does not.
            return argu.without_order(), None
        if q in K.SHAPE_CONSTRUCTORS:
            return self._shape_constructor(q, node, args, argu), None
        if q in K.EXIT_CALLS:
            info.exits = True
            return BOTTOM, None
        saved = self._info, self._work
        self._info, self._work = info, None  # (what `work` records, for this call alone)
        try:
            out = self.library_call(q, node, args, argu)
            work = self._work
        finally:
            self._info, self._work = saved
        if out is None and "." not in q and q not in self.module_defs and q not in self.module_scope.env:
            return argu, None  # other builtins
        return out, work

    # `library_call` (semantics.StatementRules): collective work is returned to `ev_Call`, with
    # the token that names it (`CallInfo.token`); sinks on what a collective is given.
    def work(self, desc: str, node: cst.Call, token: str | None = None) -> None:
        self._work = desc
        if token is not None:
            self._info.token = token

    initialized = staticmethod(lambda node: BOTTOM)
    on_local_devices = staticmethod(lambda a0: replace((a0 or BOTTOM).taint(), cls=(a0 or BOTTOM).cls, host=True))

    def seed_given(self, q: str, args, node: cst.Call) -> None:
        self._seed_sink(q, args, node)

    # `isinstance(model, T)`: the type, not the content; differs only where the structure does.
    type_of = staticmethod(lambda a0: Val(pd=a0.tree) if a0 is not None else BOTTOM)

    @staticmethod
    def done_sets(argu: Val) -> Val:  # (done, not_done): two sets
        done = replace(argu.data().without_order(), unordered=semantics.SALTED, struct="set")
        return replace(argu.data().without_order(), items=(done, done))

    @staticmethod
    def scalar_of(v: Val) -> Val:
        # (`bool(xs)` is whether xs is empty: its length, a value now; its own shape is fixed)
        return one_number(v.data())

    def dunder_len(self, v: Val, node: cst.Call) -> Val | None:
        # (semantics.StatementRules.dunder_len) `len(obj)` of a known project class: `obj.__len__()`
        if not v.cls or self.index.method(v.cls, "__len__") is None:
            return None
        res, _ = self.index.call_method("__len__", v, BOTTOM, _given(node), self._site(node, True), None)
        return res if res.divergent else None

    def order_free_call(self, q: str, node: cst.Call, argu: Val, arg0: Val | None) -> Val:
        out = argu.without_order()
        if self._iter_orders and argu.order:
            # The order of a loop this call runs in, carried by its argument (`sum(table[k])`
            # for k in a set): which element the argument is differs with the position, not
            # the order of its own elements; the sum at that position differs as the element.
            active = frozenset().union(*self._iter_orders)
            if kept := frozenset(x for x in argu.order if x in active):
                out = replace(out, order=kept)
        if argu.order and self._element_orders and node.args and isinstance(a0 := node.args[0].value, cst.Name) \
                and a0.value in self.scope.params:
            # (`len(name)` of a parameter that a caller's loop hands this helper one element at a
            # time, in a set's order (`_per_element_collective`): which element, so its length,
            # differs with the position)
            if kept := frozenset(x for x in argu.order if x in self._element_orders):
                out = replace(out, order=_cap(out.order | kept))
        if q == "len" and arg0 is not None and _built_here(arg0):
            # A list built here (a display, a comprehension, one grown by `append`) holds as
            # many elements as were put in it: its count alone (`Val.count_sources`), whatever
            # those elements hold, as whether it is empty (`emptiness`) is.
            out = Val(order=out.order, hash=out.hash,
                      pd=rekinded(arg0.count_sources, kinds.DERIVED)).without_order()
        elif q == "len":
            if arg0 is not None and arg0.tree and isinstance(node.args[0].value, cst.Name):
                # `len(x)` with x None on some processes (`x = [] if ... else None` by process):
                # TypeError there (`Divergence._none_use_point`)
                self._info.none_use = frozenset(x for x in arg0.tree if x in self.none_arm_sources)
                self.none_uses = self.none_uses or bool(self._info.none_use)
            out = evidence.length_only(out)  # (how many elements a piece holds: a guess)
            out = self.attribute_of(out, BOTTOM, "shape")  # (a draw's length is its size, as its shape)
            # The length of a pd-shaped thing is a pd value.
            out = replace(out, pd=union_sources(out.pd, rekinded((arg0 or BOTTOM).length_sources, kinds.DERIVED)),
                          shape=frozenset(), tree=frozenset())
        elif q in ("bool", "any", "all"):
            out = self.scalar_of(out)  # (one truth value, whatever the argument's length)
        elif q in ("min", "max", "sum"):
            out = replace(out, shape=frozenset())
            elems = self._measured_elements(node) if q != "sum" else None
            if elems is not None and (elems.pd or elems.pdc or elems.length_sources):
                # `max(len(s) for s in local)`: the longest of this process's elements, a
                # length no other process shares (padding to it makes the shapes differ).
                what = "longest" if q == "max" else "shortest"
                made = evidence.derived(self.src(node, f"the {what} element of process-local data", kinds.LOCAL_DATA),
                                        elems.pd | elems.pdc | frozenset(elems.length_sources))
                out = replace(out, pd=_cap(out.pd | frozenset({made})))
        elif q == "sorted" and arg0 is not None and _plain_first_argument(node):
            out = self.same_count(out, arg0)
        return out

    in_set_order = staticmethod(lambda argu, a0: replace(argu, unordered=a0.unordered) if a0 is not None else argu)

    def set_ordered(self, node: cst.Call, arg0: Val) -> Val:
        return Val(order=frozenset({self._set_iteration(node.args[0].value, arg0)}))

    def tied_order(self, node: cst.Call, arg0: Val) -> Val:
        """The order `sorted(x, key=...)` (or `x.sort(key=...)`) keeps of x where its key ties
        (`semantics.sort_key_ties`): x's order sources, a set's iteration, as a guess."""
        order = arg0.order
        if arg0.unordered:
            at = node.args[0].value if node.args and node.args[0].keyword is None else node
            order = order | frozenset({self._set_iteration(at, arg0)})
        return Val(order=evidence.tied_order(order)) if order else BOTTOM

    def ordered(self, q: str, node: cst.Call, out: Val, arg0: Val | None) -> Val:
        arg0 = arg0 if arg0 is not None else BOTTOM
        if q == "next":
            # The element taken first: as arbitrary as the order (of a set: `next(iter(s))`).
            out = arg0.element().join(Val(order=out.order))
            kept = self.comp_filters.get(node.args[0].value) if node.args else None
            if kept is not None:
                # `next(b for b in SIZES if b >= local_n)`: the first element the filter keeps is
                # chosen by the filter, as a name assigned under that condition would be.
                out = out.join(kept)
            if len(node.args) > 1 and arg0.count_sources and _is_none(node.args[1].value):
                # None once this process's iterator is exhausted, a value on the others.
                out = replace(out, tree=_cap(out.tree | frozenset({evidence.derived(self.src(node, f"`None` when the local iterator ({_why(arg0.count_sources)}) runs out"), arg0.count_sources)})))
            self._info.may_raise_pd = arg0.process_dependent and len(node.args) == 1
        elif q == "iter":
            # An iterator over a set is no longer a set: it carries the order (fix: `iter(sorted(s))`).
            out = replace(arg0, unordered=False, order=out.order) if arg0.unordered else arg0
        elif q in ("enumerate", "zip", "map", "filter", "list", "tuple", "reversed"):
            out = replace(out, shape=_cap(out.shape | arg0.shape))
            if q in _SAME_COUNT_BUILTINS and _plain_first_argument(node):
                out = self.same_count(out, arg0)
        return out

    def own_method(self, recv: Val, meth: str) -> bool:
        """Whether `meth` of `recv` is a method its project class defines (not a list's `update`)."""
        return bool(recv.cls) and self.index.method(recv.cls, meth) is not None

    def view_of(self, recv: Val) -> Val | None:
        """`d.items()` of a dict whose count its structure fixes: its content, as many elements."""
        if recv.struct is None or recv.struct == "none":
            return None
        return self.same_count(recv.data(), recv)

    @staticmethod
    def same_count(out: Val, whole: Val) -> Val:
        """`enumerate(xs)`, `list(xs)`, `d.items()`: as many elements as `xs`/`d` (a list built
        here, a literal, a dict of known keys: its `struct` says its count is its length sources
        alone), whatever its elements hold: a loop over it runs as often as one over `xs`."""
        if whole.struct is None or whole.struct == "none":
            return out
        return replace(out, struct="list", shape=_cap(out.shape | whole.shape))

    def jit_factory(self, kind: str, node: cst.Call) -> Val:
        nums, names = self._jit_static_literals(node)
        return Val(factory=(kind, tuple(nums), tuple(names)))

    def jitted(self, kind: str, target, hostable: bool | str, chosen: Val | None, node: cst.Call) -> Val:
        fn = self.ev_cached(target).fn if isinstance(target, (cst.Name, cst.Attribute)) else None
        if fn and fn in self.fn_nodes:  # (a def of this file: its body is traced when the result runs)
            self._traced_def(fn, f"`{_expr_name(target)}` ({kind})", hostable or kind in semantics.LOCAL_RESULT_KINDS)
        # (a function chosen per process stays chosen once jitted: `jax.jit(fn)(x)`)
        return Val(callable=f"`{_expr_name(target)}` ({kind})", statics=self._statics_for(*self._jit_static_literals(node), target),
                   chosen=chosen.chosen if chosen is not None else frozenset(), hostable=hostable)

    partial_of = staticmethod(lambda f, bound_host: Val(callable=f.callable, fn=f.fn, cls=None, hostable=f.hostable and bound_host))
    sanitized = staticmethod(lambda: SANITIZED)
    collective_args = property(lambda self: self._shape_args)
    global_array = staticmethod(lambda v: Val(glob=True, shape=v.shape))
    is_global = staticmethod(lambda v: v.glob)
    is_sharding = staticmethod(lambda v: v.sharding)
    replicated_input = property(lambda self: lambda v, node, what: self._same_data_sink(v or BOTTOM, node, what))
    device_put_result = staticmethod(lambda argu, a0: a0 if a0 is not None else BOTTOM)

    sharding_made = staticmethod(lambda node, replicated, devices=None: Val(
        sharding=True, replicated=replicated, pd=(devices.pd | devices.pdc) if devices is not None else frozenset()))

    one_device = staticmethod(lambda: Val(device=True))
    is_one_device = staticmethod(lambda v: v is not None and v.device)
    on_one_device = staticmethod(lambda argu: replace(argu.data(), host=True))

    checkpointer = staticmethod(lambda argu, sync: Val(ckpt=semantics.SYNC if sync else True, subgroup=argu.subgroup))
    checkpointer_kind = staticmethod(lambda v: v.ckpt)
    generator = staticmethod(lambda v: replace(v, rng=True))
    taint = staticmethod(lambda v: v.taint())
    # other numbers, one shape
    drawn_content = staticmethod(lambda t: replace(t, pd=frozenset(), pdc=union_sources(t.pdc, rekinded(t.pd, lambda s: kinds.drawn(s.kind)))))
    array_op = staticmethod(lambda q, node, args: None)

    def sized_draw(self, content: Val, amount: Val, node: cst.Call) -> Val:
        """(semantics.StatementRules.method_call) Numbers drawn into a given size: what `content`
        carries (their values differ as it does), as many as the size says (a known count, as a
        list display's: `struct`), a shape that differs only where the size does."""
        out = replace(content.taint(), shape=frozenset(), struct="list")
        size = semantics.as_size(amount.pd, amount.pdc)
        if size:
            out = replace(out, shape=frozenset({evidence.derived(self.src(node, f"a shape computed from {_why(size)}"), size)}))
        return out

    # `source_call` (semantics.StatementRules): a listing's fix sorts it; a hash's source may be
    # a guess (evidence.set_order_guess)
    per_process = staticmethod(lambda v: bool(v.pd or v.pdc))

    def drawn(self, desc: str, node: cst.Call) -> Val:
        return Val(pdc=frozenset({self.src(node, desc, kinds.DRAWN)}))

    def listing(self, q: str, node: cst.Call) -> Val:
        key = "lambda e: e.name" if q == "os.scandir" else None
        fix = None if q in ("os.walk", "tensorflow.io.gfile.walk") else self.wrap_sorted_fix(node, key)
        return Val(order=frozenset({self.src(node, K.FS_LISTING_CALLS[q], kinds.LISTING_ORDER, fix)}))

    def string_hash(self, salt: bool | str, node: cst.Call) -> Val:
        return Val(hash=frozenset({evidence.set_order_guess(self.src(node, semantics.hash_desc(salt), kinds.STRING_HASH))}))

    new_set = staticmethod(lambda v, order: replace(v.without_order(), unordered=order, struct="set"))

    def _shaped_result(self, name: str | None, node: cst.Call, args, result: Val) -> Val:
        """Shape sources of a call's result: `shape=`/`size=`/`dtype=` from a process-dependent
        value, and arrays computed from a container whose length differs."""
        # The dtype given positionally to numpy / jax.numpy constructors (`np.ones(shape, dtype)`).
        mod, _, fn = (name or "").rpartition(".")
        dtype_at = _DTYPE_POSITION.get(fn) if mod in ("numpy", "jax.numpy") else None
        for k, v in args:
            size = semantics.as_size(v.pd, v.pdc)
            if (k in _SHAPE_KWS or (dtype_at is not None and k == dtype_at)) and size:
                what = "a dtype chosen by" if k in ("dtype", dtype_at) else "a shape computed from"
                result = replace(result, shape=_cap(result.shape | frozenset({evidence.derived(self.src(node, f"{what} {_why(size)}"), size)})))
        sig = _literal_array(name, node, fn, dtype_at) if mod in ("numpy", "jax.numpy") else None
        if sig is not None:
            result = replace(result, struct=sig)
        fixed = K.LENGTH_KEYWORDS.get(fn) if mod in ("numpy", "jax.numpy") else None
        if fixed is not None and any(k == fixed and not v.pd for k, v in args):
            return replace(result, shape=frozenset())
        if name in K.VALUE_SHAPED_FUNCTIONS and not any(k in ("size", "length") for k, _ in args):
            local = BOTTOM
            for k, v in args:
                local = local.join(Val(pd=v.pd, pdc=v.pdc))
            if local.pd or local.pdc:
                why = _why(local.pd | local.pdc)
                result = replace(result, shape=_cap(result.shape | frozenset({
                    self.src(node, f"`{'jnp' if mod == 'jax.numpy' else 'np'}.{fn}()` of values from {why}")})))
        if result.shape and _full_reduction(name, node):
            # `np.sum(x)`, `x.max()`, `jnp.mean(x, axis=None)`: one number whatever x's shape.
            result = replace(result, shape=frozenset())
        if not result.shape:
            return result
        positional = [a.value for a in node.args if a.keyword is None and not a.star]
        axis_arg = next((a.value for a in node.args if a.keyword is not None and a.keyword.value == "axis"),
                        None if name is None or len(positional) < 2 else positional[1])
        if positional and positional[0] in self.row_displays and semantics.rows_after(
                name, None, len(positional), (), None if axis_arg is None else _const_int(axis_arg, "?"), None) in (
                "joined", "joined?"):
            # `np.hstack([kept, kept])`: arrays put side by side keep their rows (whose number
            # differs by process) as the result's rows.
            result = replace(result, shape=rekinded(result.shape, lambda x: kinds.ROWS if x.kind == kinds.ELEMENTS else x.kind))
        if result.shape and (name or "") not in _CONTAINER_BUILTINS and any(x.kind in kinds.COUNTS for x in result.shape):
            # An array of a container's elements has as many rows (`np.asarray(kept)`: `ROWS`);
            # what else an array is made into may have that count on any axis (`arr.T`).
            method = node.func.attr.value if name is None and isinstance(node.func, cst.Attribute) else None
            if name is None and axis_arg is None and positional and method in semantics.REDUCTIONS:
                axis_arg = positional[0]  # (`x.sum(0)`)
            axis = None if axis_arg is None else _const_int(axis_arg, "?")
            shape_arg = positional[1 if name is not None else 0] if len(positional) > (1 if name is not None else 0) else None
            if isinstance(shape_arg, cst.Tuple) and shape_arg.elements:
                shape_arg = shape_arg.elements[0].value
            after = semantics.rows_after(name, method, len(positional), [k for k, _ in args if isinstance(k, str)],
                                         axis, None if shape_arg is None else _const_int(shape_arg, None))
            if after in ("joined", "joined?"):  # (an array's rows stay rows; a number of pieces moves)
                after = "rows" if all(x.kind == kinds.ROWS for x in result.shape if x.kind in kinds.COUNTS) \
                    else "moved" if after == "joined" else "stacked"
            if after == "dropped":
                result = replace(result, shape=frozenset(x for x in result.shape if x.kind not in kinds.COUNTS))
            else:
                kind = kinds.ARRAY_SHAPE if after in ("moved", "stacked") else kinds.ROWS
                counts = Val(shape=frozenset(x for x in result.shape if x.kind in kinds.COUNTS))
                result = replace(result, shape=rekinded(result.shape, lambda x: kind if x.kind in kinds.COUNTS else x.kind))
                if after in ("padded", "stacked") and counts.shape:
                    why, text = (evidence.PADDED, evidence.PADDED_TEXT) if after == "padded" else \
                        (evidence.STACKED, evidence.STACKED_TEXT)
                    counts = Val(shape=rekinded(counts.shape, kind))
                    marked = evidence.mark(counts, why, text, self.line(node)).shape
                    result = replace(result, shape=(result.shape - counts.shape) | marked)
        return result

    # `env_read` (semantics.StatementRules): which parameters a key is computed from is read off
    # its expression (every name a parameter; this pass does not tell constants apart: a guess).
    def env_source(self, key: str | None, key_per_process: bool, node: cst.CSTNode) -> Val:
        desc = K.env_desc(key, key_per_process=key_per_process)
        return Val(pd=frozenset({evidence.set_order_guess(self.src(node, desc, kinds.ENVIRONMENT))}))

    def param_env_read(self, params: list[str], node: cst.CSTNode) -> Val:
        return BOTTOM  # (the call site checks a per-process name passed in)

    def key_params(self, key: cst.BaseExpression, kv: Val) -> list[str] | None:
        """The parameters of the enclosing function an environment key is computed from, where it
        is computed from them only (`name`, `f"TRAINER_{name.upper()}"`): a helper reading the
        variable its caller names (`check_bool_flag("USE_KERNEL")`); None otherwise."""
        scope = self.scope
        while scope is not None and not scope.is_module and not scope.params:
            scope = scope.outer  # a comprehension's or lambda's scope inside the function
        if scope is None or scope.is_module:
            return None
        nodes = list(_walk(key))
        names = [n for n in nodes if isinstance(n, cst.Name)]
        attrs = {id(n.attr) for n in nodes if isinstance(n, cst.Attribute)}
        if not names or not all(n.value in scope.params or id(n) in attrs for n in names):
            return None
        return list(dict.fromkeys(n.value for n in names if id(n) not in attrs))

    def _measured_elements(self, node: cst.Call) -> Val | None:
        """For `max(len(s) for s in xs)` or `max(map(len, xs))` (lengths or shapes of the elements
        of one iterable): the iterable's value; else None."""
        if len(node.args) != 1 or node.args[0].keyword is not None or node.args[0].star:
            return None
        arg = node.args[0].value
        if isinstance(arg, (cst.GeneratorExp, cst.ListComp)) and arg.for_in.inner_for_in is None \
                and _measures_name(arg.elt, arg.for_in.target):
            return self.iters.get(arg.for_in)
        if isinstance(arg, cst.Call) and isinstance(arg.func, cst.Name) and arg.func.value == "map" and len(arg.args) == 2 \
                and isinstance(arg.args[0].value, cst.Name) and arg.args[0].value.value == "len" \
                and isinstance(arg.args[1].value, cst.Name):
            return self.ev(arg.args[1].value)
        return None

    def _shape_constructor(self, q: str, node: cst.Call, args, argu: Val) -> Val:
        idx, kw = K.SHAPE_CONSTRUCTORS[q]
        shape_node = None
        positional = [a for a in node.args if a.keyword is None and not a.star]
        if idx < len(positional):
            shape_node = positional[idx].value
        else:
            shape_node = next((a.value for a in node.args if a.keyword and a.keyword.value == kw), None)
        out = argu
        if shape_node is None:
            return out
        stripped = False
        if q.endswith(".pad") and positional:
            sv, stripped = self._pad_width(shape_node, positional[0].value)
        elif q.endswith(".arange"):
            sv = self._arange_length(node)
            nodes = semantics.counting_arguments(node, read, read_cst.argument)
            if None not in nodes:
                piece = self.counting_piece(nodes, [self.ev(n).data() for n in nodes], node)
                out = out if piece is None else piece  # (its numbers, and how many: as `range`'s)
        else:
            sv = self.ev(shape_node)
        if sv.order:
            self._shape_orders.update(sv.order)
        # (`np.resize(x, K)` repeats or cuts x to K: its shape is K's alone)
        keeps_input_shape = q.endswith((".pad", ".reshape", ".broadcast_to", ".tile")) and not stripped
        base = out if keeps_input_shape else replace(out, shape=frozenset())
        size = semantics.as_size(sv.pd, sv.pdc)
        if size:
            return replace(base, shape=_cap(base.shape | frozenset({evidence.derived(self.src(node, f"a shape computed from {_why(size)}"), size)})))
        if q.endswith((".zeros", ".ones", ".empty", ".full", ".arange")) or q == "jax.ShapeDtypeStruct":
            return replace(base, shape=frozenset())
        return base

    def _arange_length(self, node: cst.Call) -> Val:
        """What decides how many numbers `arange(...)` gives, however its arguments are spelled
        (`semantics.counting_arguments`): as for `range(i, stop, n)` (`piece_count`), the i-th of
        n interleaved pieces is stop // n long where stop is a multiple of n, and its start counts
        only by a guess otherwise (`equal_pieces`); else `arange_length_arguments`."""
        start, stop, step = semantics.counting_arguments(node, read, read_cst.argument)
        if stop is None:
            return BOTTOM
        given = [x for x in (start, stop, step) if x is not None]
        piece = self.piece_count(start, stop, step)
        if piece is None:
            if start is None:
                return join_all(self.ev(n) for n in given)
            return join_all(self.ev(n) for n in semantics.arange_length_arguments(
                given, read, lambda n: _code(self.module, n)))
        sv = self.ev(stop).join(self.ev(step))
        return sv if piece == "agreed" else sv.join(self.equal_pieces(self.ev(start), node))

    def _pad_width(self, width: cst.BaseExpression, array: cst.BaseExpression) -> tuple[Val, bool]:
        """Taint of a pad width, ignoring `K - len(x)` terms for the array x itself (pads *to* K).

        Also says whether such a term was found: then the padded length is K whatever x was.
        """
        arr = _code(self.module, array)
        found = []

        def strip(e: cst.BaseExpression) -> Val:
            if isinstance(e, cst.BinaryOperation) and isinstance(e.operator, cst.Subtract) and _measures(e.right, arr, self.module):
                found.append(True)
                return self.ev(e.left)
            if isinstance(e, (cst.Tuple, cst.List)):
                return join_all(strip(el.value) for el in e.elements)
            return self.ev(e)

        v = strip(width)
        return v, bool(found)

    def padded(self, node: cst.Call, padding: tuple, args: list, argu: Val) -> Val:
        """(semantics.StatementRules.library_call) `concatenate([x, zeros((K - len(x), d))])`: x
        padded to K rows, whatever its own length (`semantics.padded_concatenation`). The parts'
        values without x's and the padding's shape sources; a K (or another dimension of the
        padding) that differs between processes makes a shape that differs."""
        x, pad, sizes = padding
        seq = node.args[0].value
        parts = [e.value for e in seq.elements if not isinstance(e, cst.StarredElement)]
        out = join_all(self.ev(e).data() for e in parts if e is not x and e is not pad)
        out = out.join(replace(self.ev(x).data(), shape=frozenset()))
        sv = join_all(self.ev(e) for e in sizes)
        if sv.pd:
            out = replace(out, shape=_cap(out.shape | frozenset({evidence.derived(self.src(node, f"a shape computed from {_why(sv.pd)}"), sv.pd)})))
        return out

    def _same_data_sink(self, v: Val, node: cst.Call, what: str) -> None:
        """Host data that must be identical on every process (MCJ303): a process-dependent value
        (process index, clock, unseeded randomness, a per-host file) reaching it."""
        if v.sanitized or v.shape:
            return  # (a shape that differs is MCJ301's finding: the content differs with it)
        # (drawn numbers differ as values: a draw from a per-process key is other data there)
        self._sink(kinds.REPLICATED_DATA, kinds.VALUE, replace(v, pd=semantics.as_size(v.pd, v.pdc)), node, what)

    def _replicated_host_args(self, fv: Val, node: cst.Call, args) -> None:
        """A jitted function applied to a global array and to a host value (a Python or NumPy
        scalar, `jnp.float32(dt)`) runs one computation over every process's devices, in which the
        host value is an implicitly replicated input: each process supplies its own copy and JAX
        does not compare them, so it must be the same on every process (MCJ303). Not `pmap`,
        whose host inputs are split over this process's devices (per-process data by design), nor
        a static argument (the program it picks is MCJ301's), nor a call with `*args`.
        A number made here from process-local content (`np.float32(loss)`, `float(x)` of a mean
        over this process's shards or rows: `pdc`) differs as a value: each process's rows hold
        other numbers, so the one number made of them differs too."""
        if "pmap" in (fv.callable or "") or any(a.star for a in node.args):
            return  # (`*args`: which input is which, and whether any is a global array, is not known)
        statics = {k for pair in fv.statics for k in pair}
        positional = [a.value for a in node.args if a.keyword is None and not a.star]
        named = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
        for k, v in args:
            if k == "*" or k in statics or v.glob or v.callable or v.cls or v.fn or v.ckpt or v.sharding \
                    or not (v.pd or v.pdc):
                continue
            expr = positional[k] if isinstance(k, int) and k < len(positional) else named.get(k) if isinstance(k, str) else None
            if expr is None:
                continue
            scalar = _scalar_of(expr, self.qualify)
            if scalar and not v.sanitized:
                v = replace(v, pd=_cap(v.pd | v.pdc))  # (one number of process-local content: its value)
            if v.pd and (scalar or self.is_host(expr)):
                self._same_data_sink(v, node, f"{fv.callable}, a host value given with a global array (taken as replicated)")

    def _shape_args(self, q: str, node: cst.Call, args) -> None:
        """Explicit shape arguments of global-array constructors (MCJ301), and the data of a
        replicated one (MCJ303)."""
        if q == "jax.make_array_from_process_local_data":
            sharding = next((v for k, v in args if k in (0, "sharding")), None)
            data = next((v for k, v in args if k in (1, "local_data")), None)
            if sharding is not None and sharding.replicated and data is not None:
                self._same_data_sink(data, node, f"`{short_name(q)}()` on a fully replicated sharding")
        if q == "jax.make_array_from_callback":
            sharding = next((v for k, v in args if k in (1, "sharding")), None)
            callback = next((v for k, v in args if k in (2, "data_callback")), None)
            if sharding is not None and sharding.replicated and callback is not None and not callback.callable:
                # (each process's callback fills its devices with the whole array: what the
                # callback returns must be the same on every process; `lambda idx: local[idx]`
                # returns, for the whole index of a replicated sharding, all of `local`)
                whole = _indexed_by_parameter(read_cst.argument(node, 2, "data_callback"))
                data = self.ev(whole).data() if whole is not None else callback.data()
                self._same_data_sink(data, node, f"`{short_name(q)}()`'s callback on a fully replicated sharding")
        if q == "jax.experimental.multihost_utils.host_local_array_to_global_array" and semantics.replicated_partition_spec(
                read_cst.argument(node, 2, "pspecs"), read, self.qualify):
            # (`P()`: each process's local input is the whole array, which must then be the same
            # on every process, as for a replicated `make_array_from_process_local_data`)
            data = next((v for k, v in args if k in (0, "local_inputs")), None)
            if data is not None:
                self._same_data_sink(data, node, f"`{short_name(q)}()` with a fully replicated spec")
        shape_arg = None
        if q == "jax.make_array_from_callback":
            shape_arg = next((v for k, v in args if k in (0, "shape")), None)
        elif q == "jax.make_array_from_process_local_data":
            shape_arg = next((v for k, v in args if k in (2, "global_shape")), None)
        elif q == "jax.make_array_from_single_device_arrays":
            shape_arg = next((v for k, v in args if k in (0, "shape")), None)
        if shape_arg is not None and shape_arg.pd:
            s = _first(shape_arg.pd)
            self._sink(kinds.GLOBAL_SHAPE, kinds.SHAPE, Val(shape=frozenset({replace(s, desc=f"a global shape computed from {_why(shape_arg.pd)}", origin="")})), node,
                       f"`{short_name(q)}()`")

    def _seed_sink(self, q: str, args, node: cst.Call) -> None:
        for _, v in args:
            if v.hash:
                self._sink(kinds.SEED, kinds.HASH, v, node, f"the seed of `{short_name(q)}()`")

    def _method_call(self, meth: str, recv: Val, node: cst.Call, args, argu: Val, info: CallInfo) -> tuple[Val, str | None]:
        """A method of a value not known to be of a project class (`semantics.method_call`, after
        what this pass knows more); else the index's `call_method`."""
        if meth in ("startswith", "endswith") and not recv.callable and not recv.cls and node.args \
                and _collection_expr(node.args[0].value):
            # `k.endswith(tuple(NO_DECAY))`: whether one of them matches does not follow their
            # order (an element of a set-ordered loop, `k.startswith(module)`, still does).
            return recv.data().join(argu.without_order()), None
        if meth == "get" and not recv.cls and not recv.callable and 1 <= len(node.args) <= 2 \
                and node.args[0].keyword is None and semantics.constant_key(node.args[0].value, read) is None \
                and (recv.keys is not None or any(x.kind in kinds.COUNTS for x in recv.shape)):
            # `metrics.get(k, 0.0)` with a computed key, of a dict whose keys are tracked or whose
            # count differs: one of its values (or the default), an element: how many keys it
            # holds is no part of it (`Val.element`)
            return recv.element().join(join_all(x for _, x in recv.keys or ())).join(
                join_all(x for k, x in args[1:])), None
        if meth == "get" and recv.keys is not None and node.args and node.args[0].keyword is None:
            v = recv.key(semantics.constant_key(node.args[0].value, read) or "")
            if v is not None:  # `cfg.get("steps", 10)`: that key's value (or the default)
                return v.join(join_all(x for k, x in args[1:])), None
        saved = self._info, self._work
        self._info, self._work = info, None
        try:
            out = self.method_call(meth, recv, node, args, argu)
            work = self._work
        finally:
            self._info, self._work = saved
        if out is None and not recv.cls and meth in semantics.ELEMENT_READS:
            # `d.get(k)`, `d.setdefault(k, Engine(k))`, `d.pop(k)`: an element, of the class the
            # container's elements are (or that its default is made of); `d.values()`: its elements
            made = join_all(v for k, v in args if k in (1, "default")) if meth == "setdefault" else BOTTOM
            ecls = recv.ecls or (made.cls if meth == "setdefault" and not made.callable else None)
            if ecls:
                res, coll = self.index.call_method(meth, recv, argu, _given(node), self._site(node, True),
                                                   info.args if info is not None else None)
                return (replace(res, ecls=ecls) if meth in ("values", "copy") else replace(res, cls=ecls)), coll
        if out is not None:
            if recv.ecls and meth in ("values", "copy") and not recv.cls and out.ecls != recv.ecls:
                out = replace(out, ecls=recv.ecls)
            return out, work
        res, coll = self.index.call_method(meth, recv, argu, _given(node), self._site(node, True),
                                           info.args if info is not None else None)
        if coll and recv.cls:
            target = self.index.method(recv.cls, meth)
            info.name = target or info.name
            fn = self.index.functions.get(target or "")
            if fn is not None and fn.jit and fn.statics:
                self._static_args(fn, target, node)
            elif target is None:
                self._bound_statics(self.index.attr(recv.cls, meth), node)
            if fn is not None and not fn.jit:
                info.via_project = True
                name = f"`{short_name(target)}()`"
                if not coll.startswith(name) and (coll.count("→") < 3 or coll.startswith("… → ")):
                    coll = f"{name} → {coll}"
        target = self.index.method(recv.cls, meth) if recv.cls else None
        guess = f"`.{meth}()`"
        if target is None and not recv.cls and not recv.ext and meth not in K.GENERIC_METHOD_NAMES \
                and not meth.startswith("__") and len(cands := self.index.methods_by_name.get(meth, ())) == 1 \
                and cands[0] in self.fn_nodes:
            # `task.build(rank, world)` on a receiver of no known class (an element of a list
            # given as a parameter): the only project method of that name, in this file, is
            # analysed with what the call passes it, as the index resolves its work by name
            target = cands[0]
            guess = f"`.{meth}()` {evidence.BY_NAME_NOTE}"
        info.callee = target
        if target in self.fn_nodes and (argu.divergent or self._callable_desc(argu) or argu.length_sources
                                        or recv.order or self._carries_attributes(node)):
            # A method of a known class in this file, given divergent arguments: analysed again
            # with them, as a function called by name is (`_project_call`); a guess (which
            # instance's method runs, and what the other calls pass, are not followed).
            # `obj.m()` is `Cls.m(obj)`: a receiver taken in an order that differs between
            # processes (`self.engines[path].close()` for path in a set) is `self` there, so the
            # object's own data reaches the method's collective work in that order.
            self._record_param_taint(target, node, guess, receiver=recv)
        if res.divergent:
            # The receiver's and arguments' own sources are located here already; what a project
            # method adds is not.
            res = self.anchor(res, node, meth, unlocated_only=recv.divergent or argu.divergent)
        if meth == "__next__" or (meth == "get_next" and recv.process_dependent):
            info.may_raise_pd = True
        elif target is not None and argu.process_dependent and "n" in getattr(self.index.functions.get(target), "flags", ""):
            # a method that ends an iteration by raising StopIteration, given process-local data
            # (an iterator over this process's share): it raises where that data runs out, a
            # guess (the method may agree with the others first when to stop)
            info.may_raise_pd = True
            info.raise_guess = f"`.{meth}()`"
        return res, coll

    # `method_call` (semantics.StatementRules): collective work as for `library_call`
    is_callable = staticmethod(lambda v: bool(v.callable))

    def callable_method(self, meth: str, v: Val) -> Val:
        self._info.name = v.callable
        return Val(callable=v.callable) if meth in K.JIT_STAGING_METHODS else BOTTOM

    is_subgroup = staticmethod(lambda v: v.subgroup)
    of_subgroup = staticmethod(lambda v: replace(v, subgroup=True))
    is_checkpointer = staticmethod(lambda v: v.ckpt)
    is_generator = staticmethod(lambda v: v.rng)
    extent_of = staticmethod(lambda v: Val(pd=v.shape))  # (its shape sources: how many elements differ)

    def generator_advanced(self, receiver: cst.BaseExpression, recv: Val, amount: Val, node: cst.Call) -> None:
        """A draw from the generator a variable holds advances it: rebound (a fresh value, so that
        a draw under a process-dependent branch or loop takes its condition: `bound_under`), with
        the draw's size where that differs. Attributes are the summary's (`ProjectIndex.attr`)."""
        if isinstance(receiver, cst.Name):
            self.bind(receiver, replace(recv.join(amount), rng=True))
    is_set = staticmethod(lambda v: v.struct == "set")
    order_of = staticmethod(lambda v: v.unordered)
    instance_order = staticmethod(lambda v: Val(order=v.order) if v is not None and v.order else None)
    has_order = staticmethod(lambda v: bool(v.order))
    # A container of these values: their shape sources describe its elements; a sized value
    # (a string, an array) that differs with its size is content of another size, not another
    # count (a number put in keeps its value: `dims.append(n)` may be a shape).
    put_in = staticmethod(lambda v: replace(v.as_elements(), pd=frozenset(), pdc=union_sources(v.pdc, v.pd))
                          if v.pd and v.shape else v.as_elements())
    instance_class = staticmethod(lambda v: v.cls)
    local_shards = property(lambda self: self._local_shards)
    as_global = staticmethod(lambda v: replace(v, glob=True))
    keep_set = staticmethod(lambda v, s: replace(v, unordered=s.unordered))
    as_set = staticmethod(lambda v, order: replace(v, unordered=order, struct="set"))
    attribute_set_filled = staticmethod(lambda meth, recv, owner, node: None)
    attribute_grown = staticmethod(lambda owner: None)  # (the summary pass records it for the index)
    attribute_holds = staticmethod(lambda owner, el: None)  # (likewise)

    @staticmethod
    def holding(new: Val, cur: Val, el: Val) -> Val:
        """Container `new`, which was `cur`, after a mutator stored the element `el` in it: its
        elements are instances of `el`'s project class where every element stored is
        (`Val.ecls`; an empty display holds none yet)."""
        empty = cur.struct in ("seq:0", "dict:")
        ecls = el.cls if el.cls and not el.callable and (cur.ecls == el.cls or empty) else None
        return new if new.ecls == ecls else replace(new, ecls=ecls)

    @staticmethod
    def element_kept(meth: str, new: Val) -> Val:
        # (`d.setdefault(k, v)` returns the element now under k: of the class its elements are)
        return Val(cls=new.ecls) if meth == "setdefault" and new.ecls else BOTTOM

    def listing_method(self, meth: str, node: cst.Call) -> Val:
        return Val(order=frozenset({self.src(node, f"`.{meth}()`", kinds.LISTING_ORDER, self.wrap_sorted_fix(node))}))

    def set_pop(self, node: cst.Call) -> Val:
        return Val(order=frozenset({self.src(node, "`set.pop()`", kinds.SET_ORDER)}))

    def name_value(self, name: str) -> Val | None:
        cur = self.local(name)
        return cur if cur is not None else self.module_scope.env.get(name)

    def sharded(self, recv: Val, argu: Val, node: cst.Call) -> None:
        if _partition(recv, argu):
            self._sink(kinds.PARTITION, kinds.ORDER, recv, node, "a per-process partition (`.shard()` by process)")

    def reshaped(self, out: Val, argu: Val, node: cst.Call) -> Val:
        if argu.pd:  # `x.reshape(n, -1)` / `x.astype(dtype)` with a process-dependent n/dtype
            out = replace(out, shape=_cap(out.shape | frozenset({evidence.derived(self.src(node, f"a shape/dtype computed from {_why(argu.pd)}"), argu.pd)})))
        return out

    array_method = staticmethod(lambda meth, recv, node: None)

    # ---------------------------------------------------------------- numbers
    # (`semantics` decides; this pass says which names hold numbers)
    def numeric_elements(self, node: cst.BaseExpression) -> bool:
        return semantics.numeric_elements(node, read, self._num)

    def _num(self, name: str) -> bool:
        v = semantics.lookup(self.scope, self.module_scope.env, name)
        return bool(v and v.numeric)

    def is_numeric(self, node: cst.BaseExpression, bound: set[str] = frozenset()) -> bool:
        return semantics.is_numeric(node, read, self._num, bound)

    # (`semantics` decides what is host data; this pass says which names hold it)
    def _host(self, name: str) -> bool:
        v = semantics.lookup(self.scope, self.module_scope.env, name)
        return bool(v and v.host)

    def is_host(self, node: cst.BaseExpression) -> bool:
        return semantics.is_host_data(node, read, self._host, self.qualify, lambda n: id(n) in self._local_call_nodes)

    as_host = staticmethod(lambda v: replace(v, host=True))

    # (`semantics` decides what is a constant; this pass says which names hold one, for the rules
    # that ask whether an argument is the same everywhere by construction: MCJ305)
    def _const(self, name: str) -> bool:
        v = semantics.lookup(self.scope, self.module_scope.env, name)
        return bool(v and v.const)

    def _unconstant_written(self, node: cst.Call) -> None:
        """A constant a call may write into (`np.copyto(ready, local)`, `ready.fill(n)`) is no
        longer one by construction: its variable loses `const` (`semantics.written_arguments`)."""
        if not isinstance(node.func, cst.Attribute) and not any(isinstance(a.value, cst.Name) for a in node.args):
            return
        for a in semantics.written_arguments(node, read, self.qualify, read_cst.argument,
                                             self.index.functions.__contains__):
            if isinstance(a, cst.Name) and (cur := self.local(a.value)) is not None and cur.const:
                self.scope.env[a.value] = replace(cur, const=False)

    def constant_binding(self, node: cst.BaseExpression, v: Val) -> Val:
        if semantics.is_constant(node, read, self._const, self.qualify, self.index.functions.__contains__):
            return replace(v, const=True)
        return v

    def _jitted_call(self, fv: Val, node: cst.Call) -> tuple[Val, str | None]:
        """(result, collective work) of calling jitted `fv` (not proven local): a guess when its
        inputs are all process-local and only what it may capture makes it collective (then
        whether its result is a global array is not known either)."""
        if fv.hostable == semantics.CAPTURES_UNKNOWN:
            site = self._site(node, False)
            if site is not None and len(site["h"]) == site["np"] + len(site["kw"]):
                return BOTTOM, f"{fv.callable} {semantics.CAPTURES_NOTE}"
        out = applied(fv.callable)
        if not semantics.result_is_local(semantics.callable_kind(fv.callable)):
            out = out.join(self._host_inputs(node))
        return out, fv.callable

    def _runs_locally(self, hostable: bool | str, node: cst.Call) -> bool:
        """A call of a jitted function that runs on this process alone (semantics.jitted_call_is_local)."""
        if hostable is not True:
            return False
        if self._mesh_context is None:
            self._mesh_context = self._mesh_context_in_file()
        if semantics.jitted_call_is_local(hostable, [a.value for a in node.args], self.is_host, self._mesh_context):
            self._local_call_nodes.add(id(node))
            return True
        return False

    def _mesh_context_in_file(self) -> bool:
        # regenerating a module's text with libcst costs ~0.2 s per 1,000 lines: use the text read
        return semantics.mesh_context_in(self._text if self._text is not None else self.module.code)

    def _site(self, node: cst.Call, bound: bool) -> dict | None:
        """Where a call's arguments live (`semantics.arg_locality`), for the index to analyse
        the callee in this call's context; None when unknown (`*args`, a mesh context)."""
        given = _given(node)
        if given is None:
            return None
        if self._mesh_context is None:
            self._mesh_context = self._mesh_context_in_file()
        if self._mesh_context:
            return None
        args = [(a.keyword.value if a.keyword is not None else str(i), a.value)
                for i, a in enumerate(a for a in node.args if a.keyword is None)] \
            + [(a.keyword.value, a.value) for a in node.args if a.keyword is not None]
        hosts, _ = semantics.arg_locality(args, read, self._host, self.qualify, lambda n: id(n) in self._local_call_nodes)
        site = {"h": hosts, "np": given[0], "kw": list(given[1]), "bd": int(bound)}
        # (its literal constant arguments, as a summary's call "kc": `ProjectIndex.gated_off`)
        kc = {k: c for k, a in args if (c := semantics.constant_repr(a, read)) is not None}
        if kc:
            site["kc"] = kc
        return site

    def _closes_over_host_only(self, q: str) -> bool:
        f = self.index.functions.get(q)
        return f is not None and "k" in f.flags

    def _local_jit(self, q: str) -> bool:
        """A jit-decorated function that may run on this process alone (the summary's "l" flag)."""
        f = self.index.functions.get(q)
        return f is not None and "l" in f.flags

    def _traced_def(self, qual: str, label: str, hostable: bool | str) -> None:
        """`qual` is traced as `label`; by a wrapper that may run it on this process's data alone
        (`semantics.jit_may_run_locally`; `pmap`, over this process's devices, where a per-process
        constant may be meant: a per-host key), whether its inputs are global arrays is a guess."""
        self.traced.setdefault(qual, f"{label} {semantics.UNKNOWN_INPUTS_NOTE}" if hostable else label)

    def _traced_scope(self) -> tuple[_Scope, str] | None:
        """The innermost enclosing function scope that is traced, with how it is traced."""
        sc = self.scope
        while sc is not None and not sc.is_module:
            if sc.qualname in self.traced:
                return sc, self.traced[sc.qualname]
            sc = sc.outer
        return None

    def _trace_constant(self, sources, node: cst.CSTNode, traced: tuple[_Scope, str]) -> None:
        """Process-dependent values read while a traced function's body runs: each is baked into
        the program as a constant, so every process compiles a different program. But for a
        function defined in an arm of an `if` whose test differs between processes
        (`defined_per_process`): it exists only on the processes that took the arm, so it is no
        computation every process runs (one process alone traces a rank-0 block's jit; applied
        to global arrays there, the `if` is the finding, MCJ101)."""
        if traced[0].qualname in self.defined_per_process:
            return
        for s in sorted(sources):
            if kinds.unguarded(s.kind) in semantics.TRACE_TIME_KINDS:
                self._add_sink(Sink(kinds.TRACE_CONSTANT, kinds.VALUE, s, node, traced[1]))

    # ---------------------------------------------------------------- sinks
    def _sink(self, place: str, facet: str, v: Val, node: cst.CSTNode, what: str) -> None:
        """Each source of `v`'s taint `facet` reaching `place` at `node`."""
        for s in sorted(getattr(v, facet)):
            self._add_sink(Sink(place, facet, s, node, what))

    def _add_sink(self, sink: Sink) -> None:
        key = (sink.place, sink.facet, sink.src.kind, sink.src.line, sink.src.column, id(sink.node))
        if key not in self._sink_keys:
            self._sink_keys.add(key)
            self.sinks.append(sink)

    def _check_collective_args(self, info: CallInfo, now: str | None = None) -> None:
        # Only collective primitives: a project function's own body is analysed where it
        # uses its arguments (with the values its same-file callers pass).
        if info.via_project:
            return
        what = now or info.collective or "collective work"  # (this evaluation's, with its guesses)
        per_process = info.name in K.PER_PROCESS_DATA_COLLECTIVES
        shard_list = K.PER_PROCESS_SHARD_LISTS.get(info.name or "", ())
        for k, v in info.args:
            if k in shard_list:
                # This process's own shards: how many, in which order and from what differs by
                # design; each shard's shape must still be the sharding's (elements' shapes kept).
                v = replace(v, pd=frozenset(), pdc=frozenset(), order=frozenset(), hash=frozenset(),
                            shape=frozenset(x for x in v.shape if x.kind not in kinds.COUNTS))
            if per_process and v.process_dependent:
                # Per-process data by design and visibly process-local: its order is as local as
                # its content. (Data the same everywhere still must arrive in the same order.)
                # Not the order of a set that a loop this collective runs in iterates, once per
                # element: the k-th call pairs this process's data for its k-th element with the
                # others' for theirs (`for name in wells: process_allgather(local[name])`). (A
                # listing may name other files on each process: its entries' order is as local.)
                # Nor an order that decided the shape of this process's part (`np.zeros((n, n))`, n
                # read for the element a set's iteration reached): each process's part must still
                # have the others' shape. A set of strings' order still lays out values put in
                # place by its elements (`[stats[k] for k in names]`): kept as a guess
                # (`evidence.per_process_layout`).
                kept = frozenset(s for s in v.order if s in self._shape_orders or s.kind == kinds.SET_ORDER and (
                    s in self._element_orders or any(s in o for o in self._iter_orders)))
                laid = evidence.per_process_layout(v.order - kept, self.line(info.node))
                v = replace(v, order=kept | laid, hash=frozenset())
            for facet in (kinds.ORDER, kinds.HASH, kinds.SHAPE, kinds.TREE):
                self._sink(kinds.COLLECTIVE_INPUT, facet, v, info.node, what)
        named = K.BARRIER_NAME_ARGS.get(info.name or "") or K.BARRIER_NAME_ARGS.get(info.token or "")
        for k, v in info.args:
            if named and k in named and not v.sanitized:  # (a name that differs in part differs)
                self._sink(kinds.BARRIER_NAME, kinds.VALUE, replace(v, pd=_cap(v.pd | v.pdc)), info.node, f"the name of {what}")

    # ================================================================ statements
    def bind(self, target: cst.BaseExpression, value: Val) -> None:
        if isinstance(target, cst.Name):
            self.scope.env[target.value] = value
            if self.scope.context:
                self.scope.context.pop(target.value, None)  # (reassigned: no longer the call's constant)
        elif isinstance(target, (cst.Tuple, cst.List)):
            if value.items is not None and len(value.items) == len(target.elements) \
                    and not any(isinstance(e, cst.StarredElement) for e in target.elements):
                for e, v in zip(target.elements, value.items):
                    self.bind(e.value, v)
                return
            el = value.element() if not (value.callable or value.ckpt) else value
            el = replace(el, pd=_cap(el.pd | value.pd)) if value.pd else el
            if len(target.elements) > 1 and value.struct is None:
                # An opaque value unpacked: every name gets all of it (one element may be all
                # that differs).
                el = evidence.mark(el, evidence.WHOLE_CONTAINER, "an unpacked value", self.line(target))
            for e in target.elements:
                self.bind(e.value, el)
        elif isinstance(target, cst.StarredElement):
            self.bind(target.value, value)
        elif isinstance(target, cst.Attribute):
            self.ev(target.value)
            if isinstance(target.value, cst.Name) and (owner := self.local(target.value.value)) is not None:
                key = semantics.stored_attribute_key(target.value.value, target.attr.value)
                if value.sanitized or (key in self.scope.env and not (value.divergent or value.shape or value.tree)):
                    # `state.step = int(broadcast_one_to_all(step))`: read back from this object,
                    # the attribute holds that agreed value (`stored_attribute`); so it does after
                    # `state.step += 1`, computed from it and nothing that differs.
                    self.scope.env[key] = value
                    self.scope.attr_owner[key] = owner
                else:
                    self.scope.env.set_or_delete(key, None)
                # (a store of its own replaces what a method's call stored there)
                stored = _call_stored_key(target.value.value, target.attr.value)
                self.scope.env.set_or_delete(stored, None)
                if not value.sanitized and (value.divergent or value.shape or value.tree or self._per_process_arms):
                    # `self.items = docs[rank::world]` ... `len(self.items)`: read back from this
                    # object in this function, the attribute holds what was stored, joined with
                    # what it holds otherwise (`stored_by_call`; the summary pass's
                    # `_own_store_key` for `self`): a method analysed with what a call passes
                    # it sees its own store of that. So does any value stored in an arm of a
                    # process-dependent `if` (`if acc >= target: state.stop = True`): the join
                    # of the arms carries the condition into it (`bound_under`), as it does
                    # into a name
                    self.scope.env[stored] = value
                    self.scope.attr_owner[stored] = owner
        elif isinstance(target, cst.Subscript):
            base = target.value
            key = BOTTOM
            for el in target.slice:
                if isinstance(el.slice, cst.Index):
                    key = key.join(self.ev(el.slice.value))
            if isinstance(base, cst.Name):
                cur = self.local(base.value)
                if cur is None:
                    cur = self.module_scope.env.get(base.value, BOTTOM)
                if key.order:
                    # `d[k] = f(k)` for k in a set: the mapping is the same everywhere, only the
                    # insertion order differs (irrelevant to pytrees, which sort dict keys).
                    # (A position in that order, `d[k] = i` under `enumerate`, is a value of its own.)
                    d = value.data()
                    new = replace(cur.join(replace(d, order=frozenset(x for x in d.order if x.desc.startswith(_POSITION)))),
                                  unordered=True)
                else:
                    added = value.element() if not value.order else value.data()
                    if cur.struct and cur.struct.startswith("dict:") and not cur.divergent:
                        # One key of a uniform dict set from a divergent value: the dict is one value.
                        added = evidence.mark(added, evidence.WHOLE_CONTAINER, f"`{_code(self.module, target)}`", self.line(target))
                    new = cur.join(added)
                if key.pd:
                    new = replace(new, tree=_cap(new.tree | frozenset({evidence.derived(self.src(target, f"a key from {_why(key.pd)}"), key.pd)})))
                ck = semantics.constant_key(target.slice[0].slice.value, read) \
                    if len(target.slice) == 1 and isinstance(target.slice[0].slice, cst.Index) else None
                if ck is not None and cur.keys is not None:
                    new = cur.with_key(ck, value, new)  # `d["k"] = v`: that key holds v alone
                    self.key_writes.add((base.value, ck))
                if ck is not None and (grown := semantics.dict_struct_with_key(cur.struct, ck)) is not None:
                    new = replace(new, struct=grown)  # (its keys are still known: as many on every process)
                if semantics.may_add_dict_key(cur.struct, ck, isinstance(target.slice[0].slice, cst.Index)):
                    self.keys_added.add(base.value)
                    if ck is None:
                        # `d[k] = v` with a computed key may add one: the dict grew, as a list
                        # by `append` (`mutated`), by as many keys as this runs with new ones
                        new = self.mutated(base, new)
                if isinstance(target.slice[0].slice, cst.Index) and (cur.struct or "").startswith("dict"):
                    new = self.holding(new, cur, value)  # (`d[k] = Engine(k)`: what its elements are)
                # A fresh object even when the value adds nothing: the container was changed, so
                # under a process-dependent condition it takes the condition's taint (as in the
                # summary pass, whose join always copies).
                self.bind(base, replace(new) if new is cur else new)

    def _bind_loop_target(self, target: cst.BaseExpression, iterable: cst.BaseExpression, elem: Val) -> None:
        self.bind(target, elem)
        pos = semantics.enumerate_position(iterable, target, read)
        if pos is not None and elem.order and isinstance(pos, cst.Name):
            # `for i, x in enumerate(s)` over an arbitrary order: i is a position in that order, a
            # value that differs between processes (x is the same element, met at another time).
            first = min(elem.order)
            s = self.src(iterable, f"{_POSITION}{first.desc}", first.kind or kinds.SET_ORDER)
            cur = self.scope.env.get(pos.value, BOTTOM)
            self.scope.env[pos.value] = replace(cur, order=_cap(cur.order | {s}), numeric=True)

    def block(self, body) -> None:
        if isinstance(body, semantics.Repeated):
            for _ in range(body.passes):
                if body.narrow:
                    self._narrow(body.narrow)
                self.block(body.body)
            return
        if isinstance(body, cst.If):
            self.stmt(body)
            return
        if isinstance(body, (cst.Else, cst.Finally)):
            body = body.body
        stmts = body.body if hasattr(body, "body") else body
        for s in stmts:
            self.stmt(s)
            if self.ends_block(s):
                break  # (what follows never runs)

    def ends_block(self, s: cst.CSTNode) -> bool:
        """A statement after which the rest of its block never runs: one that always leaves it
        (`return`, `raise`, `break`, `continue`, a call that exits the process: `sys.exit(0)`,
        `exit()`, `os._exit(1)`, known once the statement was analysed), or an `if` decided by
        constant arguments whose arm taken always leaves the block."""
        t = type(s)  # (exact types: see tree.OWN_SCOPE)
        if t is cst.SimpleStatementLine:
            return any(type(x) in _LEAVING or (
                type(x) is cst.Expr and type(x.value) is cst.Call
                and getattr(self.calls.get(x.value), "exits", False)) for x in s.body)
        taken = self.decided_ifs.get(s) if t is cst.If else None
        if taken is None:
            return False
        arm = s.body if taken else s.orelse
        if isinstance(arm, cst.Else):
            arm = arm.body
        return _always_exits(arm) if not isinstance(arm, cst.If) else self.ends_block(arm)

    # `stmt`, `st_Expr`, `st_Assign`, `st_AnnAssign`: semantics.StatementRules, told how this
    # pass marks a number and where an assignment's targets are; other statements: nothing.
    as_number = staticmethod(lambda v: replace(v, numeric=True))
    is_unordered = staticmethod(lambda v: bool(v.unordered))
    as_ordered = staticmethod(lambda v: replace(v, unordered=False))
    nothing = staticmethod(lambda: BOTTOM)
    data = staticmethod(lambda v: v.data())

    @staticmethod
    def tracks_target(t) -> bool:
        # (`d["k"] += 1`: that key's value, when keys are tracked)
        return isinstance(t, cst.Name) or (isinstance(t, cst.Subscript) and len(t.slice) == 1 and isinstance(
            t.slice[0].slice, cst.Index) and semantics.constant_key(t.slice[0].slice.value, read) is not None)
    join = staticmethod(lambda a, b: a.join(b))
    parts = read_cst  # (a statement's parts: semantics.StatementRules)

    def run_block(self, body) -> None:
        if body is not None:
            self.block(body)
    assign_targets = staticmethod(lambda node: [t.target for t in node.targets])

    # ---- state updated by a cross-process result: replicated by intent
    def st_Assign(self, node) -> None:
        targets = self.assign_targets(node)
        prior = self._state_before(targets, node.value, False)
        seen = self._shared_results
        super().st_Assign(node)
        self._note_agreed(node, targets, node.value, prior, seen != self._shared_results)

    def st_AugAssign(self, node) -> None:
        prior = self._state_before([node.target], node.value, True)
        seen = self._shared_results
        super().st_AugAssign(node)
        self._note_agreed(node, [node.target], node.value, prior, seen != self._shared_results)

    def _state_before(self, targets: list, value: cst.BaseExpression, aug: bool) -> Val | None:
        """The value a name or attribute held before `t = f(t, ...)` (or `t op= v`) updates it from
        itself, where it holds numbers drawn per process (`_drawn_per_process`); else None."""
        if len(targets) != 1 or not isinstance(targets[0], (cst.Name, cst.Attribute)):
            return None
        t = targets[0]
        if isinstance(t, cst.Name):  # (a local's value, looked up: no evaluation)
            before = self.local(t.value)
            if before is None or not _drawn_per_process(before):
                return None
        if not aug and not any(self._same_reference(n, t) for n in _walk(value)):
            return None
        before = before if isinstance(t, cst.Name) else self.ev(t)
        return before if _drawn_per_process(before) else None

    def _note_agreed(self, node, targets: list, value: cst.BaseExpression, prior: Val | None, shared: bool) -> None:
        """After an assignment: names bound from a cross-process result are agreed (a collective's
        result, or one computed from a name so bound in this scope that brings no per-process
        value of its own); a state updated from itself and such a result (`w = w - lr *
        mean_over_processes(g)`) is replicated by intent, so where it still holds numbers each
        process drew for itself (`prior`'s draws), the replicas differ (a sink)."""
        agreed = self._agreed.setdefault(self.scope.qualname, set())
        hit = "direct" if shared else self._agreed_in(value, agreed) if agreed else None
        after = self.ev_cached(value) if hit else BOTTOM
        kept = [s for s in _drawn_per_process(prior) if s in after.pd or s in after.pdc] if prior is not None else []
        for t in targets:
            root = t
            while isinstance(root, cst.Subscript):  # (`reduced[k] = ...`: the container)
                root = root.value
            if not isinstance(root, (cst.Name, cst.Attribute)):
                continue
            name = root.value if isinstance(root, cst.Name) else _code(self.module, root)
            if hit and not kept and (hit == "direct" or not after.pd):
                agreed.add(name)
            elif root is t:
                agreed.discard(name)
        # (an update is arithmetic on the state, `p - lr * g`: a key advanced by an agreed count,
        # `key = fold_in(key, step)`, stays per-process by design)
        arithmetic = bool(kept) and (type(node) is cst.AugAssign or any(type(n) is cst.BinaryOperation for n in _walk(value)))
        for s in kept[:1] if arithmetic else ():
            self._add_sink(Sink(kinds.REPLICATED_STATE, kinds.VALUE, s, node, f"`{_code(self.module, targets[0])}`"))

    def _agreed_in(self, value: cst.BaseExpression, agreed: set[str]) -> str | None:
        """"named" where `value` reads a name bound here from a cross-process result (a call that
        certainly did collective work is counted as it runs: `_shared_results`); else None."""
        for n in _walk(value):
            if n.value in agreed if type(n) is cst.Name else type(n) is cst.Attribute and any(
                    a.endswith("." + n.attr.value) for a in agreed) and _code(self.module, n) in agreed:
                return "named"
        return None

    def _same_reference(self, n: cst.CSTNode, t: cst.Name | cst.Attribute) -> bool:
        """Whether `n` names what the target `t` names (`w`, `self.params`), by its text."""
        if isinstance(t, cst.Name):
            return type(n) is cst.Name and n.value == t.value
        return type(n) is cst.Attribute and n.attr.value == t.attr.value and _code(self.module, n) == _code(self.module, t)
    read = staticmethod(read)

    def st_Expr(self, node: cst.Expr) -> None:
        super().st_Expr(node)
        info = self.calls.get(node.value) if isinstance(node.value, cst.Call) else None
        if info is not None and info.collective:
            fdef = self.fn_nodes.get(self.scope.qualname, (None,))[0]
            self.discarded[node.value] = fdef if fdef is not None else self.module

    def st_other(self, node: cst.CSTNode) -> None:
        if isinstance(node, cst.BaseExpression):
            self.ev(node)

    def st_SimpleStatementLine(self, node):
        for s in node.body:
            self.stmt(s)

    def st_Return(self, node: cst.Return):
        if node.value is not None:
            self.ev(node.value)

    def st_Raise(self, node: cst.Raise):
        if node.exc is not None:
            self.ev(node.exc)

    def st_Del(self, node):
        # `del d[k]`: a removal from the container d (`semantics.removed`); `del x`: nothing tracked
        targets = node.target.elements if isinstance(node.target, (cst.Tuple, cst.List)) else [node.target]
        for t in targets:
            t = t.value if isinstance(t, cst.Element) else t
            if isinstance(t, cst.Subscript) and not any(self.ev(e.slice.value).order for e in t.slice
                                                        if isinstance(e.slice, cst.Index)):
                self.removed(t.value)

    def st_Import(self, node):
        pass

    st_ImportFrom = st_Global = st_Nonlocal = st_Pass = st_Break = st_Continue = st_Import

    # `branches` (semantics.StatementRules): the constant keys each block writes are tracked; a
    # choice differing between processes makes what the blocks bound differ with it.
    def arms_begin(self, cond: Val) -> tuple:
        outer = self.key_writes, self.keys_added, self.grown
        self.key_writes, self.keys_added, self.grown = set(), set(), set()
        return outer

    def branches(self, cond, blocks: list, node=None, singleton=None) -> None:
        per_process = isinstance(node, cst.If) and cond.divergent
        self._per_process_arms += per_process
        try:
            super().branches(cond, blocks, node, singleton)
        finally:
            self._per_process_arms -= per_process

    def run_arm(self, block, token) -> None:
        if block is not None:
            self.block(block)

    def loop(self, cond, body, node=None, narrow=None) -> None:
        self._loop_nodes.append(node)
        try:
            super().loop(cond, body, node, narrow)
        finally:
            self._loop_nodes.pop()

    def _rewound(self, node, k: str, vals: list) -> bool:
        """Whether the `if` `node` sets the innermost `while` loop's counter `k` back in an arm that
        `continue`s, to a value no certain source makes differ (`semantics.rewound_counters`);
        noted in `rewinds` for the `continue`'s exit (divergence.py)."""
        loop = self._loop_nodes[-1] if self._loop_nodes else None
        if not isinstance(node, cst.If) or not isinstance(loop, cst.While):
            return False
        found = False
        for block, v in zip((node.body, node.orelse), vals):
            if v is None or block is None or k not in semantics.rewound_counters(loop.test, block, _STATEMENTS):
                continue
            agreed = all(x.guess for x in v.pd | v.pdc | v.order | v.hash)
            self.rewinds[node] = self.rewinds.get(node, True) and agreed
            found = found or agreed
        return found

    def arms_end(self, cond: Val, node: cst.CSTNode | None, outer: tuple) -> tuple:
        written, self.key_writes = self.key_writes, outer[0] | self.key_writes
        added, self.keys_added = self.keys_added, outer[1] | self.keys_added
        grown, self.grown = self.grown, outer[2] | self.grown
        return cond, node, written, added, grown

    divergent = staticmethod(lambda cond: cond.divergent)
    agreed = staticmethod(lambda v: v.sanitized)

    @staticmethod
    def one_more_element(new: Val, cur: Val) -> Val:
        # (the element's own structure is not the list's: `buf.append(row)` leaves a list, whose
        # count is its length sources alone, `_built_here`)
        return replace(new, struct=cur.struct) if _built_here(cur) and new.struct != cur.struct else new

    def mutated(self, name: cst.BaseExpression, v: Val) -> Val:
        # (a display's element count, `[]` as "seq:0", no longer holds once a method grew it;
        # the block that grew it is noted for `bound_under`)
        if isinstance(name, cst.Name):
            self.grown.add(name.value)
        struct = v.struct
        if struct and struct.startswith("seq:"):
            struct = "list"
        elif struct and struct.startswith("dict:"):
            struct = "dict"
        return replace(v, struct=struct, items=None)

    def bound_under(self, m: Val, k: str, vals: list, context: tuple) -> Val:
        cond, node, written, added, grown = context
        if cond.divergent:
            implicit = Val(pd=cond.pd, pdc=cond.pdc, order=cond.order, hash=cond.hash)
            if self._rewound(node, k, vals):
                implicit = evidence.mark(implicit, evidence.REWOUND_COUNTER, f"`{k}`", self.line(node))
            # An unordered container (a dict keyed by a set's elements) takes no order from it.
            imp = replace(implicit, order=frozenset()) if m.unordered else implicit
            # (the condition says which value, not where it lives: host data stays host data;
            # nor its structure: arms that leave the same keys or length leave as many everywhere)
            new = replace(m.join(imp), host=m.host, struct=m.struct if semantics.struct_fixes_count(m.struct) else None)
            if m.keys is not None:
                # A dict with tracked keys: only the keys the branch wrote depend on its condition.
                new = replace(new, keys=m.taint_keys({key for n, key in written if n == k}, imp).keys)
            before = self.scope.env
            structs = {v.struct if v is not None else before.get(k, BOTTOM).struct for v in vals}
            if "list" in structs:
                # (a list grown in one arm, the display it was in the other: one list, whose
                # length the arms' appends decide, "grown" below, not another structure)
                structs = {"list" if (x or "").startswith("seq:") else x for x in structs}
            if len(structs) > 1 and cond.process_dependent and node is not None and _array_shapes_differ(*structs):
                new = replace(new, shape=_cap(new.shape | frozenset({evidence.derived(self.src(node, f"`{k}` (its shape/dtype depends on {_why(cond.pd | cond.pdc)})"), cond.pd | cond.pdc)})))
            elif len(structs) > 1 and (("none" in structs) or None not in structs) and cond.process_dependent and node is not None:
                src = evidence.derived(self.src(node, f"`{k}` has a different structure depending on {_why(cond.pd | cond.pdc)}"), cond.pd | cond.pdc)
                new = replace(new, tree=_cap(new.tree | frozenset({src})))
                none_arm = [i for i, v in enumerate(vals) if v is not None and v.struct == "none"]
                if isinstance(node, cst.If) and len(vals) == 2 and len(none_arm) == 1:
                    self._placeholders[k] = (node.test, none_arm[0], src)
                    self.none_arm_sources.add(src)
            arm_structs = {v.struct if v is not None else self.scope.env.get(k, BOTTOM).struct for v in vals}
            same_keys = len(arm_structs) == 1 and next(iter(arm_structs)) is not None \
                and next(iter(arm_structs)).startswith("dict:")
            if k in grown and not same_keys and node is not None and cond.process_dependent:
                # `if rank == 0: xs.append(v)`, `for b in local_batches: xs.append(v)`: how many
                # elements the container holds follows the condition, or how often the loop
                # runs (a guess where only process-local content decides it: that may agree).
                src = evidence.derived(self.src(node, f"`{k}` grown under a condition on {_why(cond.pd | cond.pdc)}",
                                                kinds.LENGTH), cond.pd | cond.pdc)
                grew = Val(shape=frozenset({src}))
                if not cond.pd:
                    grew = evidence.mark(grew, evidence.GROWN_FROM_CONTENT, f"`{k}`", self.line(node))
                new = replace(new, shape=_cap(new.shape | grew.shape))
            elif k in added and cond.pdc and isinstance(node, cst.If) and not same_keys:
                # `if np.isnan(loss): metrics["nan"] = 1`: which keys the container holds, so
                # how many, follows this process's own data (a guess: the data may agree).
                src = evidence.derived(self.src(node, f"`{k}` given a key under a condition on {_why(cond.pdc)}",
                                                kinds.LENGTH), cond.pdc)
                grown = evidence.mark(Val(shape=frozenset({src})), evidence.KEYS_FROM_CONTENT, f"`{k}`", self.line(node))
                new = replace(new, shape=_cap(new.shape | grown.shape))
            m = new
        if isinstance(node, cst.If) and m.tree and k in self._placeholders:
            m = self._placeholder_filled(k, node, vals, m)
        if len({(v.struct if v is not None else None) for v in vals}) > 1:
            # (arms that each leave a list, one reset to `[]`, one grown, leave a list where the
            # condition agrees: `semantics.joined_struct`)
            arms = [v.struct if v is not None else self.scope.env.get(k, BOTTOM).struct for v in vals]
            joined = arms[0] if not cond.divergent else None
            for s in arms[1:]:
                joined = joined if joined == s else semantics.joined_struct(joined, s)
            m = replace(m, struct=joined)
        return m

    def _placeholder_filled(self, k: str, node: cst.If, vals: list, m: Val) -> Val:
        """`k` was None on the processes of one arm of an earlier process-dependent `if`
        (`self._placeholders`): an `if` whose arm for exactly those processes binds it to
        something else (`semantics.same_processes_arm`) leaves no process with None."""
        first, arm, src = self._placeholders[k]
        fill = semantics.same_processes_arm(first, arm, node.test, read, lambda n: _code(self.module, n))
        if fill is None or fill >= len(vals) or vals[fill] is None or vals[fill].struct == "none" \
                or src in vals[fill].tree:  # (bound in that arm only on some paths: still None on others)
            return m
        del self._placeholders[k]
        return replace(m, tree=frozenset(s for s in m.tree if s != src))

    # `st_If` (semantics.StatementRules): an `if` on parameters that hold the same constant at
    # every call runs the arm taken; `if x is not None:` narrows x inside, `if x is None: return`
    # (or a placeholder filled) after it.
    def may_declare(self) -> bool:
        if self._may_declare_ is None:
            self._may_declare_ = self._text is None or semantics.may_declare(self._text)
        return self._may_declare_

    def declared_global(self, name: str) -> bool:
        # (semantics.StatementRules.declared_global) the names the module's functions declare
        # `global`, found once, where asked (rarely: a module's table of rows indexed)
        if self._globals_declared is None:
            self._globals_declared = frozenset(x.name.value for n in _walk(self.module) if type(n) is cst.Global
                                               for x in n.names) if self.may_declare() else frozenset()
        return name in self._globals_declared

    def decided(self, node: cst.If) -> bool:
        if self._names_count is None:  # (a name can hold a test of the count only where the file calls for it)
            text = self._text if self._text is not None else self.module.code
            self._names_count = "process_count" in text or "host_count" in text
        taken = semantics.decide(node.test, read, self.scope.decided, self._is_process_count,
                                 self._count_test if self._names_count else None)
        if taken is None and self.scope.context:
            taken = self._decided_in_context(node.test)
            if taken is None:
                return False
            # Decided by the constants of the calls this analysis is for (`_Scope.context`): only
            # the arm they take runs here; other calls may take the other (not `decided_ifs`).
            if taken or node.orelse is not None:
                self.block(node.body if taken else node.orelse)
            return True
        if taken is None:
            return False
        # A branch on parameters that hold the same constant at every call (`cleanup(sync=
        # False)`): only the arm taken runs; the other's collective work and exits never do. So
        # for a test of the process count (`if jax.process_count() == 1:`): processes can part
        # ways only in a job of several, where the other arm runs.
        self.decided_ifs[node] = taken
        if taken or node.orelse is not None:
            self.block(node.body if taken else node.orelse)
        return True

    def _decided_in_context(self, test: cst.BaseExpression) -> bool | None:
        """Which way `test` goes at every call this analysis is for (`_Scope.context`): the same
        way for each combination of the constants they pass, else None."""
        names = {n.value for n in _walk(test) if type(n) is cst.Name}
        params = sorted(p for p in self.scope.context if p in names)
        if not params:
            return None
        combos = list(itertools.islice(itertools.product(*(sorted(self.scope.context[p]) for p in params)), 17))
        if len(combos) > 16:
            return None
        seen = {semantics.decide(test, read, {**self.scope.decided, **dict(zip(params, c))}) for c in combos}
        return seen.pop() if len(seen) == 1 else None

    def _is_process_count(self, e: cst.CSTNode) -> bool:
        """The process count (`semantics.is_process_count`): `jax.process_count()`, a name bound
        to it once and never again in its scope, an object's member that holds it."""
        return semantics.is_process_count(e, read, self.qualify, self._count_name, self._count_member)

    def _count_name(self, name: str) -> bool:
        counts = self._binding_scope(name)
        return counts is not None and name in counts[1]

    def _count_member(self, receiver: cst.CSTNode, attr: str, called: bool) -> bool:
        """Whether `receiver.attr` (`receiver.attr()`) holds the process count: a name holding an
        object of a project class whose member does (`ClassFacts.counts`, `ProjectIndex.count_member`)."""
        if not isinstance(receiver, cst.Name):
            return False
        v = self.local(receiver.value)
        return v is not None and isinstance(v.cls, str) and self.index.count_member(v.cls, attr, called)

    def _count_test(self, name: str) -> bool | None:
        """Which way a name bound once, and never again in its scope, to a test of the process
        count with 1 goes in a job of several processes (`sharded = world > 1`: True;
        `semantics.process_count_test`), else None."""
        counts = self._binding_scope(name)
        test = counts[2].get(name) if counts is not None else None
        if test is None:
            return None
        r = read(test)
        return semantics.process_count_test(r[1], r[2], r[3], read, self._is_process_count) \
            if r[0] == "compare" else None

    def _binding_scope(self, name: str) -> tuple | None:
        """`semantics.scope_counts` of the innermost function or module that binds `name` where it is
        read; None where a comprehension's or lambda's own name, or bound nowhere."""
        scope = self.scope
        while scope is not None:
            if scope.node is None:  # (a comprehension's or lambda's own names: its parameters)
                if name in scope.env:
                    return None
            else:
                counts = self._counts.get(id(scope.node))
                if counts is None:
                    counts = self._counts[id(scope.node)] = semantics.scope_counts(
                        *_scope_bindings(scope.node, self.may_declare()), read, self.qualify)
                if name in counts[0]:
                    return counts
            scope = scope.outer
        return None

    def arms_of_if(self, node: cst.If, cond: Val) -> None:
        name, is_none = semantics.none_test(node.test, read)
        if name is not None and not is_none and node.orelse is None:
            self._narrow(name)  # `if x is not None:` — inside, x is not None

    def after_if(self, node: cst.If, cond: Val, token: None) -> None:
        name, is_none = semantics.none_test(node.test, read)
        if name is not None and is_none and node.orelse is None and (_always_exits(node.body) or self._fills(node.body, name)):
            # `if x is None: break/return/...`, or `if x is None: x = np.zeros(n)` (a
            # placeholder): after it, x is not None
            self._narrow(name)

    def _fills(self, body, name: str) -> bool:
        """Whether a block's last statement assigns `name` a value never None."""
        stmts = getattr(body, "body", [])
        last = stmts[-1] if stmts else None
        if not isinstance(last, cst.SimpleStatementLine) or len(last.body) != 1 or not isinstance(last.body[0], cst.Assign):
            return False
        a = last.body[0]
        return any(isinstance(t.target, cst.Name) and t.target.value == name for t in a.targets) \
            and semantics.never_none(a.value, read, self.qualify)

    def _narrow(self, name: str) -> None:
        cur = self.local(name) if not self.scope.is_module else self.module_scope.env.get(name)
        if cur is not None and cur.tree:
            self.scope.env[name] = replace(cur, tree=frozenset(), struct=None)

    def st_Else(self, node: cst.Else):
        self.block(node.body)

    MAX_LOOP_DEPTH_TWICE = MAX_LOOP_DEPTH_TWICE

    def decides(self, node: cst.CSTNode, cond: Val) -> None:
        if cond.divergent:
            self.conds[node] = self.conds.get(node, BOTTOM).join(cond)

    def _iterated_instance(self, cls: str, node: cst.CSTNode) -> Val:
        """Iterating an instance of a project class (`for batch in loader`): as process-dependent
        as the attributes its `__iter__`/`__next__` read (a per-process shard stored in
        `__init__`); iterating it is then iterating process-local data."""
        read_attrs = BOTTOM
        for meth in semantics.ITERATION_METHODS:
            q = self.index.method(cls, meth)
            fdef = self.fn_nodes.get(q, (None,))[0] if q else None
            if not isinstance(fdef, cst.FunctionDef):
                continue  # (a class of another file: its methods' bodies are not at hand)
            pieces: set[str] = set()
            for attr in _iteration_attrs(fdef, pieces):
                v = self.index.attr(cls, attr)
                if v is not None and v.pd:
                    read_attrs = read_attrs.join(Val(pd=v.pd))  # (a source reached two ways: `Val.join`)
                elif (some := self.index.attr_count_at_some(cls, attr)).pd:
                    # (stored per-process by some constructions only: `evidence.SOME_CONSTRUCTIONS`)
                    read_attrs = read_attrs.join(evidence.mark(some, evidence.SOME_CONSTRUCTIONS,
                                                               f"`{short_name(cls)}.{attr}`", self.line(fdef)))
            for attr in pieces:
                v = self.index.attr(cls, attr)
                if v is not None and v.pd:
                    read_attrs = read_attrs.join(Val(pd=evidence.equal_pieces(v, self.line(fdef)).pd))
                elif (some := self.index.attr_count_at_some(cls, attr, start=True)).pd:
                    some = evidence.mark(some, evidence.SOME_CONSTRUCTIONS, f"`{short_name(cls)}.{attr}`", self.line(fdef))
                    read_attrs = read_attrs.join(Val(pd=evidence.equal_pieces(some, self.line(fdef)).pd))
        # `for x in obj` is `for x in obj.__iter__()`: the iterator that method makes (a generator
        # over this process's own share, computed there rather than stored) is iterated.
        if (q := self.index.method(cls, "__iter__")) is not None:
            made, _ = self.index.call_method("__iter__", Val(cls=cls))
            read_attrs = read_attrs.join(Val(pd=made.pd))
        pd = read_attrs.pd
        return self.anchor(Val(pd=pd), node, short_name(cls), call=False, unlocated_only=True) if pd else BOTTOM

    # `st_For` (semantics.StatementRules): an iteration's order is a set of sources; the target
    # takes the element with a tuple's parts kept apart (`zip`, `enumerate`).
    statement_reader = property(lambda self: _STATEMENTS)

    def iterated(self, it: Val, node: cst.BaseExpression) -> Val:
        return it.join(self._iterated_instance(it.cls, node)) if it.cls else it

    def iteration(self, it: Val, node: cst.BaseExpression) -> tuple[Val, Val, frozenset]:
        elem = it.element()
        if it.unordered:
            s = self._set_iteration(node, it)
            elem = replace(elem, order=_cap(elem.order | {s}))
            it = replace(it, order=_cap(it.order | {s}))
        return it, elem, it.order

    def bind_iteration(self, target: cst.BaseExpression, iterable: cst.BaseExpression, elem: Val) -> None:
        self._bind_loop_target(target, iterable, self._iteration_element(iterable, elem))

    def iteration_count(self, it: Val, iterable: cst.BaseExpression, node: cst.For) -> Val:
        it = self._counted(it, iterable)
        self.iters[node] = self.iters.get(node, BOTTOM).join(it)
        return Val(pd=it.count_sources)

    def _counted(self, it: Val, iterable: cst.BaseExpression) -> Val:
        """The iterable `it` with what decides how many steps it runs: a `for` statement's and a
        comprehension's alike (as the summary pass's `comp_iteration` counts them)."""
        if _is_range(iterable) and it.pdc:
            # `range(n)` has n steps: process-local content used as the count (a step read from a
            # per-host file) makes the number of iterations differ, not only the data; not the
            # start of `range(a, a + n)` or `range(i, stop, n)` (`semantics.range_counts`).
            counts = it.pdc
            parts = semantics.range_counts(iterable, read, read_cst.same)
            if parts is not None:
                counts = frozenset().union(*(self.data(self.ev(n)).pdc for n in parts))
                if len(parts) == 2:
                    # (a piece's start counts unless its value is a process's index itself: not
                    # content read from a file, `range(rank_file_value, stop, n)`)
                    start = self.data(self.ev(iterable.args[0].value))
                    counts |= start.pdc - start.pd
            it = replace(it, pd=_cap(it.pd | counts))
        return it

    def order_free(self, n: str, order: frozenset, node: cst.For) -> None:
        v = self.scope.env[n] if n in self.scope.env else None
        if v is not None and v.order & order:
            self.scope.env[n] = replace(v, order=v.order - order)

    def entered(self, expr: cst.BaseExpression, value: Val) -> None:
        # `with cm:` runs the class's `__enter__` before the block and its `__exit__` after it
        # (also when an exit skips the block): their collective work is work of the `with`
        # (`semantics.context_manager_work`), on a manager constructed here or held in a name.
        info = self.calls.get(expr)
        cls = info.result.cls if info is not None and isinstance(expr, cst.Call) else value.cls
        if not cls:
            return
        enter, ex = semantics.context_manager_work(
            lambda m: self.index.collective.get(self.index.method(cls, m) or ""))
        if not (enter or ex):
            return
        if info is None:
            info = self.calls[expr] = CallInfo(expr)  # (`with manager:`: the name stands for the calls)
        info.enter_collective, info.exit_collective = enter, ex

    def st_FunctionDef(self, node: cst.FunctionDef):
        qual = self._qualname(node.name.value)
        jit = None
        for d in node.decorators:
            dec = d.decorator
            dq = self.qualify(dec.func if isinstance(dec, cst.Call) else dec)
            if isinstance(dec, cst.Call) and semantics.jit_runs_locally(
                    [(a.keyword.value, a.value) for a in dec.args if a.keyword is not None], read, self.qualify) \
                    and (dq in K.JIT_WRAPPERS or dq in ("functools.partial", "partial")):
                continue  # `@partial(jax.jit, backend="cpu")`: host-local
            if dq in K.JIT_WRAPPERS:
                jit = semantics.jit_kind(K.JIT_WRAPPERS[dq], _keywords(dec) if isinstance(dec, cst.Call) else [])
            elif dq in ("functools.partial", "partial") and isinstance(dec, cst.Call) and dec.args \
                    and self.qualify(dec.args[0].value) in K.JIT_WRAPPERS:
                jit = semantics.jit_kind(K.JIT_WRAPPERS[self.qualify(dec.args[0].value)], _keywords(dec))
            else:
                dv = self.ev(dec)
                if dv.factory:  # `@donating_jit`: a `functools.partial(jax.jit, ...)` of the project's
                    jit = dv.factory[0]
                elif dv.fn and not isinstance(dec, cst.Call):
                    gate = self.index.decorator_gate(dv.fn)
                    if gate is not None:  # `@rank_zero_only`: the body runs where the gate holds
                        self.gated_defs[node] = (d, self.anchor(gate, dec, short_name(dv.fn), call=False))
        defaults: dict[str, Val] = {}
        for p in _all_params(node.params):
            if p.default is not None:
                dv = self.ev(p.default)
                # A function as the default (`cb=sync_metrics`): calls that leave it run it.
                defaults[p.name.value] = replace(dv.data(), fn=dv.fn, callable=dv.callable, srcq=dv.srcq) \
                    if (dv.fn or dv.callable or dv.srcq) else dv.data()
        in_class = bool(self.cls_stack) and self.scope.is_module and self._in_class_body
        value = Val(callable=f"`{node.name.value}` ({jit})", fn=qual, hostable=self._local_jit(qual)) if jit else Val(fn=qual)
        if jit:
            self._traced_def(qual, f"`{node.name.value}` ({jit})", self._local_jit(qual) or jit in semantics.LOCAL_RESULT_KINDS)
        if self._per_process_arms:
            self.defined_per_process.add(qual)
        else:
            self.defined_per_process.discard(qual)
        if not in_class:
            self.scope.env[node.name.value] = value
            self._def_values[qual] = value
        cls = self.cls_stack[-1] if in_class else None
        self.fn_nodes[qual] = (node, self.scope, cls)
        self.pending.append((qual, node, defaults, self.scope, cls))

    def _qualname(self, name: str) -> str:
        cls = self.cls_stack[-1] if self.cls_stack and self._in_class_body else None
        return semantics.qualname(name, self.modname, cls, None if self.scope.is_module else self.scope.qualname)

    _in_class_body = False

    def st_ClassDef(self, node: cst.ClassDef):
        qual = self._qualname(node.name.value)
        for b in node.bases:
            self.ev(b.value)
        saved_in = self._in_class_body
        saved_scope = self.scope
        self.cls_stack.append(qual)
        self._in_class_body = True
        try:
            # The body's own namespace (`summary._Summarizer.st_ClassDef`): a statement reads the
            # names bound before it in the body; class attributes are not module names, and the
            # methods do not see them.
            body_env = self.scope.env.child()
            for s in node.body.body:
                if isinstance(s, (cst.FunctionDef, cst.ClassDef)):
                    self.stmt(s)
                else:
                    env_before = self.scope.env
                    self.scope.env = body_env
                    try:
                        self.stmt(s)
                    finally:
                        self.scope.env = env_before
        finally:
            self.cls_stack.pop()
            self._in_class_body = saved_in
            self.scope = saved_scope

    def run_function(self, qual: str, node: cst.FunctionDef, defaults: dict[str, Val], outer: _Scope, cls: str | None,
                     param_taint: dict[str, Val] | None = None, context: dict[str, str] | None = None) -> None:
        env: dict[str, Val] = {}
        params = _all_params(node.params)
        callbacks = self.index.callback_params.get(qual, ())
        decorators = [q for d in node.decorators
                      if (q := self.qualify(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator))]
        for i, p in enumerate(params):
            name = p.name.value
            v = defaults.get(name, BOTTOM)
            fixture = semantics.fixture_param_source(name, qual, self.modname, cls, decorators, self.path)
            if fixture is not None:  # (pytest passes a per-process fixture)
                v = v.join(Val(pd=frozenset({self.src(p.name, fixture, kinds.PROCESS_ID)})))
            if param_taint and name in param_taint:
                v = param_taint[name] if v == BOTTOM else v.join(param_taint[name])
            if i == 0 and cls and name in ("self", "cls") and not _is_static(node):
                # (an instance taken in a per-process order: `_record_param_taint`)
                v = Val(cls=cls) if not (param_taint and name in param_taint) else \
                    replace(param_taint[name].taint(), cls=cls)
            if name in callbacks:
                v = v.join(Val(callable=f"the collective callback passed as `{name}`"))
            if p.annotation is not None and _code(self.module, p.annotation.annotation).strip() in ("int", "float"):
                v = replace(v, numeric=True)
            elif p.annotation is not None and not v.cls and isinstance(p.annotation.annotation, (cst.Name, cst.Attribute)):
                # `cfg: TrainConfig`: its attributes and methods are that project class's.
                aq = self.qualify(p.annotation.annotation)
                aq = self.index.resolve_class_name(aq) if aq else None
                if aq in self.index.classes:
                    v = replace(v, cls=aq)
            if not v.cls and (pc := self.index.param_classes.get(qual, {}).get(name)) is not None:
                # every call in the project passes an instance of one project class here
                v = replace(v, cls=pc)
            env[name] = v
        for star in (node.params.star_arg, node.params.star_kwarg):
            if isinstance(star, cst.Param):
                # (what the calls seen bind there: `_record_param_taint`)
                env[star.name.value] = param_taint.get(star.name.value, BOTTOM) if param_taint else BOTTOM
        saved = (self.scope, self.cls_stack, self._in_class_body, self.loop_depth)
        consts = self.index.decided.get(qual)
        if consts:
            assigned = _assigned_names(node)
            consts = {p: c for p, c in consts.items() if p not in assigned}
        owners: dict[str, Val] = {}
        for key, v in (param_taint or {}).items():
            # (`_carry_attributes`: an object's own attributes, bound beside its parameter as
            # `bound_instance` binds them beside a name; a fresh value makes the parameter the owner)
            name, sep, _ = key.partition(":")
            if sep and name in env:
                if name not in owners:
                    owners[name] = env[name] = replace(env[name])
                env[key] = v
        self.scope = _Scope(env, outer, cls=cls, qualname=qual, params=frozenset(p.name.value for p in params),
                            decided=consts or {}, node=node, context=dict(context or {}))
        for key in env:
            name, sep, _ = key.partition(":")
            if sep and name in owners:
                self.scope.attr_owner[key] = owners[name]
        self.cls_stack = [cls] if cls else []
        self._in_class_body = False
        self.loop_depth = 0
        # A method run on instances taken in a per-process order (`_record_param_taint`'s
        # receiver): its body runs once per element of that order, as a loop's body does.
        each = env[params[0].name.value].order if params and cls and param_taint and params[0].name.value == "self" \
            and "self" in param_taint else frozenset()
        if each:
            self.enter_iteration(Val(order=each))
        try:
            self.block(node.body)
        finally:
            if each:
                self.leave_iteration()
            self.scope, self.cls_stack, self._in_class_body, self.loop_depth = saved

    def run(self) -> None:
        self.block(self.module.body)
        done: set[str] = set()
        while self.pending:
            qual, node, defaults, outer, cls = self.pending.pop(0)
            done.add(qual)
            self.run_function(qual, node, defaults, outer, cls)
        # Same-file callers that pass divergent values: analyse those functions again with them.
        for _ in range(3):
            todo = [(q, dict(p)) for q, p in self.fn_params.items() if p]
            consts = self.fn_consts
            self.fn_params, self.fn_consts = {}, {}
            if not todo:
                break
            for q, taint in todo:
                node, outer, cls = self.fn_nodes[q]
                every = self._glob_params.get(q, frozenset())
                taint = {p: replace(v, glob=False) if v.glob and p not in every else v for p, v in taint.items()}
                defaults = {p.name.value: self.ev(p.default).data() for p in _all_params(node.params) if p.default is not None}
                context = {p: c for p, c in consts.get(q, {}).items() if c and len(c) <= 4}
                self.run_function(q, node, defaults, outer, cls, taint, context)
                while self.pending:
                    qual, n2, d2, o2, c2 = self.pending.pop(0)
                    if qual in done and not qual.startswith(q + "."):
                        # (a function nested in `q` is analysed again: it closes over the
                        # parameters `q` now has, `make_hook(is_leader=rank == 0)`'s hook)
                        continue
                    done.add(qual)
                    self.run_function(qual, n2, d2, o2, c2)
        self._drop_report_only_trace_reads()

    def _drop_report_only_trace_reads(self) -> None:
        """A process-dependent value read in a traced body only to print or log at trace time
        (`print("tracing on", rank)`, `if verbose: print(...)`) changes no program: no trace constant."""
        if not any(k.place == kinds.TRACE_CONSTANT for k in self.sinks):
            return
        spans = []
        for q in self.traced:
            fdef = self.fn_nodes.get(q, (None,))[0]
            if fdef is not None:
                finder = _ReportOnly()
                fdef.body.visit(finder)
                spans += [self.pos(n) for n in finder.nodes]

        def inside(node) -> bool:
            r = self.pos(node)
            return any(t[:2] <= r[:2] and r[2:] <= t[2:] for t in spans)
        self.sinks = [k for k in self.sinks if k.place != kinds.TRACE_CONSTANT or not inside(k.node)]




def _joined_arg(old: Val, new: Val) -> Val:
    """What a parameter holds after one more call passing `new`: both calls' values, and an
    object's class only where both pass the same one."""
    out = old.join(new)
    if out.glob and not (old.glob and new.glob):
        out = replace(out, glob=False)
    return replace(out, cls=None) if out.cls and old.cls != new.cls else out


class _ReportOnly(cst.CSTVisitor):
    """Statements that only print or log, and the tests of `if`s whose every arm only does."""

    def __init__(self) -> None:
        self.nodes: list[cst.CSTNode] = []

    def visit_If(self, node: cst.If) -> None:
        if _reports_only(node):
            self.nodes.append(node.test)

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        if _reports_only_line(node):
            self.nodes.append(node)


_REPORT_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "log", "write", "flush", "print"})


def _reports_only(node: cst.If) -> bool:
    """Whether every arm of `if` only prints or logs (host output, nothing a program computes)."""
    def block(b) -> bool:
        if b is None:
            return True
        if isinstance(b, cst.If):
            return _reports_only(b)
        for st in (b.body.body if isinstance(b, cst.Else) else b.body):
            if isinstance(st, cst.If):
                if not _reports_only(st):
                    return False
                continue
            if not (isinstance(st, cst.SimpleStatementLine) and _reports_only_line(st)):
                return False
        return True
    return block(node.body) and block(node.orelse)


def _reports_only_line(st: cst.SimpleStatementLine) -> bool:
    """`print(...)`, `logger.info(...)`, `f.write(...)`, `pass`: host output only."""
    for small in st.body:
        if isinstance(small, cst.Pass):
            continue
        if not (isinstance(small, cst.Expr) and isinstance(small.value, cst.Call)):
            return False
        f = small.value.func
        if not ((isinstance(f, cst.Name) and f.value == "print")
                or (isinstance(f, cst.Attribute) and f.attr.value in _REPORT_METHODS)):
            return False
    return True


def _container_root(e):
    return semantics.container_root(e, read)
_RE_MATCH_ANY = {"re.compile", "re.search", "re.match", "re.fullmatch"}
_SHAPE_KWS = ("dtype", "shape", "size", "new_shape", "newshape", "global_shape")


def _env_key_arg(node: cst.Call, param: str, pos: int) -> str | None:
    """The per-process environment variable name passed to `param` (at `pos`) by a call, if any."""
    positional = [a for a in node.args if a.keyword is None and not a.star]
    arg = next((a.value for a in node.args if a.keyword is not None and a.keyword.value == param), None)
    if arg is None and 0 <= pos < len(positional):
        arg = positional[pos].value
    key = _const_str(arg) if arg is not None else None
    return key if key is not None and K.is_per_process_env_key(key) else None


def _collection_expr(e: cst.BaseExpression) -> bool:
    """A tuple/list/set written or built in place (`tuple(NO_DECAY)`, `("a", "b")`)."""
    if isinstance(e, (cst.Tuple, cst.List, cst.Set)):
        return True
    return isinstance(e, cst.Call) and isinstance(e.func, cst.Name) and e.func.value in ("tuple", "list", "set", "frozenset", "sorted")


def _alternation(e: cst.BaseExpression) -> bool:
    """`"|".join(...)`: a regular expression matching any of several alternatives."""
    return isinstance(e, cst.Call) and isinstance(e.func, cst.Attribute) and e.func.attr.value == "join" \
        and isinstance(e.func.value, cst.SimpleString) and e.func.value.evaluated_value == "|"


# Builtins whose result has one element per element of their first argument (`enumerate(xs)`).
_SAME_COUNT_BUILTINS = frozenset({"enumerate", "list", "tuple"})


# Constructors of a sequence, empty when given no iterable (`collections.deque(maxlen=n)`).
_EMPTY_SEQUENCES = frozenset({"list", "collections.deque"})


def _built_here(v: Val) -> bool:
    """A list built in the analysed code (a display "seq:N", a comprehension or a display grown by
    `append`, "list"): how many elements it holds is its count sources alone."""
    return v.struct == "list" or (v.struct or "").startswith("seq:")


def _plain_first_argument(node: cst.Call) -> bool:
    """A call whose first argument is positional and no argument is starred (`f(xs)`, not `f(*xs)`)."""
    return bool(node.args) and node.args[0].keyword is None and not any(a.star for a in node.args)


def _full_reduction(name: str | None, node: cst.Call) -> bool:
    """A numpy / jax.numpy reduction over all axes (`semantics.REDUCTIONS`): `np.sum(x)`,
    `jnp.max(x, axis=None)`, `x.mean()`; its result is a scalar (shape `()`) on every process,
    however x's shape differs. Not with an axis, `keepdims`, `out`, or a starred argument."""
    if any(a.star for a in node.args):
        return False
    positional = [a for a in node.args if a.keyword is None]
    keywords = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
    if "axis" in keywords and not _is_none(keywords["axis"]):
        return False
    if any(k in keywords for k in ("keepdims", "out", "where", "ord")):
        return False
    if name is not None:
        return name.startswith(("numpy.", "jax.numpy.")) and name.rsplit(".", 1)[1] in semantics.REDUCTIONS \
            and len(positional) == 1
    return isinstance(node.func, cst.Attribute) and node.func.attr.value in semantics.REDUCTIONS and not positional


_POSITION = "a position in "  # the description of an enumerate index over an arbitrary order


def _one_class(vals: list[Val]) -> str | None:
    """The project class every one of `vals` is an instance of (a display's elements), if one."""
    classes = {v.cls if not v.callable else None for v in vals}
    return next(iter(classes)) if len(classes) == 1 else None


def _array_shapes_differ(*structs) -> bool:
    """Arrays built with literal shapes (`np.zeros((8,))`, `np.arange(7)`) whose shapes or given
    dtypes differ."""
    return len(set(structs)) > 1 and all(isinstance(x, str) and x.startswith("array:") for x in structs)


def _literal_array(name: str | None, node: cst.Call, fn: str, dtype_at: int | None) -> str | None:
    """`array:<shape>:<dtype>` for a numpy constructor whose shape is written as literals, else None."""
    pos = [a.value for a in node.args if a.keyword is None and a.star == ""]
    kw = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
    if fn in ("zeros", "ones", "empty", "full"):
        shape = _int_tuple(pos[0] if pos else kw.get("shape"))
    elif fn == "arange" and 1 <= len(pos) <= 2 and "step" not in kw:
        ends = [_small_int(p) for p in pos]
        shape = None if None in ends else ((ends[0],) if len(ends) == 1 else (ends[1] - ends[0],))
    elif fn in ("array", "asarray") and pos and isinstance(pos[0], (cst.List, cst.Tuple)) \
            and all(isinstance(e.value, (cst.Integer, cst.Float)) for e in pos[0].elements):
        shape = (len(pos[0].elements),)
    else:
        return None
    if shape is None:
        return None
    dt = kw.get("dtype", pos[dtype_at] if dtype_at is not None and len(pos) > dtype_at else None)
    dtype = repr(read(dt)) if dt is not None else ""
    return f"array:{shape}:{dtype}"


def _int_tuple(node) -> tuple | None:
    if node is None:
        return None
    n = _small_int(node)
    if n is not None:
        return (n,)
    if isinstance(node, cst.Tuple):
        dims = tuple(_small_int(e.value) for e in node.elements)
        return None if None in dims else dims
    return None


# Position of the dtype argument of numpy / jax.numpy array constructors.
_DTYPE_POSITION = {"zeros": 1, "ones": 1, "empty": 1, "full": 2, "array": 1, "asarray": 1,
                   "ascontiguousarray": 1, "frombuffer": 1, "fromfile": 1, "fromiter": 1, "identity": 1, "eye": 3}
# Calls whose result is still a container of the same elements (its length, not an array shape).
_CONTAINER_BUILTINS = {"list", "tuple", "sorted", "reversed", "enumerate", "zip", "map", "filter", "iter", "set",
                       "frozenset", "dict", "itertools.chain", "itertools.islice", "collections.deque"}
def _filtered_iterable(node: cst.BaseExpression, cif: cst.CompIf) -> cst.BaseExpression | None:
    """The iterable of the `for` of comprehension `node` that filter `cif` belongs to."""
    f = getattr(node, "for_in", None)
    while f is not None:
        if any(c is cif for c in f.ifs):
            return f.iter
        f = f.inner_for_in
    return None


def _drawn_per_process(v: Val) -> list[Src]:
    """The sources of `v` that are numbers each process drew for itself: unseeded randomness, or
    a draw from a generator or key seeded per process (`kinds.DRAWN`)."""
    return sorted(s for s in v.pd | v.pdc if kinds.unguarded(s.kind) in (kinds.RANDOM, kinds.DRAWN) and not _names_only(s))


def _partition(base: Val, idx: Val) -> bool:
    """Whether taking `base[idx]` (or `.shard(idx)`) splits an arbitrarily ordered collection
    between processes: the index differs by process, and the collection is the same everywhere
    but for its order. A collection that already differs by process (its content is per-process,
    e.g. `text[text.index(x):]` for this process's text) is not split by process: its order is as
    local as its content."""
    return bool(base.order) and bool(idx.pd) and not base.process_dependent


# What a value drawn anew by each process comes from: the clock, unseeded randomness (and, with
# them, the process id or host name mixed into a seed). Nothing here is meant to differ by process.
_DRAWN_PER_PROCESS = frozenset({kinds.CLOCK, kinds.RANDOM})
_DRAWN_WITH = _DRAWN_PER_PROCESS | {kinds.HOST_ID}


def _partition_of_drawn_whole(base: Val, idx: Val) -> bool:
    """Whether `base[idx]` takes this process's part (the index differs by process) of a whole
    that each process drew for itself (`_DRAWN_PER_PROCESS`: a permutation of an unseeded RNG, a
    model built from a seed read off the clock). Partitioning by process presumes one whole split
    between the processes; each one's part of its own whole duplicates some elements and drops
    others. A whole computed from the process index or a per-process setting is per-process by
    design (not this), and a value agreed by a collective (`broadcast_one_to_all`) is one whole."""
    if not idx.pd or not base.pd or base.sanitized or not any(s.kind == kinds.PROCESS_ID or s.kind == kinds.DERIVED for s in idx.pd):
        return False
    own = [(kinds.unguarded(s.kind), s) for s in base.pd]
    return any(k in _DRAWN_PER_PROCESS and not _names_only(s) for k, s in own) and all(k in _DRAWN_WITH for k, _ in own)


_SCALAR_TYPES = frozenset({"float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
                           "uint16", "uint32", "uint64", "bool_", "complex64", "complex128"})


def _indexed_by_parameter(fn) -> cst.BaseExpression | None:
    """`lambda idx: x[idx]`: the array `x` a one-parameter lambda indexes by that parameter alone
    (for the whole index, all of `x`); else None."""
    if not isinstance(fn, cst.Lambda) or len(fn.params.params) != 1 or isinstance(fn.params.star_arg, cst.Param) \
            or fn.params.kwonly_params or not isinstance(fn.body, cst.Subscript) or len(fn.body.slice) != 1:
        return None
    idx = fn.body.slice[0].slice
    if isinstance(idx, cst.Index) and isinstance(idx.value, cst.Name) and idx.value.value == fn.params.params[0].name.value \
            and isinstance(fn.body.value, cst.Name):
        return fn.body.value
    return None


def _scalar_of(expr: cst.BaseExpression, qualify) -> bool:
    """`jnp.float32(dt)`, `np.int32(n)`, `float(x)`: one scalar made on this process from a value
    (a global array's value would make a global result, which the caller rules out first)."""
    if not isinstance(expr, cst.Call) or len(expr.args) != 1:
        return False
    if isinstance(expr.func, cst.Name):
        return expr.func.value in ("float", "int", "bool")
    q = qualify(expr.func) or ""
    return q.startswith(("numpy.", "jax.numpy.")) and q.rsplit(".", 1)[-1] in _SCALAR_TYPES


def _names_only(s: Src) -> bool:
    """A random *name* (a temporary directory's, a uuid): each process's things are named apart,
    but the names correspond one to one (`tmpab12/part-0` here, `tmpcd34/part-0` there), so a list
    of them split by process is one whole, named differently; no drawn numbers."""
    return "temporary" in s.desc or "`uuid." in s.desc


def _picks_function(module: cst.Module, node: cst.IfExp, a: Val, b: Val) -> bool:
    """`a if cond else b` chooses between two different functions (collective callables or project
    functions; two names count as two programs, as for calls)."""
    if not ((a.callable or a.fn) and (b.callable or b.fn)):
        return False
    return (a.callable, a.fn, _code(module, node.body)) != (b.callable, b.fn, _code(module, node.orelse))


def _given(node: cst.Call) -> tuple | None:
    """(positional count, keyword names) of a call, None with `*args`/`**kwargs`."""
    if any(a.star for a in node.args):
        return None
    return (sum(1 for a in node.args if a.keyword is None), tuple(a.keyword.value for a in node.args if a.keyword is not None))


def _const_str(node) -> str | None:
    if isinstance(node, cst.SimpleString):
        try:
            v = node.evaluated_value
        except Exception:  # noqa: BLE001 - odd literals are just unknown keys
            return None
        return v if isinstance(v, str) else None
    return None


def _self_attrs(node, pieces: set[str] | None = None, made=None) -> set[str]:
    """`X` of every `self.X` read in an expression. With `pieces`: those read only as the start
    of a piece of equal ones (`self.xs[self.rank::n]`, `range(self.rank, stop, n)`: which
    elements, a guess for how many, `semantics.strided_piece`) go there instead; of a piece of a
    whole made a multiple of n long (`semantics.length_multiple`, `made`: what made the names
    read, `_made_before`), nowhere: they decide which elements alone."""
    out = set()
    starts, equal = set(), set()
    if pieces is not None:
        for n in _walk(node):
            if isinstance(n, cst.Subscript):
                for e in n.slice:
                    sl = e.slice
                    if isinstance(sl, cst.Slice) and semantics.strided_piece(sl.lower, sl.upper, sl.step, read):
                        multiple = made is not None and sl.upper is None and semantics.length_multiple(
                            n.value, sl.step, read, read_cst.same, _no_qualify, read_cst.read_subscript, made)
                        (equal if multiple else starts).add(id(sl.lower))
            elif isinstance(n, cst.Call) and len(n.args) == 3 and semantics.range_of_pieces(n, read, read_cst.same):
                stop, step = n.args[1].value, n.args[2].value
                r = read(stop)
                multiple = made is not None and (
                    semantics.count_multiple(stop, step, read, read_cst.same, made)
                    or r[0] == "call" and read(r[1]) == ("name", "len") and len(r[2]) == 1
                    and semantics.length_multiple(r[2][0], step, read, read_cst.same, _no_qualify,
                                                  read_cst.read_subscript, made))
                (equal if multiple else starts).add(id(n.args[0].value))
    stack = [node]
    while stack:
        n = stack.pop()
        if id(n) in equal:
            continue
        if id(n) in starts:
            pieces |= _self_attrs(n)
            continue
        if isinstance(n, cst.Attribute) and isinstance(n.value, cst.Name) and n.value.value == "self":
            out.add(n.attr.value)
        stack.extend(children(n))
    if pieces is not None:
        pieces -= out
    return out


class _MadeScope:
    """What made each name a function body assigns at its top level before a statement
    (`_made_before`), as `semantics.length_multiple` asks a scope (`env`, `sized`, `strings`)."""

    def __init__(self, sized: dict, names: set):
        self.sized, self.env, self.strings, self.outer = sized, names, {}, None


def _no_qualify(node) -> None:
    return None  # (library calls, `np.arange(...)`, are not resolved here: not a multiple)


def _made_before(fdef: cst.FunctionDef, stmt) -> _MadeScope:
    """The last `name = value` of fdef's top-level statements before the one holding `stmt`, for
    each name no nested block before it rebinds (a loop target, an `if` arm: nothing known)."""
    sized, names = {}, set()
    for top in fdef.body.body:
        if any(n is stmt for n in _walk(top)):
            break
        if isinstance(top, cst.SimpleStatementLine):
            for small in top.body:
                if isinstance(small, cst.Assign) and len(small.targets) == 1 \
                        and isinstance(small.targets[0].target, cst.Name):
                    name = small.targets[0].target.value
                    sized[name] = small.value
                    names.add(name)
                    continue
                for n in _walk(small):
                    if isinstance(n, cst.Name):
                        sized.pop(n.value, None)  # (`xs += ...`, `xs.append(...)`: not as made)
            continue
        for n in _walk(top):
            if isinstance(n, cst.Name):
                sized.pop(n.value, None)
    return _MadeScope(sized, names)


def _is_generator_def(fdef: cst.FunctionDef) -> bool:
    """A generator function: a `yield` in its own body (not in a nested def or lambda)."""
    todo = list(fdef.body.children)
    while todo:
        n = todo.pop()
        if isinstance(n, cst.Yield):
            return True
        if not isinstance(n, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            todo.extend(n.children)
    return False


def _iteration_attrs(fdef: cst.FunctionDef, pieces: set[str]) -> set[str]:
    """The attributes that decide how many items an `__iter__`/`__next__` produces: tested by an
    `if` that stops the iteration (`raise StopIteration`, `return` in a generator), iterated or
    tested by a loop that yields, handed to `yield from` or returned as the iterator. Those that
    decide it only as the start of a piece of equal ones go to `pieces` (see `_self_attrs`)."""
    out: set[str] = set()
    gen = any(isinstance(n, (cst.Yield,)) for n in _walk(fdef.body))

    def stops(body) -> bool:
        for n in _walk(body):
            if isinstance(n, cst.Raise) and n.exc is not None and "StopIteration" in _code(cst.Module([]), n.exc):
                return True
            if gen and isinstance(n, cst.Return):
                return True
        return False

    for n in _walk(fdef.body):
        if isinstance(n, cst.If) and stops(n.body):
            out |= _self_attrs(n.test)
        elif isinstance(n, (cst.For, cst.While)) and any(isinstance(y, cst.Yield) for y in _walk(n.body)):
            out |= _self_attrs(n.iter if isinstance(n, cst.For) else n.test, pieces, _made_before(fdef, n))
        elif isinstance(n, cst.Yield) and isinstance(n.value, cst.From):
            out |= _self_attrs(n.value.item, pieces)
        elif isinstance(n, cst.Return) and not gen and n.value is not None and not (
                isinstance(n.value, cst.Name) and n.value.value == "self"):
            out |= _self_attrs(n.value, pieces)
    pieces -= out
    return out


def _is_range(node) -> bool:
    return semantics.is_range(node, read)


_STATEMENTS = semantics.Statements(read, read_cst.statements, read_cst.names_in, read_cst.same)


def _measures_name(expr, target) -> bool:
    """`len(t)`, `len(t[...])`, `len(t.x)`, `t.shape[...]`, `t.shape`, `t.size` for the loop
    target `t` (a name)."""
    if not isinstance(target, cst.Name):
        return False

    def rooted(e) -> bool:
        while isinstance(e, (cst.Subscript, cst.Attribute)):
            e = e.value
        return isinstance(e, cst.Name) and e.value == target.value

    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "len" and len(expr.args) == 1:
        return rooted(expr.args[0].value)
    if isinstance(expr, cst.Subscript):
        expr = expr.value
    return isinstance(expr, cst.Attribute) and expr.attr.value in ("shape", "size") and rooted(expr.value)


def _small_int(node) -> int | None:
    if isinstance(node, cst.Integer):
        try:
            return int(node.value, 0)
        except ValueError:
            return None
    return None


def _always_exits(body) -> bool:
    return semantics.always_leaves(body, last_statement)


def _is_none(node) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def _expr_name(node) -> str:
    return semantics.expr_name(node, read, none="function")


def _repeat_count(e: cst.BaseExpression) -> cst.BaseExpression | None:
    """n in a repeated display `[pad] * n` (or `n * [pad]`), else None."""
    if isinstance(e, cst.BinaryOperation) and isinstance(e.operator, cst.Multiply):
        if isinstance(e.left, (cst.List, cst.Tuple)):
            return e.right
        if isinstance(e.right, (cst.List, cst.Tuple)):
            return e.left
    return None


_SLICE_BOUNDED = "a slice bounded by"  # (how `slice_of` names the length of `x[s:]`, s per process)


def _const_int(e: cst.BaseExpression, other):
    """The value of an integer literal (`0`, `-1`), else `other`."""
    if isinstance(e, cst.Integer):
        return int(e.value)
    if isinstance(e, cst.UnaryOperation) and isinstance(e.operator, cst.Minus) and isinstance(e.expression, cst.Integer):
        return -int(e.expression.value)
    return other


_PIECE_COUNTS = (evidence.EQUAL_PIECES, evidence.SPLIT_POINTS)


def _index_count(idx: Val) -> frozenset[Src]:
    """Why the number of positions an index `idx` holds differs between processes, where it is
    a sequence of positions (the caller has ruled out a number, `xs[step % len(piece)]`): its
    length sources; a per-process piece of equal ones (`x[i::n]`,
    `np.array_split(x, n)[i]`, `np.array_split(x, [k])[i]`), the guessed sources of its count
    (`evidence.equal_pieces`, `evidence.split_points`). A
    single position has neither."""
    pieces = frozenset(s for s in idx.pd if any(g[2] in _PIECE_COUNTS for g in s.guess))
    return _cap(idx.length_sources | pieces) if pieces or idx.length_sources else frozenset()


def _rows_anywhere(v: Val) -> Val:
    """`v` after an operation that may move an array's axes (`arr.T`, `arr[None]`): a count of
    rows that differed (`kinds.ROWS`) is a shape that differs, rows included."""
    if not any(x.kind == kinds.ROWS for x in v.shape):
        return v
    return replace(v, shape=rekinded(v.shape, lambda x: kinds.ARRAY_SHAPE if x.kind == kinds.ROWS else x.kind))


def _first_key(node: cst.Subscript) -> str:
    """What a subscript's first key does to the first axis: "new" (`None`, `np.newaxis`: a new
    axis before it), "..." (`...`: keeps it), "slice" or "index" (takes one position)."""
    key = node.slice[0].slice if node.slice else None
    if isinstance(key, cst.Slice):
        return "slice"
    value = key.value if isinstance(key, cst.Index) else None
    if isinstance(value, cst.Ellipsis):
        return "..."
    if isinstance(value, cst.Name) and value.value == "None" or isinstance(value, cst.Attribute) and value.attr.value == "newaxis":
        return "new"
    return "index"


def _measures(e: cst.BaseExpression, arr: str, module: cst.Module) -> bool:
    """`len(arr)`, `arr.shape[i]` or `arr.size`, where `arr` may also be `np.asarray(x)` (or another
    conversion keeping the length, `semantics.LENGTH_KEEPING_CONVERSIONS`) measured as `len(x)`."""
    if isinstance(e, cst.Call) and isinstance(e.func, cst.Name) and e.func.value == "len" and e.args:
        measured = module.code_for_node(e.args[0].value)
    elif isinstance(e, cst.Subscript) and isinstance(e.value, cst.Attribute) and e.value.attr.value == "shape":
        measured = module.code_for_node(e.value.value)
    elif isinstance(e, cst.Attribute) and e.attr.value == "size":
        measured = module.code_for_node(e.value)  # (a 1-D array's length: a 2-D one padded so is no array)
    else:
        return False
    return measured == arr or semantics.converted_from(arr) == measured


_DERIVED = (" depends on ", " computed from ", " bounded by ", " chosen by ", " repeated ", "structure depending on ",
            " a key from ", "keys from ", " grown under a condition on ")


def _why(srcs: frozenset[Src]) -> str:
    """The root cause among derived-source descriptions ("a list whose length depends on a list
    whose length depends on X" reads as X)."""
    s = _first(srcs)
    text = s.describe()
    cut = max((text.rfind(m) + len(m) for m in _DERIVED if m in text), default=-1)
    return text[cut:] if cut > 0 else text


def _first(s: frozenset[Src]) -> Src:
    return sorted(s)[0]


def _arguments_by_parameter(params: list[str], node: cst.Call) -> dict[str, cst.BaseExpression] | None:
    """The argument each parameter takes at `node`: the positional ones by position in `params`
    (those past its end dropped), keywords by name; None for a call unpacking `*xs` or `**kw`,
    where which value a parameter gets is not read."""
    if any(a.star for a in node.args):
        return None
    bound = {params[i]: a.value for i, a in enumerate(x for x in node.args if x.keyword is None) if i < len(params)}
    bound.update((a.keyword.value, a.value) for a in node.args if a.keyword is not None)
    return bound


def _star_args_value(extra: list, whole_container, node: cst.Call) -> Val:
    """What a function's `*args` parameter holds at a call (a rule of Python): the tuple of the
    positional arguments past its named parameters, in their order: a tuple of those values
    (`extra`, each a Val, or ("*", xs) for a starred argument of unknown length, whose elements
    come in xs's order: then the tuple is as long as xs is, and holds what xs holds)."""
    if not extra:
        return Val(struct="seq:0")
    vals = [e[1] if isinstance(e, tuple) else e for e in extra]
    if len(extra) == 1 and isinstance(extra[0], tuple):
        return vals[0].taint()  # `f(*xs)` into `def f(*args)`: args is tuple(xs)
    out = join_all(v.data().as_elements() if not isinstance(e, tuple) else v.taint()
                   for e, v in zip(extra, vals))
    if any(isinstance(e, tuple) for e in extra):
        return out
    out = whole_container(out, vals, node)
    return replace(out, struct=f"seq:{len(vals)}",
                   items=tuple(replace(v.taint(), items=None) for v in vals) if len(vals) <= 16 else None)


def _kwargs_value(extra: list, whole_container, node: cst.Call) -> Val:
    """What a function's `**kwargs` parameter holds at a call (a rule of Python): a dict of the
    keyword arguments no named parameter takes, under their names (`extra`: (name, Val), name
    None for a `**d` whose keys are not known: then what d holds)."""
    if not extra:
        return Val(struct="dict:", keys=())
    out = BOTTOM
    for k, v in extra:
        out = out.join(v.taint() if k is None else v.data().as_elements())
    if any(k is None for k, _ in extra):
        return out
    kept = {k: v.taint() for k, v in extra}
    out = whole_container(out, [v for _, v in extra], node)
    return replace(out, struct="dict:" + ",".join(sorted(kept)),
                   keys=tuple(sorted(kept.items())) if len(kept) <= MAX_KEYS else None)


def _all_params(params: cst.Parameters) -> list[cst.Param]:
    return list(params.posonly_params) + list(params.params) + list(params.kwonly_params)


def _is_static(node: cst.FunctionDef) -> bool:
    for d in node.decorators:
        if isinstance(d.decorator, cst.Name) and d.decorator.value == "staticmethod":
            return True
    return False


_LEAVING = frozenset({cst.Return, cst.Raise, cst.Break, cst.Continue})  # statements that leave a block


def _scope_bindings(node: cst.CSTNode, may_declare: bool = True) -> tuple[list[str], list[tuple[str, object]], set[str]]:
    """What a function or module binds in its own scope, as `semantics.scope_counts` reads it:
    the summary pass's `summary._scope_bindings` on this tree (the same three parts; the
    agreement is tested on every fixture). `may_declare` False: the file has no
    `global`/`nonlocal` statement (no walk for them)."""
    body = node if isinstance(node, cst.Module) else node.body
    bound: list[str] = []
    assigns: list[tuple[str, object]] = []
    declared: set[str] = set()
    targets: list[cst.CSTNode] = []
    if isinstance(node, cst.FunctionDef):
        p = node.params
        bound += [x.name.value for x in _all_params(p)]
        bound += [x.name.value for x in (p.star_arg, p.star_kwarg) if isinstance(x, cst.Param)]
    stack: list[cst.CSTNode] = [body]
    while stack:
        n = stack.pop()
        t = type(n)
        if t in OWN_SCOPE:
            if t is not cst.Lambda:
                bound.append(n.name.value)
                if may_declare:
                    declared.update(x.name.value for g in _walk(n) if type(g) in (cst.Global, cst.Nonlocal)
                                    for x in g.names)
            continue
        if t is cst.Assign and len(n.targets) == 1:
            tgt, val = n.targets[0].target, n.value
            pairs = [(tgt, val)] if isinstance(tgt, cst.Name) else \
                list(zip(tgt.elements, val.elements)) if isinstance(tgt, cst.Tuple) and isinstance(val, cst.Tuple) \
                and len(tgt.elements) == len(val.elements) else []
            for a, b in pairs:
                a = a.value if isinstance(a, cst.BaseElement) else a
                b = b.value if isinstance(b, cst.BaseElement) else b
                if isinstance(a, cst.Name):
                    assigns.append((a.value, b))
        if t is cst.AssignTarget:
            targets.append(n.target)
        elif t in (cst.AugAssign, cst.AnnAssign, cst.For, cst.NamedExpr, cst.CompFor, cst.Del):
            targets.append(n.target)
        elif t is cst.AsName:
            targets.append(n.name)
        elif t in (cst.Import, cst.ImportFrom) and not isinstance(n.names, cst.ImportStar):
            for al in n.names:
                if al.asname is None:
                    x = al.name
                    while isinstance(x, cst.Attribute):
                        x = x.value
                    bound.append(x.value)
        elif t in (cst.Global, cst.Nonlocal):
            declared.update(x.name.value for x in n.names)
        elif t in (cst.MatchAs, cst.MatchStar) and n.name is not None:
            bound.append(n.name.value)
        elif t is cst.MatchMapping and n.rest is not None:
            bound.append(n.rest.value)
        elif t is cst.TypeAlias:  # (an assignment where the host's `ast` has no alias: `cst_to_ast`)
            bound.append(n.name.value)
            assigns.append((n.name.value, n.value))
        stack.extend(children(n))
    for x in targets:
        bound += _bound_names(x)
    return bound, assigns, declared


def _bound_names(target: cst.CSTNode) -> list[str]:
    """The names a binding target binds: a name, or those of a tuple or list display's elements
    (starred included); an attribute or a subscript binds none."""
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [x for e in target.elements for x in _bound_names(e.value)]
    if isinstance(target, cst.StarredElement):
        return _bound_names(target.value)
    return []


def _assigned_names(fdef: cst.FunctionDef) -> set[str]:
    """Names a function body (its nested functions included) binds anywhere."""
    out: set[str] = set()
    targets = []
    for n in _walk(fdef.body):
        if isinstance(n, cst.AssignTarget):
            targets.append(n.target)
        elif isinstance(n, (cst.AugAssign, cst.AnnAssign, cst.For, cst.NamedExpr)):
            targets.append(n.target)
        elif isinstance(n, cst.AsName):
            targets.append(n.name)
        elif isinstance(n, (cst.Global, cst.Nonlocal)):
            out.update(x.name.value for x in n.names)
    for t in targets:
        out.update(x.value for x in _walk(t) if isinstance(x, cst.Name))
    return out


def _walk_calls(node: cst.CSTNode, reads: bool = False):
    """Calls under node in evaluation order (arguments before the call), skipping nested scopes;
    with `reads`, attribute reads too (a property's getter runs there)."""
    wanted = (cst.Call, cst.Attribute) if reads else (cst.Call,)
    stack = [(node, False)]
    while stack:
        n, done = stack.pop()
        if done:
            yield n
            continue
        t = type(n)  # (exact types: see tree.OWN_SCOPE)
        if t in OWN_SCOPE and n is not node:
            continue
        if t in wanted:
            stack.append((n, True))
        kids = children(n)
        for c in reversed(kids):
            stack.append((c, False))


def _keywords(call: cst.Call) -> list[str]:
    """The keyword names a call passes."""
    return [a.keyword.value for a in call.args if a.keyword is not None]


def _call_stored_key(name: str, attr: str) -> str:
    """The scope binding that holds what a method called on `name` stored into `attr`
    (`FileAnalysis.stored_by_call`); the colon keeps it apart from names and from
    `semantics.stored_attribute_key`, so that an arm that made no such call keeps it (joined)."""
    return f"{name}:{attr}"
