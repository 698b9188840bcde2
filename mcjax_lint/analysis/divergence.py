"""Where divergent values steer collective work: the points the control-flow rules report.

Built on the taint analysis (`taint.FileAnalysis`). For every function body (and the module
body) it computes *collective sequences* — the collective calls a block issues, in order, with
the structure of nested conditionals and loops — and compares, at each divergent decision,
what the processes on either side would issue:

- `BranchPoint`: an `if`/ternary/`and`/`or`/`match` on a divergent value whose sides issue
  different sequences (both sides issuing the same sequence — leader/follower — is silent);
- `ExitPoint`: a `return`/`break`/`continue`/`raise`/`sys.exit()` under a divergent condition
  that skips collective work the other processes still do;
- `LoopPoint`: a loop over process-local data or with a divergent exit condition whose body
  issues collective work;
- `ExceptionPoint`: an exception that can happen on one process only, swallowed around
  collective work or reaching collective work in `finally`/`__exit__`.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

import libcst as cst

from mcjax_lint import knowledge as K
from mcjax_lint.analysis import evidence, kinds, read_cst, semantics
from mcjax_lint.analysis.tree import OWN_SCOPE, children, walk, walk_own_scope

from mcjax_lint.analysis.taint import _STATEMENTS, FileAnalysis, _given, _walk_calls
from mcjax_lint.analysis.values import BOTTOM, Val


class Tok:
    """One collective call in a sequence; equal when the same collective is issued."""

    __slots__ = ("key", "node", "desc")

    def __init__(self, key: str, node: cst.Call, desc: str):
        self.key, self.node, self.desc = key, node, desc

    def __eq__(self, other):
        return isinstance(other, Tok) and other.key == self.key

    def __hash__(self):
        return hash(self.key)

    def __repr__(self):
        return f"Tok({self.key})"


def _toks(seq):
    """The collective calls of a sequence, in order."""
    for item in seq:
        if isinstance(item, Tok):
            yield item
        elif isinstance(item, tuple):
            for part in item[1:]:
                if isinstance(part, tuple):
                    yield from _toks(part)


def first_tok(seq) -> Tok | None:
    """The collective work a finding names among `seq`'s (all of it diverges alike): the first
    that is certainly collective, else the first (a finding is only as certain as its sink)."""
    first = None
    for t in _toks(seq):
        if evidence.collective_guess(t.desc) is None:
            return t
        first = first or t
    return first


def _rewound_across(fa: FileAnalysis, loop, dframe, t: Tok) -> bool:
    """Whether a `continue` in the arm `dframe` of an `if` sets the `while` loop `loop`'s counter
    back to an agreed value (`FileAnalysis.rewinds`, `semantics.rewound_counters`) and the work `t`
    it skips runs under a test of that counter in the loop's body (`if step % k == 0:`): the
    iteration is redone, and whether the processes issue that work as often depends on the
    counter's values they pass again (a guess, `evidence.REWOUND_COUNTER`). Work the body issues at
    every iteration is issued again as often as the rewind goes back: that stays certain."""
    if not isinstance(loop, cst.While) or not fa.rewinds.get(dframe.node) or dframe.kind not in ("if", "else"):
        return False
    arm = dframe.node.body if dframe.kind == "if" else dframe.node.orelse
    counters = semantics.rewound_counters(loop.test, arm, _STATEMENTS)
    if not counters:
        return False
    for n in walk_own_scope(loop.body):
        if isinstance(n, (cst.If, cst.While)) and n is not dframe.node and read_cst.names_in(n.test) & counters \
                and any(x is t.node for x in walk(n)):
            return True
    return False


@dataclass
class BranchPoint:
    node: cst.CSTNode = field(repr=False)
    val: Val
    collective: Tok  # first collective issued on one side and not the other
    cond_node: cst.CSTNode | None = field(default=None, repr=False)
    chosen: bool = False  # a conditional expression that picked the function `collective` runs
    gated: bool = False  # a call handing `collective` on to a function that runs it on some processes only


@dataclass
class ExitPoint:
    node: cst.CSTNode = field(repr=False)  # the return/break/continue/raise/exit call
    val: Val
    skipped: Tok
    cond_node: cst.CSTNode = field(repr=False)  # the divergent if/except that guards it
    kind: str  # "return", "break", ...
    caller: cst.CSTNode | None = field(default=None, repr=False)  # the call site whose rest is skipped
    guess: str = ""  # why leaving here is a guess (evidence.py), "" if certain


@dataclass
class LoopPoint:
    node: cst.CSTNode = field(repr=False)
    val: Val
    collective: Tok
    kind: str  # "iterable" or "condition"


@dataclass
class ExceptionPoint:
    node: cst.CSTNode = field(repr=False)  # except handler / finally / with
    raise_node: cst.CSTNode = field(repr=False)
    val: Val
    collective: Tok
    kind: str  # "swallowed", "handler", "finally", "exit", "caught", "raise", "fallback", "absent", "none"
    guess: str = ""  # why raising and being caught here is a guess (evidence.py), "" if certain


@dataclass
class _Frame:
    kind: str  # "if", "else", "loop", "try", "handler", "with", "finally", "func"
    node: cst.CSTNode = field(repr=False)
    stmts: list
    idx: int
    cond: Val = BOTTOM  # for if/else/handler: the divergent condition deciding this block
    other: object = None  # for if/else: the other branch's block


# How many functions up an exception is followed through callers that do nothing collective after
# the call (a bound on the work per raise).
_RAISE_DEPTH = 6

# How many sibling statements apart two `if`s on one condition may be and still pair (a bound
# on the work per `if`: pairs in real code are a few statements apart).
_PAIR_REACH = 40
_COMPREHENSIONS = frozenset({cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp})
_LOG_NAMES = semantics.LOG_NAMES
# The admission rules of `Divergence.same_work`: which callees a comparison follows into
# (`Divergence._callee_body`).
PLAIN_HELPERS = "plain helpers"
ANY_CALLEE = "any callee"


@dataclass
class Divergence:
    fa: FileAnalysis
    branches: list[BranchPoint] = field(default_factory=list)
    exits: list[ExitPoint] = field(default_factory=list)
    loops: list[LoopPoint] = field(default_factory=list)
    exceptions: list[ExceptionPoint] = field(default_factory=list)

    def __post_init__(self):
        self._seq_cache: dict[int, tuple] = {}
        self._callee_raise_memo: dict[str, tuple | None] = {}
        self._plain_raise_memo: dict[str, tuple] = {}
        self._branch_done: set[int] = set()
        self._call_sites: dict[cst.Call, tuple] = {}  # call -> (statement, frames)
        self._pending_raises: list[tuple] = []
        self._pending_absent: list[tuple] = []  # (`_absent_reads` left to the callers)
        self._tries: list[cst.Try] = []
        self._work: dict[str, str | None] = {}
        self._gates: dict[str, tuple | None] = {}
        self._bodies: dict[tuple, tuple | None] = {}  # (`_callee_body`)
        self._module_names = frozenset(
            n.value for st in self.fa.module.body if isinstance(st, cst.SimpleStatementLine)
            for small in st.body if isinstance(small, (cst.Assign, cst.AnnAssign))
            for t in (small.targets if isinstance(small, cst.Assign) else (small,))
            for n in walk(t.target) if isinstance(n, cst.Name))

    # ------------------------------------------------------------ sequences
    def tok(self, call: cst.Call) -> Tok | None:
        info = self.fa.calls.get(call)
        if info is None or not info.collective:
            return None
        key = info.token or info.collective
        if info.via_project and info.name:
            key = self._work_key(info.name) or key
            runs = self._gate_outcome(call, info.name)
            if runs is False:
                return None  # (a constant that takes the helper's early `return`: no work)
            if runs:
                key += _GATE_RUNS
        return Tok(key, call, info.collective)

    def _gate_outcome(self, call: cst.Call, q: str) -> bool | None:
        """Where same-file module-level function `q` leaves early on a test of one parameter
        before any collective work (`if hint_ok: return hint`) and this call passes a constant
        for it (or leaves its constant default): whether that constant takes it on into the work
        (True) or out (False); None where no constant decides it."""
        gate = self._gate(q)
        if gate is None:
            return None
        p, pos, default, exits_when = gate
        expr = default
        for i, a in enumerate(call.args):
            if a.star:
                return None
            if a.keyword is not None and a.keyword.value == p or a.keyword is None and i == pos:
                expr = a.value
        value = _constant(self.fa.module, expr)
        if value is _UNKNOWN:
            return None
        return not exits_when(value)

    def _gate(self, q: str) -> tuple | None:
        q = self.fa.index._follow_reexport(q)
        if q in self._gates:
            return self._gates[q]
        self._gates[q] = None
        entry = self.fa.fn_nodes.get(q)
        if entry is None or not entry[1].is_module or entry[2] is not None or entry[0].decorators:
            return None
        fdef = entry[0]
        p_ = fdef.params
        positional = [x.name.value for x in (*p_.posonly_params, *p_.params)]
        named = {x.name.value: x for x in (*p_.posonly_params, *p_.params, *p_.kwonly_params)}
        assigned: set[str] = set()
        calls = self.fa.calls
        for st in self._block_stmts(fdef.body)[:_GATE_REACH]:
            if isinstance(st, cst.If) and st.orelse is None and read_cst.last_statement(st.body) in ("return", "raise"):
                t = _param_test(st.test, named.keys() - assigned)
                if t is not None and not any((i := calls.get(c)) is not None and i.collective
                                             for c in _walk_calls(st.body)):
                    name, exits_when = t
                    param = named[name]
                    self._gates[q] = (name, positional.index(name) if name in positional else -1,
                                      param.default, exits_when)
                    return self._gates[q]
            if not isinstance(st, cst.SimpleStatementLine) \
                    or any((i := calls.get(c)) is not None and i.collective for c in _walk_calls(st)):
                break  # (collective work, or a block that may hold it, before any such test)
            assigned |= {n.value for n in walk(st) if isinstance(n, cst.Name)}  # (read or rebound: not followed)
        return None

    def _work_key(self, q: str) -> str | None:
        """A same-file wrapper's collective work as a token, so that a verbose and a quiet wrapper
        of one jitted step (`step_verbose(w, x)` on process 0, `step_quiet(w, x)` elsewhere) are
        the same work. Only where nothing but the body can make it differ (`_passes_through`);
        anything else compares by name."""
        q = self.fa.index._follow_reexport(q)
        if q in self._work:
            return self._work[q]
        key = None
        entry = self.fa.fn_nodes.get(q)
        if entry is not None and entry[1].is_module and entry[2] is None and not entry[0].decorators \
                and self._passes_through(entry[0]):
            seq = self.seq_block(entry[0].body)
            if seq and all(isinstance(t, Tok) for t in seq):
                key = "work:" + ",".join(t.key for t in seq)
        self._work[q] = key
        return key

    def _passes_through(self, fdef: cst.FunctionDef) -> bool:
        """A module-level function whose body is straight-line statements that call module-level
        collective functions (jitted ones, primitives) with its own parameters, or their results,
        as they are, and otherwise only print or log names: two of them that issue the same calls
        in the same order run the same programs on the same arrays. Whatever else a body does
        (a branch, a loop, an early exit, a static or sliced argument, another project function, a
        JAX function or a method of an array, collective on a global array that this analysis may
        not know is global) makes the wrapper compare by name."""
        body = fdef.body.body if isinstance(fdef.body, cst.IndentedBlock) else [fdef.body]
        p = fdef.params
        if p.star_arg not in (None, cst.MaybeSentinel.DEFAULT) or p.star_kwarg is not None:
            return False
        ok = {x.name.value for x in (*p.posonly_params, *p.params, *p.kwonly_params)}  # arrays as given
        local = set(ok)
        for i, stmt in enumerate(body):
            if not isinstance(stmt, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
                return False
            for small in stmt.body:
                if isinstance(small, cst.Return):
                    if i != len(body) - 1 or (small.value is not None and not self._passed(small.value, ok, local)):
                        return False
                elif isinstance(small, cst.Assign):
                    if not all(isinstance(t.target, cst.Name) for t in small.targets):
                        return False
                    fresh = self._passed(small.value, ok, local) and isinstance(small.value, cst.Call)
                    for t in small.targets:
                        local.add(t.target.value)
                        (ok.add if fresh else ok.discard)(t.target.value)
                elif isinstance(small, cst.Expr):
                    if not self._passed(small.value, ok, local):
                        return False
                elif not isinstance(small, cst.Pass):
                    return False
        return True

    def _passed(self, expr: cst.CSTNode, ok: set[str], local: set[str]) -> bool:
        """`expr` is a collective call of a module-level function on `ok` names, or a print/log
        call of names and constants, or a name: see `_passes_through`."""
        if isinstance(expr, cst.Name):
            return True
        if isinstance(expr, (cst.SimpleString, cst.Integer, cst.Float)):
            return True
        if not isinstance(expr, cst.Call):
            return False
        info = self.fa.calls.get(expr)
        f = expr.func
        if info is not None and info.collective:
            return (not info.via_project and isinstance(f, cst.Name) and f.value not in local
                    and all(a.keyword is None and not a.star and isinstance(a.value, cst.Name) and a.value.value in ok
                            for a in expr.args))
        if isinstance(f, cst.Name):
            logging = f.value == "print"
        else:
            logging = (isinstance(f, cst.Attribute) and f.attr.value in _LOG_NAMES
                       and isinstance(f.value, cst.Name) and f.value.value not in local)
        return logging and all(
            not a.star and (isinstance(a.value, (cst.Name, cst.SimpleString, cst.Integer, cst.Float))
                            or isinstance(a.value, cst.FormattedString)
                            and all(isinstance(part, cst.FormattedStringText)
                                    or isinstance(part.expression, cst.Name) for part in a.value.parts))
            for a in expr.args)

    def same_work(self, a: tuple, b: tuple, callees: str = PLAIN_HELPERS) -> bool:
        """Whether two collective sequences pair up across processes: equal as written, or equal
        once each call of a same-file function that the admission rule `callees` follows is
        replaced by its body's collective work (`_reached`). A call runs its callee's body, so
        `return self._real(batch)` on some processes and `return self._idle()` on the others
        issue the same collectives in the same order when both helpers make the same calls
        (`self.sync(n); self.forward(x)` in each). The rules (`_callee_body`): `PLAIN_HELPERS`,
        straight-line helpers whose only other calls compute on host values (every question
        asks this one); `ANY_CALLEE`, any function or method without a way out before its end
        and whose work is not under a branch or in a loop of its own, whatever host work it does
        (`self.runner._dummy_run(1)` on idle processes and `self.runner.execute_model(batch)` on
        busy ones, each running `sync_counts(n)` and then `model.forward(x, size)`: asked of the
        arms of an `if`)."""
        if a == b:
            return True
        if not (a and b):
            return False
        return self._reached(a, callees) == self._reached(b, callees)

    def _reached(self, seq, callees: str, depth: int = 0, seen: frozenset = frozenset(),
                 bound: dict | None = None) -> tuple:
        """`seq` with each call of a same-file function that the rule `callees` admits
        (`_callee_body`) replaced by its body's collective work, in turn up to `_INLINE_DEPTH`
        calls deep, binding the constants each call passes (`_bound_constants`). Each call left as
        a call (a library collective, a jitted function, a callee not followed) compares by what
        it calls and with what (`_call_key`: a static value, another array expression, a constant
        a caller bound make other work). An `if` whose arms then issue the same work issues it
        once, as `seq_stmt` does."""
        bound = {} if bound is None else bound
        out: list = []
        for item in seq:
            if isinstance(item, Tok):
                body = self._callee_work(item, callees, depth, seen, bound)
                out.extend((self._as_called(item, bound),) if body is None else body)
            elif isinstance(item, tuple) and item and isinstance(item[0], str):
                parts = [self._reached(part, callees, depth, seen, bound) if isinstance(part, tuple) else part
                         for part in item[1:]]
                if item[0] == "if" and len(parts) == 2 and parts[0] == parts[1]:
                    out.extend(parts[0])
                else:
                    out.append((item[0], *parts))
            else:
                out.append(item)
        return tuple(out)

    def _as_called(self, t: Tok, bound: dict) -> Tok:
        """A token kept as its call, keyed by what it calls and with what (`_call_key`)."""
        if not isinstance(t.node, cst.Call):
            return t  # (a property read, a context manager's `__enter__`: nothing passed)
        return Tok(f"{t.key}({self._call_key(t.node, bound)})", t.node, t.desc)

    def _callee_work(self, t: Tok, callees: str, depth: int, seen: frozenset, bound: dict) -> tuple | None:
        """The collective work of the body of the same-file function or method a token's call
        runs (`_reached`, in turn, with the constants the call binds), or None where it is kept
        as the call: too deep, a call the early-`return` gate lets through (`_GATE_RUNS`), not a
        project call, a callee already being followed, one the rule `callees` does not admit
        (`_callee_body`), or a call whose arguments cannot be matched to the parameters."""
        call = t.node
        if depth >= _INLINE_DEPTH or not isinstance(call, cst.Call) or t.key.endswith(_GATE_RUNS):
            return None
        info = self.fa.calls.get(call)
        if info is None or not info.via_project:
            return None
        q = self._callee(call)
        if q is None or q in seen:
            return None
        seq = self._callee_body(q, callees)
        if seq is None:
            return None
        fdef, _, cls = self.fa.fn_nodes[q]
        here = self._bound_constants(fdef, call, _is_method(fdef, cls), bound)
        if here is None:
            return None
        return self._reached(seq, callees, depth + 1, seen | {q}, here)

    def _callee_body(self, q: str, callees: str) -> tuple | None:
        """The collective work (`seq_block`) of the body of same-file function `q` where the rule
        `callees` lets a comparison follow a call into it, else None. Either rule: a function
        defined at module level or a method of a module-level class, not asynchronous, with no
        way out before its end (a `return` or `raise` not its last statement, a `yield`, an exit
        call), whose collective work lies under no branch and in no loop of its own (its
        arguments may decide it). `ANY_CALLEE`: decorated, if at all, as a static or class
        method; any host work besides. `PLAIN_HELPERS`: undecorated, straight-line statements
        (no branch, loop, `try`, `with` or lambda) whose other calls compute on host values only
        (NumPy, builtins, methods of values it made: `_host_call`, `_local_method`): nothing in
        it can issue collective work that this file's analysis of the body did not see (an array
        function on a parameter that is a global array at some call)."""
        key = (q, callees)
        if key in self._bodies:
            return self._bodies[key]
        self._bodies[key] = None
        entry = self.fa.fn_nodes.get(q)
        if entry is None:
            return None
        fdef, scope, _ = entry
        if not scope.is_module or fdef.asynchronous or not isinstance(fdef.body, cst.IndentedBlock):
            return None
        if callees == PLAIN_HELPERS:
            if fdef.decorators or not self._host_work_only(fdef):
                return None
        elif any(not (isinstance(d.decorator, cst.Name) and d.decorator.value in ("staticmethod", "classmethod"))
                 for d in fdef.decorators):
            return None
        stmts = fdef.body.body
        for i, st in enumerate(stmts):
            for n in walk_own_scope(st):
                if isinstance(n, (cst.Yield, cst.Await, cst.Raise)) or _exit_call(n, self.fa.calls):
                    return None
                if isinstance(n, cst.Return) and not (i == len(stmts) - 1 and isinstance(st, cst.SimpleStatementLine)):
                    return None
        seq = self.seq_block(fdef.body)
        if any(not isinstance(item, Tok) for item in seq):
            return None
        self._bodies[key] = seq
        return seq

    def _host_work_only(self, fdef: cst.FunctionDef) -> bool:
        """A body of straight-line statements (assignments, expressions, a `return`; no lambda)
        whose every call is collective work this file's analysis sees (`tok`) or computes on host
        values (`_host_call`, `_local_method`)."""
        p = fdef.params
        params = {x.name.value for x in (*p.posonly_params, *p.params, *p.kwonly_params)}
        stmts = fdef.body.body
        local = {n.value for st in stmts if isinstance(st, cst.SimpleStatementLine) for small in st.body
                 if isinstance(small, cst.Assign) for t in small.targets for n in walk(t.target) if isinstance(n, cst.Name)}
        for st in stmts:
            if not isinstance(st, cst.SimpleStatementLine):
                return False
            for small in st.body:
                if not isinstance(small, (cst.Return, cst.Assign, cst.AugAssign, cst.AnnAssign, cst.Expr, cst.Pass)):
                    return False
                for n in walk(small):
                    if isinstance(n, (cst.Lambda, cst.Yield, cst.Await)):
                        return False
                    if isinstance(n, cst.Call) and self.tok(n) is None \
                            and not (self._host_call(n) or _local_method(n, params, local)):
                        return False
        return True

    def _host_call(self, c: cst.Call) -> bool:
        """A call that computes on host values and does nothing else: NumPy's functions and the
        builtins that convert, count or combine Python values."""
        info = self.fa.calls.get(c)
        if info is not None and (info.collective or info.via_project):
            return False
        f = c.func
        if info is not None and info.result.host is True or (
                isinstance(f, cst.Attribute) and isinstance(f.value, cst.Call) and self._host_call(f.value)):
            return True  # (host data's own method: `np.asarray(x).max()`)
        if isinstance(f, cst.Name):
            return f.value in _HOST_BUILTINS and f.value not in self.fa.fn_nodes
        q = self.fa.qualify(f) if isinstance(f, cst.Attribute) else None
        return bool(q) and q.startswith("numpy.")

    def _bound_constants(self, fdef: cst.FunctionDef, call: cst.Call, method: bool, outer: dict) -> dict | None:
        """The parameters of `fdef` this call binds to a constant (a literal it passes, a name the
        enclosing inlined call bound to one (`outer`), or a literal default it leaves): name -> its
        code. None when the call's arguments cannot be matched to the parameters (`*args`,
        `**kwargs`)."""
        p = fdef.params
        if p.star_arg not in (None, cst.MaybeSentinel.DEFAULT) or p.star_kwarg is not None \
                or any(a.star for a in call.args):
            return None
        code = self.fa.module.code_for_node
        params = [*p.posonly_params, *p.params]
        positional = [x.name.value for x in params]
        if positional and method:
            positional = positional[1:]
        named = {x.name.value: x for x in (*params, *p.kwonly_params)}
        given: dict = {}
        for i, a in enumerate(call.args):
            if a.keyword is not None:
                given[a.keyword.value] = a.value
            elif i < len(positional):
                given[positional[i]] = a.value
            else:
                return None
        out: dict = {}
        for name, param in named.items():
            expr = given.get(name, param.default)
            if expr is not None and _constant(self.fa.module, expr) is not _UNKNOWN:
                out[name] = code(expr)
            elif isinstance(expr, cst.Name) and expr.value in outer:
                out[name] = outer[expr.value]
        return out

    def _call_key(self, c: cst.Call, bound: dict) -> str:
        """What a call inside an inlined helper is given, as text: a name by the constant the call
        of the helper bound it to, else as any value (`·`: the helper's own values); a literal as
        written; any other expression (`x.T`, `n + 1`, a module constant) as written."""
        code = self.fa.module.code_for_node
        parts = []
        for a in c.args:
            v = a.value
            if isinstance(v, cst.Name) and _constant(self.fa.module, v) is _UNKNOWN:
                text = bound.get(v.value, "·" if v.value not in self._module_names else v.value)
            else:
                text = code(v)
            parts.append(f"{a.keyword.value}=" + text if a.keyword is not None else text)
        return ", ".join(parts)

    def seq_expr(self, expr: cst.CSTNode | None) -> tuple:
        if expr is None:
            return ()
        out = []
        for c in _walk_calls(expr, reads=True):
            t = self.tok(c)
            if t is not None:
                out.append(t)
        return tuple(out)

    def seq_block(self, body) -> tuple:
        if body is None:
            return ()
        if isinstance(body, cst.If):
            return self.seq_stmt(body)
        if isinstance(body, (cst.Else, cst.Finally)):
            body = body.body
        stmts = body.body if hasattr(body, "body") else body
        out: list = []
        for s in stmts:
            out.extend(self.seq_stmt(s))
            if _terminates(s) or self._exits_here(s) or self.fa.ends_block(s):
                break
        return tuple(out)

    def _exits_here(self, s) -> bool:
        """A statement calling `sys.exit()` and friends: nothing after it runs."""
        return isinstance(s, cst.SimpleStatementLine) and any(_exit_call(x, self.fa.calls) for x in s.body)

    def seq_stmt(self, s: cst.CSTNode) -> tuple:
        key = id(s)
        hit = self._seq_cache.get(key)
        if hit is not None:
            return hit
        out: tuple
        if isinstance(s, cst.SimpleStatementLine):
            parts: list = []
            for small in s.body:
                parts.extend(self.seq_expr(small))
            out = tuple(parts)
        elif isinstance(s, cst.If) and s in self.fa.decided_ifs:
            out = self.seq_block(s.body if self.fa.decided_ifs[s] else s.orelse)  # (the arm that runs)
        elif isinstance(s, cst.If):
            a, b = self.seq_block(s.body), self.seq_block(s.orelse)
            out = self.seq_expr(s.test) + (a if a == b else (("if", a, b),))
        elif isinstance(s, (cst.For,)):
            body = self.seq_block(s.body)
            out = self.seq_expr(s.iter) + ((("loop", body),) if body else ()) + self.seq_block(s.orelse)
        elif isinstance(s, cst.While):
            body = self.seq_block(s.body)
            out = self.seq_expr(s.test) + ((("loop", body),) if body else ()) + self.seq_block(s.orelse)
        elif isinstance(s, (cst.Try, cst.TryStar)):
            out = self.seq_block(s.body) + self.seq_block(s.orelse) + self.seq_block(s.finalbody)
        elif isinstance(s, cst.With):
            parts = []
            for item in s.items:
                parts.extend(self.seq_expr(item.item))
                info = self.fa.calls.get(item.item)
                if info is not None and info.enter_collective:
                    parts.append(Tok("__enter__:" + info.enter_collective, item.item, info.enter_collective))
            out = tuple(parts) + self.seq_block(s.body)
            for item in s.items:
                info = self.fa.calls.get(item.item)
                if info is not None and info.exit_collective:
                    out += (Tok("__exit__:" + info.exit_collective, item.item, info.exit_collective),)
        elif isinstance(s, cst.Match):
            cases = [self.seq_block(c.body) for c in s.cases]
            out = self.seq_expr(s.subject)
            if cases and any(c != cases[0] for c in cases) or (cases and cases[0] and not _has_wildcard(s)):
                out += (("match", *cases),)
            elif cases:
                out += cases[0]
        elif isinstance(s, (cst.FunctionDef, cst.ClassDef)):
            out = ()
        else:
            out = self.seq_expr(s)
        self._seq_cache[key] = out
        return out

    # ------------------------------------------------------------ walk
    def run(self) -> Divergence:
        self.walk_body(self.fa.module.body, [_Frame("func", self.fa.module, list(self.fa.module.body), 0)])
        for call, (cond, arg, work) in self.fa.gated_calls.items():
            self.branches.append(BranchPoint(call, cond, Tok("gated:" + work, arg, work), gated=True))
        self._raises_into_callers()
        self._absent_into_callers()
        self._caught_in_callers()
        self._helpers_raising_on_some()
        return self

    def _rest_after(self, frames: list[_Frame], node, kind: str) -> tuple:
        """Collective work after `node` (inside frames[-1]) up to where `kind` lands: the rest of
        each enclosing block and, for loops it leaves, their later iterations."""
        rest: tuple = ()
        child = node
        for k in range(len(frames) - 1, -1, -1):
            f = frames[k]
            idx = _index_of_containing(f.stmts, child)
            rest += self.seq_block(f.stmts[idx + 1:])
            if f.kind == "loop" and not (k == 0 and kind == "continue"):
                rest += self.seq_block(f.stmts)
            child = f.node
        return rest

    def _absent_reads(self, small, line, ctx: list[_Frame]) -> None:
        """A read of an attribute an object has only where a process-dependent condition held
        (`fa.absent_reads`: `if jax.process_index() == 0: self.client = Client()`) raises
        AttributeError on the other processes, while the process that has it goes on to the
        collective work after it (MCJ104, the read's line). Nothing where the read may run
        only where the attribute was bound: under a process-dependent decision, after a
        process-dependent early exit, in a `try`; nor in a function some same-file caller calls
        under such a decision (`_absent_into_callers`)."""
        j = next((k for k in range(len(ctx) - 1, -1, -1) if ctx[k].kind == "func"), 0)
        reach = ctx[j:]
        if any(f.kind in ("try", "handler", "finally") or (f.kind in _DECISIONS and f.cond.divergent) for f in reach):
            return
        calls = self.fa.calls
        child = line
        for f in reversed(reach):
            k = _index_of_containing(f.stmts, child)
            for st in f.stmts[:k]:
                if isinstance(st, cst.If) and self.fa.conds.get(st, BOTTOM).divergent and self._escaping_exits(st):
                    return  # `if rank != 0: return` before it: only the others read it
            child = f.node
        stack = [(small, False)]
        none_done = not self.fa.none_uses
        while stack:
            n, guarded = stack.pop()
            if type(n) in OWN_SCOPE:
                continue
            val = self.fa.absent_reads.get(n) if type(n) is cst.Attribute else None
            if val is not None:
                t = first_tok(self._rest_after(reach, line, "raise"))
                if t is not None:
                    self.exceptions.append(ExceptionPoint(n, n, val, t, "absent"))
                elif reach and reach[0].kind == "func":
                    self._pending_absent.append((n, val, reach[0].node))
                return
            none = None if none_done or guarded else (
                info.none_use if type(n) is cst.Call and (info := calls.get(n)) is not None else
                self.fa.none_reads.get(n) if type(n) is cst.Subscript else None)
            if none:
                # `len(x)`, `x[k]` with x None on some processes: TypeError there, before the
                # call it is an argument of runs (then the rest of the function)
                none_done = True
                t = first_tok(tuple(x for c in _walk_calls(small) if c is not n and _contains(c, n)
                                    for x in (self.tok(c),) if x is not None)
                              + self._rest_after(reach, line, "raise"))
                if t is not None:
                    self.exceptions.append(ExceptionPoint(n, n, Val(pd=none), t, "none"))
            if type(n) in (cst.IfExp, cst.BooleanOperation):
                # (an arm or operand that may run only where x is not None: `x[0] if x else d`)
                first = n.test if type(n) is cst.IfExp else n.left
                stack.extend((c, guarded or c is not first) for c in children(n))
                continue
            stack.extend((c, guarded) for c in children(n))

    def _absent_into_callers(self) -> None:
        """An attribute read that fails on some processes (`_absent_reads`) with no collective
        work after it in its function: the callers' next collective work, where every same-file
        call of that function runs on every process (no process-dependent decision, no `try`
        around it)."""
        if not self._pending_absent:
            return
        by_node = {id(v[0]): q for q, v in self.fa.fn_nodes.items()}
        for node, val, fn_node in self._pending_absent:
            qual = by_node.get(id(fn_node))
            if qual is None:
                continue
            sites = [(stmt, frames) for call, (stmt, frames) in self._call_sites.items()
                     if (info := self.fa.calls.get(call)) is not None and (info.callee or info.name) is not None
                     and self.fa.index._follow_reexport(info.callee or info.name) == qual]
            if not sites or any(f.kind in ("try", "handler", "finally") or (f.kind in _DECISIONS and f.cond.divergent)
                                for _, frames in sites for f in frames):
                continue
            for stmt, frames in sorted(sites, key=lambda x: self.fa.line(x[0])):
                j = next((k for k in range(len(frames) - 1, -1, -1) if frames[k].kind == "func"), 0)
                t = first_tok(self._rest_after(frames[j:], stmt, "raise"))
                if t is not None:
                    self.exceptions.append(ExceptionPoint(node, node, val, t, "absent"))
                    break

    def _raises_into_callers(self) -> None:
        """A raise/exit on one process also skips what its callers do next (same-file callers).
        A raise is reported at itself for the first caller whose next collective work it skips,
        and at the call for every other such caller (an exception leaves each caller's frame: a
        second caller's collective is skipped as well, and is that call's hazard)."""
        if not self._pending_raises:
            return
        by_node = {id(v[0]): q for q, v in self.fa.fn_nodes.items()}
        for small, dframe, fn_node, kind, uniform in self._pending_raises:
            qual = by_node.get(id(fn_node))
            if qual is None:
                continue
            raised_at = None
            # An exception leaves every frame up to a handler: a caller with no collective work
            # after the call (and no `try` around it) is left too, and its callers' next
            # collective work is skipped (`build_grid()` → `Table(rows)` whose `__init__` raises
            # on an empty share).
            todo, seen = [qual], {qual}
            while todo:
                q = todo.pop(0)
                left = False
                for call, (stmt, frames) in self._call_sites.items():
                    if not self._runs(call, q):
                        continue
                    j = next((k for k in range(len(frames) - 1, -1, -1) if frames[k].kind in ("func", "try")), 0)
                    t = first_tok(self._rest_after(frames[j:], stmt, kind))
                    if t is None:
                        if kind == "raise" and frames[j].kind == "func" and len(seen) < _RAISE_DEPTH:
                            up = by_node.get(id(frames[j].node))
                            if up is not None and up not in seen:
                                seen.add(up)
                                todo.append(up)
                        continue
                    guess = _raise_guess(small, dframe, fn_node) if kind == "raise" else ""
                    if kind == "raise" and (uniform or not any(f.kind == "loop" for f in frames[j:])):
                        # (the first caller's is reported at the raise, every other one's at its call)
                        at = small if raised_at is None else call
                        raised_at = small
                        self.exceptions.append(ExceptionPoint(at, small, dframe.cond, t, "raise", guess))
                        continue
                    if raised_at is not None:
                        continue  # (an early exit of a loop in this caller: the first caller's report stands)
                    self.exits.append(ExitPoint(small, dframe.cond, t, dframe.node, kind, call, guess))
                    left = True
                    break
                if left:
                    break

    def _runs(self, call: cst.Call, q: str) -> bool:
        """Whether `call` runs the same-file function `q`: calls it by name or as a method of a
        known class, or constructs the class whose `__init__` it is (`Table(rows)`)."""
        info = self.fa.calls.get(call)
        name = info.callee or info.name if info is not None else None
        if name is None:
            return False
        name = self.fa.index._follow_reexport(name)
        if name == q:
            return True
        return q.endswith(".__init__") and name in self.fa.index.classes and self.fa.index.method(name, "__init__") == q

    def _caught_in_callers(self) -> None:
        """A same-file function that can fail on one process (a call under a process-dependent
        condition: rank-0 file I/O) before its own collective work, called in a `try` whose handler
        catches that failure and lets the process go on (MCJ104, reported where it fails): the
        failing process skips the collective the others wait in. An exception leaves every frame
        up to a handler, so a same-file caller that does not catch it fails with it: the `try`
        may call the failing function through such callers (`main` → `run` → `init`). A
        handler catches the failure if it surely catches anything (bare, `Exception`), if it can
        catch an `OSError` of file I/O, or if it can catch a class the failing project function
        raises itself (`raise RuntimeError(...)` in `pack()`, `except RuntimeError:`)."""
        if not self._tries:
            return
        fails: dict[str, tuple] = {}
        for q, (fdef, _, _) in self.fa.fn_nodes.items():
            if not isinstance(fdef, cst.FunctionDef):
                continue
            val, where = self.pd_raise(fdef.body)
            if not isinstance(where, cst.Call) or not val.divergent:
                continue
            tok = self._collective_after(self._block_stmts(fdef.body), where)
            if tok is not None:
                fails[q] = (where, val, tok)
        if not fails:
            return
        # A failing call of a same-file function that fails so itself (`run_point` calling
        # `initial_state`, whose rank-0 `pack` can fail before its broadcast): the failure and
        # the collective it skips are that function's, reported where it fails.
        for _ in range(len(fails)):
            moved = False
            for q, (where, _, _) in list(fails.items()):
                inner = self._callee(where)
                if inner is not None and inner != q and inner in fails and fails[inner] != fails[q]:
                    fails[q] = fails[inner]
                    moved = True
            if not moved:
                break
        self._fails_through_callers(fails)
        for t in self._tries:
            for call in _walk_calls(t.body):
                q = self._callee(call)
                if q not in fails:
                    continue
                where, val, tok = fails[q]
                io = self._io_failure(where)
                for h in t.handlers:
                    if self._goes_on(h) and (self._catches_failure(h, io) or self._catches_raised(h, where)):
                        self.exceptions.append(ExceptionPoint(where, h, val, tok, "caught"))
                        break

    def _raising_helpers(self) -> dict[str, cst.Raise]:
        """The same-file functions that can raise out of themselves, each with a `raise X`
        statement that does it: one of its own outside any `try` (not an assertion of an
        invariant, `NotImplementedError`, a check of its own arguments, or a raise under a
        process-dependent condition, which `_exit_point` reports), or one of a same-file
        function it calls outside any `try` of its own."""
        out: dict[str, cst.Raise] = {}
        calls: dict[str, list[str]] = {}
        for q, (fdef, _, _) in self.fa.fn_nodes.items():
            if not isinstance(fdef, cst.FunctionDef):
                continue
            tried = {id(n) for t in _tries_in(fdef.body) for n in walk_own_scope(t)}
            ifs = [n for n in walk_own_scope(fdef.body) if isinstance(n, cst.If)]
            for r in _raises_in(fdef):
                if id(r) in tried or _asserts_invariant(r) or _not_implemented(r):
                    continue
                around = [n for n in ifs if _contains(n.body, r) or (n.orelse is not None and _contains(n.orelse, r))]
                if any(self.fa.conds.get(n, BOTTOM).divergent or _checks_arguments(n, fdef) for n in around):
                    continue
                out[q] = r
                break
            calls[q] = [c for c in (self._callee(x) for x in _walk_calls(fdef.body) if id(x) not in tried)
                        if c is not None and c != q]
        changed = bool(out)
        while changed:
            changed = False
            for q, callees in calls.items():
                hit = next((c for c in callees if c in out), None) if q not in out else None
                if hit is not None:
                    out[q] = out[hit]
                    changed = True
        return out

    def _helpers_raising_on_some(self) -> None:
        """A call, in a block only some processes run (`if jax.process_index() == 0:`), of a
        same-file function that can raise (`_raising_helpers`: a logger's init without
        credentials, a check of what that process read), with no `try` around it in its
        function, before collective work after the block: where it raises, that process fails
        while the others wait in the collective (MCJ104). A guess (`evidence.HELPER_RAISES`):
        whether it raises is never known."""
        if not self._call_sites:
            return
        raising = None
        done = {id(p.node) for p in self.exceptions} | {id(p.raise_node) for p in self.exceptions}
        for call, (stmt, ctx) in self._call_sites.items():
            if id(call) in done:
                continue
            j = next((k for k in range(len(ctx) - 1, -1, -1) if ctx[k].kind in ("try", "func")), 0)
            reach = ctx[j:]
            if reach[0].kind != "func":
                continue
            d = next((k for k in range(len(reach) - 1, -1, -1)
                      if reach[k].kind in ("if", "else", "handler", "case") and reach[k].cond.divergent), None)
            if d is None or any(f.kind == "loop" for f in reach[:d]):
                continue
            if raising is None:
                raising = self._raising_helpers()
                if not raising:
                    return
            q = self._callee(call)
            r = raising.get(q) if q is not None else None
            if r is None or id(r) in done:
                continue
            dframe = reach[d]
            inner = reach[d + 1].node if d + 1 < len(reach) else stmt
            upto = _index_of_containing(dframe.stmts, inner)
            path_exit = self.seq_block(dframe.stmts[:upto])
            rest = self._rest_after(reach[:d], dframe.node, "raise") if d > 0 else ()
            other = self.seq_block(dframe.other) if dframe.kind in ("if", "else") and dframe.other is not None else ()
            t = first_tok(rest)
            if t is None or self.same_work(path_exit, other + rest):
                continue
            done.add(id(call))
            self.exceptions.append(ExceptionPoint(call, r, dframe.cond, t, "helper", evidence.HELPER_RAISES))

    def _callee(self, call: cst.Call) -> str | None:
        """The same-file function a call runs, where known (a function by name, a method of a
        known class)."""
        info = self.fa.calls.get(call)
        if info is None:
            return None
        q = self.fa.index._follow_reexport(info.name) if info.name else None
        if q not in self.fa.fn_nodes:
            q = info.callee
        return q if q in self.fa.fn_nodes else None

    def _fails_through_callers(self, fails: dict[str, tuple]) -> None:
        """Adds to `fails` each same-file function that calls a failing one outside any `try` of
        its own: the failure leaves it too (same failing call, same skipped collective)."""
        calls: dict[str, list[str]] = {}
        for q, (fdef, _, _) in self.fa.fn_nodes.items():
            if not isinstance(fdef, cst.FunctionDef) or q in fails:
                continue
            tried = {id(c) for t in _tries_in(fdef.body) for c in _walk_calls(t.body)}
            calls[q] = [c for c in (self._callee(x) for x in _walk_calls(fdef.body) if id(x) not in tried)
                        if c is not None and c != q]
        changed = True
        while changed:
            changed = False
            for q, callees in calls.items():
                if q in fails:
                    continue
                hit = next((c for c in callees if c in fails), None)
                if hit is not None:
                    fails[q] = fails[hit]
                    changed = True

    def _raised_classes(self, q: str):
        """The classes that the same-file function `q` raises itself, then those of the same-file
        functions it calls (up to 20 functions); None for a raise whose class is not a name."""
        seen, todo = {q}, [q]
        while todo:
            fdef = self.fa.fn_nodes[todo.pop()][0]
            for n in _raises_in(fdef):
                exc = n.exc.func if isinstance(n.exc, cst.Call) else n.exc
                yield self.fa.qualify(exc) if isinstance(exc, (cst.Name, cst.Attribute)) else None
            for c in _walk_calls(fdef.body):
                r = self._callee(c)
                if r is not None and r not in seen and len(seen) < 20:
                    seen.add(r)
                    todo.append(r)

    def _catches_every_raise(self, caught, q: str) -> bool:
        """Whether `except <caught>` can catch each class the same-file function `q` raises itself
        (and the same-file functions it calls), of which there is at least one."""
        any_raise = False
        for raised in self._raised_classes(q):
            if raised is None or not semantics.handler_may_catch(caught, raised, False, self._ancestry):
                return False
            any_raise = True
        return any_raise

    def _goes_on(self, h: cst.ExceptHandler) -> bool:
        """The handler lets the process go on: it neither re-raises nor exits the process (a
        `continue`, `break` or `return` in it still leaves the process running)."""
        return not any(isinstance(e, cst.Raise) or isinstance(e, cst.Call)
                       for e in _exits_in(h.body, h, self.fa.calls))

    def _catches_raised(self, h: cst.ExceptHandler, where: cst.Call, only: bool = False) -> bool:
        """Whether the handler can catch a class that the project function `where` calls raises
        itself (its own `raise X(...)` statements and those of the same-file functions it calls).
        With `only`: whether it catches every class they raise (a bare `except`, `Exception`: all
        of them), so that the failure taken for the call (one of its own raises) stops there."""
        q = self._callee(where)
        if q is None:
            return False
        caught = self._caught(h)
        if only:
            return self._catches_failure(h, False) or self._catches_every_raise(caught, q)
        return any(raised is not None and semantics.handler_may_catch(caught, raised, False, self._ancestry)
                   for raised in self._raised_classes(q))

    def _catches_failure(self, h: cst.ExceptHandler, io_failure: bool) -> bool:
        """Whether the handler catches a call's failure: an I/O failure is some OSError
        (`semantics.handler_may_catch_family`); any other only a handler that surely catches
        whatever is raised (bare, `Exception`)."""
        caught = self._caught(h)
        if io_failure:
            return semantics.handler_may_catch_family(caught, semantics.IO_FAILURE)
        return semantics.handler_surely_catches(caught, None, self._ancestry)

    def _io_failure(self, call: cst.Call) -> bool:
        """A call that fails with `OSError` when a file is missing or unwritable: file I/O, or a
        same-file helper doing file I/O."""
        def io(c: cst.Call) -> bool:
            info = self.fa.calls.get(c)
            return semantics.fails_with_io_error(info.name if info is not None and info.name else _call_name(c))
        if io(call):
            return True
        info = self.fa.calls.get(call)
        fn = self.fa.fn_nodes.get(info.name) if info is not None and info.name else None
        return fn is not None and any(io(c) for c in _walk_calls(fn[0].body))

    def walk_body(self, stmts, ctx: list[_Frame]) -> None:
        stmts = list(stmts)
        for i, s in enumerate(stmts):
            self.visit(s, ctx, stmts, i)
            if self.fa.ends_block(s):
                break
            if i + 1 < len(stmts) and isinstance(s, cst.If) and s.orelse is None and s not in self.fa.decided_ifs \
                    and (cond := self.fa.conds.get(s, BOTTOM)).divergent and ctx and ctx[-1].kind == "loop" \
                    and read_cst.last_statement(s.body) in ("continue", "break"):
                # `if owner != rank: continue` in a loop: the rest of the body runs only where the
                # test failed, as if it were the `if`'s `else` (an exit there is decided by it)
                rest = stmts[i + 1:]
                self.walk_body(rest, ctx + [_with(_Frame("if", s, stmts, i), "else", rest, cond, s.body)])
                break
    def _walk_try_body(self, s, body: list, ctx: list[_Frame]) -> None:
        """A `try` body: the statements after one that can raise on one process only, and that a
        handler of this `try` surely catches, run only where it did not raise (Python leaves the body at
        the raise, for the handler); where they leave the loop or the function (`accumulate();
        break`, with the handler retrying), that exit is decided by the failure, as the handler
        is (`_exit_point`: the handler's work is the other arm)."""
        for i, st in enumerate(body):
            self.visit(st, ctx, body, i)
            if self.fa.ends_block(st):
                return
            rest = body[i + 1:]
            if not rest or not _leaves_in(rest):
                continue
            for h in s.handlers:
                cond, where = self.pd_raise([st], h)
                if cond.divergent and self._surely_catches(self._caught(h), self._raise_of(where)):
                    self.walk_body(rest, ctx + [_Frame("else", s, rest, 0, cond, h.body)])
                    return

    def _raise_of(self, where):
        """The `raise` a failing call (`pd_raise`'s point) reaches in a same-file function, else
        the point itself."""
        q = self._callee(where) if isinstance(where, cst.Call) else None
        r = self.callee_raise(q) if q is not None else None
        return r[1] if r is not None else where

    def _block_stmts(self, body) -> list:
        if body is None:
            return []
        if isinstance(body, (cst.Else, cst.Finally)):
            body = body.body
        if isinstance(body, cst.If):
            return [body]
        return list(body.body) if hasattr(body, "body") else list(body)

    def visit(self, s, ctx: list[_Frame], stmts: list, i: int, body_ctx: list[_Frame] | None = None) -> None:
        """`body_ctx`: the frames an `if`'s body runs in where they differ from its `else`'s (an
        `elif` whose test excludes the test before it: `_parted_else`)."""
        fa = self.fa
        if isinstance(s, cst.SimpleStatementLine):
            for small in s.body:
                self.visit_small(small, s, ctx, stmts, i)
                self.visit_exprs(small)
                for c in _walk_calls(small):
                    self._call_sites[c] = (s, ctx)
                if fa.absent_reads or fa.none_uses:
                    self._absent_reads(small, s, ctx)
            return
        if isinstance(s, cst.FunctionDef):
            body = self._block_stmts(s.body)
            self.walk_body(body, [_Frame("func", s, body, 0)])
            gated = fa.gated_defs.get(s)
            if gated is not None:
                # A decorator that runs the body on some processes only (`semantics.GATED_CALL`):
                # the body's collective work is one side of a branch whose other side is nothing.
                self._branch(gated[0], gated[1], self.seq_block(s.body), (), gated[0].decorator)
            return
        if isinstance(s, cst.ClassDef):
            for m in self._block_stmts(s.body):
                if isinstance(m, (cst.FunctionDef, cst.ClassDef)):
                    self.visit(m, ctx, stmts, i)
            return
        if isinstance(s, cst.If) and s in fa.decided_ifs:
            # Decided by constant arguments: the arm taken is a plain block of its function.
            taken = s.body if fa.decided_ifs[s] else s.orelse
            if isinstance(taken, cst.If):
                self.visit(taken, ctx, stmts, i)
            elif taken is not None:
                body = self._block_stmts(taken)
                self.walk_body(body, ctx + [_with(_Frame("if", s, stmts, i), "if", body, BOTTOM, None)])
            return
        if isinstance(s, cst.If):
            self.visit_exprs(s.test)
            cond = fa.conds.get(s, BOTTOM)
            body, orelse = self._block_stmts(s.body), self._block_stmts(s.orelse)
            here = _Frame("if", s, stmts, i)
            self.walk_body(body, (ctx if body_ctx is None else body_ctx) + [_with(here, "if", body, cond, s.orelse)])
            if isinstance(s.orelse, cst.If) and s.orelse not in fa.decided_ifs and _parted_else(s) is not s.orelse:
                # `if a and local(): ... elif not a: B`: B runs where `not a` holds, whatever
                # `local()`, so an exit in it is decided by its own test alone
                self.visit(s.orelse, ctx + [_with(here, "else", orelse, cond, s.body)], orelse, 0, ctx)
            elif s.orelse is not None:
                self.walk_body(orelse, ctx + [_with(here, "else", orelse, cond, s.body)])
            if cond.divergent and id(s) not in self._branch_done and not self._escaping_exits(s):
                a, b = self.seq_block(s.body), self.seq_block(_parted_else(s))
                paired = "paired" if self.same_work(a, b) or self.same_work(a, b, ANY_CALLEE) \
                    else self._completed_by_pair(stmts, i)
                if paired != "paired":
                    if paired == "around a yield":
                        cond = evidence.mark(cond, evidence.RESUMED_AT_YIELD, evidence.RESUMED_AT_YIELD_TEXT,
                                             fa.line(s))
                    self._branch(s, cond, a, b, s.test)
            return
        if isinstance(s, (cst.For, cst.While)):
            self.visit_exprs(s.iter if isinstance(s, cst.For) else s.test)
            body = self._block_stmts(s.body)
            self.walk_body(body, ctx + [_Frame("loop", s, body, 0)])
            if s.orelse is not None:
                self.walk_body(self._block_stmts(s.orelse), ctx + [_Frame("else", s, stmts, i)])
            self._loop_point(s)
            return
        if isinstance(s, (cst.Try, cst.TryStar)):
            self._tries.append(s)
            body = self._block_stmts(s.body)
            self._walk_try_body(s, body, ctx + [_Frame("try", s, body, 0)])
            raise_val, raise_node = self.pd_raise(s.body)
            for h in s.handlers:
                hb = self._block_stmts(h.body)
                self.walk_body(hb, ctx + [_Frame("handler", h, hb, 0, self.pd_raise(s.body, h)[0])])
            if s.orelse is not None:
                self.walk_body(self._block_stmts(s.orelse), ctx + [_Frame("else", s, stmts, i)])
            if s.finalbody is not None:
                fb = self._block_stmts(s.finalbody)
                self.walk_body(fb, ctx + [_Frame("finally", s.finalbody, fb, 0)])
            self._exception_points(s, raise_val, raise_node)
            self._fallback_point(s, ctx)
            return
        if isinstance(s, cst.With):
            for item in s.items:
                self.visit_exprs(item.item)
            body = self._block_stmts(s.body)
            self.walk_body(body, ctx + [_Frame("with", s, body, 0)])
            self._with_point(s)
            return
        if isinstance(s, cst.Match):
            self.visit_exprs(s.subject)
            cond = fa.conds.get(s, BOTTOM)
            for c in s.cases:
                cb = self._block_stmts(c.body)
                self.walk_body(cb, ctx + [_Frame("case", c, cb, 0, cond)])
            if cond.divergent:
                seqs = [self.seq_block(c.body) for c in s.cases]
                if not _has_wildcard(s):
                    seqs.append(())
                diff = [q for q in seqs if not self.same_work(q, seqs[0])]
                if diff:
                    t = first_tok(seqs[0]) or first_tok(diff[0])
                    if t is not None:
                        self.branches.append(BranchPoint(s, cond, t, s.subject))
            return

    def visit_exprs(self, expr) -> None:
        """Ternaries, `and`/`or` and comprehension loops inside an expression."""
        if expr is None:
            return
        stack = [expr]
        while stack:
            n = stack.pop()
            t = type(n)  # (exact types: see tree.OWN_SCOPE)
            if t in OWN_SCOPE:
                continue
            if t is cst.IfExp:
                cond = self.fa.conds.get(n, BOTTOM)
                if cond.divergent:
                    a, b = self.seq_expr(n.body), self.seq_expr(n.orelse)
                    if not self.same_work(a, b):
                        self._branch(n, cond, a, b, n.test)
                    else:  # `f = a if rank == 0 else b`, then `f(x)`
                        self._chosen_point(n, cond, n.test)
            elif t is cst.Subscript:  # `STEPS[mode](x)` with a per-process mode
                self._chosen_point(n, self.fa.conds.get(n, BOTTOM), n.slice[0])
            elif t is cst.Call and n in self.fa.chosen_calls:  # `step = select_step()`
                self._chosen_point(n, self.fa.conds.get(n, BOTTOM), n)
            elif t is cst.BooleanOperation:
                cond = self.fa.conds.get(n, BOTTOM)
                if cond.divergent:
                    b = self.seq_expr(n.right)
                    if b:
                        self._branch(n, cond, (), b, n.left)
            elif t in _COMPREHENSIONS:
                elts = [n.key, n.value] if t is cst.DictComp else [n.elt]
                body = tuple(t for e in elts for t in self.seq_expr(e))
                comp = n.for_in
                while comp is not None and body:
                    it = self.fa.iters.get(comp, BOTTOM)
                    if it.count_sources:
                        self.loops.append(LoopPoint(n, Val(pd=it.count_sources), body[0], "iterable"))
                        break
                    comp = comp.inner_for_in
            stack.extend(children(n))

    def visit_small(self, small, line: cst.SimpleStatementLine, ctx: list[_Frame], stmts: list, i: int) -> None:
        kind = None
        if isinstance(small, cst.Return):
            kind = "return"
        elif isinstance(small, cst.Raise):
            h = next((k for k in range(len(ctx) - 1, -1, -1) if ctx[k].kind == "handler"), None)
            if h is not None:
                # A re-raise or a translation in an `except` handler fires where the `try` body
                # failed. Whether that can happen on one process only is MCJ104's business,
                # unless a process-dependent block encloses the `try` within this function
                # (`if rank == 0: try: read() except OSError: raise ConfigError`): its body ran
                # on some processes only, so only they can fail there. A guess: whether the
                # body fails is never known.
                f0 = next((k for k in range(h - 1, -1, -1) if ctx[k].kind == "func"), 0)
                if not any(f.kind in _DECISIONS and f.cond.divergent for f in ctx[f0:h]):
                    return
                self._exit_point(small, "raise", ctx, line, evidence.HANDLED_FAILURE)
                return
            if small.exc is None:
                return
            kind = "raise"
        elif isinstance(small, cst.Break):
            kind = "break"
        elif isinstance(small, cst.Continue):
            kind = "continue"
        elif isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            info = self.fa.calls.get(small.value)
            if info is not None and info.exits:
                kind = "exit"
        if kind is None:
            return
        self._exit_point(small, kind, ctx, line)

    # ------------------------------------------------------------ points
    def _chosen_point(self, node, cond: Val, cond_node) -> None:
        """A process-dependent choice of the function a later collective call runs (`fa.chosen_calls`):
        the processes run different programs there."""
        call = self.fa.chosen_calls.get(node)
        t = self.tok(call) if call is not None and id(node) not in self._branch_done else None
        if t is not None:
            self._branch_done.add(id(node))
            self.branches.append(BranchPoint(node, cond, t, cond_node, chosen=True))

    def _branch(self, node, cond: Val, a: tuple, b: tuple, cond_node) -> None:
        t = _first_difference(a, b)
        if t is None:
            return
        self._branch_done.add(id(node))
        if self._group_gated(t, cond):
            return
        self.branches.append(BranchPoint(node, self._gate_guess(a, b, cond), t, cond_node))

    def _group_gated(self, t: Tok, cond: Val) -> bool:
        """Whether the work `t` first issues on one side only runs over a group of processes that
        the condition's own value chose: a `jax.device_put` to a sharding (directly, or through a
        helper's parameter named as one) whose devices were picked by a process-dependent value,
        every process-dependent source of the condition among those that picked them
        (`semantics.group_chosen_by`). Every process owning those devices computed the same
        choice, so all of them take the branch together; the others never join that work."""
        info = self.fa.calls.get(t.node)
        if info is None or not info.args or "`jax.device_put()` to a sharding" not in (t.desc or ""):
            return False
        if info.name == K.DEVICE_PUT:
            targets = [v for k, v in info.args if k in (1, "device", "sharding")]
        else:
            f = self.fa.index.functions.get(self.fa.index._follow_reexport(info.name)) if info.name else None
            if f is None:
                return False
            given = _given(t.node)
            if given is None:
                return False
            bound = isinstance(t.node.func, cst.Attribute) and bool(f.cls) and f.params[:1] in (["self"], ["cls"])
            keys = self.fa.index._param_keys(f.name, [p for p in f.params if semantics.sharding_name(p)],
                                             given[0], given[1], bound)
            wanted = {k for k in keys.values() if k is not None}
            targets = [v for k, v in info.args if str(k) in wanted]
        return any(semantics.group_chosen_by(v.pd | v.pdc, cond.pd | cond.pdc) for v in targets)

    def _gate_guess(self, a: tuple, b: tuple, cond: Val) -> Val:
        """Where two sequences first differ only in that one passes a helper a constant that
        runs its work past an early `return` and the other a value that may as well
        (`_gate_outcome`): `cond`, marked as a guess (`evidence.GATE_ARGUMENT`)."""
        i = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), None)
        if i is None or not isinstance(a[i], Tok) or not isinstance(b[i], Tok):
            return cond
        x, y = a[i].key.removesuffix(_GATE_RUNS), b[i].key.removesuffix(_GATE_RUNS)
        if x != y:
            return cond
        t = a[i] if a[i].key.endswith(_GATE_RUNS) else b[i]
        return evidence.mark(cond, evidence.GATE_ARGUMENT, f"`{short_name(t.node)}`", self.fa.line(t.node))

    def _completed_by_pair(self, stmts: list, i: int) -> str:
        """Whether the `if` at `stmts[i]` and later or earlier sibling `if`s on the same or the
        negated condition (`if rank != 0: barrier()` ... `if rank == 0: barrier()`) together issue
        the same collective work on every process (`_pair_end`): "paired"; "around a yield"
        where they pair only across a `yield` statement (`main_process_first()`: the caller's
        `with` body runs there, which may raise or do collective work on some processes: a guess,
        `evidence.RESUMED_AT_YIELD`); "" where they do not pair."""
        code = self.fa.module.code_for_node
        test = stmts[i].test
        near = stmts[max(0, i - _PAIR_REACH):i + 1 + _PAIR_REACH]
        for ok in ((False, True) if any(_bare_yield(t) for t in near) else (False,)):
            if self._pair_end(stmts, i, across_yield=ok) is not None:
                return "around a yield" if ok else "paired"
            if any(isinstance(stmts[lo], cst.If) and semantics.same_processes_arm(
                   test, 0, stmts[lo].test, read_cst.read, code) is not None
                   and (e := self._pair_end(stmts, lo, across_yield=ok)) is not None and e >= i
                   for lo in range(i - 1, max(-1, i - 1 - _PAIR_REACH), -1)):
                return "around a yield" if ok else "paired"
        return ""

    def _pair_end(self, stmts: list, lo: int, across_yield: bool = False) -> int | None:
        """The index of the sibling `if` after which the processes where the condition of the `if`
        at `stmts[lo]` holds and those where it does not have issued the same collective work:
        each later `if` on the same or the negated condition (`semantics.same_processes_arm`)
        counts its arm for each side. None when no such point comes before something that breaks
        the correspondence: a statement that may change what the condition reads (`_changes`:
        rebinding, assigning into, mutating it; then a later `if` decides on another value), or
        one that can leave the block, or a `yield` (the caller's code runs there), so that some
        processes run one `if` and not the other; and None at once when evaluating the condition
        again may give another value by itself (`_stable_calls`: `time.time() - t0 > limit`).
        `across_yield`: a `yield` statement of its own (`yield`, `yield x`) does not break it:
        the code that runs there is taken to do no collective work (the caller says so)."""
        first = stmts[lo]
        roots = _test_reads(first.test)
        calls = self.fa.calls
        leaves = _MethodWrites(self.fa.index, _leaf_attributes(first.test))
        if first in self.fa.decided_ifs or roots is None or not _stable_calls(first.test, calls) \
                or _changes([first], roots, calls, leaves):
            return None
        code = self.fa.module.code_for_node
        yes, no = self.seq_block(first.body), self.seq_block(first.orelse)
        for j in range(lo + 1, min(len(stmts), lo + 1 + _PAIR_REACH)):
            t = stmts[j]
            if across_yield and _bare_yield(t):
                continue
            if _exits_in(t, t, calls) or _yields(t) or _changes([t], roots, calls, leaves):
                return None
            k = None
            if isinstance(t, cst.If) and t not in self.fa.decided_ifs:
                k = semantics.same_processes_arm(first.test, 0, t.test, read_cst.read, code)
            if k is None:
                mid = self.seq_stmt(t)
                yes, no = yes + mid, no + mid
                continue
            arms = (self.seq_block(t.body), self.seq_block(t.orelse))
            yes, no = yes + arms[k], no + arms[1 - k]
            if yes == no:
                return j
        return None

    def _escaping_exits(self, s: cst.If) -> bool:
        calls = self.fa.calls
        return bool(_exits_in(s.body, s, calls) or (s.orelse is not None and _exits_in(s.orelse, s, calls)))

    def _exit_point(self, small, kind: str, ctx: list[_Frame], line, failure: str = "") -> None:
        # Frames within the exit's reach: up to the function (return/raise/exit) or the loop.
        if kind in ("break", "continue"):
            j = next((k for k in range(len(ctx) - 1, -1, -1) if ctx[k].kind == "loop"), None)
            if j is None:
                return
            reach = ctx[j:]
        elif kind == "raise":
            j = next((k for k in range(len(ctx) - 1, -1, -1) if ctx[k].kind in ("try", "func")), 0)
            reach = ctx[j:]
        else:
            j = next((k for k in range(len(ctx) - 1, -1, -1) if ctx[k].kind == "func"), 0)
            reach = ctx[j:]
        # The innermost divergent decision inside that reach.
        d = next((k for k in range(len(reach) - 1, -1, -1)
                  if reach[k].kind in ("if", "else", "handler", "case") and reach[k].cond.divergent), None)
        if d is None:
            return
        dframe = reach[d]
        fn = next((f.node for f in ctx if f.kind == "func"), None) if kind == "raise" else None
        guess = failure or _raise_guess(small, dframe, fn) if kind == "raise" else ""
        # A check that raises alike wherever it is evaluated, under a process-dependent block: one
        # process fails first and the others wait to be aborted (MCJ104), no one-process exit.
        uniform = kind == "raise" and _uniform_check(reach)
        # What the exiting processes issue in the decided block before leaving ...
        branch_stmts = dframe.stmts
        inner = reach[d + 1].node if d + 1 < len(reach) else line
        upto = _index_of_containing(branch_stmts, inner)
        path_exit = self.seq_block(branch_stmts[:upto])
        if inner is not line and upto < len(branch_stmts):
            path_exit += self.seq_stmt(branch_stmts[upto])  # approximation: the whole nested statement
        elif inner is line:
            path_exit += self.seq_expr(small)  # `return f(x)`: f runs before leaving
        # ... versus what the others issue: the other branch, then everything after the decision
        # up to where the exit lands (and later iterations of the loops it leaves).
        rest = self._rest_after(reach[:d], dframe.node, kind) if d > 0 else ()
        if dframe.kind in ("if", "else") and kind in _SAME_WAY and _always_leaves(dframe.other, kind):
            # Every arm of the decision leaves the same way (`elif rank == 0: break` / `else:
            # break`): the others skip that rest as well; what differs is what each arm issues first.
            rest = ()
        other = self.seq_block(dframe.other) if dframe.kind in ("if", "else") and dframe.other is not None else ()
        path_other = other + rest
        t = first_tok(rest)
        if t is not None and kind == "raise" and (uniform or not any(f.kind == "loop" for f in reach[:d])):
            # A raise before collective work that is not in the middle of a loop: the process fails
            # fast and the coordination service aborts the others; fragile, not certain (MCJ104).
            if not self.same_work(path_exit, path_other):
                self.exceptions.append(ExceptionPoint(small, small, dframe.cond, t, "raise", guess))
                self._branch_done.add(id(dframe.node))
            elif reach[0].kind == "func":
                # It did the same collective work as the others before raising: what it skips is
                # the callers' next collective work.
                self._pending_raises.append((small, dframe, reach[0].node, kind, uniform))
            return
        if kind in ("raise", "exit") and reach[0].kind == "func" and (t is None or self.same_work(path_exit, path_other)):
            # Nothing collective left in this function, or the same as the others did before
            # leaving: the callers' next collective work is skipped.
            self._pending_raises.append((small, dframe, reach[0].node, kind, uniform))
        if uniform or self.same_work(path_exit, path_other):
            return
        if t is not None:
            if kind == "continue" and not guess and _rewound_across(self.fa, ctx[j].node, dframe, t):
                guess = evidence.REWOUND_COUNTER
            self.exits.append(ExitPoint(small, self._gate_guess(path_exit, path_other, dframe.cond), t, dframe.node,
                                        kind, guess=guess))
            self._branch_done.add(id(dframe.node))
        elif dframe.kind in ("if", "else") and isinstance(dframe.node, cst.If) and id(dframe.node) not in self._branch_done:
            # (an `else` frame of a `try` whose handler catches a per-process raise has no test:
            # its exits are the handler's, `_walk_try_body`)
            t2 = _first_difference(path_exit, path_other)
            if t2 is not None:
                self._branch_done.add(id(dframe.node))
                self.branches.append(BranchPoint(dframe.node, self._gate_guess(path_exit, path_other, dframe.cond), t2,
                                                 dframe.node.test))

    def _loop_point(self, s) -> None:
        body = self.seq_block(s.body)
        t = first_tok(body)
        if t is None:
            return
        if isinstance(s, cst.For):
            it = self.fa.iters.get(s, BOTTOM)
            if it.count_sources:
                self.loops.append(LoopPoint(s, Val(pd=it.count_sources), t, "iterable"))
        else:
            c = self.fa.conds.get(s, BOTTOM)
            if c.divergent:
                self.loops.append(LoopPoint(s, c, t, "condition"))

    def pd_raise(self, body, handler: cst.ExceptHandler | None = None) -> tuple[Val, cst.CSTNode | None]:
        """Where the block can raise on one process only: the value that decides it, and where.
        With `handler`: only what that handler can catch (`semantics.handler_may_catch`)."""
        out, where = BOTTOM, None
        caught = self._caught(handler) if handler is not None else None
        catches = (lambda n: True) if handler is None else (lambda n: self._may_catch(caught, n))
        stack = [(s, BOTTOM, ()) for s in reversed(self._block_stmts(body))]
        while stack:
            n, cond, guarded = stack.pop()
            t = type(n)
            if t in OWN_SCOPE:
                continue
            if t is cst.Try and any(_swallows(h) and self._catches_failure(h, True) for h in n.handlers):
                # Failures in its body are handled right here (`try: write() except OSError: log`).
                for child in reversed([*n.handlers, n.orelse, n.finalbody]):
                    if child is not None:
                        stack.append((child, cond, guarded))
                continue
            if t is cst.Try:
                # A project call in its body whose own raises a handler here catches (`try:
                # pack() except RuntimeError: ok = 0`) fails no further (`_catches_raised`).
                handlers = tuple(h for h in n.handlers if _swallows(h))
                for child in reversed(children(n)):
                    stack.append((child, cond, guarded + handlers if child is n.body else guarded))
                continue
            if t is cst.If:
                c = self.fa.conds.get(n, BOTTOM)
                inner = cond.join(c) if c.divergent else cond
                for child in reversed(children(n)):
                    stack.append((child, inner if child is not n.test else cond, guarded))
                continue
            if t is cst.Raise and cond.divergent and catches(n):
                return cond, n
            if t is cst.Call:
                info = self.fa.calls.get(n)
                if info is not None:
                    if info.may_raise_pd and catches(n):
                        v = Val(pdc=_val_sources(info.args[0][1]) if info.args else frozenset())
                        if info.raise_guess:
                            v = evidence.mark(v, evidence.ENDS_ITERATION, info.raise_guess, self.fa.line(n))
                        return v, n
                    q = self._callee(n)
                    r = self.callee_raise(q) if q is not None else None
                    if r is not None and catches(r[1]) \
                            and not any(self._may_catch(self._caught(h), r[1]) for h in guarded):
                        v = r[0]
                        if handler is not None and not self._surely_catches(caught, r[1]):
                            v = evidence.mark(v, evidence.UNMATCHED_EXCEPTION,
                                              f"`except` at line {self.fa.line(handler)}", self.fa.line(n))
                        return v, n
                    if cond.divergent and semantics.can_fail_call(info.name or _call_name(n), info.collective) \
                            and not info.never_raises \
                            and catches(n) \
                            and not any(self._catches_raised(h, n, only=True) for h in guarded):
                        return cond, n
            for child in reversed(children(n)):
                stack.append((child, cond, guarded))
        return out, where

    def callee_raise(self, q: str) -> tuple[Val, cst.Raise] | None:
        """Where the same-file function `q` raises on one process only, as an exception leaving
        it: the value that decides it and the `raise`. Python runs a `raise` only where control
        reaches it, so it is one process's where (a) a process-dependent `if` encloses it, (b) it
        follows, in the function's own body, a statement that returns under a process-dependent
        condition (`if rank != 0: return`, a loop that returns once this process's data
        converge: only the processes that did not return get there), or (c) it is in a
        same-file function called where (a) or (b) holds, or one that raises so itself. A
        `raise` inside a `try` of its own function whose handler can catch it does not leave
        it. A check of the function's own arguments or one its author says cannot fail is
        marked as a guess (`evidence.ARGUMENT_CHECK`, `INVARIANT_CHECK`)."""
        memo = self._callee_raise_memo
        if q in memo:
            return memo[q]
        memo[q] = None  # (a recursive call raises no more than the function itself)
        fdef = self.fa.fn_nodes.get(q, (None,))[0]
        if not isinstance(fdef, cst.FunctionDef):
            return None
        cond, out = BOTTOM, None
        for st in self._block_stmts(fdef.body):
            out = self._raise_in(st, cond, q, fdef)
            if out is not None:
                break
            if not isinstance(st, cst.SimpleStatementLine):
                cond = cond.join(self._returns_under(st))
        memo[q] = out
        return out

    def _raise_in(self, st, cond: Val, q: str, fdef: cst.FunctionDef) -> tuple[Val, cst.Raise] | None:
        """`callee_raise` for one statement of `q`'s body, reached under `cond`."""
        stack = [(st, cond, (), None)]
        while stack:
            n, c, guarded, gate = stack.pop()
            t = type(n)
            if t in OWN_SCOPE:
                continue
            if t is cst.Try:
                for child in reversed(children(n)):
                    stack.append((child, c, guarded + tuple(n.handlers) if child is n.body else guarded, gate))
                continue
            if t is cst.If:
                ic = self.fa.conds.get(n, BOTTOM)
                inner = c.join(ic) if ic.divergent else c
                for child in reversed(children(n)):
                    stack.append((child, c if child is n.test else inner, guarded,
                                  gate if child is n.test or not ic.divergent else n))
                continue
            if t is cst.Raise and n.exc is not None and c.divergent \
                    and not any(self._may_catch(self._caught(h), n) for h in guarded):
                return self._raise_evidence(c, n, gate, fdef), n
            if t is cst.Call:
                callee = self._callee(n)
                if callee is not None and callee != q:
                    r = self.callee_raise(callee)
                    if r is None and c.divergent:
                        r = next(((c, x) for x in self._plain_raises(callee)), None)
                    if r is not None and not any(self._may_catch(self._caught(h), r[1]) for h in guarded):
                        return r
            for child in reversed(children(n)):
                stack.append((child, c, guarded, gate))
        return None

    def _raise_evidence(self, cond: Val, raise_node: cst.Raise, gate, fdef: cst.FunctionDef) -> Val:
        if _asserts_invariant(raise_node):
            return evidence.mark(cond, evidence.INVARIANT_CHECK, "`raise`", self.fa.line(raise_node))
        if isinstance(gate, cst.If) and not cond.pd and _checks_arguments(gate, fdef):
            return evidence.mark(cond, evidence.ARGUMENT_CHECK, "`raise`", self.fa.line(raise_node))
        return cond

    def _returns_under(self, st) -> Val:
        """The process-dependent conditions under which the compound statement `st` returns
        (BOTTOM where it never does so)."""
        out = BOTTOM
        stack = [(st, BOTTOM)]
        while stack:
            n, c = stack.pop()
            t = type(n)
            if t in OWN_SCOPE:
                continue
            if t is cst.Return:
                if c.divergent:
                    out = out.join(c)
                continue
            if t is cst.If:
                ic = self.fa.conds.get(n, BOTTOM)
                inner = c.join(ic) if ic.divergent else c
                for child in children(n):
                    stack.append((child, c if child is n.test else inner))
                continue
            for child in children(n):
                stack.append((child, c))
        return out

    def _plain_raises(self, q: str) -> tuple:
        """The `raise X` statements that can leave the same-file function `q` (not inside a
        `try` of its own whose handler can catch them), its own and those of the same-file
        functions it calls outside such a `try` (up to 20 functions)."""
        memo = self._plain_raise_memo
        if q in memo:
            return memo[q]
        memo[q] = ()
        out: list = []
        seen, todo = {q}, [q]
        while todo:
            fdef = self.fa.fn_nodes[todo.pop()][0]
            if not isinstance(fdef, cst.FunctionDef):
                continue
            stack = [(s, ()) for s in self._block_stmts(fdef.body)]
            while stack:
                n, guarded = stack.pop()
                t = type(n)
                if t in OWN_SCOPE:
                    continue
                if t is cst.Try:
                    for child in children(n):
                        stack.append((child, guarded + tuple(n.handlers) if child is n.body else guarded))
                    continue
                if t is cst.Raise and n.exc is not None:
                    if not any(self._may_catch(self._caught(h), n) for h in guarded):
                        out.append(n)
                    continue
                if t is cst.Call and not guarded:
                    r = self._callee(n)
                    if r is not None and r not in seen and len(seen) < 20:
                        seen.add(r)
                        todo.append(r)
                for child in children(n):
                    stack.append((child, guarded))
        memo[q] = tuple(out)
        return memo[q]

    def _caught(self, h: cst.ExceptHandler) -> list[str | None] | None:
        """The qualified names of the types an `except` names (None: a bare `except`)."""
        if h.type is None:
            return None
        types = [e.value for e in h.type.elements] if isinstance(h.type, cst.Tuple) else [h.type]
        return [self.fa.qualify(t) if isinstance(t, (cst.Name, cst.Attribute)) else None for t in types]

    def _may_catch(self, caught: list[str | None] | None, n: cst.CSTNode) -> bool:
        """Whether a handler catching `caught` can catch what the raise point `n` raises."""
        raised, from_library = None, False
        if isinstance(n, cst.Raise):
            exc = n.exc.func if isinstance(n.exc, cst.Call) else n.exc
            raised = self.fa.qualify(exc) if isinstance(exc, (cst.Name, cst.Attribute)) else None
        elif isinstance(n, cst.Call):
            info = self.fa.calls.get(n)
            name = info.name if info is not None else None
            # (`next()` raises what the iterator raises: StopIteration, or the loader's OSError, ...
            # and a project generator's own exceptions.)
            idx = self.fa.index
            from_library = bool(name) and not info.may_raise_pd and not info.via_project and name not in idx.functions \
                and name not in idx.classes and not name.endswith(("__init__", "__call__"))
        return semantics.handler_may_catch(caught, raised, from_library, self._ancestry)

    def _ancestry(self, q: str) -> list[str] | None:
        idx = self.fa.index
        q = idx.resolve_class_name(q)
        if q not in idx.classes:
            return None
        out = []
        for c in idx.mro(q):
            out.append(c)
            out.extend(idx.resolve_class_name(b) for b in idx.classes[c].bases)
        return out

    def _exception_points(self, s, raise_val: Val, raise_node) -> None:
        if raise_node is None or not raise_val.divergent:
            return
        body = self._block_stmts(s.body)
        # Collective work in the try body after the point that can raise.
        coll_after = self._collective_after(body, raise_node)
        for h in s.handlers:
            h_val, h_node = self.pd_raise(s.body, h)
            if h_node is None or not h_val.divergent:
                continue  # nothing that can raise on one process is caught here
            h_after = coll_after if h_node is raise_node else self._collective_after(body, h_node)
            hb = self._block_stmts(h.body)
            reraises = any(isinstance(x, cst.SimpleStatementLine) and any(isinstance(y, cst.Raise) for y in x.body) for x in hb)
            hseq = first_tok(self.seq_block(h.body))
            guess = "" if self._surely_catches(self._caught(h), h_node) else evidence.UNMATCHED_EXCEPTION
            if hseq is not None:
                self.exceptions.append(ExceptionPoint(h, h_node, h_val, hseq, "handler", guess))
            elif h_after is not None and not reraises and not _exits_in(h.body, h):
                self.exceptions.append(ExceptionPoint(h, h_node, h_val, h_after, "swallowed", guess))
        if s.finalbody is not None and coll_after is not None:
            ft = first_tok(self.seq_block(s.finalbody))
            if ft is not None:
                self.exceptions.append(ExceptionPoint(s.finalbody, raise_node, raise_val, ft, "finally"))

    def _fallback_point(self, s: cst.Try, ctx: list[_Frame]) -> None:
        """`try: return load_local(step)` / `except OSError: log` / then collective work after the
        `try` (a fallback restore that broadcasts): a file operation of the body that fails on one
        process (its local file missing or cut short) sends that process alone past the `try`,
        into collective work the others, who returned, never join. Possible: whether a file
        operation fails is never known (`evidence.FILE_FAILURE`)."""
        if not any(isinstance(e, cst.Return) for e in _exits_in(s.body, s, self.fa.calls)):
            return
        fail = next((c for c in _walk_calls(s.body) if self._io_failure(c)), None)
        if fail is None:
            return
        j = next((k for k in range(len(ctx) - 1, -1, -1) if ctx[k].kind == "func"), None)
        if j is None or not ctx[j:] or _index_of_containing(ctx[-1].stmts, s) >= len(ctx[-1].stmts):
            return
        tok = first_tok(self._rest_after(ctx[j:], s, "return"))
        if tok is None:
            return
        for h in s.handlers:
            if _swallows(h) and self._catches_failure(h, True):
                src = evidence.file_failure(self.fa.src(fail, evidence.FILE_FAILURE_DESC, kinds.LOCAL_DATA))
                self.exceptions.append(ExceptionPoint(h, fail, Val(pd=frozenset({src})), tok, "fallback",
                                                      evidence.FILE_FAILURE))
                return

    def _surely_catches(self, caught: list[str | None] | None, n: cst.CSTNode) -> bool:
        """Whether the handler catches what `n` raises for certain (`semantics.handler_may_catch`
        says whether it can; where it only may, being caught is a guess, see evidence.py)."""
        raised = None
        if isinstance(n, cst.Raise):
            exc = n.exc.func if isinstance(n.exc, cst.Call) else n.exc
            raised = self.fa.qualify(exc) if isinstance(exc, (cst.Name, cst.Attribute)) else None
        elif isinstance(n, cst.Call):
            info = self.fa.calls.get(n)
            r = semantics.raised_by_call(info.name if info is not None else None,
                                         info is not None and info.may_raise_pd)
            raised = r.family if r is not None and r.only else None  # (else: it may fail otherwise)
        return semantics.handler_surely_catches(caught, raised, self._ancestry)

    def _with_point(self, s: cst.With) -> None:
        exit_tok = None
        for item in s.items:
            info = self.fa.calls.get(item.item)
            if info is not None and info.exit_collective:
                exit_tok = Tok("__exit__", item.item, info.exit_collective)
        if exit_tok is None:
            return
        raise_val, raise_node = self.pd_raise(s.body)
        if raise_node is None:
            return
        if self._collective_after(self._block_stmts(s.body), raise_node) is not None:
            self.exceptions.append(ExceptionPoint(s, raise_node, raise_val, exit_tok, "exit"))

    def _collective_after(self, stmts: list, node) -> Tok | None:
        """First collective the block issues after `node` (later loop iterations included)."""
        k = _index_of_containing(stmts, node)
        if k >= len(stmts):
            return None
        t = first_tok(self.seq_block(stmts[k + 1:]))
        if t is None and isinstance(stmts[k], (cst.For, cst.While)):
            t = first_tok(self.seq_block(stmts[k].body))
        return t


def _parted_else(s: cst.If):
    """The arm that the processes `s`'s test parts take besides its body: its `else`, past each
    `elif` whose own test excludes `s`'s (`semantics.excludes`: `if not in_order and main():
    ... elif in_order: ...`). Such an arm runs exactly where its own test holds, whatever the rest
    of `s`'s test: a part of it is `s`'s divergence only where its own test is (checked there)."""
    o = s.orelse
    while isinstance(o, cst.If) and semantics.excludes(o.test, s.test, read_cst.read, read_cst.same):
        o = o.orelse
    return o


def _with(f: _Frame, kind: str, stmts: list, cond: Val, other) -> _Frame:
    return _Frame(kind, f.node, stmts, 0, cond, other)


_DECISIONS = ("if", "else", "case")


def _uniform_check(reach: list[_Frame]) -> bool:
    """A `raise` whose own check goes the same way on every process that evaluates it: the `if`
    right above it tests values every process holds alike (static config, shapes of global
    arrays, results of `all_gather`), or only values a process-dependent block around it made
    (a check in a rank-0 block on what that block computed). When it fails, the program is wrong
    on every process, whoever happens to check: not a one-process exit that leaves the others
    running (MCJ102), only a failure the others learn of late (MCJ104)."""
    g = next((k for k in range(len(reach) - 1, -1, -1) if reach[k].kind in _DECISIONS + ("handler",)), None)
    if g is None or reach[g].kind == "handler":
        return False
    own = reach[g].cond
    if not own.divergent:
        return True
    outer = [f.cond for f in reach[:g] if f.kind in _DECISIONS + ("handler",) and f.cond.divergent]
    if not outer:
        return False
    theirs = frozenset().union(*(c.pd | c.pdc | c.order | c.hash for c in outer))
    same_identity = {_identity(s) for s in theirs} - {None}
    return all(s in theirs or _identity(s) in same_identity for s in own.pd | own.pdc | own.order | own.hash)


def _identity(s) -> str | None:
    """The process-identity call a source reads or was computed from (`jax.process_index()`, the
    host name; "a list whose length depends on `jax.host_id()`"), wherever it was called."""
    return next((d for d in K.PROCESS_IDENTITY_DESCS if d in s.desc), None)


# What a failed invariant check says of itself: it cannot happen unless the program has a bug.
_CANNOT_HAPPEN = re.compile(
    r"should(?:n't| not| never) (?:happen|occur|be reached|get here)|(?:can ?not|can't|must not|never) happen|"
    r"\bthis is a bug\b|\bunreachable\b|internal error|please (?:file|report)", re.IGNORECASE)


def _raise_guess(small: cst.CSTNode, dframe: _Frame, fn: cst.CSTNode | None) -> str:
    """Why a process-dependent `raise` may never fire on one process alone (evidence.py), "" if
    nothing says so."""
    if _asserts_invariant(small):
        return evidence.INVARIANT_CHECK
    # Only where what the check reads differs by process as content alone (`Val.pdc`: elements of
    # process-local data, shaped alike everywhere): an argument that itself differs by process
    # (`Val.pd`: loaded from this process's file, a local length, the process index) can fail the
    # check on one process as any other process-dependent test can.
    if (isinstance(fn, cst.FunctionDef) and isinstance(dframe.node, cst.If) and not dframe.cond.pd
            and _checks_arguments(dframe.node, fn)):
        return evidence.ARGUMENT_CHECK
    return ""


def _checks_arguments(node: cst.If, fn: cst.FunctionDef) -> bool:
    """Whether `if <test>: raise` validates the function's own arguments: its test reads only
    parameters and locals computed from them alone (`k = int(n)`, `cur = x.shape[1]`), through
    attributes, subscripts, operators and pure conversions (`knowledge.PURE_CONVERSIONS`), with
    no I/O, no call to the program and no state of its own. Such a check fails on a process only
    where a caller passes it a value that fails it there: its process dependence is the caller's
    argument, which the check only asserts to be well-formed."""
    params = {p.name.value for p in (*fn.params.params, *fn.params.posonly_params, *fn.params.kwonly_params)}
    params -= {"self", "cls"}  # (an object's own state is no argument)
    if not params:
        return False
    derived = set(params)
    body = fn.body.body if isinstance(fn.body, cst.IndentedBlock) else ()
    bindings: dict[str, list] = {}
    for st in body:  # the function's own straight-line bindings above the check
        if st is node or any(n is node for n in walk(st)):
            break
        if isinstance(st, cst.SimpleStatementLine):
            for small in st.body:
                if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
                    bindings.setdefault(small.targets[0].target.value, []).append(small.value)
                elif isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name) and small.value is not None:
                    bindings.setdefault(small.target.value, []).append(small.value)
        else:
            for n in walk(st):  # a name bound in a block (a loop, a branch) is not straight-line
                if isinstance(n, cst.AssignTarget) and isinstance(n.target, cst.Name):
                    bindings.setdefault(n.target.value, []).append(None)
    mutated = _mutated_names(fn)
    for name, values in bindings.items():
        if name not in mutated and all(v is not None and _pure_over(v, derived, need_name=True) for v in values):
            derived.add(name)
        else:
            derived.discard(name)
    return _pure_over(node.test, derived - mutated, need_name=True)


def _mutated_names(fn: cst.FunctionDef) -> set[str]:
    """Names the function changes in place (`xs.append(...)`, `xs[k] = v`, `n += 1`): state it
    builds up, not a value computed from its arguments."""
    out = set()
    for n in walk(fn.body):
        if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and isinstance(n.func.value, cst.Name) \
                and n.func.attr.value in semantics.MUTATORS | {"pop", "remove", "clear", "sort", "reverse"}:
            out.add(n.func.value.value)
        elif isinstance(n, cst.AugAssign) and isinstance(n.target, cst.Name):
            out.add(n.target.value)
        elif isinstance(n, cst.AssignTarget) and isinstance(n.target, cst.Subscript) \
                and isinstance(n.target.value, cst.Name):
            out.add(n.target.value.value)
    return out


def _pure_over(expr: cst.CSTNode, names: set[str], need_name: bool = False) -> bool:
    """Whether `expr` reads only `names` (and constants), calling only pure conversions."""
    read = False
    skip: set[int] = set()  # attribute and keyword names (`x.shape`, `dtype=`): no reads
    for n in walk(expr):
        if id(n) in skip:
            continue
        if isinstance(n, cst.Attribute):
            skip.add(id(n.attr))
        elif isinstance(n, cst.Arg) and n.keyword is not None:
            skip.add(id(n.keyword))
        elif isinstance(n, cst.Call):
            f = n.func
            callee = f.value if isinstance(f, cst.Name) else f.attr.value if isinstance(f, cst.Attribute) else None
            if callee not in K.PURE_CONVERSIONS:
                return False
        elif isinstance(n, (cst.Lambda, cst.Await, cst.Yield, cst.NamedExpr)):
            return False
        elif isinstance(n, cst.Name):
            if n.value in names:
                read = True
            elif n.value not in K.PURE_CONVERSIONS and n.value not in _PURE_NAMES:
                return False
    return read or not need_name


_PURE_NAMES = frozenset({"None", "True", "False", "np", "numpy", "jnp"})


def _asserts_invariant(small: cst.CSTNode) -> bool:
    """`raise AssertionError(...)`, or an exception whose message says it cannot happen ("This is a
    bug, it should never happen"): the author asserts the condition never holds."""
    exc = small.exc if isinstance(small, cst.Raise) else None
    if exc is None:
        return False
    func = exc.func if isinstance(exc, cst.Call) else exc
    if isinstance(func, cst.Name) and func.value == "AssertionError":
        return True
    texts = [n for n in walk(exc) if isinstance(n, (cst.SimpleString, cst.FormattedStringText))]
    return any(_CANNOT_HAPPEN.search(t.value) for t in texts)




def _first_difference(a: tuple, b: tuple) -> Tok | None:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            x = a[i] if isinstance(a[i], Tok) else first_tok((a[i],))
            y = b[i] if isinstance(b[i], Tok) else first_tok((b[i],))
            if x is not None and y is not None and evidence.collective_guess(x.desc) and not evidence.collective_guess(y.desc):
                return y  # (the certain one of the two that differ)
            return x or y
    rest = a[n:] or b[n:]
    return first_tok(rest)


def _terminates(s) -> bool:
    if type(s) is cst.SimpleStatementLine:
        return any(type(x) in _LEAVING for x in s.body)
    return False


_LEAVING = frozenset({cst.Return, cst.Raise, cst.Break, cst.Continue})  # (exact types: see tree.OWN_SCOPE)


# Exits that land at one place whichever arm of an `if` takes them: `break`/`continue` of the
# innermost loop, `return` from the function.
_SAME_WAY = {"break": cst.Break, "continue": cst.Continue, "return": cst.Return}


def _always_leaves(block, kind: str) -> bool:
    """Whether every path through `block` (an `if`'s arm: a block, an `else`, an `elif`) ends in
    a `kind` statement of its own level (`break`/`continue` outside nested loops, `return`), with
    no other way out before it: control leaves it exactly as a `kind` where it stands would."""
    if block is None:
        return False
    if isinstance(block, cst.If):  # `elif`: both of its arms
        return _always_leaves(block.body, kind) and _always_leaves(block.orelse, kind)
    if isinstance(block, cst.Else):
        block = block.body
    stmts = list(block.body) if hasattr(block, "body") else list(block)
    exit_type = _SAME_WAY[kind]
    for i, st in enumerate(stmts):
        ends = type(st) is cst.SimpleStatementLine and any(type(x) is exit_type for x in st.body) or (
            isinstance(st, cst.If) and st.orelse is not None
            and _always_leaves(st.body, kind) and _always_leaves(st.orelse, kind))
        if ends:
            return not _leaves_in(stmts[:i]) and not _raises_before(stmts[:i], st)
    return False


def _raises_before(stmts: list, st) -> bool:
    """A `raise` among `stmts`, or before the exit in the line `st` (another way out)."""
    before = stmts + ([x for x in st.body[:next(i for i, x in enumerate(st.body) if type(x) in _LEAVING)]]
                      if type(st) is cst.SimpleStatementLine else [])
    return any(type(n) is cst.Raise for b in before for n in walk_own_scope(b))


def _has_wildcard(m: cst.Match) -> bool:
    return any(isinstance(c.pattern, cst.MatchAs) and c.pattern.pattern is None and c.guard is None for c in m.cases)


def _exits_in(body, owner, calls: dict | None = None) -> list:
    """Exits in `body` that leave `owner` (return/raise always, and `sys.exit()` and friends when
    `calls` says which calls exit; break/continue of outer loops)."""
    out = []
    stack = [(body, False)]
    while stack:
        n, in_loop = stack.pop()
        t = type(n)  # (exact types: see tree.OWN_SCOPE)
        if t in OWN_SCOPE:
            continue
        if t is cst.Return or t is cst.Raise:
            out.append(n)
        elif calls is not None and t is cst.Expr and _exit_call(n, calls):
            out.append(n)
        elif (t is cst.Break or t is cst.Continue) and not in_loop:
            out.append(n)
        loop = in_loop or t is cst.For or t is cst.While
        for c in children(n):
            stack.append((c, loop if c is not getattr(n, "orelse", None) else in_loop))
    return out


def _leaves_in(stmts: list) -> bool:
    """Whether a `break`, `continue` or `return` among `stmts` (outside nested loops for the
    first two, and outside nested scopes) leaves their block."""
    stack = [(st, False) for st in stmts]
    while stack:
        n, in_loop = stack.pop()
        t = type(n)  # (exact types: see tree.OWN_SCOPE)
        if t in OWN_SCOPE:
            continue
        if t is cst.Return or (t is cst.Break or t is cst.Continue) and not in_loop:
            return True
        loop = in_loop or t is cst.For or t is cst.While
        for c in children(n):
            stack.append((c, loop if c is not getattr(n, "orelse", None) else in_loop))
    return False


def _not_implemented(r: cst.Raise) -> bool:
    """`raise NotImplementedError(...)`: a method left for a subclass to define."""
    exc = r.exc.func if isinstance(r.exc, cst.Call) else r.exc
    return isinstance(exc, cst.Name) and exc.value == "NotImplementedError"


def _tries_in(body) -> list:
    """The `try` statements in a function body (outside nested scopes)."""
    return [n for n in walk_own_scope(body) if isinstance(n, cst.Try)]


def _raises_in(fdef) -> list:
    """The `raise X` statements of a function (outside nested scopes; a bare `raise` re-raises)."""
    return [n for n in walk_own_scope(fdef.body) if isinstance(n, cst.Raise) and n.exc is not None]


def _bare_yield(s) -> bool:
    """`yield` / `yield x` as a statement of its own, x a name or a constant (what a context
    manager's generator hands the `with` body)."""
    if not (isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1 and isinstance(s.body[0], cst.Expr)):
        return False
    y = s.body[0].value
    return isinstance(y, cst.Yield) and (y.value is None or isinstance(y.value, (cst.Name, cst.BaseNumber, cst.BaseString)))


def _yields(node) -> bool:
    """A `yield` in `node` (outside nested functions): the caller's code runs there."""
    stack = [node]
    while stack:
        n = stack.pop()
        t = type(n)  # (exact types: see tree.OWN_SCOPE)
        if t in OWN_SCOPE and n is not node:
            continue
        if t is cst.Yield:
            return True
        stack.extend(children(n))
    return False


def _test_reads(test) -> set[str] | None:
    """The variables whose values the condition `test` reads (the root names of what it reads:
    `pending` in `len(pending) > 0`, `self` in `self.is_chief`; not the functions it calls), or
    None when it calls something that is no name (`fns[0]()`)."""
    roots: set[str] = set()
    callees: set[int] = set()
    for n in walk(test):
        if isinstance(n, cst.Call):
            if not isinstance(n.func, (cst.Name, cst.Attribute)):
                return None
            callees.update(id(x) for x in walk(n.func))
    for n in walk(test):
        if isinstance(n, (cst.Name, cst.Attribute, cst.Subscript)) and id(n) not in callees:
            r = _root_name(n)
            if r is not None:
                roots.add(r)
    return roots


def _stable_calls(test, calls: dict) -> bool:
    """Whether every call in `test` is to a function that gives one process the same value each
    time for the same arguments (`K.STABLE_CALLS`: who it is, lengths, type checks)."""
    return all(getattr(calls.get(n), "name", None) in K.STABLE_CALLS for n in walk(test) if isinstance(n, cst.Call))


def _root_name(expr) -> str | None:
    """`x` of `x`, `x.a.b`, `x[i].a`: the variable an access starts from."""
    while isinstance(expr, (cst.Attribute, cst.Subscript)):
        expr = expr.value
    return expr.value if isinstance(expr, cst.Name) else None


class _MethodWrites:
    """For `_changes`: whether a call `obj.meth(...)` on a root a condition reads only through
    attributes (`self.is_main`, `_leaf_attributes`) leaves those attributes alone: `meth` is a
    project method that assigns or changes in place none of them, nor does a method it calls on
    its own object (`ProjectIndex.method_writes`; `self.wait()` in `main_process_first`: a
    barrier, no store). Anything else (a library method, an unknown callee) may change them."""

    def __init__(self, index, leaves: dict[str, set[str]] | None):
        self.index, self.leaves = index, leaves

    def leaves_alone(self, call: cst.Call, root: str, calls: dict) -> bool:
        attrs = (self.leaves or {}).get(root)
        if not attrs or not isinstance(call.func, cst.Attribute) or not isinstance(call.func.value, cst.Name) \
                or any(_root_name(a.value) == root for a in call.args):
            return False
        q = getattr(calls.get(call), "name", None)
        writes = self.index.method_writes(q) if q else None
        return writes is not None and attrs.isdisjoint(writes)


def _leaf_attributes(test) -> dict[str, set[str]] | None:
    """The attributes a condition reads of each root name, where it reads a root only as
    `root.attr` and no further (`self.is_main`, not `self.state.done`, nor `f(self)`): root ->
    those attribute names; a root read otherwise is left out."""
    out: dict[str, set[str]] = {}
    other: set[str] = set()
    parents: dict[int, object] = {}
    for n in walk(test):
        for c in n.children:
            parents[id(c)] = n
    for n in walk(test):
        if isinstance(n, cst.Name):
            p = parents.get(id(n))
            if isinstance(p, cst.Attribute) and p.value is n:
                pp = parents.get(id(p))
                if isinstance(pp, cst.Attribute) and pp.value is p or isinstance(pp, cst.Call) and pp.func is p:
                    other.add(n.value)
                else:
                    out.setdefault(n.value, set()).add(p.attr.value)
            elif not (isinstance(p, cst.Attribute) and p.attr is n):
                other.add(n.value)
    return {r: a for r, a in out.items() if r not in other} or None


def _changes(stmts: list, roots: set[str], calls: dict, leaves: _MethodWrites | None = None) -> bool:
    """Whether `stmts` may change a variable of `roots` (what a condition reads): bind, assign
    into or delete it (`x = ...`, `x[k] = ...`, `x.a = ...`, `del x[k]`, a loop or `with` target),
    call a method on it (`pending.clear()`; not a project method that stores none of the
    attributes the condition reads: `leaves`), or pass it to a function that may mutate it
    (anything but `K.NON_MUTATING_CALLS`: `print(x)` leaves it alone, `reset(x)` need not)."""
    if not roots:
        return False
    for s in stmts:
        for n in walk(s):
            targets: list = []
            if isinstance(n, cst.AssignTarget):
                targets = [n.target]
            elif isinstance(n, (cst.AugAssign, cst.AnnAssign, cst.NamedExpr, cst.For, cst.CompFor, cst.Del)):
                targets = [n.target]
            elif isinstance(n, cst.AsName):
                targets = [n.name]
            for t in targets:
                if any(_root_name(x) in roots for x in walk(t) if isinstance(x, (cst.Name, cst.Attribute, cst.Subscript))):
                    return True
            if isinstance(n, cst.Call):
                if isinstance(n.func, cst.Attribute) and _root_name(n.func.value) in roots \
                        and not (leaves is not None and leaves.leaves_alone(n, _root_name(n.func.value), calls)):
                    return True
                if getattr(calls.get(n), "name", None) not in K.NON_MUTATING_CALLS \
                        and any(_root_name(a.value) in roots for a in n.args):
                    return True
    return False


def _exit_call(n, calls: dict) -> bool:
    """A statement `sys.exit(...)` (or another call the taint analysis knows exits)."""
    return isinstance(n, cst.Expr) and isinstance(n.value, cst.Call) and getattr(calls.get(n.value), "exits", False)


_GATE_RUNS = "|past-early-return"
# Builtins that compute on host values alone (a helper calling only these besides collective work
# does no other collective work).
_HOST_BUILTINS = frozenset({"int", "float", "bool", "str", "len", "sum", "min", "max", "abs", "round", "range",
                            "list", "tuple", "dict", "set", "sorted", "enumerate", "zip", "isinstance", "divmod"})
_INLINE_DEPTH = 6  # (how many calls deep two sequences are compared by their callees' bodies)
_GATE_REACH = 8  # (the statements of a helper searched for the early `return` on a parameter)
_UNKNOWN = object()


def short_name(call: cst.Call) -> str:
    f = call.func
    return f"{f.value}()" if isinstance(f, cst.Name) else f"{f.attr.value}()" if isinstance(f, cst.Attribute) else "call"


def _local_method(c: cst.Call, params: set, local: set) -> bool:
    """A method called on a value this function made itself (`gathered.max()`, `f(x).reshape(-1)`),
    not on a parameter (which may be a global array at some call) nor a module-level name."""
    f = c.func
    if not isinstance(f, cst.Attribute):
        return False
    root = f.value
    while isinstance(root, (cst.Attribute, cst.Subscript)):
        root = root.value
    return isinstance(root, cst.Call) or (isinstance(root, cst.Name) and root.value in local and root.value not in params)


def _is_method(fdef: cst.FunctionDef, cls) -> bool:
    """Whether a call through an instance binds `fdef`'s first parameter (a method, not a static one)."""
    return cls is not None and not any(isinstance(d.decorator, cst.Name) and d.decorator.value == "staticmethod"
                                       for d in fdef.decorators)


def _constant(module: cst.Module, expr) -> object:
    """The value of a literal constant (`True`, `None`, `0`, `"x"`), else `_UNKNOWN`."""
    if isinstance(expr, cst.Name) and expr.value in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[expr.value]
    if isinstance(expr, (cst.Integer, cst.Float, cst.SimpleString)):
        try:
            return ast.literal_eval(module.code_for_node(expr))
        except (ValueError, SyntaxError):
            return _UNKNOWN
    return _UNKNOWN


def _param_test(test, params) -> tuple[str, object] | None:
    """`p`, `not p`, `p is None`, `p is not None` on one of `params`: (p, when the test holds)."""
    if isinstance(test, cst.Name) and test.value in params:
        return test.value, bool
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not) \
            and isinstance(test.expression, cst.Name) and test.expression.value in params:
        return test.expression.value, lambda v: not v
    if isinstance(test, cst.Comparison) and isinstance(test.left, cst.Name) and test.left.value in params \
            and len(test.comparisons) == 1 and isinstance(test.comparisons[0].comparator, cst.Name) \
            and test.comparisons[0].comparator.value == "None":
        op = test.comparisons[0].operator
        if isinstance(op, cst.Is):
            return test.left.value, lambda v: v is None
        if isinstance(op, cst.IsNot):
            return test.left.value, lambda v: v is not None
    return None


def _contains(outer: cst.CSTNode, inner: cst.CSTNode) -> bool:
    """Whether `inner` is `outer` or inside it (not inside a nested scope)."""
    stack = [outer]
    while stack:
        n = stack.pop()
        if n is inner:
            return True
        if type(n) not in OWN_SCOPE:
            stack.extend(children(n))
    return False


def _index_of_containing(stmts: list, node) -> int:
    for k, s in enumerate(stmts):
        if s is node or _contains(s, node):
            return k
    return len(stmts)


def _contains(root, node) -> bool:
    stack = [root]
    while stack:
        n = stack.pop()
        if n is node:
            return True
        stack.extend(children(n))
    return False




def _swallows(h: cst.ExceptHandler) -> bool:
    """The handler neither re-raises nor exits: execution goes on after the `try`."""
    for x in h.body.body:
        if isinstance(x, cst.SimpleStatementLine) and any(isinstance(y, cst.Raise) for y in x.body):
            return False
    return not _exits_in(h.body, h)


def _call_name(n: cst.Call) -> str:
    f = n.func
    if isinstance(f, cst.Attribute):
        return f.attr.value
    if isinstance(f, cst.Name):
        return f.value
    return ""


def _val_sources(v: Val):
    return v.pd | v.pdc
