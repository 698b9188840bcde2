"""Fast per-file summary on stdlib `ast`: the cross-file facts the project index needs.

For every function (and the module body, as `<module>`): what its return value carries
(symbolically: direct sources, plus calls/parameters/attributes the index resolves later),
which calls it makes (the call graph), whether it does collective work directly, whether it is
decorated with a jit-like wrapper. For every class: its bases and the attributes its methods
assign (`self.is_primary = jax.process_index() == 0`). For the module: imports and module-level
bindings (`train_step = jax.jit(step)`).

Values are kept symbolic here (`Sym`), because what a call to `is_main()` returns is known only
once every file is summarized; `index.py` resolves them. Everything is plain data with a stable
JSON form (`ModuleSummary.to_dict()/from_dict()`); bump `SUMMARY_VERSION` when it changes.
"""

from __future__ import annotations

import ast
import bisect
import os
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from mcjax_lint import knowledge as K
from mcjax_lint.analysis import evidence, kinds, read_ast, semantics
from mcjax_lint.analysis.env import Env, branch_changes
from mcjax_lint.analysis.read_ast import last_statement, read
from mcjax_lint.errors import AnalysisError

CALLS_CAP = 400  # call records a summary keeps per function (`ev_Call`); the index reads a full list as cut short

SUMMARY_VERSION = 155
# What a sharding keeps of the devices it is given (`sharding_made`): the process-dependent value
# that chose them (`semantics.group_chosen_by`).
_DEVICE_CHOICE_KEYS = frozenset({"params", "refs", "via", "pd", "pdc"})
# (a parameter gate's key for a comparison with a literal: `param\top\tliteral`, `_param_gate`)
GATE_SEP = "\t"
# The "lmax" entry of a value whose length is decided by a parameter's content (a mask of it
# selects rows, `np.nonzero` of it), not by the length of its longest element.
SIZED_BY_CONTENT = "content"
MAX_ITEMS = 4  # per list in a symbolic value: keeps summaries small and bounded
MAX_TUPLE = 16  # elements kept apart in a returned/unpacked tuple (`return a, b, ...` of a setup helper)
MAX_KEYS = 32  # constant keys kept apart in a dict (`values.MAX_KEYS`, the precise pass's bound)


# --- symbolic values ---------------------------------------------------------------------------------
# A Sym is a JSON-able dict with optional keys:
#   pd, pdc, order, hash: [[desc, line], ...]  direct sources
#   u: True (unordered collection)   callable: desc   ckpt/sharding/glob: True   cls: qualname
#   via: [call, ...]   results of calls (resolved by the index)
#   params: [name, ...]   refs: [qualified name, ...] (globals, functions, `Cls.attr`, `.attr`)
#   keys: {key: Sym, ...}  a dict built with constant str keys, each key's value apart (one level:
#       a value's own "keys" are dropped); the Sym itself stays the join of all of them
#   ip: ["Cls.__init__:position:param", ...]  (a class attribute `__init__` stores from its parameter:
#       the index joins the arguments every construction site passes; position -1: keyword-only)
#   ipi: True  (that attribute is the parameter itself, not computed from it: it is the argument
#       object, a set where every construction passes one)
# A call is {"n": qualname} | {"m": method, "r": receiver Sym} | {"v": callee Sym}, plus "a": the
# union Sym of its arguments, "l": line, and "cb": [qualname, ...] function references passed as
# arguments (callbacks), "ai": {param position or keyword: qualname} for callback parameters,
# "pa": {position or keyword: Sym} each argument that carries something (calls by name into the
# project: a constructor's arguments flow into the attributes its `__init__` stores), or "pk":
# the position or keyword of the only such argument (its Sym is "a").

Sym = dict

# The call record of what a yielded element reads from calls and attributes: resolved by the
# index as that value's content (`ProjectIndex.call_name`).
ELEMENT_CALL = "<element>"
# A window `x[:n]` of what parameters, calls or attributes give, n agreed (`_Summarizer.window`):
# resolved by the index as that value with one length everywhere (content differs).
SAME_LENGTH_CALL = "<same length>"
# A sort by a key of few values of what calls or attributes give (`_Summarizer.tied_order`):
# resolved by the index as the order it keeps where the key ties (`ProjectIndex._call`).
TIED_SORT_CALL = "<sorted, ties kept>"
# A type predicate (`isinstance(x, T)`, `type(x)`, `callable(x)`) of what parameters, calls or
# attributes give (`_Summarizer.type_of`): resolved by the index as a value that differs where
# that value's structure does ("tree": `None` on some processes), never its content.
TYPE_OF_CALL = "<type of>"


def _merge_list(a: list, b: list) -> list:
    if not a:
        return list(b)
    out = list(a)
    for x in b:
        if x not in out and len(out) < MAX_ITEMS:
            out.append(x)
    return out


def sym_join(a: Sym | None, b: Sym | None) -> Sym:
    if not a:
        # (an empty Sym may be an unknown value; None is no value yet: a first store keeps "rep")
        return {k: v for k, v in b.items() if k not in ("host", "lp", "dev") and (k != "rep" or a is None)} if b else {}
    if not b:
        return {k: v for k, v in a.items() if k not in ("host", "lp", "dev") and (k != "rep" or b is None)}
    out = dict(a)
    for k, v in b.items():
        if k in ("tup", "cnt", "keys"):
            continue
        if k in ("trs", "kp") and k in out:
            out[k] = sym_join(out[k], v)
            continue
        if k == "u" and k in out:
            out[k] = semantics.stronger_order(out[k], v)
        elif k == "ckpt" and k in out:
            out[k] = out[k] if out[k] == v else True  # (synchronous only where both are)
        elif k not in out:
            out[k] = v
        elif isinstance(v, list):
            out[k] = _merge_list(out[k], v)
        elif isinstance(v, bool):
            out[k] = out[k] or v
    # A container whose count is known on both sides: the join of what decides each count.
    ca, cb = a.get("cnt"), b.get("cnt")
    if ca is not None and cb is not None:
        out["cnt"] = sym_join(ca, cb)
    else:
        out.pop("cnt", None)
    # Tuples (multiple return values) keep their elements apart when both sides agree on length.
    ta, tb = a.get("tup"), b.get("tup")
    if ta is not None and tb is not None and len(ta) == len(tb):
        out["tup"] = [sym_join(x, y) for x, y in zip(ta, tb)]
    else:
        out.pop("tup", None)
    # A dict with constant keys on both sides: each key's values joined (a key one side lacks
    # keeps the other's value: reading it on that path fails anyway); else the whole only.
    out.pop("keys", None)
    ka, kb = a.get("keys"), b.get("keys")
    if ka is not None and kb is not None:
        keys = _join_keys(ka, kb)
        if keys is not None:
            out["keys"] = keys
    if out.get("num") and not (a.get("num") and b.get("num")):
        del out["num"]
    if out.get("one") and not (a.get("one") and b.get("one")):
        del out["one"]
    if out.get("ln") and not (a.get("ln") and b.get("ln")):
        del out["ln"]
    if out.get("host") and not (a.get("host") and b.get("host")):
        del out["host"]
    if out.get("dev") and not (a.get("dev") and b.get("dev")):
        del out["dev"]
    if out.get("rep") and not (a.get("rep") and b.get("rep")):
        del out["rep"]  # (fully replicated only where both are)
    # "lp": process-local when these parameters are; host data on the other side keeps it.
    la, lb = a.get("lp") or ([] if a.get("host") else None), b.get("lp") or ([] if b.get("host") else None)
    if la is None or lb is None or not (la or lb):
        out.pop("lp", None)
    else:
        out["lp"] = sorted(set(la) | set(lb))  # (uncapped: a dropped parameter would be unsound)
    hls = [x.get("hl", False) for x in (a, b) if x.get("callable")]
    hl = semantics.join_hostable(*hls) if len(hls) == 2 else (hls[0] if hls else False)
    if hl:  # (a callable that may run locally only where every joined one may)
        out["hl"] = hl
    else:
        out.pop("hl", None)
    return out


def _join_keys(ka: dict, kb: dict) -> dict | None:
    if ka is kb or ka == kb:
        return ka
    out = dict(ka)
    for k, v in kb.items():
        out[k] = sym_join(out[k], v) if k in out else v
    return out if len(out) <= MAX_KEYS else None


def keyed(out: Sym, keys: dict | None) -> Sym:
    """`out` (a dict's whole value) with its constant keys' values kept apart (`"keys"`)."""
    if keys is None or len(keys) > MAX_KEYS:
        return out
    return dict(out, keys={k: {x: y for x, y in v.items() if x != "keys"} for k, v in keys.items()})


def with_key(cur: Sym, k: str, v: Sym, whole: Sym) -> Sym:
    """The dict `cur` after `d[k] = v` with a constant key: `k` holds `v` alone; `whole` is the
    dict's value after the store (the fallback)."""
    keys = cur.get("keys")
    if keys is None or len(keys) >= MAX_KEYS and k not in keys:
        return {x: y for x, y in whole.items() if x != "keys"}
    return keyed(whole, dict(keys, **{k: v}))


def sym_taint(a: Sym) -> Sym:
    """Taint of a value computed from `a` (drops object kinds; keeps a process-subset marker)."""
    return {k: v for k, v in a.items() if k in ("pd", "pdc", "order", "hash", "via", "params", "refs", "sub", "lmax", "envp")}


def _count_taint(a: Sym) -> Sym:
    """What decides how often a loop body or an `if` arm runs, for the yields in it."""
    return {k: v for k, v in a.items() if k in ("pd", "pdc", "via", "params", "refs")}


def sym_element(a: Sym) -> Sym:
    out = {k: v for k, v in a.items() if k in ("order", "hash", "via", "params", "refs")}
    pdc = _merge_list(a.get("pd", []), a.get("pdc", []))
    if pdc:
        out["pdc"] = pdc
    if "via" in out or "params" in out or "refs" in out:
        out["elem"] = True  # resolved taint of via/params/refs becomes content-only
    if a.get("host"):
        out["host"] = True  # an element of process-local data is process-local
    elif a.get("lp"):
        out["lp"] = a["lp"]  # (and one of what is so where these parameters are, is so there)
    return out


def _as_content(v: Sym, line: int) -> Sym:
    """`v` as process-local content, the same number of values everywhere: its direct sources in
    `pdc`, what it reads from parameters, calls and attributes through an `ELEMENT_CALL` record
    (resolved as content; the parameters it names there reach a call's result as an element's
    content, not its count: `ProjectIndex._params_in`)."""
    out = dict(v)
    pd = out.pop("pd", None)
    if pd:
        out["pdc"] = _merge_list(out.get("pdc", []), pd)
    inner = {k: out.pop(k) for k in ("via", "refs", "params") if k in out}
    if inner:
        out["via"] = [{"l": line, "n": ELEMENT_CALL, "a": _prune(inner)}]
    return out


def jit_statics(argnums: list[int], argnames: list[str], positional: list[str] | None) -> list[list]:
    """What `static_argnums` / `static_argnames` make static, as [position, name] pairs (either may be
    None). Where the function's positional parameters are known each names the other, as JAX infers
    one from the other: a call may pass a static argument either way."""
    out: set[tuple] = set()
    n = len(positional) if positional is not None else None
    for k in argnums:
        if n is not None and -n <= k < n:
            out.add((k % n, positional[k]))
        elif k >= 0:
            out.add((k, None))
    for name in argnames:
        out.add((positional.index(name), name) if positional and name in positional else (None, name))
    return [list(t) for t in sorted(out, key=lambda t: (t[0] if t[0] is not None else -1, t[1] or ""))]


def jit_factory_result(factory: list, target: ast.expr | None, positional_of) -> Sym:
    """What applying a jit decorator of the project's own (`[kind, static nums, static names]`)
    to `target` makes: a jitted function with those static arguments (not collective work)."""
    kind, nums, names = factory
    out: Sym = {"callable": f"`{_expr_name(target) if target is not None else 'function'}` ({kind})"}
    statics = jit_statics(nums, names, positional_of(target))
    if statics:
        out["statics"] = statics
    return out


def literal_statics(keywords: list[ast.keyword]) -> tuple[list[int], list[str]]:
    """The literal `static_argnums` / `static_argnames` of a jit call or decorator."""
    nums: list[int] = []
    names: list[str] = []
    for kw in keywords:
        if kw.arg not in ("static_argnums", "static_argnames"):
            continue
        items = kw.value.elts if isinstance(kw.value, (ast.Tuple, ast.List)) else [kw.value]
        for it in items:
            if isinstance(it, ast.UnaryOp) and isinstance(it.op, ast.USub) and isinstance(it.operand, ast.Constant) \
                    and type(it.operand.value) is int and kw.arg == "static_argnums":
                nums.append(-it.operand.value)  # `static_argnums=-1`: the last positional parameter
            elif not isinstance(it, ast.Constant):
                continue
            elif kw.arg == "static_argnames" and isinstance(it.value, str):
                names.append(it.value)
            elif kw.arg == "static_argnums" and isinstance(it.value, int) and not isinstance(it.value, bool):
                nums.append(it.value)
    return nums, names


def _static_params(literals: tuple[list[int], list[str]], positional: list[str]) -> list[str]:
    """The parameters a jit decorator's static nums and names (`literal_statics`) make static."""
    return sorted({name for _, name in jit_statics(*literals, positional) if name})


@dataclass
class FunctionFacts:
    name: str  # qualified
    line: int
    params: list[str] = field(default_factory=list)
    cls: str | None = None  # enclosing class (qualified) for methods
    returns: Sym = field(default_factory=dict)
    collective: list | None = None  # [desc, line] of the first direct collective work
    jit: str | None = None  # decorated with a jit-like wrapper
    calls: list[dict] = field(default_factory=list)
    called_params: list[str] = field(default_factory=list)
    device_access: list | None = None  # [desc, line] first device access (MCJ401)
    # Prefilter facts about the body: divergent values seen ("p" process-dependent, "o" order,
    # "h" string hash), sinks that need no collective ("x" computed index/`.shard()`, "s" seed), and
    # "g": configures work for a subset of processes (`active_processes=...`), "t" may start work on
    # another thread, "r" a `try` whose body returns and whose handler goes on (MCJ104 fallback), "j"
    # given to a jit wrapper in this module (`jax.jit(step)`): its body is traced, "d" a call
    # made as a statement that may drop a reduction's result (`semantics.may_drop_reduction`), "i"
    # a `try` body taking `next()` of an iterator parameter (`_Summarizer.raised_where`).
    flags: str = ""
    refs: list[str] = field(default_factory=list)  # project refs read (attributes, other modules' globals)
    prop: bool | int = False  # a @property: reading the attribute calls it (semantics.CACHED_PROPERTY: cached)
    statics: list[str] = field(default_factory=list)  # parameters a jit decorator makes static
    # Parameters whose default is a literal constant: name -> `semantics.constant_repr` of it.
    defaults: dict[str, str] = field(default_factory=dict)
    # Jitted calls that run on this process alone when these parameters hold process-local data
    # (`semantics.arg_locality`): [desc, line, [params]]; collective work only in calls that
    # pass anything else (the index decides per call site).
    param_jits: list = field(default_factory=list)
    host_defaults: list[str] = field(default_factory=list)  # parameters whose default is host data
    # Array work (`jnp.mean(x)`, `x.sum()`) on an operand not known here to be a global array but
    # read from elsewhere (an attribute, a global, a helper's result): [desc, line, operand]; the
    # index makes it collective work where the operand resolves to a global array.
    glob_ops: list = field(default_factory=list)
    # Attribute reads that may run a property's getter (`semantics.property_read_work`): {"l":
    # line, "a": attr} with "c": the receiver's class when known here, else "r": its Sym.
    prop_reads: list = field(default_factory=list)
    # Parameters called only under a condition that may differ between processes (a
    # `rank_zero_only` decorator's wrapped function): param -> the condition's Sym.
    gated: dict = field(default_factory=dict)
    decos: list[str] = field(default_factory=list)  # project functions applied as its decorators
    # Parameters handed on as they are: [{"n"|"m"+"r"|"t": the callee, "fw": {arg key: param}}]
    forwards: list = field(default_factory=list)
    # A method's attributes of its own object that it assigns or changes in place (`self.x = v`,
    # `self.xs.pop(0)`, `self.d[k] = v`): `_self_writes`.
    writes: list[str] = field(default_factory=list)
    # Calls made under conditions that may differ between processes (enclosing branches, earlier
    # early exits): [{"n"|"m"+"r" (+"bd"): the callee, "c": what the conditions carry}]. What
    # the callee writes of its object is then written on some processes only
    # (`ProjectIndex._written_under_condition`).
    cond_calls: list = field(default_factory=list)
    # A method's attributes of its own object that it stores from its parameters, directly or
    # under a condition on them (`self.stop = loss > self.best`, `if loss > self.best:
    # self.stop = True`): attr -> those parameters. A call's arguments reach the receiver's
    # attribute there (the precise pass: `stored_by_call`).
    param_writes: dict = field(default_factory=dict)
    # Its parameters' objects it stores into (`control["stop"] = True`, `state.done = x`) from its
    # other parameters, directly or under a condition on them: param -> those parameters. The
    # object a call passes there then holds what the call passed for them (`FileAnalysis._method_stores`).
    arg_writes: dict = field(default_factory=dict)
    # Its parameters an array it returns was allocated from as whole sizes (`np.full((n,
    # max_len), pad)`; the returns' "shp"): a call's arguments for them are the result's shape.
    sized_by: list[str] = field(default_factory=list)
    # The tests of its own parameters each direct collective work point lies under (`if sync:`,
    # after `if not sync: return`): one list of [param, truth] per point, [] for one under none
    # (`_Summarizer._param_gates`; a call's own are its record's "gp"). The index decides at each
    # call whether its constant arguments falsify every point's tests (`ProjectIndex.work_gates`).
    dgates: list = field(default_factory=list)
    # Its parameters that name the path of a file it writes (`np.save(os.path.join(d, name), x)`,
    # `open(path, "w")`, `(d / n).write_text(...)`; `semantics.written_path`): a call's argument
    # for one of them is a path written there (MCJ106: a process's part written under a name it
    # drew for itself).
    path_writes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        d: dict[str, Any] = {"name": self.name, "line": self.line}
        for k in ("params", "cls", "returns", "collective", "jit", "calls", "called_params", "device_access", "flags", "refs",
                  "prop", "statics", "defaults", "param_jits", "host_defaults", "glob_ops", "prop_reads", "gated", "decos", "forwards", "writes", "cond_calls",
                  "param_writes", "arg_writes", "sized_by", "dgates", "path_writes"):
            v = getattr(self, k)
            if v:
                d[k] = v
        return d

    @classmethod
    def from_dict(cls, d: dict) -> FunctionFacts:
        return cls(
            d["name"], d["line"], list(d.get("params", [])), d.get("cls"), dict(d.get("returns", {})),
            d.get("collective"), d.get("jit"), list(d.get("calls", [])), list(d.get("called_params", [])),
            d.get("device_access"), d.get("flags", ""), list(d.get("refs", [])), d.get("prop") or False,
            list(d.get("statics", [])), dict(d.get("defaults", {})), list(d.get("param_jits", [])),
            list(d.get("host_defaults", [])), list(d.get("glob_ops", [])), list(d.get("prop_reads", [])),
            dict(d.get("gated", {})), list(d.get("decos", [])), list(d.get("forwards", [])),
            list(d.get("writes", [])), list(d.get("cond_calls", [])), dict(d.get("param_writes", {})),
            dict(d.get("arg_writes", {})), list(d.get("sized_by", [])), list(d.get("dgates", [])),
            list(d.get("path_writes", [])),
        )


@dataclass
class ClassFacts:
    name: str
    line: int
    bases: list[str] = field(default_factory=list)
    attrs: dict[str, Sym] = field(default_factory=dict)  # attr -> value assigned by any method
    methods: list[str] = field(default_factory=list)
    # attr -> what the conditions carry under which a method (not `__init__`'s straight line)
    # assigns it (`ProjectIndex.attr` joins it as `evidence.IMPLICIT_ATTRIBUTE`): read elsewhere, a guess.
    cond_attrs: dict[str, Sym] = field(default_factory=dict)
    # Attributes bound somewhere with no condition around the binding: in the class body (a
    # class attribute, a dataclass field), or `self.attr = v` in a method's straight line. One
    # bound only under conditions may be missing from an object (`ProjectIndex.absent_unless`).
    sure_attrs: list[str] = field(default_factory=list)
    # attr -> what the conditions carry without which a binding of it does not run: enclosing
    # branches and earlier early returns, not an earlier `raise` outside a `try` (`_attr_fatal`:
    # where that raised there is no object). `ProjectIndex.absent_unless` reads it.
    absent_conds: dict[str, Sym] = field(default_factory=dict)
    # Its members that hold the number of processes on every object (`_count_members`): an
    # attribute whose every store is the count (`self.rank, self.size = jax.process_index(),
    # jax.process_count()`), a property returning it; "name()" for a method returning it.
    # Both passes read them through `member_is_count` (`semantics.is_process_count`).
    counts: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        d = {"name": self.name, "line": self.line, "bases": self.bases, "attrs": self.attrs, "methods": self.methods}
        if self.counts:
            d["counts"] = self.counts
        if self.cond_attrs:
            d["cond_attrs"] = self.cond_attrs
        if self.sure_attrs:
            d["sure_attrs"] = self.sure_attrs
        if self.absent_conds:
            d["absent_conds"] = self.absent_conds
        return d

    @classmethod
    def from_dict(cls, d: dict) -> ClassFacts:
        return cls(d["name"], d["line"], list(d.get("bases", [])), dict(d.get("attrs", {})), list(d.get("methods", [])),
                   dict(d.get("cond_attrs", {})), list(d.get("sure_attrs", [])), dict(d.get("absent_conds", {})),
                   list(d.get("counts", [])))


def member_is_count(mro: list[ClassFacts], attr: str, called: bool) -> bool:
    """Whether `obj.attr` (`obj.attr()` where `called`) is the number of processes, for an object
    of the first class of `mro` (its classes, in order): the first of them that defines `attr`
    (stores it, or defines a method of that name) lists it in `ClassFacts.counts`."""
    key = f"{attr}()" if called else attr
    for cf in mro:
        if key in cf.counts:
            return True
        if attr in cf.attrs or attr in cf.methods or attr in cf.cond_attrs or attr in cf.sure_attrs:
            return False
    return False


@dataclass
class ModuleSummary:
    """Cross-file facts of one source file (plain data; JSON round-trip via to_dict/from_dict)."""

    path: str
    module: str
    imports: dict[str, str] = field(default_factory=dict)  # local name -> qualified name
    functions: dict[str, FunctionFacts] = field(default_factory=dict)
    classes: dict[str, ClassFacts] = field(default_factory=dict)
    globals: dict[str, Sym] = field(default_factory=dict)  # module-level name -> value
    imported_modules: list[str] = field(default_factory=list)
    # Of those, the modules imported only inside function bodies: they load when the function is
    # called, not when this module is imported (`ProjectIndex._import_device_access`).
    lazy_imports: list[str] = field(default_factory=list)
    # Cheap prefilter flags.
    direct_sources: bool = False  # uses a built-in process-dependent source
    order_sources: bool = False  # lists a directory / builds a set
    hash_calls: bool = False
    initialize_line: int = 0  # first `jax.distributed.initialize()` call, 0 if none
    initialize_script_only: bool = False  # every such call is in the `__main__` block (not run on import)
    # Per `jax.distributed.initialize()` call: the mode value that gates it ("attr=L": it runs
    # only where `x.attr == "L"`, `_initialize_gates`), "" where no such test gates it.
    initialize_gates: list[str] = field(default_factory=list)
    # The mode values this module gives ("=L": a string literal produced as a value, passed,
    # assigned, returned; "attr=*": `attr=` given a value at launch or not a literal), `_mode_sets`.
    mode_sets: list[str] = field(default_factory=list)
    pins_cpu: bool = False  # the script pins JAX to the CPU backend (`knowledge.PLATFORM_ENV_KEYS`)
    process_free_test: bool = False  # a pytest module naming no multi-process API (`knowledge.MULTI_PROCESS_NAMES`)
    device_scope: str = ""  # "local": names only this process's devices; "global": any device set or process API
    test_plugins: list[str] = field(default_factory=list)  # modules its `pytest_plugins` loads ("?": not a literal)
    refs_used: list[str] = field(default_factory=list)  # attribute/global refs read (prefilter)
    seeded_rngs: list[str] = field(default_factory=list)  # RNG modules the file seeds ("random", ...)
    import_device_access: list | None = None  # [desc, line] device access at import time
    # Project functions this file uses as values (stored, passed, returned; not called by name):
    # called elsewhere with arguments no call record shows.
    value_refs: list[str] = field(default_factory=list)
    # Attributes assigned through a reference other than `self` (`trainer.should_stop = True`):
    # attr -> what the enclosing conditions carry. The receiver's class is not
    # known here; the index joins these into that attribute of each class that has it, as a guess.
    attr_stores: dict[str, Sym] = field(default_factory=dict)
    # Draws from a generator held in an attribute (`self.rng.normal()`, `self.model.rng.randint()`):
    # "Class.attr" (drawn through `self`) or "attr" (through another object, its class not known
    # here) -> what decides how far they advance it (the draw's size, the enclosing conditions).
    # The index joins these into that attribute (of that class and the classes related to it, or
    # of any class) where it holds a generator, as a guess.
    gen_stores: dict[str, Sym] = field(default_factory=dict)
    # Attributes stored again from a value a call computes from their own (`cfg.out =
    # broadcast(cfg.out)`, `self.seed = int(allgather(self.seed)[0])`): attr -> those values. Where
    # one agrees across processes while the attribute is process-dependent, the program makes it
    # agree there, and the index takes a read as seeing the process-dependent value by a guess
    # (which store comes first is not followed: `ProjectIndex.attr`).
    restores: dict[str, list] = field(default_factory=dict)
    version: int = SUMMARY_VERSION

    def to_dict(self) -> dict:
        return {
            "version": self.version,
            "path": self.path,
            "module": self.module,
            "imports": self.imports,
            "functions": {k: v.to_dict() for k, v in self.functions.items()},
            "classes": {k: v.to_dict() for k, v in self.classes.items()},
            "globals": self.globals,
            "imported_modules": self.imported_modules,
            "lazy_imports": self.lazy_imports,
            "direct_sources": self.direct_sources,
            "order_sources": self.order_sources,
            "hash_calls": self.hash_calls,
            "initialize_line": self.initialize_line,
            "initialize_script_only": self.initialize_script_only,
            "initialize_gates": self.initialize_gates,
            "mode_sets": self.mode_sets,
            "pins_cpu": self.pins_cpu,
            "process_free_test": self.process_free_test,
            "device_scope": self.device_scope,
            "test_plugins": self.test_plugins,
            "import_device_access": self.import_device_access,
            "refs_used": self.refs_used,
            "seeded_rngs": self.seeded_rngs,
            "value_refs": self.value_refs,
            "attr_stores": self.attr_stores,
            "gen_stores": self.gen_stores,
            "restores": self.restores,
        }

    @classmethod
    def from_dict(cls, d: dict) -> ModuleSummary:
        if d.get("version") != SUMMARY_VERSION:
            raise ValueError(f"summary version {d.get('version')} != {SUMMARY_VERSION}")
        return cls(
            path=d["path"],
            module=d["module"],
            imports=dict(d.get("imports", {})),
            functions={k: FunctionFacts.from_dict(v) for k, v in d.get("functions", {}).items()},
            classes={k: ClassFacts.from_dict(v) for k, v in d.get("classes", {}).items()},
            globals=dict(d.get("globals", {})),
            imported_modules=list(d.get("imported_modules", [])),
            lazy_imports=list(d.get("lazy_imports", [])),
            direct_sources=bool(d.get("direct_sources")),
            order_sources=bool(d.get("order_sources")),
            hash_calls=bool(d.get("hash_calls")),
            initialize_line=int(d.get("initialize_line", 0)),
            initialize_script_only=bool(d.get("initialize_script_only")),
            initialize_gates=list(d.get("initialize_gates", [])),
            mode_sets=list(d.get("mode_sets", [])),
            pins_cpu=bool(d.get("pins_cpu")),
            process_free_test=bool(d.get("process_free_test")),
            device_scope=str(d.get("device_scope", "")),
            test_plugins=list(d.get("test_plugins", [])),
            refs_used=list(d.get("refs_used", [])),
            seeded_rngs=list(d.get("seeded_rngs", [])),
            import_device_access=d.get("import_device_access"),
            value_refs=list(d.get("value_refs", [])),
            attr_stores=dict(d.get("attr_stores", {})),
            gen_stores=dict(d.get("gen_stores", {})),
            restores={k: list(v) for k, v in d.get("restores", {}).items()},
        )


# --- name resolution -------------------------------------------------------------------------------------


def resolve_relative(module: str, is_package: bool, level: int, name: str | None) -> str:
    parts = module.split(".")
    if not is_package:
        parts = parts[:-1]
    if level > 1:
        parts = parts[: len(parts) - (level - 1)] if level - 1 <= len(parts) else []
    base = ".".join(parts)
    if name:
        return f"{base}.{name}" if base else name
    return base


STAR = "*"  # key prefix, in a module's imports, of the modules it star-imports
EXPORTS = "!all"  # key, in a module's imports, of its literal `__all__` (comma-separated names)


def star_exports(imports: dict[str, str]) -> set[str] | None:
    """The names `from <module> import *` takes from a module with these imports: its literal
    `__all__`, or None (then every name not starting with `_`)."""
    text = imports.get(EXPORTS)
    return None if text is None else set(filter(None, text.split(",")))


def collect_imports(tree: ast.Module, module: str, is_package: bool) -> tuple[dict[str, str], list[str]]:
    """Local alias -> qualified name for every import in the file (any nesting level)."""
    imports: dict[str, str] = {}
    modules: list[str] = []
    for node in tree.body:  # a literal `__all__`: what a star import of this module takes
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets) \
                and isinstance(node.value, (ast.List, ast.Tuple)) \
                and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.value.elts):
            imports[EXPORTS] = ",".join(e.value for e in node.value.elts)
    for node in _statements(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    imports[a.asname] = a.name
                else:
                    top = a.name.split(".")[0]
                    imports.setdefault(top, top)
                modules.append(a.name)
        elif isinstance(node, ast.ImportFrom):
            base = resolve_relative(module, is_package, node.level, node.module) if node.level else (node.module or "")
            modules.append(base)
            for a in node.names:
                if a.name == "*":
                    # `from common import *`: a name defined nowhere here may be common's
                    # (`ProjectIndex.star_resolve`).
                    imports[STAR + base] = base
                    continue
                imports[a.asname or a.name] = f"{base}.{a.name}" if base else a.name
                modules.append(f"{base}.{a.name}")
    return imports, modules


_BLOCK_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")


def _module_level_imports(tree: ast.Module, module: str, is_package: bool) -> list[str]:
    """The modules (as `collect_imports` names them) that an import statement outside every
    function body loads: those run when the module is imported (class bodies, `if`/`try` blocks
    too); an import in a function runs only when the function is called."""
    out: list[str] = []
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if isinstance(node, ast.Import):
            out.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = resolve_relative(module, is_package, node.level, node.module) if node.level else (node.module or "")
            out.append(base)
            out.extend(f"{base}.{a.name}" for a in node.names if a.name != "*")
        elif isinstance(node, ast.ClassDef):
            stack.extend(node.body)
        else:
            for f in _BLOCK_FIELDS:
                block = getattr(node, f, None)
                if block:
                    stack.extend(block)
    return out


def _statements(tree: ast.Module):
    """Every statement, nested ones included, without walking expressions (imports are
    statements; a full `ast.walk` costs as much as the rest of the summary)."""
    stack = list(reversed(tree.body))
    while stack:
        node = stack.pop()
        yield node
        for f in _BLOCK_FIELDS:
            block = getattr(node, f, None)
            if block:
                stack.extend(reversed(block))


def _short_path(path: str) -> str:
    return os.path.basename(path)


# --- the summarizer -----------------------------------------------------------------------------------------


class _Scope:
    def __init__(self, facts: FunctionFacts, env: dict[str, Sym], outer: _Scope | None, is_module: bool = False):
        self.facts = facts
        self.env = Env(env)
        self.outer = outer
        self.is_module = is_module
        self.strings: dict[str, str | None] = {}  # names assigned to a str literal (semantics.note_string_binding)
        self.peeks: dict = {}  # names assigned `next(it)` (semantics.StatementRules.note_peek)
        self.sized: dict = {}  # what made each name's value last (semantics.note_sized)
        self.none_params: set[str] = set()  # parameters whose default is None
        self.param_pos: dict[str, int] = {}  # parameter -> position after self (-1: keyword-only)
        self.declared: set[str] = set()  # names this function declares `global`


def _unparse(node: ast.AST) -> str:
    """`ast.unparse(node)`; a name or a dotted name (`self.book.mark`: most callees, many
    conditions) without building an unparser, which writes exactly these parts for them."""
    n, parts = node, []
    while type(n) is ast.Attribute:
        parts.append(n.attr)
        n = n.value
    if type(n) is ast.Name:
        parts.append(n.id)
        return ".".join(reversed(parts))
    return ast.unparse(node)


class _Summarizer(semantics.StatementRules):
    def __init__(self, path: str, module: str, tree: ast.Module, is_package: bool, source: str = ""):
        # Per function: (name, depth) of each parameter called on every path through an arm that
        # leaves, of an `if` nested in `depth` ifs; kept while the block holding that `if` is open.
        self._exit_called: dict[str, set[tuple[str, int]]] = {}
        self._called_memo: dict[int, frozenset[str]] = {}  # id(statement list) -> its `_surely_called_names`
        self._str_defaults: dict[str, dict[str, str]] = {}
        self.path = path
        self.short = _short_path(path)
        self.module = module
        self.tree = tree
        self.imports, mods = collect_imports(tree, module, is_package)
        lazy = set(mods) - set(_module_level_imports(tree, module, is_package))
        self.summary = ModuleSummary(path, module, dict(self.imports), imported_modules=sorted(set(mods)),
                                     lazy_imports=sorted(lazy))
        self.module_defs: dict[str, str] = {}  # top-level def/class name -> qualified
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.module_defs[node.name] = f"{module}.{node.name}"
        # Classes this module defines at its top level, whatever their names' case (`class tqdm:`).
        self.module_classes = frozenset(f"{module}.{n.name}" for n in tree.body if isinstance(n, ast.ClassDef))
        # The methods each of them defines in its body (`own_method`: `counter.update(m)` of an
        # instance of a class of this module that defines `update` runs that method).
        self.class_methods: dict[str, frozenset[str]] = {
            f"{module}.{n.name}": frozenset(b.name for b in n.body if isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef)))
            for n in tree.body if isinstance(n, ast.ClassDef)}
        self.class_stack: list[ClassFacts] = []
        # `self.m(args)` calls of a method of the enclosing class: (class, method, positional
        # argument Syms, keyword argument Syms), for `_stores_by_own_calls`.
        self._self_calls: list[tuple[ClassFacts, str, list[Sym], dict[str, Sym]]] = []
        self.summary.seeded_rngs = _seeded_rngs(source, self.imports) if ".seed(" in source else []
        # (`_device_scope` walks only a module whose text may name a device set)
        self._names_devices = not source or any(w in source for w in _DEVICE_WORDS)
        # (`pytest_plugins` can be bound only where the text spells it: an ASCII source's names
        # are its text; a non-ASCII one's are normalised, NFKC, so it is walked)
        self._names_plugins = not source or "pytest_plugins" in source or not source.isascii()
        # (likewise `raise StopIteration`: `_raises_stop_iteration` is asked only where the text
        # may name it, which most modules do not)
        self._names_stop = not source or "StopIteration" in source or not source.isascii()
        # (and a generator's `yield`, a keyword: a function of a module whose text never spells
        # it has none, so its body is not walked to find one)
        self._names_yield = not source or "yield" in source or not source.isascii()
        self.seeded_per_process: set[str] = set()  # modules seeded with a process-dependent value
        self.mod_facts = FunctionFacts(f"{module}.<module>", 1)
        self.summary.functions[self.mod_facts.name] = self.mod_facts
        self.scope = _Scope(self.mod_facts, {}, None, is_module=True)
        self.module_scope = self.scope
        self.pending: list[tuple] = []
        self._in_class_body = False
        self._refs: set[str] = set()
        self._loop_taints: list[Sym] = []
        # Conditions a `return` depends on: enclosing branches, and earlier `if`s one of whose
        # sides left the function (`if jax.process_index() != 0: return None`).
        self._ret_taints: list[Sym] = []
        # What the conditions an attribute assignment runs under carry (`_implicit_taint`): as
        # `_ret_taints`, parameters' conditions included (their other sources still reach).
        self._attr_taints: list[Sym] = []
        # Per `_attr_taints` entry: whether it is an earlier `if` whose exiting side only raises,
        # outside any `try` (`if bad: raise ...`). Where it raised the object is never built, so a
        # binding after it is there on every process that has the object (`ClassFacts.absent_conds`).
        self._attr_fatal: list[bool] = []
        self._try_depth = 0
        self._attr_params: list[Sym] = []  # the parameters the enclosing conditions read (`_param_write`)
        self._grew: set[str] = set()  # local containers given a key or an element in the current arm (`bound_under`)
        self._arm_grew: set[str] = set()  # those of the arms just run (`arms_end`)
        # Tests of the function's own parameters the code being read lies under: (param, truth)
        # (`_param_gate`; recorded on calls as "gp" and on direct collective work as `dgates`).
        self._gates: list[tuple[str, bool]] = []
        self._arm_gates: dict[int, list[tuple[str, bool]]] = {}  # id(an `if`'s arm) -> the tests it holds under
        self._exit_gates: dict[int, list[tuple[str, bool]]] = {}  # id(an `if`) -> the tests where its body fails
        self._gate_names: frozenset[str] | None = None  # (the function's parameters never assigned: `_param_gate`)
        self._gate_node: ast.AST | None = None
        self._cond_call_at: dict[int, tuple[str, int]] = {}  # a `cond_calls` entry -> (callee's code, line)
        self._exit_counts: list[Sym] = []  # conditions of early exits so far: how often later yields run
        # Inside a loop that never ends (`while True:` left by no `break` or `return`): the counts
        # of `_loop_taints` and `_exit_counts` from these depths on decide nothing of how often a
        # yield runs, forever on every process (`_endless_loop`).
        self._endless_at: tuple[int, int] | None = None
        self._main_guard = False
        self._positional: dict[str, list[str]] = {}  # function -> positional parameters (static_argnums)
        # Host data and local jitted calls (semantics.is_host_data): the file's mesh context, the
        # calls found to run locally, the module's defs that close over host data only.
        self._mesh_context = semantics.mesh_context_in(source)
        self._local_call_nodes: set[int] = set()
        self._ret_host: dict[str, bool] = {}  # functions: every return so far is host data
        self._none_returns: dict[str, list] = {}  # functions: sources of conditions they return None under
        self._none_later: dict[str, Sym] = {}  # functions: conditions of those the index resolves
        # functions: constant key -> the conditions under which a returned dict display holds None
        # there ("tr" sources, those the index resolves), and the keys one holds a value at
        self._key_none: dict[str, dict[str, tuple[list, Sym]]] = {}
        self._key_value: dict[str, set[str]] = {}
        self._value_returns: set[str] = set()  # functions that return something other than None
        self._empty_returns: dict[str, list] = {}  # functions: sources of conditions they return `{}`/`[]` under
        self._filled_returns: set[str] = set()  # functions that return something else (None aside)
        # functions: the number of elements of each list display they return (None: another value),
        # with the sources of the process-dependent conditions each is returned under
        self._display_returns: dict[str, dict] = {}
        # functions: for each `return` of another value, whether it has a count decided by nothing
        # ("cnt" {}: a comprehension over `range(4)`, a draw of size 4) and is under no condition
        self._counted_returns: dict[str, list[bool]] = {}
        self._local_jits: set[str] = set()  # jit-decorated defs of this module that may run locally
        self._host_closed: dict[str, bool] = {}
        # name -> the first top-level def of that name (`_top_defs`), and the first top-level
        # statement of that name (a def or a class)
        self._top_defs_: tuple[dict[str, ast.AST], dict[str, ast.AST]] | None = None
        self._module_host_names: set[str] | None = None
        self._stores: dict[str, int] | None = None
        # whether the file may name the process count (`_is_process_count`), and the names bound
        # once to it, per function node (None: the module) (`semantics.scope_counts`)
        self._names_count = not source or "process_count" in source or "host_count" in source
        self._count_names: dict[int | None, tuple[set[str], set[str]]] = {}
        self._attr_stores: dict[str, list] | None = None  # (`_attribute_stores`, where a class asks)
        self._text = source  # (read by `_may_declare_global`, where a question needs it)
        self._left_here: set[ast.stmt] = set()  # decided `if`s whose arm taken always leaves (`decided`)
        self._handlers: frozenset[str] | None = None  # (see _signal_handlers)
        self.imports_text = " ".join(self.imports.values())

    # ---- names
    def _positional_params(self, target: ast.expr | None) -> list[str] | None:
        """The positional parameters of a function of this module (defined above `target`)."""
        q = self.qualify(target) if target is not None else None
        return self._positional.get(q) if q else None

    # `qualify`: semantics.StatementRules; an unknown global is a builtin or a star import's
    # (resolved in the file pass).
    name_parts = staticmethod(read_ast.name_parts)
    global_name = staticmethod(lambda name: name)

    def _local(self, name: str) -> Sym | None:
        return semantics.lookup_local(self.scope, name)

    def src(self, desc: str, node: ast.AST, kind: str = "") -> list:
        return [desc, node.lineno, kind] if kind else [desc, node.lineno]

    # ---- expressions
    def ev(self, node: ast.expr | None) -> Sym:
        if node is None:
            return {}
        m = getattr(self, "ev_" + type(node).__name__, None)
        if m is not None:
            out = m(node)
        else:
            out = {}
            for child in _children(node):
                if isinstance(child, ast.expr):
                    out = sym_join(out, sym_taint(self.ev(child)))
        if out:
            # Per-function prefilter facts: which kinds of divergent values the body touches.
            f = self.scope.facts
            if ("pd" in out or "pdc" in out) and "p" not in f.flags:
                f.flags += "p"
            if "order" in out and "o" not in f.flags:  # a set merely built is not an order yet
                f.flags += "o"
            if "hash" in out and "h" not in f.flags:
                f.flags += "h"
        return out

    without_order = staticmethod(lambda v: _strip_order(v) if "order" in v else v)

    @staticmethod
    def sorted_in_place(v: Sym, node: ast.Call) -> Sym:
        # (as `sorted(...)`: what calls on the elements return is resolved through an order-free record)
        return _strip_order(v, node.lineno) if "order" in v or "via" in v or "refs" in v else v
    length_only = staticmethod(lambda v: v)  # (a piece's start resolves in the index: `equal_pieces`)

    def emptiness(self, whole: Sym, node=None) -> Sym:
        """Whether `whole` is empty (`if steps:`, `not steps`, at `node`) has no order, and
        neither has what the index resolves later (a listing a call returns, a method's result on
        a parameter): it goes through an order-free record, as `len(steps)` does."""
        v = sym_taint(whole)
        if node is not None and "via" in v:
            refs = v.get("refs")
            out = _strip_order({k: x for k, x in v.items() if k != "refs"}, node.lineno)
            return dict(out, refs=refs) if refs is not None else out
        return self.without_order(v)

    def ev_UnaryOp(self, node: ast.UnaryOp) -> Sym:
        v = sym_taint(self.ev(node.operand))
        if isinstance(node.op, ast.Not) and semantics.truth_of_whole(node, read):
            return self.emptiness(v, node)
        return v

    def ev_BoolOp(self, node: ast.BoolOp) -> Sym:
        out: Sym = {}
        guard = _none_guard(node.values[0], self.scope) if isinstance(node.op, ast.Or) else None
        for i, v in enumerate(node.values):
            s = sym_taint(self.ev(v))
            if i and guard and s.get("pd"):
                # `host is None or jax.process_index() == host`: differs by process only when the
                # caller passes `host`; the index drops these sources at calls that leave it None.
                s = dict(s, pd=[d if len(d) > 2 and d[2].startswith(kinds.GUARD_PREFIX)
                                else [d[0], d[1], kinds.guarded(*guard, d[2] if len(d) > 2 else kinds.DERIVED)] for d in s["pd"]])
            out = sym_join(out, s)
        return out

    def ev_Constant(self, node):
        return {}

    def ev_children(self, node) -> Sym:
        out: Sym = {}
        for child in _children(node):
            if isinstance(child, ast.expr):
                out = sym_join(out, sym_taint(self.ev(child)))
        return out

    def _ref(self, q: str) -> Sym:
        self._refs.add(q)
        refs = self.scope.facts.refs
        if q not in refs and len(refs) < 200 and (q.startswith(".") or not q.startswith(_EXTERNAL_ROOTS)):
            refs.append(q)
        return {"refs": [q]}

    def ev_Name(self, node: ast.Name) -> Sym:
        loc = self._local(node.id)
        if loc is not None:
            return loc
        glb = self.module_scope.env.get(node.id)
        if not self.scope.is_module and self.declared_global(node.id):
            # (what functions declaring it global store into it: `bind`, resolved by the index)
            return sym_join(glb or {}, self._ref(f"{self.module}.{node.id}"))
        if glb is not None:
            return glb
        q = self.qualify(node)
        if q and (q != node.id or node.id in self.module_defs):
            return self._ref(q)
        return {}

    # `ev_Attribute` (semantics.StatementRules): attributes are references the index resolves;
    # a receiver's class may be known only then, so any attribute of the name is referred to.
    class_of = staticmethod(lambda v: v.get("cls") if v else None)

    def member(self, cls: str, attr: str, node: ast.Attribute, through_self: bool) -> Sym:
        self._property_read(attr, node, {"c": cls})
        return self._ref(f"{cls}.{attr}")

    def _gated_param_call(self, name: str) -> None:
        """A parameter (of this function, or of an enclosing one: a decorator's wrapper calling
        the function it wraps) called under conditions that may hold on some processes only
        (`semantics.GATED_CALL`): recorded on the function that owns the parameter. A call of it
        on every path (outside such conditions, or in both arms of one `if`) ungates it ({})."""
        scope = self.scope
        while scope is not None and not scope.is_module:
            if name in scope.facts.params:
                break
            if name in scope.env:
                return  # a local of that function, not an enclosing one's parameter
            scope = scope.outer
        else:
            return
        gated = scope.facts.gated
        control = [t for t in self._ret_taints if t and not t.get("_p") and set(t) & {"pd", "via", "refs"}]
        if any(n == name for n, _ in self._exit_called.get(self.scope.facts.name, ())):
            control = []  # (also called in an earlier arm that left: called on both ways)
        if not control or self._loops:
            if not self._loops:
                gated[name] = {}
            return
        if name not in gated and len(gated) < MAX_ITEMS:
            g: Sym = {}
            for t in control:
                g = sym_join(g, {k: v for k, v in t.items() if k in ("pd", "via", "refs")})
            gated[name] = _prune(g, 1)

    def _forwards(self, node: ast.Call, q: str | None, kwargs: dict[str, Sym]) -> None:
        """This function's parameters handed on as they are to another function's parameters
        (`self._run(cb)`, `threading.Thread(target=self._run, args=(cb,))`): the index follows a
        gate on the receiving parameter back to this one (`ProjectIndex.param_gate`)."""
        facts = self.scope.facts
        params = set(facts.params)

        def passed(pairs) -> dict[str, str]:
            return {k: a.id for k, a in pairs if isinstance(a, ast.Name) and a.id in params
                    and self._local(a.id) is not None}

        spec: dict[str, Any] | None = None
        if q in semantics.THREAD_STARTERS:
            kw = {k.arg: k.value for k in node.keywords if k.arg}
            target, tup = kw.get("target"), kw.get("args")
            if target is None or not isinstance(tup, (ast.Tuple, ast.List)):
                return
            fw = passed((str(i), a) for i, a in enumerate(tup.elts))
            spec = {"t": _prune(kwargs.get("target", {}), 1)}
        else:
            fw = passed([*((str(i), a) for i, a in enumerate(node.args)),
                         *((k.arg, k.value) for k in node.keywords if k.arg)])
            if not fw:
                return
            func = node.func
            if q is not None:
                spec = {"n": q}
            elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self" \
                    and self.class_stack and self._local("self") is not None:
                spec = {"n": f"{self.class_stack[-1].name}.{func.attr}", "bd": 1}
            elif isinstance(func, ast.Attribute) and isinstance(func.value, (ast.Name, ast.Attribute)):
                spec = {"m": func.attr, "r": _prune(self.ev(func.value), 1)}
        if spec is not None and fw and len(facts.forwards) < MAX_ITEMS:
            facts.forwards.append(dict(spec, fw=fw))

    def _ungate_both_arms(self, node: ast.If) -> None:
        """A parameter called in both arms of an `if` runs whichever arm is taken; one called in
        an arm that always leaves the function (`if rank != 0: return fn()`) runs also where a
        later call on the way on calls it (`_gated_param_call`: ungated there)."""
        self._called_in_both_arms(node.body, node.orelse, node)
        if not self.scope.is_module:
            depth = len(self._loop_taints)  # (the ifs around this one)
            called = self._exit_called.setdefault(self.scope.facts.name, set())
            # (an `if` inside this one's arms left on some of its paths only: `if rank != 0:
            # if everywhere: return fn()` does not call fn on every way that skips what follows)
            called -= {e for e in called if e[1] > depth}
            for arm in (node.body, node.orelse):
                if arm and _always_exits(arm):
                    called.update((n, depth) for n in self._called_in(arm))

    def _called_in(self, stmts: list) -> frozenset[str]:
        """`_surely_called_names(stmts)`, once per statement list: an `if` is read again for each
        `if` around it and each run of a loop body around it."""
        key = id(stmts)
        out = self._called_memo.get(key)
        if out is None:
            out = self._called_memo[key] = frozenset(_surely_called_names(stmts))
        return out

    def _gated_param_call_everywhere(self, name: str) -> None:
        saved, self._ret_taints = self._ret_taints, []
        try:
            self._gated_param_call(name)
        finally:
            self._ret_taints = saved

    def _property_read(self, attr: str, node: ast.Attribute, recv: dict) -> None:
        """Record a read of `.attr` in this function: the index decides whether a property's
        getter runs there (`ProjectIndex.property_read_work`)."""
        facts = self.scope.facts
        if facts is None or not isinstance(getattr(node, "ctx", None), ast.Load) or len(facts.prop_reads) >= 100:
            return
        if semantics.never_property(attr):
            return
        read = {"l": node.lineno, "a": attr, **recv}
        if not any(r["a"] == attr and r.get("c") == read.get("c") for r in facts.prop_reads):
            facts.prop_reads.append(read)

    def source(self, desc: str, node: ast.AST, kind: str) -> Sym:
        self.summary.direct_sources = True
        return {"pd": [self.src(desc, node, kind)]}

    def global_value(self, q: str, node: ast.Attribute) -> Sym:
        return self._ref(q)

    @staticmethod
    def selected(out: Sym, mask: Sym, node: ast.Subscript, by_name: bool) -> Sym:
        """(semantics.StatementRules.selected) `x[mask]`: its length differs where the mask's
        content does (the precise pass says which sources, and whether by a guess)."""
        pdc = mask.get("pdc")
        out = sym_join(out, {"pd": pdc}) if pdc else out
        if mask.get("params") and not by_name:
            # a mask of a parameter's content: as many rows as it selects there, which the index
            # decides at each call from what the call passes ("lmax", `ProjectIndex.call_name`)
            out = dict(out, lmax=_merge_list(out.get("lmax") or [], [[SIZED_BY_CONTENT, node.lineno]]))
        return out

    def any_member(self, attr: str, base: Sym, node: ast.Attribute) -> Sym:
        self._property_read(attr, node, {"r": _prune(base, 1)} if base and base.get("via") else {})
        out = self._ref("." + attr)
        if base and base.get("refs") and _is_self_attribute(node.value):
            # `self.meta.buckets`: the attribute of the class the index finds `self.meta` holding
            # (one project class at every construction), not only any attribute of that name
            out = sym_join(out, {"via": [{"l": node.lineno, "ga": attr, "r": {"refs": base["refs"]}}]})
        elif isinstance(node.value, ast.Name) and base and base.get("params") == [node.value.id] \
                and not self.scope.is_module:
            # `pool.rng` of a parameter `pool`: the attribute of the class every call passes there
            # (`ProjectIndex.param_classes`), not only any class's attribute of that name (a name
            # as generic as `rng` or `state` is not resolved by name alone)
            out = sym_join(out, {"via": [{"l": node.lineno, "ga": attr, "pf": [self.scope.facts.name, node.value.id]}]})
        if attr in K.LOCAL_SHARD_ATTRIBUTES:
            out = sym_join(out, self._local_shards(attr, base, node))
        return out

    @staticmethod
    def attribute_of(out: Sym, base: Sym, attr: str) -> Sym:
        if attr in semantics.SHAPE_ATTRIBUTES and out.get("pdc"):
            # a draw's shape is the size it was given (semantics.shape_keeps)
            kept = [d for d in out["pdc"] if semantics.shape_keeps(kinds.unguarded(d[2]) if len(d) > 2 else "")]
            out = {k: v for k, v in out.items() if k != "pdc"}
            if kept:
                out["pdc"] = kept
        return out

    def _local_shards(self, member: str, array: Sym, node: ast.AST) -> Sym:
        """This process's shards of `array`: process-local content (the twin of
        taint.FileAnalysis._local_shards)."""
        self.summary.direct_sources = True
        desc = semantics.local_shards_desc(member, True if array.get("glob") else semantics.GUESS)
        return {"pdc": [self.src(desc, node, kinds.LOCAL_DATA)]}

    # `ev_Subscript` (semantics.StatementRules): a key carrying anything (resolved by the index or
    # not) is a computed index: a possible per-process partition (prefilter flag "x").
    def indexed(self, node: ast.Subscript, base: Sym, idx: Sym, slicing: bool) -> None:
        if idx and "x" not in self.scope.facts.flags:
            self.scope.facts.flags += "x"

    varies = staticmethod(lambda v: bool(v.get("pd")))

    @staticmethod
    def equal_pieces(v: Sym, node: ast.AST) -> Sym:
        """What a piece of equal ones takes from its start (`semantics.StatementRules.ev_Subscript`):
        resolved by the index as `evidence.equal_pieces` (the start's value may come from calls,
        parameters or attributes known only then)."""
        return _resolved_later(sym_taint(v), node.lineno, evidence.EQUAL_PIECES_CALL, ("pd", "pdc", "via", "params", "refs"))

    @staticmethod
    def piece_content(v: Sym, node: ast.AST) -> Sym:
        """What the start of a piece of pieces known to be equally long (`semantics.length_multiple`)
        carries: which elements, not how many — content, resolved as such (`_as_content`)."""
        return _as_content(sym_taint(v), node.lineno)

    @staticmethod
    def split_piece(v: Sym, node: ast.AST) -> Sym:
        """A piece of a split at given points taken by an index (`semantics.StatementRules.
        ev_Subscript`): resolved by the index as `evidence.split_points`."""
        return _resolved_later(sym_taint(v), node.lineno, evidence.SPLIT_POINTS_CALL, ("pd", "pdc", "via", "params", "refs"))

    @staticmethod
    def with_fields(obj: Sym, fields: Sym | None, node: ast.Call) -> Sym:
        """A copy of `obj` with some fields set anew (`semantics.COPY_WITH_FIELDS_CALLS`): obj, and
        what the new fields carry as a store into one of its attributes, resolved by the index
        as `evidence.stored_attribute` (a guess), as `param.attr = value` is."""
        return _with_stored_attribute(obj, fields, node.lineno) if fields else obj

    @staticmethod
    def file_content(v: Sym, node: ast.Call, text: str) -> Sym:
        """What a file read at a path carrying `v` holds (`semantics.FILE_READ_CALLS`): resolved
        by the index as `evidence.file_content` (a guess)."""
        return _resolved_later(sym_taint(v), node.lineno, evidence.FILE_CONTENT_CALL,
                               ("pd", "pdc", "order", "hash", "via", "params", "refs"))

    # A directory listing's names: what the path carries (the taint pass says which sources
    # name a fresh temporary: `FileAnalysis.listed_content`).
    listed_content = staticmethod(lambda v, node, text: v)

    # (anything not yet resolved, `via`/`params`/`refs`, may still differ: not agreed here)
    carries_nothing = staticmethod(lambda v: not sym_taint(v))

    def zipped(self, out: Sym, node: ast.Call, args: list, bounded: bool | str) -> Sym:
        """`zip(...)`: the arguments' taint (how many tuples: shapes are not summarized), but
        `zip(range(n), data)` (n agreed): `bounded_count`."""
        if bounded == "least":
            return _as_content(sym_taint(out), node.lineno)  # (n tuples on every process: content only)
        return self.bounded_count(out, node) if bounded else out

    @staticmethod
    def bounded_count(v: Sym, node: ast.AST) -> Sym:
        """`zip(range(n), data)` (n agreed): what data holds, and what made its count differ,
        resolved by the index as `evidence.bounded_count` (a guess)."""
        v = sym_taint(v)
        out = _Summarizer.same_length(v)
        counts = {k: x for k, x in v.items() if k in ("pd", "via", "params", "refs")}
        if not counts:
            return out
        return sym_join(out, {"via": [{"l": node.lineno, "n": evidence.BOUNDED_COUNT_CALL, "a": _prune(counts)}]})

    def raised_where(self, body: list[ast.stmt]) -> Sym:
        """What decides whether a `try` body raises (`semantics.StatementRules.st_Try`): nothing
        the summary resolves, but where the body takes the next element of an iterator the
        function was given (`next(it)` without a default, `it.__next__()`), StopIteration is
        raised where that iterator runs out, so what the handlers return (`except StopIteration:
        return False, None`) follows how many elements the caller's iterator has: flag "i",
        read at each call by the precise pass (`FileAnalysis._runs_out_in_helper`)."""
        facts = self.scope.facts
        if self.scope.is_module or facts is None or "i" in facts.flags:
            return {}
        stack = list(body)
        while stack:
            n = stack.pop()
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                continue
            if isinstance(n, ast.Call) and not n.keywords:
                it = None
                if isinstance(n.func, ast.Name) and n.func.id == "next" and len(n.args) == 1:
                    it = n.args[0]
                elif isinstance(n.func, ast.Attribute) and n.func.attr == "__next__" and not n.args:
                    it = n.func.value
                if isinstance(it, ast.Name) and it.id in facts.params:
                    facts.flags += "i"
                    return {}
            _push_children(n, stack)
        return {}

    @staticmethod
    def endless_unless_empty(v: Sym, node: ast.AST) -> Sym:
        """`itertools.cycle(xs)`, `ds.repeat()`: no count (`endless`), but where the data is empty;
        what made its count differ is resolved by the index as `evidence.possibly_empty`."""
        v = sym_taint(v)
        out = _Summarizer.same_length(v)
        counts = {k: x for k, x in v.items() if k in ("pd", "via", "params", "refs")}
        if not counts:
            return out
        return sym_join(out, {"via": [{"l": node.lineno, "n": evidence.POSSIBLY_EMPTY_CALL, "a": _prune(counts)}]})

    def window(self, v: Sym, node: ast.AST, bound: ast.expr | None = None, length: Sym | None = None,
               padding: bool = False) -> Sym:
        """`x[:n]` (or `x[a:a + n]`, `x[a * n:(a + 1) * n]`: `bound` None), n the same
        everywhere: as long everywhere, as the precise pass's `window` (shapes are not
        summarized). What x reads from parameters, calls and attributes is
        resolved later: a `SAME_LENGTH_CALL` record keeps it as content of one length where
        what n reads (its record's "b") is then the same everywhere. A constant bound (`x[:K]`,
        a global) says nothing of x's length, which the precise pass keeps as a guess
        (`evidence.SHORT_WINDOW`): what x reads flows on as it is."""
        out = self.same_length(v)
        if bound is None and isinstance(node, ast.Subscript):
            _, keys = self.parts.read_subscript(node)
            if len(keys) == 1 and keys[0][0] == "slice":
                # (`x[a:a + n]`: its n, which says no more of x's length when constant than `x[:K]`)
                bound = semantics.window_length(keys[0][1], keys[0][2], read, self.parts.same)
        if bound is not None and semantics.is_constant(bound, read, lambda n: n not in self.scope.env, self.qualify,
                                                       lambda q: False):
            return out
        inner = {k: out.pop(k) for k in ("params", "via", "refs") if k in out}
        if not inner:
            return out
        rec = {"l": node.lineno, "n": SAME_LENGTH_CALL, "a": _prune(inner)}
        n = _count_taint(sym_taint(length or {}))
        if n:
            rec["b"] = _prune(n)
        if padding:
            rec["pad"] = 1  # (padded up to n: n rows, never fewer; `ProjectIndex._params_in`)
        return sym_join(out, {"via": [rec]})
    endless = property(lambda self: self.same_length)  # (an endless iterator: no count; shapes are not summarized)

    def padded_list(self, v: Sym, node: ast.AST) -> Sym:
        """(semantics: `xs + [pad] * (K - len(xs))`, K the greatest length of xs over the
        processes) K elements everywhere: a window of K of what xs holds (`window`, padded: its
        content, one length)."""
        return self.window(sym_taint(v), node, None, {}, padding=True)

    def padded(self, node: ast.Call, padding: tuple, args: list, argu: Sym) -> Sym:
        """(semantics.StatementRules.library_call) `concatenate([x, zeros((K - len(x), d))])`: K
        rows whatever x held (`semantics.padded_concatenation`): a window of K of what the parts
        hold (`window`, a `SAME_LENGTH_CALL` record: their content, one length, where what K
        reads is the same everywhere); a K that differs here differs."""
        length: Sym = {}
        for e in padding[2]:
            length = sym_join(length, sym_taint(self.ev(e)))
        if length.get("pd"):
            return argu  # (padded to this process's own size: as long as that)
        return self.window(sym_taint(argu), node, None, length, padding=True)

    @staticmethod
    def scalar_of(v: Sym) -> Sym:
        """(semantics.StatementRules.scalar_of) One number made of `v` (`int(x)`, `float(x)`):
        "one", so that the index gives it what its arguments' lengths decide as its value, not as
        a shape (`ProjectIndex`, `values.one_number`)."""
        return dict(v, one=True)

    @staticmethod
    def same_length(v: Sym) -> Sym:
        out = dict(v)
        pdc = _merge_list(out.pop("pd", []), out.get("pdc", []))
        if pdc:
            out["pdc"] = pdc
        return out

    def ev_Compare(self, node: ast.Compare) -> Sym:
        tested = semantics.none_tested(node, read)
        if tested is not None:
            v = self.ev(tested)
            return {"pd": v["tr"]} if v.get("tr") else {}  # (its structure's sources, not its content)
        out = sym_taint(self.ev(node.left))
        for op, c in zip(node.ops, node.comparators):
            v = sym_taint(self.ev(c))
            if isinstance(op, (ast.In, ast.NotIn)):
                v = _strip_order(v, node.lineno)
            out = sym_join(out, v)
        return out

    def star_iterated(self, v: Sym, at: ast.expr) -> Sym:
        """`*x` (`f(*x)`, `[*x]`, `zip(*d.items())`) iterates x: a set's order, as `list(x)`
        (`semantics.set_order`; the precise pass's `star_iterated`)."""
        if not v.get("u"):
            return v
        out = {k: x for k, x in v.items() if k != "u"}
        return sym_join(out, self.set_ordered(at, v))

    def ev_Starred(self, node: ast.Starred) -> Sym:
        return self.star_iterated(self.ev(node.value), node.value)

    def ev_Tuple(self, node: ast.Tuple) -> Sym:
        elems = [self.ev(e) for e in node.elts]
        out: Sym = {}
        for e in elems:
            out = sym_join(out, sym_taint(e))
        if 1 < len(elems) <= MAX_TUPLE and not any(isinstance(e, ast.Starred) for e in node.elts):
            out["tup"] = elems
        return out

    def ev_Set(self, node):
        order = semantics.set_order(node, read, self._num)
        elems = [self.ev(e.value if isinstance(e, ast.Starred) else e) for e in node.elts]  # (`{*s}`: no order)
        out: Sym = {"u": order} if order else {}
        for e in elems:
            out = sym_join(out, sym_taint(e))
        if not order:
            return out
        self.summary.order_sources = True
        return out

    # `comprehension` (semantics.StatementRules): the result carries the iterables' order and
    # per-process content (as many elements as they have), the filters' and the elements' taint.
    def enter_comp_scope(self) -> Env:
        saved, self.scope.env = self.scope.env, self.scope.env.child()  # the comprehension's own names
        return saved

    def leave_comp_scope(self, saved: Env) -> None:
        self.scope.env = saved

    comp_start = staticmethod(lambda kind: {"out": {}, "kind": kind, "cnt": {}})

    @staticmethod
    def comp_iteration(acc: dict, it: Sym, order: list, iterable: ast.expr, at: ast.comprehension) -> None:
        # How many elements: as many as the iterables have (as `Val.count_sources` counts them:
        # not what they hold), and `range(n)` runs n steps, even where n is read from local data.
        count = {k: v for k, v in it.items() if k in ("pd", "via", "params", "refs")}
        if _count_of(it) is not None:
            count = _count_of(it)  # (a container whose count is known: what decides it, not what it holds)
        if it.get("pdc") and semantics.is_range(iterable, read):
            count = sym_join(count, {"pd": it["pdc"]})
        acc["cnt"] = sym_join(acc["cnt"], count)
        if it.get("u") and order:
            acc["out"] = sym_join(acc["out"], {"order": [order[-1]]})
        # A process-dependent iterable (a slice by process index): as many elements as it has, as
        # a slice of it would be (the precise pass calls this a length source).
        acc["out"] = sym_join(acc["out"], {k: v for k, v in it.items() if k in ("order", "pd")})

    @staticmethod
    def comp_filter(acc: dict, c: Sym, test: ast.expr, node: ast.expr) -> None:
        acc["out"] = sym_join(acc["out"], c)
        # (and which of them the filters keep, whether they test process-dependent values or content)
        kept = {k: v for k, v in c.items() if k in ("via", "params", "refs")}
        if c.get("pd") or c.get("pdc"):
            kept["pd"] = _merge_list(c.get("pd", []), c.get("pdc", []))
        acc["cnt"] = sym_join(acc["cnt"], kept)

    @staticmethod
    def comp_element(acc: dict, v: Sym, e: ast.expr, elts: list) -> None:
        acc["out"] = sym_join(acc["out"], sym_taint(v))

    @staticmethod
    def comp_result(acc: dict, node: ast.expr) -> Sym:
        """What the comprehension holds; a list or dict built here also says what decides how
        many elements it has ("cnt": the iterables' and filters' count taint), apart from what
        they hold: a helper returning it returns a container of that count (`ProjectIndex`)."""
        out = acc["out"]
        if acc["kind"] == "dict" and out.get("order") and not _reads_enumerate_position(node):
            # A dict keyed by an arbitrarily ordered iteration: the same mapping everywhere, its
            # insertion order only differs (as the precise pass's `comp_result`): no value read
            # from it by key carries that order, nor what the index resolves of its values'
            # calls (`_strip_order`); iterating it does (an unordered container).
            out = dict(_strip_order(out, node.lineno), u=semantics.SALTED)
        if acc["kind"] in ("list", "dict"):
            return dict(out, cnt=acc["cnt"])
        return out

    def ev_List(self, node: ast.List) -> Sym:
        """A list display: its elements' taint; without a starred element, as many elements on
        every process ("cnt" decided by nothing)."""
        out = self.ev_children(node)
        return out if any(isinstance(e, ast.Starred) for e in node.elts) else dict(out, cnt={})

    def ev_Dict(self, node: ast.Dict) -> Sym:
        """A dict display: its keys' and values' taint; without `**` and with constant keys, as
        many keys on every process."""
        out: Sym = {}
        values: dict[int, Sym] = {}
        for child in _children(node):  # (as `ev_children`, keeping each value apart)
            if isinstance(child, ast.expr):
                v = self.ev(child)
                values[id(child)] = v
                out = sym_join(out, sym_taint(v))
        fixed = all(k is not None and isinstance(k, ast.Constant) for k in node.keys)
        keys = [semantics.constant_key(k, read) for k in node.keys]
        if fixed and None not in keys and len(set(keys)) == len(keys):
            out = keyed(out, {k: values[id(v)] for k, v in zip(keys, node.values)})
        return dict(out, cnt={}) if fixed else out
    element = staticmethod(sym_element)

    def unordered_set(self, v: Sym, order: bool | str) -> Sym:
        if not order:
            return v
        self.summary.order_sources = True
        return dict(v, u=order)

    def ev_Lambda(self, node: ast.Lambda) -> Sym:
        return {}

    def ev_Yield(self, node: ast.Yield) -> Sym:
        # A generator "returns" what it yields, as often as its enclosing loops run.
        v = sym_element(self.ev(node.value)) if node.value is not None else {}
        v = self._yield_count(v, node.lineno)
        if not self.scope.is_module:
            self.scope.facts.returns = sym_join(self.scope.facts.returns, v)
            self._ret_host[self.scope.facts.name] = False  # (a generator: not followed as host data)
        return {}

    def _count_of_test(self, c: Sym, test: ast.expr) -> Sym:
        """What decides an `if`'s outcome, for the yields it gates: its condition's taint and, for
        `x is None` tests (no content taint, see ev_Compare), what `x` carries."""
        out = _count_taint(c)
        for n in _nodes(test):  # (`ast.walk`'s order, less the context markers)
            if isinstance(n, ast.Compare) and isinstance(n.ops[0], (ast.Is, ast.IsNot)) \
                    and isinstance(n.left, (ast.Name, ast.Attribute, ast.Subscript)):
                out = sym_join(out, _count_taint(sym_taint(self.ev(n.left))))
        return out

    def _yield_count(self, v: Sym, line: int) -> Sym:
        """What a yielded element `v` carries once the count of the loops around it is added:
        content from the arguments (`elem`) only while no loop count comes from them; what it
        reads from calls and attributes stays content (an `ELEMENT_CALL` record): a generator
        yielding per-process draws from a loop of fixed length yields as often everywhere."""
        loops, exits = self._loop_taints, self._exit_counts
        if self._endless_at is not None:
            loops, exits = loops[:self._endless_at[0]], exits[:self._endless_at[1]]
        for t in [*loops, *exits]:
            if v.get("elem") and any(k in t for k in ("params", "via", "refs")):
                v = _as_content({k: x for k, x in v.items() if k != "elem"}, line)  # (how many differs with an argument)
            v = sym_join(v, t)
        return v

    def ev_YieldFrom(self, node: ast.YieldFrom) -> Sym:
        # `yield from xs` is `for x in xs: yield x`: xs's count is how often it yields, its
        # elements what it yields. (What xs reads from parameters stays content, as it was: the
        # index resolves a call of this generator from a summary with every argument joined, so
        # a parameter's count cannot be told from another argument's content there.)
        it = self.ev(node.value)
        self._loop_taints.append({k: v for k, v in _count_taint(it).items() if k != "params"})
        try:
            v = self._yield_count(sym_element(it), node.lineno)
        finally:
            self._loop_taints.pop()
        if not self.scope.is_module:
            self.scope.facts.returns = sym_join(self.scope.facts.returns, v)
            self._ret_host[self.scope.facts.name] = False  # (a generator: not followed as host data)
        return {}

    code = staticmethod(_unparse)  # (an expression's text: `ev_IfExp`)

    def ev_BinOp(self, node: ast.BinOp) -> Sym:
        a, b = self.ev(node.left), self.ev(node.right)
        out = sym_join(sym_taint(a), sym_taint(b))
        if isinstance(node.op, ast.Add) and self.padded_to_greatest(node.left, [node.right]):
            return self.padded_list(out, node)
        if isinstance(node.op, (ast.BitOr, ast.BitAnd, ast.Sub, ast.BitXor)):
            # (a set, or a dict's keys/items view, on either side: a set, `semantics.view_set_order`)
            u = semantics.stronger_order(a.get("u") or semantics.view_set_order(node.left, read),
                                         b.get("u") or semantics.view_set_order(node.right, read))
            if u:
                out["u"] = u
                self.summary.order_sources = True
        if a.get("glob") or b.get("glob"):
            out["glob"] = True  # arithmetic on a global jax.Array gives a global array
        return out

    def ev_Call(self, node: ast.Call) -> Sym:
        if not node.args and node.keywords and all(k.arg is not None for k in node.keywords) \
                and len(node.keywords) <= MAX_KEYS and isinstance(node.func, ast.Name) and node.func.id == "dict" \
                and self.qualify(node.func) == "dict":
            # `dict(a=x, b=y)`: a dict with constant keys (as a display, `ev_Dict`)
            prev, self._kwargs_of = self._kwargs_of, node
            out = self._ev_call(node)
            kwargs, self._kwargs_of = self._kwargs_of, prev  # (a call nested in an argument saved its own)
            return keyed(out, kwargs) if isinstance(kwargs, dict) else out
        if node.args and not node.keywords and isinstance(node.func, ast.Name) and node.func.id in _COUNT_KEEPING \
                and not any(isinstance(a, ast.Starred) for a in node.args) and self.qualify(node.func) == node.func.id:
            # `zip(a, b)`, `enumerate(a)` of containers whose counts are known: as many elements
            # as the shortest, decided by what decides theirs ("cnt")
            prev, self._args_of = self._args_of, node
            out = self._ev_call(node)
            args, self._args_of = self._args_of, prev
            if isinstance(args, list) and args and all(_count_of(a) is not None for a in args) and "cnt" not in out:
                cnt: Sym = {}
                for a in args:
                    cnt = sym_join(cnt, _count_of(a))
                out = dict(out, cnt=cnt)
            return out
        return self._ev_call(node)

    _args_of: object = None  # (the `zip(...)` call whose positional values `_ev_call` hands back)

    _kwargs_of: object = None  # (the `dict(k=v)` call whose keyword values `_ev_call` hands back)

    def _ev_call(self, node: ast.Call) -> Sym:
        args = [self.ev(a) for a in node.args]
        kwargs = {k.arg: self.ev(k.value) for k in node.keywords}
        if self._kwargs_of is node:
            self._kwargs_of = kwargs
        if self._args_of is node:
            self._args_of = args
        argu: Sym = {}
        for a in list(args) + list(kwargs.values()):
            argu = sym_join(argu, sym_taint(a))
        cbs = [r for a in list(args) + list(kwargs.values()) for r in a.get("refs", []) if not r.startswith(".")]
        cbc = [a["callable"] for a in list(args) + list(kwargs.values()) if a.get("callable")]
        glob_in = any(a.get("glob") for a in [*args, *kwargs.values()])
        func = node.func
        q = self.qualify(func)
        facts = self.scope.facts
        if any(k.arg in K.SUBGROUP_KWARGS and not (isinstance(k.value, ast.Constant) and k.value.value is None)
               for k in node.keywords):
            # Work on a subset of processes (`active_processes=...`, `processes=...`): not a
            # job-wide collective; objects configured this way carry the marker.
            self._subgroup_call(func)
            return sym_join(sym_taint(argu), {"sub": True})
        call: dict[str, Any] = {"l": node.lineno}
        if argu:
            call["a"] = _prune(argu)
        if glob_in:
            # The arguments that are global arrays (`semantics.jitted_work`, `ProjectIndex.global_at`).
            call["g"] = [str(i) for i, a in enumerate(args) if a.get("glob")] + [k for k, v in kwargs.items() if k and v.get("glob")]
        # Arguments that are the result of one call (`step(x)`): a global array where that call is
        # jitted work, which the index decides (`ProjectIndex._global_keys`).
        gv = {str(k): _prune(v, 1) for k, v in _keyed(args, kwargs)
              if k != "**" and set(v) == {"via"} and len(v["via"]) == 1 and "n" in v["via"][0]}
        if gv and len(gv) <= 4:
            call["gv"] = gv
        # Which parameters the call supplies (for sources guarded by `param is None or ...`).
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            call["np"] = -1
        elif node.args:
            call["np"] = len(node.args)
        if node.keywords and call.get("np") != -1:
            call["kw"] = [k.arg for k in node.keywords]
        if call.get("np") != -1 and not self._mesh_context:
            # Which arguments are process-local data, or are so when this function's parameters
            # are: the index analyses the callee in this call's context.
            hosts, needs = self._arg_locality(node)
            if hosts:
                call["h"] = hosts
            if needs:
                call["hp"] = needs
        # Per-process environment variable names handed to a helper that reads the one it is
        # given (`env_int("RANK")`): the index makes its result process-dependent.
        ks = {str(i): a.value for i, a in enumerate(node.args)
              if isinstance(a, ast.Constant) and isinstance(a.value, str) and K.is_per_process_env_key(a.value)}
        ks.update((k.arg, k.value.value) for k in node.keywords if k.arg and isinstance(k.value, ast.Constant)
                  and isinstance(k.value.value, str) and K.is_per_process_env_key(k.value.value))
        if ks:
            call["ks"] = ks
        # Literal constant arguments (`cleanup(sync=False)`): the index decides a callee's branches
        # on a parameter every call gives the same constant.
        kc = {str(i): c for i, a in enumerate(node.args) if (c := semantics.constant_repr(a, read)) is not None}
        kc.update((k.arg, c) for k in node.keywords if k.arg and (c := semantics.constant_repr(k.value, read)) is not None)
        if kc:
            call["kc"] = kc
        # The callables it passes, by key (`ProjectIndex._callback_work`): a lambda calling nothing,
        # a reference, a callable's work.
        cba = {}
        for key, a, v in [*((str(i), a, v) for i, (a, v) in enumerate(zip(node.args, args))),
                          *((k.arg, k.value, kwargs.get(k.arg, {})) for k in node.keywords if k.arg)]:
            if isinstance(a, ast.Lambda):
                if not any(isinstance(n, ast.Call) for n in _nodes(a.body)):
                    cba[key] = "λ"  # (a body calling something: this pass does not read it, see `ev_Lambda`)
            elif v.get("callable"):
                cba[key] = "c:" + v["callable"]
            elif isinstance(a, (ast.Name, ast.Attribute)) and len(v.get("refs", ())) == 1 and set(v) <= {"refs"}:
                cba[key] = "r:" + v["refs"][0]
        if cba and len(cba) <= MAX_ITEMS:
            call["cba"] = cba
        if cbs:
            call["cb"] = cbs[:MAX_ITEMS]
        if cbc:
            call["cbc"] = cbc[:MAX_ITEMS]
        if facts is not None and not self.scope.is_module:
            self._forwards(node, q, kwargs)
        if q is not None:
            self.leaf_map(q, node, _keyed(args, kwargs))  # (a lambda it runs on leaves: its calls are this function's)
            r = self._known_call(q, node, args, kwargs, argu)
            if r is not None and q in K.VALUE_SHAPED_FUNCTIONS and argu.get("params") \
                    and not any(k.arg in ("size", "length") for k in node.keywords):
                # (`np.nonzero(x > t)` of a parameter's content: sized by it, as a mask's selection)
                r = dict(r, lmax=_merge_list(r.get("lmax") or [], [[SIZED_BY_CONTENT, node.lineno]]))
            if r is not None and q in K.ALLOCATORS and not self.scope.is_module:
                shp = self._sized_by_params(node)
                if shp:
                    r = dict(r, shp=shp)
            if r is not None:
                return r
            if q in self._local_jits and self._runs_locally(True, node):
                return dict(argu, host=True)  # (computed from its inputs alone, on this process)
            call["n"] = q
        elif isinstance(func, ast.Attribute):
            if isinstance(func.value, ast.Name) and func.value.id == "self" and self.class_stack and self._local("self") is not None:
                call["n"] = f"{self.class_stack[-1].name}.{func.attr}"
                call["bd"] = 1  # called through an instance: `self` is bound
                if call.get("np") != -1 and argu:
                    self._self_calls.append((self.class_stack[-1], call["n"],
                                             [self._init_params(sym_taint(a)) for a in args],
                                             {k: self._init_params(sym_taint(v)) for k, v in kwargs.items()}))
            else:
                recv = self.ev(func.value)
                r = self._method_call(func.attr, recv, node, args, kwargs, argu)
                if r is not None:
                    return r
                if recv.get("cls"):
                    call["n"] = f"{recv['cls']}.{func.attr}"
                    call["bd"] = 1
                else:
                    call["m"] = func.attr
                    # (with its own taint: `socket.gethostname().startswith("a")` in a helper
                    # returns a process-dependent value, as a library method's result carries it)
                    rr = {k: v for k, v in recv.items() if k in ("via", "refs", "callable", "cls", "ckpt",
                                                                 "pd", "pdc", "order", "hash", "params")}
                    if rr:
                        call["r"] = _prune(rr)
        elif isinstance(func, ast.Name) and func.id == "cls" and (self._local("cls") or {}).get("cls"):
            call["n"] = self._local("cls")["cls"]  # `cls(...)` in a classmethod constructs the class
        else:
            fv = self.ev(func)
            if fv.get("jitf"):
                return jit_factory_result(fv["jitf"], node.args[0] if node.args else None, self._positional_params)
            if fv.get("callable"):
                hl = fv.get("hl") or False
                if self._runs_locally(hl, node):
                    return dict(argu, host=True)  # (as above)
                need = self._local_given_params(hl, node)
                work, _ = semantics.jitted_work(fv["callable"], glob_in)
                if need is not None and facts is not None and len(facts.param_jits) < MAX_ITEMS:
                    # ([..., 1]: it may capture global arrays, so local only by a guess)
                    facts.param_jits.append([work, node.lineno, need] + ([1] if hl is not True else []))
                else:
                    self._collective(work, node)
                # (a pmap's outputs are this process's own arrays: `semantics.result_is_local`)
                if semantics.result_is_local(semantics.callable_kind(fv["callable"])):
                    return {"host": True}
                if need:
                    return dict(_as_content(sym_taint(argu), node.lineno), glob=True)
                return {"glob": True}
            call["v"] = _prune({k: v for k, v in fv.items() if k in ("via", "refs", "params", "callable")})
            if isinstance(func, ast.Name) and fv.get("refs") == [f"{self.scope.facts.name if not self.scope.is_module else self.module}.{func.id}"] \
                    and len(fv) == 1:
                call["ex"] = 1  # a def of this scope called by its own name (not a partial of it)
            if isinstance(func, ast.Name) and not self.scope.is_module and fv.get("params") == [func.id] \
                    and func.id in self.scope.facts.params:
                # A parameter called (`model(x)`): where every call passes an instance of one
                # project class (`ProjectIndex.param_classes`), its `__call__` runs.
                call["pf"] = [self.scope.facts.name, func.id]
            if facts is not None:
                for p in fv.get("params", []):
                    if p not in facts.called_params:
                        facts.called_params.append(p)
                    # A closure calling its factory's parameter (`make_hook(eval_fn)`'s hook): the
                    # factory is handed the callable it will run.
                    outer = self.scope.outer
                    while outer is not None and not outer.is_module:
                        if p.removesuffix("!o") in outer.facts.params:
                            if p not in outer.facts.called_params:
                                outer.facts.called_params.append(p)
                            break
                        outer = outer.outer
        if isinstance(func, ast.Name) and facts is not None and func.id in facts.params and self._local(func.id) is not None:
            if func.id not in facts.called_params:
                facts.called_params.append(func.id)
        if isinstance(func, ast.Name) and facts is not None:
            self._gated_param_call(func.id)
        if (argu or any(a.get("glob") or a.get("u") for a in [*args, *kwargs.values()])) and call.get("np") != -1 and "n" in call and (q is not None or isinstance(func, ast.Name)) \
                and self._class_like(call["n"]) and not call["n"].startswith(_EXTERNAL_ROOTS):
            # Each argument apart (a constructor's arguments flow into the attributes it stores;
            # kept for class-like names only, for size: another construction adds no taint).
            # (A global array stays one: an attribute stored from it holds one, see `glob_ops`.)
            pa = {str(i): _prune(_arg_sym(a)) for i, a in enumerate(args) if _arg_sym(a)}
            pa.update((k, _prune(_arg_sym(v))) for k, v in kwargs.items() if _arg_sym(v))
            if len(pa) == 1 and next(iter(pa.values())) == call.get("a"):
                call["pk"] = next(iter(pa))  # the only argument that carries anything: its value is "a"
            else:
                call["pa"] = pa
        if self._gates:
            call["gp"] = [list(g) for g in dict.fromkeys(self._gates)]
        if len(facts.calls) < CALLS_CAP and call not in facts.calls:
            facts.calls.append(call)
        if "o" not in facts.flags and ("m" in call or "n" in call and not call["n"].startswith(_EXTERNAL_ROOTS)) \
                and any(a.get("u") for a in [*args, *kwargs.values()]):
            facts.flags += "o"  # a set handed to a helper: iterated there, in this process's order
        if ("m" in call or "n" in call and not call["n"].startswith(_EXTERNAL_ROOTS)) \
                and len(facts.cond_calls) < 40:
            implicit = self._implicit_taint()
            if implicit:
                spec = {k: call[k] for k in ("n", "m", "r", "bd") if k in call}
                entry = dict(spec, c=_prune(implicit, 1))
                facts.cond_calls.append(entry)
                self._cond_call_at[id(entry)] = (_unparse(func), node.lineno)  # (`_called_in_both_arms`)
        out: Sym = {"via": [call]}
        return out

    # `env_read` (semantics.StatementRules): a read the caller's argument decides is recorded
    # ("envp": the index checks each call).
    def env_source(self, key: str | None, key_per_process: bool, node: ast.AST) -> Sym:
        self.summary.direct_sources = True
        return {"pd": [self.src(K.env_desc(key, quote="", key_per_process=key_per_process), node, kinds.ENVIRONMENT)]}

    def param_env_read(self, params: list[str], node: ast.AST) -> Sym:
        return {"envp": [[p, node.lineno] for p in params]}

    def key_params(self, key_node: ast.expr, kv: Sym) -> list[str] | None:
        """The enclosing function's parameters an (untainted) environment key is computed from,
        read off the key's value `kv`: [] when only from constants (a name not known: a guess,
        `env_read`), None when from anything else (another call's result, a parameter whose
        default names a per-process variable)."""
        if "via" in kv and not all(set(c.get("r") or {}) <= {"params"} and not (c.get("a") or {}).get("via")
                                   for c in kv["via"]):
            return None  # (method calls on parameters, `name.upper()`, are fine)
        names = list(kv.get("params", []))
        for c in kv.get("via", []):
            names += (c.get("r") or {}).get("params", []) + (c.get("a") or {}).get("params", [])
        if "refs" in kv and not names:
            return []  # a module constant (a list of flag names)
        facts = self.scope.facts
        if self.scope.is_module or facts is None:
            return [] if not names else None
        defaults = self._str_defaults.get(facts.name, {})
        out = []
        for p in dict.fromkeys(n.removesuffix("!o") for n in names):
            if p not in facts.params or (p in defaults and K.is_per_process_env_key(defaults[p])):
                return None
            out.append(p)
        return out

    # `source_call` (semantics.StatementRules): the file has direct sources, orders or hashes
    seeded_modules = property(lambda self: self.summary.seeded_rngs)
    per_process = staticmethod(lambda v: "pd" in v or "pdc" in v)

    def drawn(self, desc: str, node: ast.Call) -> Sym:
        self.summary.direct_sources = True
        return {"pdc": [self.src(desc, node, kinds.DRAWN)]}

    def listing(self, q: str, node: ast.Call) -> Sym:
        self.summary.order_sources = True
        return {"order": [self.src(K.FS_LISTING_CALLS[q], node, kinds.LISTING_ORDER)]}

    def string_hash(self, salt: bool | str, node: ast.Call) -> Sym:
        self.summary.hash_calls = True
        return {"hash": [self.src(semantics.hash_desc(salt), node, kinds.STRING_HASH)]}

    def new_set(self, v: Sym, order: bool | str) -> Sym:
        if order:
            self.summary.order_sources = True
        return dict(_strip_order(v), u=order)  # (u False: a set whose order is the same everywhere, until more is added)

    def _subgroup_call(self, func: ast.expr) -> None:
        """Evaluate the callee of a subgroup call for its side facts only (no collective)."""
        if "g" not in self.scope.facts.flags:
            self.scope.facts.flags += "g"  # configures work for a subset of processes
        if isinstance(func, ast.Attribute):
            self.ev(func.value)

    def _collective(self, desc: str, node: ast.AST) -> None:
        facts = self.scope.facts
        if facts is not None and (facts.collective is None or evidence.collective_guess(facts.collective[0])
                                  and not evidence.collective_guess(desc)):
            facts.collective = [desc, node.lineno]  # the first certain work, else the first
        if facts is not None and not self.scope.is_module:
            gate = [list(g) for g in dict.fromkeys(self._gates)]
            if gate not in facts.dgates and len(facts.dgates) < MAX_ITEMS:
                facts.dgates.append(gate)

    def _param_gates(self, test: ast.expr) -> tuple[list[tuple[str, bool]], list[tuple[str, bool]]]:
        """What an `if` on `test` tells of the function's own parameters' truth in each arm: (the
        tests its body runs under, those its `else` runs under), each a conjunction
        (`_param_gate`). `a and not b`: the body runs only where every operand holds, so where
        each test of a parameter among them does (`if sync_dist and not rank_zero_only:`
        ...), the `else` where one fails (nothing known of each); `a or b` the other way round."""
        one = self._param_gate(test)
        if one is not None:
            return [one], [(one[0], not one[1])]
        if type(test) is ast.BoolOp:
            gates = [g for v in test.values if (g := self._param_gate(v)) is not None]
            if type(test.op) is ast.And:
                return gates, []
            return [], [(p, not truth) for p, truth in gates]
        return [], []

    def _param_gate(self, test: ast.expr) -> tuple[str, bool] | None:
        """A test of one of the function's own parameters by its truth (`if sync:`, `if not
        sync:`) or against a literal constant (`if mode == "world":`, `if barrier is not None:`,
        `semantics.literal_test`): (the parameter, or for a comparison `param\top\tliteral`
        (`GATE_SEP`), and the truth the `if`'s body runs under). Only for parameters the function
        never assigns (a call's argument is then what the test reads)."""
        facts = self.scope.facts
        if facts is None or self.scope.is_module:
            return None
        truth = True
        while type(test) is ast.UnaryOp and type(test.op) is ast.Not:
            test, truth = test.operand, not truth
        if type(test) is ast.Compare:
            cmp = semantics.literal_test(test, read, facts.params)
            if cmp is None or cmp[0] in ("self", "cls") or GATE_SEP in cmp[2]:
                return None
            key = GATE_SEP.join(cmp)
            name = cmp[0]
        elif type(test) is not ast.Name or test.id not in facts.params or test.id in ("self", "cls"):
            return None
        else:
            key = name = test.id
        if self._gate_names is None:
            node = self._gate_node
            stored = {n.id for n in ast.walk(node) if type(n) is ast.Name and type(n.ctx) is not ast.Load} \
                if node is not None else set(facts.params)
            self._gate_names = frozenset(p for p in facts.params if p not in stored)
        return (key, truth) if name in self._gate_names else None

    def _glob_op(self, desc: str, node: ast.AST, operand: Sym, reduces: bool = False, at: ast.AST | None = None) -> None:
        """Array work on `operand`, a value read from elsewhere (an attribute, a global): the index
        decides whether it is a global array (`ProjectIndex._collective_of`)."""
        facts = self.scope.facts
        if facts is None or facts.collective is not None or len(facts.glob_ops) >= MAX_ITEMS:
            return
        refs = [r for r in operand.get("refs", ()) if not r.startswith(".")]
        if refs and not operand.get("params"):
            facts.glob_ops.append([desc, node.lineno, {"refs": refs}])
        elif reduces and isinstance(at, ast.Name) and operand.get("params") == [at.id] \
                and set(operand) <= {"params", "lp"}:
            # A reduction of a parameter (`jnp.sum(x)`, `x.mean()`): across the processes where a
            # call passes an array sharded over them (`ProjectIndex.glob_param_work`). (Not
            # elementwise work: on a replicated array each process can do its own.)
            facts.glob_ops.append([desc, node.lineno, {"params": list(operand["params"])}])

    def _device_access(self, desc: str, node: ast.AST) -> None:
        if self._main_guard and self.scope.is_module:
            return
        facts = self.scope.facts
        if facts is not None and facts.device_access is None:
            facts.device_access = [desc, node.lineno]

    def _sized_by_params(self, node: ast.Call) -> list[str]:
        """The parameters of this function an array constructor's shape is made of (`np.full((n,
        max_len), pad)`: n and max_len), each as a whole size (the parameter itself, or with
        constants: `max_len + 1`), not something computed from it by a call (`len(xs)`): the
        array it returns is as large as the caller's arguments say (`FunctionFacts.sized_by`)."""
        shape = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "shape"), None)
        if shape is None:
            return []
        elts = shape.elts if isinstance(shape, (ast.Tuple, ast.List)) else [shape]
        params = self.scope.facts.params
        out: list[str] = []
        for e in elts:
            names = [n.id for n in _nodes(e) if isinstance(n, ast.Name)]
            if names and all(isinstance(n, (ast.Name, ast.Constant, ast.BinOp, ast.UnaryOp, ast.Load, ast.operator,
                                            ast.unaryop)) for n in ast.walk(e)) \
                    and all(n in params and (self._local(n) or {}).get("params") == [n] for n in names):
                out.extend(n for n in names if n not in out)
        return out

    def _known_call(self, q: str, node: ast.Call, args: list[Sym], kwargs: dict[str, Sym], argu: Sym) -> Sym | None:
        """Facts for calls to known library functions (`semantics.StatementRules.library_call`);
        None for calls to resolve later."""
        if q in K.SEED_CALLS and "s" not in self.scope.facts.flags:
            self.scope.facts.flags += "s"  # a seed: a sink for string hashes
        if q in K.THREAD_STARTERS and "t" not in self.scope.facts.flags:
            self.scope.facts.flags += "t"  # starts work on another thread (MCJ105)
        if K.is_device_access(q):
            self._device_access(f"`{q}()`", node)
        return self.library_call(q, node, _keyed(args, kwargs), argu)

    # `library_call` (semantics.StatementRules): collective work and global arrays are recorded
    # for the index; a summary has no structure taint.
    def initialized(self, node: ast.Call) -> Sym:
        if not self.summary.initialize_line:
            self.summary.initialize_line = node.lineno
            self.summary.initialize_script_only = self._main_guard
        elif not self._main_guard:
            self.summary.initialize_script_only = False
        return {}

    @staticmethod
    def on_local_devices(a0: Sym | None) -> Sym:
        # The same object on this process's devices (its class's methods are still its own).
        return dict({k: v for k, v in (a0 or {}).items() if k in ("pd", "pdc", "order", "hash", "via", "params", "refs", "cls")},
                    host=True)

    seed_given = staticmethod(lambda q, args, node: None)
    # (the argument's type: differs where its structure was chosen per process, "tr", see `either`)
    @staticmethod
    def type_of(a0: Sym | None) -> Sym:
        out: Sym = {"pd": a0["tr"]} if a0 and a0.get("tr") else {}
        inner = {k: a0[k] for k in ("via", "refs", "params") if a0 and k in a0}
        if inner:
            # (of a parameter, a call's result, an attribute: their structure, known at the call)
            out["via"] = [{"l": 0, "n": TYPE_OF_CALL, "a": _prune(inner)}]
        return out

    @staticmethod
    def either(out: Sym, cond: Sym, a: Sym, b: Sym, node: ast.IfExp) -> Sym:
        """`a if test else b` (`semantics.StatementRules.ev_IfExp`): where the arms are pytrees of
        other structures (`None` or not: `semantics.structures_differ`) chosen by a
        process-dependent test, the structure ("tr") is the test's sources."""
        srcs = _merge_list(cond.get("pd", []), cond.get("pdc", []))
        if (a.get("one") or b.get("one")) and all(x.get("one") or not x for x in (a, b)):
            # `int(c.max()) if len(c) else 0`: one number whichever arm (the test picks which)
            out = dict(out, one=True)
        n = _display_length(node.body)
        ca, cb = _count_of(a), _count_of(b)
        if "cnt" not in out and ca is not None and cb is not None and n is not None \
                and n == _display_length(node.orelse):
            # `[1.0, 0.5] if rank == 0 else [0.4, 0.3]`: other elements, as many whichever is chosen
            out = dict(out, cnt=sym_join(ca, cb))
        if not semantics.structures_differ(semantics.literal_structure(node.body, read),
                                           semantics.literal_structure(node.orelse, read)):
            return out
        if srcs:
            out = dict(out, tr=_merge_list(out.get("tr", []), srcs))
        later = {k: v for k, v in cond.items() if k in ("via", "refs", "params")}
        if later:
            # (a test the index resolves: a project helper, a constructor's argument stored in
            # `__init__`, `self.x = arr if dom_id == 0 else None`: "trs", as `_none_structure`)
            out = dict(out, trs=_prune(sym_join(out.get("trs", {}), later), 1))
        return out

    def choice_arms_begin(self, cond: Sym) -> bool:
        """A call in an arm of `a if test else b` runs under the test, as in an `if`'s arm: a
        parameter called there is gated (`_gated_param_call`: `fn(*a) if is_main() else None`)."""
        control = _control(cond)
        if control:
            self._ret_taints.append(control)
        return bool(control)

    def choice_arm_begin(self, node: ast.IfExp, taken: bool) -> int:
        """An arm of `a if test else b` runs only where the test says: its collective work lies
        under the test's parameter gates as an `if`'s arm's does (`_param_gates`: `gather(x) if
        sync and n > 1 else x[None]`, which a call passing `sync=False` never gathers in)."""
        depth = len(self._gates)
        body, other = self._param_gates(node.test)
        self._gates.extend(body if taken else other)
        return depth

    def choice_arm_end(self, depth: int) -> None:
        del self._gates[depth:]

    def choice_arms_end(self, pushed: bool, node: ast.IfExp) -> None:
        if pushed:
            self._ret_taints.pop()
        self._called_in_both_arms([node.body], [node.orelse], node)

    def _called_in_both_arms(self, body: list, orelse: list, node: ast.AST) -> None:
        """What is called in both arms of a choice runs whichever arm is taken: a parameter so
        called is not gated, a method so called is no call under a condition (`cond_calls`)."""
        if not orelse:
            return
        both = self._called_in(body) & self._called_in(orelse) if isinstance(node, ast.If) \
            else _sure_calls_of(body[0]) & _sure_calls_of(orelse[0])  # (an `if`'s arms are read once: `_called_in`)
        for name in both:
            self._gated_param_call_everywhere(name)
        if self.scope.is_module or not self.scope.facts.cond_calls:
            return
        first, last = node.lineno, getattr(node, "end_lineno", node.lineno) or node.lineno
        if not any(id(e) in self._cond_call_at and first <= self._cond_call_at[id(e)][1] <= last
                   for e in self.scope.facts.cond_calls):
            return  # (none of them in this choice: the callees of its arms would remove none)
        both = _called_funcs(body) & _called_funcs(orelse)
        self.scope.facts.cond_calls[:] = [e for e in self.scope.facts.cond_calls
                                          if not (id(e) in self._cond_call_at and self._cond_call_at[id(e)][0] in both
                                                  and first <= self._cond_call_at[id(e)][1] <= last)]

    def done_sets(self, argu: Sym) -> Sym:
        self.summary.order_sources = True
        done = {**_strip_order(sym_taint(argu)), "u": semantics.SALTED}
        return {**_strip_order(sym_taint(argu)), "tup": [done, dict(done)]}  # (done, not_done)

    def order_free_call(self, q: str, node: ast.Call, argu: Sym, a0: Sym | None) -> Sym:
        out = _strip_order(sym_taint(argu), node.lineno)
        if q in ("len", "bool", "any", "all"):
            out["one"] = True  # (one number or truth value, whatever the argument's length: `scalar_of`)
        if q == "len" and out.get("pdc"):
            out = self.attribute_of(out, argu, "shape")  # (a draw's length is its size, as its shape)
        if q in ("max", "min") and (it := _measured_iterable(node)) is not None:
            # `max(len(s) for s in xs)`: over process-local elements, a length of this process's
            # own; over a parameter's, the index decides at each call ("lmax").
            itv = self.ev(it)
            what = f"the {'longest' if q == 'max' else 'shortest'} element of process-local data"
            if itv.get("pd") or itv.get("pdc"):
                self.summary.direct_sources = True
                return sym_join(out, {"pd": [self.src(what, node, kinds.LOCAL_DATA)]})
            if itv.get("params"):
                out["lmax"] = [[what, node.lineno]]
        return out

    view_of = staticmethod(lambda v: None)  # (a summary has no structure: the whole dict's taint)
    # (any method of a project class's instance is the index's to resolve: no more than the index knows)
    def own_method(self, v: Sym, meth: str) -> bool:
        """Whether `meth` of `v` is a project class's own method: `v` is of a known class, or
        was built by a constructor of a class of this module that defines `meth` (`counter =
        Stopper(); counter.update(m)` runs `Stopper.update`, not a dict's)."""
        if v.get("cls"):
            return True
        return any(meth in self.class_methods.get(c.get("n", ""), ()) for c in v.get("via", ()))
    in_set_order = staticmethod(lambda argu, a0: dict(sym_taint(argu), u=a0["u"]) if a0 and a0.get("u") else sym_taint(argu))

    def set_ordered(self, node: ast.Call, a0: Sym) -> Sym:
        self.summary.order_sources = True
        return {"order": [self.src(semantics.set_iteration_desc(a0["u"]), node, kinds.SET_ORDER)]}

    ordered = staticmethod(lambda q, node, out, a0: sym_taint(out) if a0 is not None and a0.get("u") else None)

    def tied_order(self, node: ast.Call, a0: Sym) -> Sym:
        """The order a sort by a key of few values keeps (the precise pass's `tied_order`): a
        set's iteration, the order sources `a0` carries, renamed so the index takes them as a
        guess; what the index resolves later goes through a `TIED_SORT_CALL` record."""
        out: list = []
        if a0.get("u"):
            self.summary.order_sources = True
            out.append(self.src(semantics.set_iteration_desc(a0["u"]) + semantics.TIED_SORT_DESC, node, kinds.SET_ORDER))
        for o in a0.get("order", ()):
            out.append(o if semantics.TIED_SORT_DESC in o[0] else [o[0] + semantics.TIED_SORT_DESC, *o[1:]])
        made: Sym = {"order": out} if out else {}
        inner = {k: a0[k] for k in ("via", "refs") if k in a0}
        if inner:
            made["via"] = [{"l": node.lineno, "n": TIED_SORT_CALL, "a": _prune(inner)}]
        return made

    def jit_factory(self, kind: str, node: ast.Call) -> Sym:
        return {"jitf": [kind, *literal_statics(node.keywords)]}

    def jitted(self, kind: str, target: ast.expr | None, hostable: bool | str, chosen: Sym | None, node: ast.Call) -> Sym:
        out: Sym = {"callable": f"`{_expr_name(target) if target is not None else 'function'}` ({kind})"}
        if isinstance(target, ast.Name):  # (a def of this module, traced: what it reads is baked in, MCJ304)
            for r in self.ev(target).get("refs", ()):
                f = self.summary.functions.get(r)
                if f is not None and "j" not in f.flags:
                    f.flags += "j"
        statics = jit_statics(*literal_statics(node.keywords), self._positional_params(target))
        if statics:
            out["statics"] = statics
        if hostable:
            out["hl"] = hostable
        return out

    @staticmethod
    def partial_of(f: Sym, bound_host: bool) -> Sym:
        out = dict(f)
        if out.get("hl") and not bound_host:
            del out["hl"]  # bound arguments that may be global arrays
        out["pt"] = 1  # (a partial: not the def itself, see call "ex")
        return out

    def work(self, desc: str, node: ast.AST, token: str | None = None) -> None:
        self._collective(desc, node)

    sanitized = staticmethod(lambda: {"san": True})
    collective_args = staticmethod(lambda q, node, args: None)
    global_array = staticmethod(lambda v: {"glob": True})
    is_global = staticmethod(lambda v: bool(v.get("glob")))
    is_sharding = staticmethod(lambda v: bool(v.get("sharding")))
    replicated_input = staticmethod(lambda v, node, what: None)
    device_put_result = staticmethod(lambda argu, a0: sym_taint(argu))
    sharding_made = staticmethod(lambda node, replicated, devices=None: {
        **{k: v for k, v in (devices or {}).items() if k in _DEVICE_CHOICE_KEYS}, "sharding": True,
        **({"rep": True} if replicated else {})})
    one_device = staticmethod(lambda: {"dev": True})
    is_one_device = staticmethod(lambda v: bool(v and v.get("dev")))
    on_one_device = staticmethod(lambda argu: dict(sym_taint(argu), host=True))
    checkpointer = staticmethod(lambda argu, sync: dict({"ckpt": semantics.SYNC if sync else True},
                                                        **({"sub": True} if argu.get("sub") else {})))
    checkpointer_kind = staticmethod(lambda v: v.get("ckpt"))
    generator = staticmethod(lambda v: dict(v, rng=True))
    taint = staticmethod(lambda v: sym_taint(v))

    @staticmethod
    def drawn_content(t: Sym) -> Sym:
        if not t.get("pd"):
            return t
        # other numbers, one shape (a source guarded by a parameter keeps its guard: `kinds.drawn`)
        t = dict(t)
        drawn = [[d[0], d[1], kinds.drawn(d[2] if len(d) > 2 else "")] for d in t.pop("pd")]
        return dict(t, pdc=_merge_list(t.get("pdc", []), drawn))

    @staticmethod
    def sized_draw(content: Sym, amount: Sym, node: ast.Call) -> Sym:
        """(semantics.StatementRules.method_call) A draw of a given size from a generator: what
        `content` carries, as many numbers as the size says ("cnt": what decides the size)."""
        return dict(sym_taint(content), cnt=_count_taint(sym_taint(amount)) if amount else {})

    def array_op(self, q: str, node: ast.Call, args: list) -> None:
        for k, a in args:
            self._glob_op(f"`{q}()` on a global array", node, a, q.rpartition(".")[2] in semantics.REDUCTIONS,
                          node.args[k] if isinstance(k, int) and k < len(node.args) else None)

    def _method_call(self, meth: str, recv: Sym, node: ast.Call, args: list[Sym], kwargs: dict[str, Sym],
                     argu: Sym) -> Sym | None:
        """A method of a value not known to be of a project class (`semantics.method_call`)."""
        if (meth in K.THREAD_SUBMIT_METHODS or meth in K.THREAD_POOL_MAP_METHODS) and "t" not in self.scope.facts.flags:
            self.scope.facts.flags += "t"  # may start work on another thread (MCJ105)
        keyed = _keyed(args, kwargs)
        if meth in K.RNG_DRAW_METHODS and isinstance(node.func, ast.Attribute):
            self._drawn_from_attribute(meth, node.func.value, keyed, node)
        return self.method_call(meth, recv, node, keyed, argu)

    # `method_call` (semantics.StatementRules)
    is_callable = staticmethod(lambda v: bool(v.get("callable")))
    callable_method = staticmethod(lambda meth, v: {"callable": v["callable"]} if meth in K.JIT_STAGING_METHODS else {})
    is_subgroup = staticmethod(lambda v: bool(v.get("sub")))
    of_subgroup = staticmethod(lambda v: dict(v, sub=True))
    is_checkpointer = staticmethod(lambda v: bool(v.get("ckpt")))
    is_generator = staticmethod(lambda v: bool(v.get("rng")))
    extent_of = staticmethod(lambda v: {})  # (shapes are the precise pass's)

    def generator_advanced(self, receiver: ast.expr, recv: Sym, amount: Sym, node: ast.Call) -> None:
        """A draw advances the generator it is drawn from (`semantics.method_call`): a variable
        is rebound (a draw under a process-dependent branch or loop takes its condition). A draw
        from an attribute's generator is `_drawn_from_attribute`'s."""
        if isinstance(receiver, ast.Name):
            self.bind(receiver, dict(sym_join(recv, amount), rng=True))

    def _drawn_from_attribute(self, meth: str, receiver: ast.expr, args: list, node: ast.Call) -> None:
        """`x.attr.meth(...)` with `meth` a generator's draw (`self.rng.normal()`,
        `self.model.rng.randint()`), whatever `x.attr` holds (a reference the index resolves):
        what the draw's size and the enclosing conditions carry, by the attribute's name
        (`ModuleSummary.gen_stores`; the index keeps it only where the attribute holds a
        generator)."""
        if self.scope.is_module or not isinstance(receiver, ast.Attribute):
            return
        stored = sym_join(self._implicit_taint(), _count_taint(self.draw_amount(meth, args, node)))
        for t in self._loop_taints:  # (how often the draw runs: the loops around it)
            stored = sym_join(stored, t)
        if stored:
            # (`self.rng`: that class's attribute; through another object, any class's of the name)
            key = f"{self.class_stack[-1].name}.{receiver.attr}" if _on_self(receiver.value, self.scope) \
                and self.class_stack else receiver.attr
            stores = self.summary.gen_stores
            stores[key] = sym_join(stores.get(key), stored)

    is_set = staticmethod(lambda v: "u" in v)  # (False: a set whose order is the same everywhere)
    order_of = staticmethod(lambda v: v.get("u", False))
    has_order = staticmethod(lambda v: bool(v.get("order")))
    put_in = staticmethod(sym_element)  # (a container of these values: content, not its own length)
    # (an element changed in place: as many elements as it had, "cnt", `semantics.element_changed`)
    element_changed = staticmethod(lambda new, cur: dict(new, cnt=cur["cnt"]) if cur.get("cnt") is not None else new)
    instance_class = staticmethod(lambda v: v.get("cls"))
    local_shards = property(lambda self: self._local_shards)
    as_global = staticmethod(lambda v: dict(v, glob=True))
    reshaped = staticmethod(lambda v, argu, node: v)

    def listing_method(self, meth: str, node: ast.Call) -> Sym:
        self.summary.order_sources = True
        return {"order": [self.src(f"`.{meth}()`", node, kinds.LISTING_ORDER)]}

    @staticmethod
    def keep_set(v: Sym, s: Sym) -> Sym:
        return sym_join({"u": s["u"]}, v)

    def set_pop(self, node: ast.Call) -> Sym:
        return {"order": [self.src("`set.pop()`", node, kinds.SET_ORDER)]}

    stored_attribute = staticmethod(lambda value, attr: None)  # (the precise pass alone keeps them)
    def stored_by_call(self, value: ast.expr, attr: str) -> Sym | None:
        """`self.attr` read in a method after the method itself stored into it (`self.lr =
        self.lr * f` under a test of its argument, then `return self.lr`): what it stored there
        (`_own_store_key`, joined by the branches with what an arm that stored nothing leaves,
        and carrying the conditions it was stored under), joined by the caller with what the
        attribute holds otherwise. The precise pass keeps stores on other objects."""
        if isinstance(value, ast.Name) and value.id == "self" and not self.scope.is_module:
            return self.scope.env.get(_own_store_key(attr))
        return None

    def name_value(self, name: str) -> Sym | None:
        cur = self._local(name)
        return cur if cur is not None else self.module_scope.env.get(name)

    def as_set(self, v: Sym, order: bool | str) -> Sym:
        if order:
            self.summary.order_sources = True
        return dict(v, u=order)

    def attribute_set_filled(self, meth: str, recv: Sym, owner: ast.expr, node: ast.Call) -> None:
        """`self.names.add(n)`: a set attribute filled after it was built iterates in the order
        of what was added (where its class stored one)."""
        if not (self.class_stack and isinstance(owner, ast.Attribute) and isinstance(owner.value, ast.Name)
                and owner.value.id == "self"):
            return
        attrs = self.class_stack[-1].attrs
        if "u" in attrs.get(owner.attr, {}) or "u" in recv:
            added = semantics.set_order_added(meth, [a for a in node.args if not isinstance(a, ast.Starred)], read, self._num)
            if added:
                self.summary.order_sources = True
                attrs[owner.attr] = sym_join(attrs.get(owner.attr), {"u": added})

    def attribute_grown(self, owner: ast.expr) -> None:
        """`self.xs.append(v)`, `self.by_region.setdefault(k, [])`, `self.by_region[k] = v` with
        a computed key: the container the attribute holds gains an element each time this runs,
        so how many it holds is decided by what decides how often that is: the loops and
        conditions around it (`_loop_taints`: `for c in cells: self.xs.append(c)` in `__init__`
        holds as many elements as the construction's `cells`). A store of each element's value
        is no store under a condition (`arms_begin`); the count is. Only in `__init__`, where
        the object grown is the one being built and the count's parameters are the
        constructions' arguments (`_init_params`); in another method which instance it grows,
        and whether another call later evens the counts out, are not followed."""
        if self.scope.is_module or not self.class_stack or not isinstance(owner, ast.Attribute) \
                or not _on_self(owner.value, self.scope):
            return
        cf = self.class_stack[-1]
        if self.scope.facts.name != f"{cf.name}.__init__":
            return
        count: Sym = {}
        for t in self._loop_taints:
            count = sym_join(count, t)
        if count:
            cf.attrs[owner.attr] = sym_join(cf.attrs.get(owner.attr), self._init_params(count))

    def element_at(self, out: Sym, base: Sym, idx: Sym, node: ast.Subscript) -> Sym:
        """`series[k]` of an instance constructed here (`series = Series(...)`): runs the class's
        `__getitem__`, whose result the index resolves (`call_method`; an element of the
        instance's data where the class has none). Other subscripts: the element."""
        vias = base.get("via") or ()
        if len(vias) == 1 and "n" in vias[0] and not vias[0].get("ix") and self._class_like(vias[0]["n"]) \
                and not base.get("params") and not base.get("refs"):
            call = {"l": node.lineno, "m": "__getitem__", "r": _prune(base, 1), "np": 1}
            if idx:
                call["a"] = _prune(sym_taint(idx), 1)
            return {"via": [call]}
        return out

    holding = staticmethod(lambda new, cur, el: new)  # (element classes: the precise pass's, `Val.ecls`)
    element_kept = staticmethod(lambda meth, new: {})

    def attribute_holds(self, owner: ast.expr, el: Sym) -> None:
        """`self.engines[path] = Engine(path)`, `self.items.setdefault(k, Item(k))`,
        `self.xs.append(X())`, in any method: the container the attribute holds has elements of
        that class ("ecls", resolved by the index to `Val.ecls` where every element stored is a
        construction of one project class; "?" for an element of any other value)."""
        if self.scope.is_module or not self.class_stack or not isinstance(owner, ast.Attribute) \
                or not _on_self(owner.value, self.scope):
            return
        vias = el.get("via") or []
        made = [c["n"] for c in vias if "n" in c and self._class_like(c["n"])]
        names = made if len(made) == 1 and len(vias) == 1 and not el.get("cls") else ["?"]
        cf = self.class_stack[-1]
        cf.attrs[owner.attr] = sym_join(cf.attrs.get(owner.attr), {"ecls": names})

    def sharded(self, recv: Sym, argu: Sym, node: ast.Call) -> None:
        if "x" not in self.scope.facts.flags:
            self.scope.facts.flags += "x"  # a possible per-process partition

    def array_method(self, meth: str, recv: Sym, node: ast.Call) -> None:
        self._glob_op(f"`.{meth}()` on a global array", node, recv, meth in semantics.REDUCTIONS,
                      node.func.value if isinstance(node.func, ast.Attribute) else None)

    # ---- numbers (`semantics` decides; this pass says which names hold numbers)
    def numeric_elements(self, node) -> bool:
        return semantics.numeric_elements(node, read, self._num)

    def _num(self, name: str) -> bool:
        v = semantics.lookup(self.scope, self.module_scope.env, name)
        return bool(v and v.get("num"))

    def is_numeric(self, node, bound=frozenset()) -> bool:
        return semantics.is_numeric(node, read, self._num, bound)

    # ---- host data (`semantics` decides; this pass says which names hold host data)
    def _host(self, name: str) -> bool:
        v = semantics.lookup(self.scope, self.module_scope.env, name)
        return bool(v and v.get("host"))

    def is_host(self, node) -> bool:
        return semantics.is_host_data(node, read, self._host, self.qualify, lambda n: id(n) in self._local_call_nodes)

    as_host = staticmethod(lambda v: dict(v, host=True))
    # (no summary fact needs to know that a value is a constant: `semantics.is_constant` is asked
    # by the precise pass alone)
    constant_binding = staticmethod(lambda node, v: v)

    def _runs_locally(self, hostable: bool | str, node: ast.Call) -> bool:
        """A call of a jitted function that runs on this process alone (semantics.jitted_call_is_local)."""
        args = [a.value if isinstance(a, ast.Starred) else a for a in node.args] + [k.value for k in node.keywords]
        if semantics.jitted_call_is_local(hostable, args, self.is_host, self._mesh_context):
            self._local_call_nodes.add(id(node))
            return True
        return False

    def _local_params(self, name: str) -> list[str] | None:
        """The enclosing function's parameters whose values `name` holds, where it holds only
        those or host data (its "lp"), so that it is process-local when they are."""
        facts = self.scope.facts
        if facts is None or self.scope.is_module:
            return None
        v = self._local(name)
        lp = v.get("lp") if v else None
        return lp if lp and all(p in facts.params for p in lp) else None

    def _arg_locality(self, node: ast.Call) -> tuple[list[str], dict[str, list[str]]]:
        args = [(str(i), a) for i, a in enumerate(node.args)] + [(k.arg, k.value) for k in node.keywords if k.arg]
        return semantics.arg_locality(args, read, self._host, self.qualify, lambda n: id(n) in self._local_call_nodes,
                                      self._local_params)

    def _local_given_params(self, hostable: bool | str, node: ast.Call) -> list[str] | None:
        """A jitted call that would run on this process alone if these parameters of the
        enclosing function hold process-local data (None: not so whatever they hold)."""
        if not hostable or self._mesh_context or any(isinstance(a, ast.Starred) for a in node.args) \
                or any(k.arg is None for k in node.keywords):
            return None
        hosts, needs = self._arg_locality(node)
        if len(hosts) + len(needs) < len(node.args) + len(node.keywords):
            return None
        return sorted({p for ps in needs.values() for p in ps})

    def _deco_may_run_locally(self, node: ast.FunctionDef, kind: str, qual: str) -> bool:
        """`@jax.jit` (or `@partial(jax.jit, static_argnums=...)`) on a module-level def."""
        if not self.scope.is_module or self.class_stack:
            return False
        for d in node.decorator_list:
            if not isinstance(d, ast.Call):
                continue
            dq = self.qualify(d.func)
            if dq in ("functools.partial", "partial"):
                if len(d.args) > 1:
                    return False
            elif dq not in K.JIT_WRAPPERS:
                continue
            if not semantics.jit_may_run_locally(kind, [k.arg or "**" for k in d.keywords], None, read, self.qualify,
                                                 self._closes_over_host_only):
                return False
        return semantics.jit_may_run_locally(kind, (), None, read, self.qualify, self._closes_over_host_only) \
            and self._closes_over_host_only(qual)

    def _closes_over_host_only(self, q: str) -> bool:
        """Whether a def of this module reads, from outside its own body, only libraries, builtins,
        this module's other such defs and classes, and module-level names bound only to host data
        (a jitted function closing over a global array is cross-process work whatever its inputs)."""
        name = q[len(self.module) + 1:] if q.startswith(self.module + ".") else None
        node = self._top_defs()[0].get(name) if name and "." not in name else None
        if node is None:
            return False
        if q in self._host_closed:
            return self._host_closed[q]
        self._host_closed[q] = False  # (recursion: not proven)
        ok = all(self._host_free_name(n) for n in _free_names(node))
        self._host_closed[q] = ok
        return ok

    def _top_defs(self) -> tuple[dict[str, ast.AST], dict[str, ast.AST]]:
        """The module's first top-level function of each name, and its first top-level statement
        of each name (function or class): read once, not scanned for at each question."""
        if self._top_defs_ is None:
            funcs: dict[str, ast.AST] = {}
            named: dict[str, ast.AST] = {}
            for n in self.tree.body:
                name = getattr(n, "name", None)
                if type(name) is not str:
                    continue
                named.setdefault(name, n)
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    funcs.setdefault(name, n)
            self._top_defs_ = (funcs, named)
        return self._top_defs_

    def _host_free_name(self, name: str) -> bool:
        if name in self.imports:
            return self.imports[name].split(".")[0] in semantics.LIBRARY_ROOTS
        if name in self.module_defs:
            node = self._top_defs()[1][name]
            return isinstance(node, ast.ClassDef) or self._closes_over_host_only(self.module_defs[name])
        if self._stores is None:
            self._stores = _module_stores(self.tree, self._may_declare_global())
        if self._module_host_names is None:
            self._module_host_names = _module_host_names(self.tree, lambda n, known: semantics.is_host_data(
                n, read, known.__contains__, self._module_qualify), self._stores)
        if name in self._module_host_names:
            return True
        return name in _BUILTIN_NAMES and name not in self._stores

    def _module_qualify(self, node: ast.expr) -> str | None:
        """`qualify` as seen from the module's top level."""
        saved, self.scope = self.scope, self.module_scope
        try:
            return self.qualify(node)
        finally:
            self.scope = saved

    # ---- statements
    def bind(self, target: ast.expr, value: Sym) -> None:
        if isinstance(target, ast.Name):
            self.scope.env[target.id] = value
            if target.id in self.scope.declared:
                # `global stop; stop = loss > best` (under `if rank == 0:`): the module's name
                # holds this too, with what the enclosing conditions carry, wherever it is read
                # after (`ev_Name` of a name some function declares global: the index's value)
                stored = sym_join(sym_taint(value), self._implicit_taint())
                if stored:
                    g = self.summary.globals
                    g[target.id] = sym_join(g.get(target.id), stored) if target.id in g else stored
        elif isinstance(target, (ast.Tuple, ast.List)):
            starred = any(isinstance(e, ast.Starred) for e in target.elts)
            tup = value.get("tup") if not starred else None
            if tup is None and not starred:
                tup = _as_tuple(value, len(target.elts)).get("tup")
            if tup is not None and len(tup) == len(target.elts):
                for e, v in zip(target.elts, tup):
                    self.bind(e, v)
                return
            elem = sym_element(value) if value.get("u") is None else value
            if value.get("pd"):
                elem = dict(elem, pd=value["pd"])  # unpacking a process-dependent value
            sized = [e for e in value.get("lmax") or () if e[0] == SIZED_BY_CONTENT]
            if sized:
                elem = dict(elem, lmax=sized)  # (`i, j = np.nonzero(m)`: each part as long as the selection)
            for e in target.elts:
                self.bind(e.value if isinstance(e, ast.Starred) else e, elem)
        elif isinstance(target, ast.Attribute):
            implicit = self._implicit_taint()
            if isinstance(target.value, ast.Name) and target.value.id == "self" and self.class_stack:
                cf = self.class_stack[-1]
                cf.attrs[target.attr] = sym_join(cf.attrs.get(target.attr), self._init_params(value))
                if implicit:
                    cf.cond_attrs[target.attr] = sym_join(cf.cond_attrs.get(target.attr), implicit)
                absent: Sym = {}
                for t, fatal in zip(self._attr_taints, self._attr_fatal):
                    if not fatal:
                        absent = sym_join(absent, t)
                if absent:
                    cf.absent_conds[target.attr] = sym_join(cf.absent_conds.get(target.attr), absent)
                elif target.attr not in cf.sure_attrs:
                    cf.sure_attrs.append(target.attr)
                self._param_write(target.attr, value)
                if not self.scope.is_module:
                    self.scope.env[_own_store_key(target.attr)] = value  # (`stored_by_call`)
            else:
                self.ev(target.value)
                base = target.value
                if isinstance(base, ast.Name) and not self.scope.is_module:
                    self._arg_write(base.id, value)
                if isinstance(base, ast.Name) and not self.scope.is_module and base.id in self.scope.facts.params \
                        and (cur := self.scope.env.get(base.id)) is not None:
                    # `state.steps = len(items)` on a parameter's object: what it holds now holds the
                    # value (returning `state` returns what `items` gave it); attributes are not
                    # told apart, so a read of another one (`state.num_steps`) sees it only by a
                    # guess (`evidence.stored_attribute`)
                    new = _with_stored_attribute(cur, value, target.lineno)
                    if new is not cur:
                        self.bind(base, new)
                # (only the conditions: a value stored through another reference, in a script or a
                # test, would otherwise reach every instance of every class with that attribute)
                stored = implicit
                if isinstance(target.value, ast.Name) and stored and not self.scope.is_module:
                    stores = self.summary.attr_stores
                    stores[target.attr] = sym_join(stores.get(target.attr), stored)
        elif isinstance(target, ast.Subscript):
            base = target.value
            if isinstance(base, ast.Attribute) and semantics.constant_key(target.slice, read) is None:
                self.attribute_grown(base)  # (a computed key may be a new one: `attribute_grown`)
            if isinstance(base, ast.Attribute) and isinstance(target.slice, ast.expr) \
                    and not isinstance(target.slice, ast.Slice):
                self.attribute_holds(base, value)  # (`self.engines[path] = Engine(path)`)
            if isinstance(base, ast.Attribute) and isinstance(base.value, ast.Name) and base.value.id == "self" \
                    and self.class_stack and (stored := sym_taint(sym_join(value, self.ev(target.slice)))):
                # `self.buckets[k] = v` changes the container the attribute holds: it holds v now
                # (a guess: which instance a later read sees is not followed)
                cf = self.class_stack[-1]
                if (korder := self.ev(target.slice).get("order")):
                    # keyed in an iteration order (`for k in names_set: self.d[k] = v`): the dict
                    # iterates in that order, as a local one so filled does (`unordered`); of
                    # elements of unknown type where every such order is
                    self.summary.order_sources = True
                    guess = semantics.set_iteration_desc(semantics.GUESS)
                    u = semantics.GUESS if all(o[0].startswith(guess) for o in korder) else True
                    cf.attrs[base.attr] = sym_join(cf.attrs.get(base.attr), {"u": u})
                    # (the same mapping everywhere: a value read from it by key carries no order,
                    # as the precise pass's store under such a key)
                    stored = _strip_order(stored, target.lineno)
                stored = {"via": [{"l": target.lineno, "n": evidence.STORED_ELEMENT_CALL, "a": _prune(stored, 1)}]}
                cf.attrs[base.attr] = sym_join(cf.attrs.get(base.attr), stored)
            elif isinstance(base, ast.Name):
                if not self.scope.is_module:
                    self._arg_write(base.id, sym_join(value, self.ev(target.slice)))
                cur = self.scope.env.get(base.id)
                if cur is not None:
                    key = self.ev(target.slice)
                    if key.get("order"):
                        # keyed by an arbitrary iteration order: same mapping, insertion order only
                        self.bind(base, dict(_strip_order(sym_join(cur, sym_taint(value)), target.lineno), u=True))
                    else:
                        whole = sym_join(cur, sym_element(sym_join(value, key)))
                        ck = semantics.constant_key(target.slice, read)
                        if not (isinstance(cur.get("keys"), dict) and ck in cur["keys"]) \
                                and not isinstance(target.slice, (ast.Slice, ast.Tuple)) \
                                and base.id in self._containers_here():
                            # (a dict built here, `m = {}`, may hold a new key now: `bound_under`)
                            self._grew.add(base.id)
                        if ck is not None and cur.get("keys") is not None:
                            whole = with_key(cur, ck, value, whole)  # `d["k"] = v`: that key holds v alone
                        self.bind(base, whole)

    def stored_attribute_from(self, target: ast.Attribute, value: ast.expr, v: Sym) -> None:
        # `x.attr = f(..., x.attr, ...)`: a call computes the value from the attribute's own
        # (not a plain copy); `ModuleSummary.restores`
        base = target.value
        if not isinstance(base, ast.Name) or not isinstance(value, ast.Call):
            return
        if any(isinstance(n, ast.Attribute) and n.attr == target.attr and isinstance(n.value, ast.Name)
               and n.value.id == base.id for n in ast.walk(value)):
            self.summary.restores.setdefault(target.attr, []).append(v)

    def _implicit_taint(self) -> Sym:
        """What the conditions carry under which an attribute assignment here runs (enclosing
        branches and loops, earlier early exits, a signal handler's body):
        `ClassFacts.cond_attrs`, joined by `ProjectIndex.attr` as a guess."""
        out: Sym = {}
        for t in self._attr_taints:
            out = sym_join(out, t)
        return out

    def _param_write(self, attr: str, value: Sym) -> None:
        """`FunctionFacts.param_writes`: a method other than `__init__` (whose parameters are
        its constructions', `_init_params`) storing into its own attribute what its parameters
        give, or under a condition on them."""
        sc = self.scope
        if sc.is_module or sc.facts.name == f"{self.class_stack[-1].name}.__init__" or not sc.param_pos:
            return
        names = self._written_from(value)
        if names:
            pw = sc.facts.param_writes
            pw[attr] = sorted(names.union(pw.get(attr, ())))

    def _arg_write(self, param: str, value: Sym) -> None:
        """`FunctionFacts.arg_writes`: storing into a parameter's object (`control["stop"] =
        True`, `state.done = flag`) what the other parameters give, or under a condition on them."""
        sc = self.scope
        if sc.is_module or param not in sc.param_pos:
            return
        names = self._written_from(value) - {param}
        if names:
            aw = sc.facts.arg_writes
            aw[param] = sorted(names.union(aw.get(param, ())))

    def _written_from(self, value: Sym) -> set[str]:
        """The parameters a store of `value` here follows: those it is computed from and those
        the enclosing conditions read, directly or through an attribute of its own object this
        method stored from them earlier (`self.done = self.bad > self.patience`)."""
        sc = self.scope
        names = (_sym_params(value) | _sym_params(self._attr_params)) & sc.param_pos.keys()
        pw = sc.facts.param_writes
        if pw and self.class_stack:
            own = f"{self.class_stack[-1].name}."
            for r in _sym_refs(value) | _sym_refs(self._attr_params):
                if r.startswith(own) and r[len(own):] in pw:
                    names.update(pw[r[len(own):]])
        return names

    def _init_params(self, value: Sym) -> Sym:
        """A value `__init__` stores in an attribute: its parameters become references to the
        arguments of the constructions (`"ip"`, resolved by the index); elsewhere they stay
        unresolved (a method's arguments are not followed into attributes)."""
        sc = self.scope
        if sc.is_module or sc.facts.name != f"{self.class_stack[-1].name}.__init__":
            return value
        return self._as_init_refs(value, 2)

    def _as_init_refs(self, value: Sym, depth: int) -> Sym:
        # (also in the calls the value comes from, a level or two down: `rng.integers(size=(rows,
        # 3))` with `rows` from a parameter is as process-dependent as what the constructions pass)
        sc = self.scope
        vias = value.get("via") if depth > 0 else None
        if not value.get("params") and not vias and not value.get("trs") \
                and not value.get("cnt"):
            return value
        out = {k: v for k, v in value.items() if k != "params"}
        if value.get("trs"):
            out["trs"] = self._as_init_refs(value["trs"], depth)  # (the structure's test, `either`)
        if value.get("cnt"):
            out["cnt"] = self._as_init_refs(value["cnt"], depth)  # (what decides a built list's count)
        ip = [f"{sc.facts.name}:{sc.param_pos[p.removesuffix('!o')]}:{p}" for p in value.get("params", ())
              if p.removesuffix("!o") in sc.param_pos]
        if ip:
            out["ip"] = ip
            if set(value) <= {"params", "lp"} and len(value["params"]) == 1 and value.get("lp") == value["params"]:
                out["ipi"] = True  # (the parameter itself: the argument object, a set where it is one)
        if vias:
            out["via"] = [{k: (self._as_init_refs(v, depth - 1) if k in ("a", "r") and isinstance(v, dict) else v)
                           for k, v in c.items()} for c in vias]
        return out

    def run_block(self, stmts: list[ast.stmt] | semantics.Repeated | None) -> None:
        if isinstance(stmts, semantics.Repeated):
            for _ in range(stmts.passes):
                self.run_block(stmts.body)
            return
        for s in stmts or ():
            self.stmt(s)
            if s in self._left_here:
                break  # (a decided `if` whose arm taken always leaves: what follows never runs)

    # `stmt`, `st_Expr`, `st_Assign`, `st_AnnAssign`: semantics.StatementRules, told how this
    # pass marks a number and where an assignment's targets are; other statements: their expressions.
    as_number = staticmethod(lambda v: dict(v, num=True))
    is_unordered = staticmethod(lambda v: bool(v.get("u")))
    as_ordered = staticmethod(lambda v: {k: x for k, x in v.items() if k != "u"})
    nothing = staticmethod(dict)
    data = staticmethod(lambda v: sym_taint(v))
    tracks_target = staticmethod(lambda t: isinstance(t, ast.Name))
    join = staticmethod(lambda a, b: sym_join(a, b))
    parts = read_ast  # (a statement's parts: semantics.StatementRules)
    assign_targets = staticmethod(lambda node: node.targets)
    read = staticmethod(read)

    def st_other(self, node: ast.stmt) -> None:
        for child in _children(node):
            if isinstance(child, ast.expr):
                self.ev(child)

    def st_Delete(self, node: ast.Delete) -> None:
        # `del d[k]`: a removal from the container d (`semantics.removed`), as the precise pass's
        self.st_other(node)
        for t in node.targets:
            for e in (t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t]):
                if isinstance(e, ast.Subscript) and not self.ev(e.slice).get("order"):
                    self.removed(e.value)

    def st_Expr(self, node: ast.Expr) -> None:
        super().st_Expr(node)
        c = node.value
        f = self.scope.facts
        if isinstance(c, ast.Call) and f is not None and "d" not in f.flags and semantics.may_drop_reduction(
                self.qualify(c.func), c.func.attr if isinstance(c.func, ast.Attribute) else None,
                any(isinstance(a, ast.Name) for a in c.args)):
            f.flags += "d"  # a call as a statement that may drop a reduction's result (MCJ305)

    def st_Return(self, node: ast.Return):
        if not self.scope.is_module:
            self._note_none_return(node.value)
        if node.value is not None and not self.scope.is_module:
            f = self.scope.facts
            v = self.ev(node.value)
            if f.returns:
                # `return make_iterators(...)` beside `return it, None`: the call's result is taken
                # element by element too, so the tuple's elements stay apart.
                n = len(f.returns["tup"]) if "tup" in f.returns else len(v["tup"]) if "tup" in v else 0
                if n:
                    f.returns, v = _as_tuple(f.returns, n), _as_tuple(v, n)
            if self._ret_taints and self._chooses(node.value):
                # `if jax.process_index() == 0: return True` / `return sgd_step`: which constant or
                # function comes back is the decision itself. (Computed values are left to their
                # own data: a helper's whole result tainted by any branch it took drowned real
                # findings in noise.)
                for t in self._ret_taints:
                    if "_p" not in t:
                        v = sym_join(v, t)
                    elif _is_bool_constant(node.value):
                        v = sym_join(v, {k: x for k, x in t.items() if k != "_p"})
            if not (isinstance(node.value, ast.List) and not any(isinstance(e, ast.Starred) for e in node.value.elts)):
                self._counted_returns.setdefault(f.name, []).append(v.get("cnt") == {} and not self._ret_taints)
            f.returns = sym_join(f.returns, v)
            # Host data returned on every path is host data at every call (`semantics.is_host_data`).
            self._ret_host[f.name] = self._ret_host.get(f.name, True) and (self.is_host(node.value) or v.get("host") is True)
            if self._ret_host[f.name]:
                f.returns["host"] = True
            else:
                f.returns.pop("host", None)

    def _note_none_return(self, value: ast.expr | None) -> None:
        """Whether this function returns None under a condition that may differ between
        processes (`if jax.process_index() != 0: return None`), and whether it returns anything
        else: where both, its result's None-ness (its structure, "tr") is that condition's
        (`_none_structure`, at the function's end). Whether it is None is what a caller's
        `x is None` asks, which content taint does not answer."""
        name = self.scope.facts.name
        n = len(value.elts) if isinstance(value, ast.List) and not any(isinstance(e, ast.Starred) for e in value.elts) \
            else None
        self._display_returns.setdefault(name, {}).setdefault(n, []).extend(self._return_control() if n else ())
        srcs: list = []
        later: Sym = {}  # (conditions the index resolves: `if is_master():`, a project helper, a parameter)
        for t in self._ret_taints:
            if "_p" not in t:
                srcs = _merge_list(srcs, _merge_list(t.get("pd", []), t.get("pdc", [])))
                later = sym_join(later, {k: v for k, v in t.items() if k in ("via", "refs")})
            elif t.get("params"):
                # (a test of parameters, `if rank != 0:`: decided by what the caller passes them,
                # `ProjectIndex._structure_by_arguments`)
                later = sym_join(later, {"params": t["params"]})
        if isinstance(value, ast.Dict) and value.keys and all(k is not None for k in value.keys):
            # `return {"ids": ids, "pix": None}` under `if rank != 0:`, `{"ids": ids, "pix": pix}`
            # otherwise: whether that key holds None is decided by the conditions, as for the
            # whole result (`_none_structure`)
            for k, v in zip(value.keys, value.values):
                ck = semantics.constant_key(k, read)
                if ck is None:
                    continue
                if isinstance(v, ast.Constant) and v.value is None:
                    had = self._key_none.setdefault(name, {}).get(ck, ([], {}))
                    self._key_none[name][ck] = (_merge_list(had[0], srcs), sym_join(had[1], later) if later else had[1])
                else:
                    self._key_value.setdefault(name, set()).add(ck)
        if value is None or isinstance(value, ast.Constant) and value.value is None:
            if srcs:
                self._none_returns[name] = _merge_list(self._none_returns.get(name, []), srcs)
            if later:
                self._none_later[name] = _prune(sym_join(self._none_later.get(name, {}), later), 1)
        else:
            self._value_returns.add(name)
            if _empty_display(value):
                srcs = self._return_control()
                if srcs:
                    self._empty_returns[name] = _merge_list(self._empty_returns.get(name, []), srcs)
            else:
                self._filled_returns.add(name)

    def _return_control(self) -> list:
        """The sources of the process-dependent conditions under which a `return` here runs."""
        srcs: list = []
        for t in self._ret_taints:
            if "_p" not in t:
                srcs = _merge_list(srcs, _merge_list(t.get("pd", []), t.get("pdc", [])))
        return srcs

    def _none_structure(self, f: FunctionFacts) -> None:
        srcs = self._none_returns.pop(f.name, None)
        later = self._none_later.pop(f.name, None)
        if srcs and f.name in self._value_returns:
            f.returns = dict(f.returns, tr=_merge_list(f.returns.get("tr", []), srcs))
        if later and f.name in self._value_returns:
            # The structure decided by a condition the index resolves ("trs": its sources are
            # the structure's, `ProjectIndex._resolve`).
            f.returns = dict(f.returns, trs=later)
        self._value_returns.discard(f.name)
        nones, valued = self._key_none.pop(f.name, {}), self._key_value.pop(f.name, set())
        keys = f.returns.get("keys") if f.returns else None
        if nones and isinstance(keys, dict):
            keys = dict(keys)
            for k, (ksrcs, klater) in nones.items():
                if k in valued and isinstance(keys.get(k), dict) and (ksrcs or klater):
                    x = dict(keys[k])
                    if ksrcs:
                        x["tr"] = _merge_list(x.get("tr", []), ksrcs)
                    if klater:
                        x["trs"] = _prune(sym_join(x.get("trs", {}), klater), 1)
                    keys[k] = x
            f.returns = dict(f.returns, keys=keys)
        # An empty container returned under a process-dependent condition (`if
        # jax.process_index() != 0: return {}`) and another one otherwise: how many elements
        # (keys) the result has is decided by that condition ("cnt"), whatever each holds.
        srcs = self._empty_returns.pop(f.name, None)
        if srcs and f.name in self._filled_returns:
            f.returns = dict(f.returns, cnt=sym_join(f.returns.get("cnt") or {"pd": []}, {"pd": srcs}))
        self._filled_returns.discard(f.name)
        # Every `return` a list display of one number of elements (`return [a, b]`): as many on
        # every process, whatever they hold ("ln": the index keeps that count through the call).
        # Displays of other lengths returned under process-dependent conditions: how many
        # elements is decided by those conditions ("cnt"), as for an empty one (above).
        lengths = self._display_returns.pop(f.name, {})
        counted = self._counted_returns.pop(f.name, [])
        if len(lengths) == 1 and None not in lengths and f.returns and f.returns.get("cnt") == {}:
            f.returns = dict(f.returns, ln=True)
        elif list(lengths) == [None] and counted and all(counted) and f.returns and f.returns.get("cnt") == {}:
            # Every `return` a value of one count decided by nothing, under no condition (`return
            # [f(x) for x in range(4)]`, `return rng.integers(lo, hi, size=4)`): as for a display.
            f.returns = dict(f.returns, ln=True)
        elif len(lengths) > 1 and None not in lengths and f.returns is not None:
            srcs = _merge_list([], [x for xs in lengths.values() for x in xs])
            if srcs:
                f.returns = dict(f.returns, cnt=sym_join(f.returns.get("cnt") or {"pd": []}, {"pd": srcs}))

    def _chooses(self, e: ast.expr) -> bool:
        """A constant, or a module-level name (a function, a global), as a returned choice."""
        if isinstance(e, ast.Constant):
            return True
        if isinstance(e, ast.UnaryOp) and isinstance(e.operand, ast.Constant):
            return True
        while isinstance(e, ast.Attribute):
            e = e.value
        return isinstance(e, ast.Name) and e.id not in ("self", "cls") and self._local(e.id) is None

    # `branches` (semantics.StatementRules): a block runs with its condition's control taint on
    # what the function returns; a condition's references reach what the blocks bind.
    _loop_arms = False  # the next `branches` runs a loop's body (see `loop`)

    _loops = 0  # loops the statement being read is in (their conditions gate no call: `_gated_param_call`)

    def loop(self, cond, body, node=None, narrow: str | None = None) -> None:
        self._loop_arms = True
        self._loops += 1
        try:
            super().loop(cond, body, node, narrow)
        finally:
            self._loops -= 1

    def arms_begin(self, cond: Sym) -> tuple[Sym, Sym]:
        # A loop's iterations carry nothing into the attributes its body assigns (a store in a loop
        # over local data is not a store under a condition: that flooded codebases with warnings).
        in_loop, self._loop_arms = self._loop_arms, False
        outer, self._grew = self._grew, set()
        return _control(cond), ({} if in_loop else _implicit(cond)), ({} if in_loop else _read_names(cond)), outer, []

    def run_arm(self, block, token: tuple) -> None:
        control, implicit, params, _, arms = token
        self._grew = set()
        try:
            self._run_arm(block, control, implicit, params)
        finally:
            arms.append(self._grew)

    def _run_arm(self, block, control: Sym, implicit: Sym, params: Sym) -> None:
        if control:
            self._ret_taints.append(control)
        depth = len(self._attr_taints)  # (an early exit inside the block counts in it alone)
        pdepth = len(self._attr_params)
        gdepth = len(self._gates)  # (and a parameter test it leaves under)
        gate = self._arm_gates.get(id(block))
        if gate is not None:
            self._gates.extend(gate)
        if implicit:
            self._attr_taints.append(implicit)
            self._attr_fatal.append(False)
        if params.get("params") or params.get("refs"):
            self._attr_params.append(params)  # (`_param_write`: parameters and attributes a condition reads)
        try:
            self.run_block(block)
        finally:
            if control:
                self._ret_taints.pop()
            del self._attr_taints[depth:]
            del self._attr_fatal[depth:]
            del self._attr_params[pdepth:]
            del self._gates[gdepth:]

    def arms_end(self, cond: Sym, node, token: tuple) -> Sym:
        # (grown in some arms, not in every one: in one arm of an `if`, not in its `else`)
        # (of an `if` only: a loop's body run or not is how often, which its iterable decides)
        arms = token[4]
        self._arm_grew = set().union(*arms) - set.intersection(*arms) if arms and isinstance(node, ast.If) else set()
        self._grew = token[3].union(*arms)
        return {k: v for k, v in cond.items() if k in ("pd", "pdc", "order", "hash", "via", "params", "refs")}

    def mutated(self, name, v):
        # (`xs.append(v)` on a container built here by a display, `xs = []`: it grew in this arm,
        # `bound_under`)
        if isinstance(name, ast.Name) and name.id in self._containers_here():
            self._grew.add(name.id)
        return super().mutated(name, v)

    divergent = staticmethod(lambda cond: any(k in cond for k in ("pd", "pdc", "order", "hash")))
    agreed = staticmethod(lambda v: bool(v.get("san")))

    def _containers_here(self) -> frozenset:
        """The local names the function being read binds to a dict or list it builds (a display,
        a comprehension, `dict()`, `defaultdict(list)`): containers that grow by a store of a new
        key or an element (an array's `out[i] = v` adds none)."""
        node = self._gate_node
        if node is None or self.scope.is_module:
            return frozenset()
        memo = self.__dict__.setdefault("_containers_memo", {})
        got = memo.get(id(node))
        if got is None or got[0] is not node:
            names = set()
            for st in ast.walk(node):
                if isinstance(st, (ast.Assign, ast.AnnAssign)) and st.value is not None:
                    v = st.value
                    made = isinstance(v, (ast.Dict, ast.DictComp, ast.List, ast.ListComp)) or (
                        isinstance(v, ast.Call) and (self.qualify(v.func) or "").rpartition(".")[2]
                        in ("dict", "list", "defaultdict", "OrderedDict", "Counter"))
                    if made:
                        for t in (st.targets if isinstance(st, ast.Assign) else [st.target]):
                            if isinstance(t, ast.Name):
                                names.add(t.id)
            got = memo[id(node)] = (node, frozenset(names))
        return got[1]

    def bound_under(self, m: Sym, name: str, vals: list, implicit: Sym) -> Sym:
        if not implicit:
            return m
        if name in self._arm_grew and (read := _params_read(implicit)):
            # `if item > 3: metrics["big"] = item` (or `xs.append(v)`) in one arm only, under a test
            # of parameters: which keys (how many elements) the container holds follows what the
            # caller passes them ("kp", resolved at the call: `ProjectIndex._structure_by_arguments`)
            m = dict(m, kp=sym_join(m.get("kp") or {}, {"params": read}))
        # An unordered container (a dict keyed by a set's elements) has no order to take from
        # the condition: filling it in any order gives the same mapping.
        imp = {x: y for x, y in implicit.items() if x != "order"} if m.get("u") else implicit
        # (the condition says which value, not where it lives: locality is kept)
        local = {x: m[x] for x in ("host", "lp") if x in m}
        out = dict(sym_join(m, imp), **local)
        # (where every block left the container it had, changed only inside its elements,
        # `element_changed`, the very count record each holds: the condition decides what the
        # elements hold, not how many there are)
        cnt = vals[0].get("cnt") if vals and vals[0] is not None else None
        if cnt is not None and all(v is not None and v.get("cnt") is cnt for v in vals):
            out["cnt"] = cnt
        return out

    # `st_If` (semantics.StatementRules): the `__main__` block runs only as a script; a yield under
    # an `if` runs as often as it holds; where one arm always leaves, the rest of the function
    # runs on the other side only (its returns take the test's control taint).
    def decided(self, node: ast.If) -> bool:
        """(semantics.StatementRules.decided) A test of the process count with 1 (`if
        jax.process_count() > 1:`) goes one way in every job of several processes, the only
        kind in which processes can part ways (`semantics.process_count_test`): only that arm
        runs there, and where it always leaves, nothing after the `if` does (as the precise
        pass's `decided` and `ends_block`)."""
        taken = semantics.decide(node.test, read, {}, self._is_process_count)
        if taken is None:
            return False
        arm = node.body if taken else node.orelse
        self.run_block(arm)
        if arm and semantics.always_leaves(arm, last_statement):
            self._left_here.add(node)
        return True

    def _is_process_count(self, e: ast.expr) -> bool:
        """The process count (`semantics.is_process_count`): `jax.process_count()`, a name bound
        once to it (`_count_name`), an object's member that holds it (`_count_member`)."""
        if not self._names_count:
            return False
        return semantics.is_process_count(e, read, self.qualify, self._count_name, self._count_member)

    def _count_name(self, name: str) -> bool:
        """Whether `name`, read here, is bound once, and never again, to the process count: in
        the function that reads it, else (a name it does not bind, in a function of the module
        or the module itself) at module level."""
        fn = None if self.scope.is_module else self._gate_node
        if fn is not None:
            bound, counts = self._counts_of(fn)
            if name in bound:
                return name in counts
            if not (self.scope.outer is None or self.scope.outer.is_module):
                return False  # (an enclosing function's name: not followed)
        return name in self._counts_of(None)[1]

    def _counts_of(self, fn) -> tuple[set[str], set[str]]:
        key = None if fn is None else id(fn)
        hit = self._count_names.get(key)
        if hit is None:
            bound, counts, _ = semantics.scope_counts(*_scope_bindings(self.tree if fn is None else fn,
                                                                     self._may_declare_global()), read, self.qualify)
            hit = self._count_names[key] = (bound, counts)
        return hit

    def _count_member(self, receiver: ast.expr, attr: str, called: bool) -> bool:
        """Whether `receiver.attr` (called: `receiver.attr()`) holds the process count: the
        receiver is a name holding an object of a class of this module (`self`) whose member
        `attr` does (`member_is_count`)."""
        if not isinstance(receiver, ast.Name):
            return False
        v = self.scope.env.get(receiver.id)
        cls = v.get("cls") if isinstance(v, dict) else None
        if not isinstance(cls, str):
            return False
        mro, todo = [], [cls]
        while todo and len(mro) < 20:
            c = self.summary.classes.get(todo.pop(0))
            if c is None or c in mro:
                continue
            mro.append(c)
            todo.extend(c.bases)
        return member_is_count(mro, attr, called)

    def _class_counts(self, node: ast.ClassDef) -> list[str]:
        """`ClassFacts.counts` of a class of this module (`_count_members`); none where the file
        never names the count."""
        if not self._names_count:
            return []
        if self._attr_stores is None:
            self._attr_stores = _attribute_stores(self.tree)
        module_counts = self._counts_of(None)[1]
        return _count_members(node, lambda v: semantics.is_process_count(v, read, self.qualify, module_counts.__contains__),
                              self._attr_stores)

    def script_only(self, node: ast.If) -> bool:
        if not (self.scope.is_module and _is_main_guard(node.test)):
            return False
        saved, self._main_guard = self._main_guard, True
        try:
            self.branches({}, [node.body, node.orelse])
        finally:
            self._main_guard = saved
        return True

    def st_While(self, node: ast.While) -> None:
        if self._endless_at is not None or not _endless_loop(node):
            return super().st_While(node)
        self._endless_at = (len(self._loop_taints), len(self._exit_counts))
        try:
            super().st_While(node)
        finally:
            self._endless_at = None

    def arms_of_if(self, node: ast.If, cond: Sym) -> None:
        self._loop_taints.append(self._count_of_test(cond, node.test))
        body, other = self._param_gates(node.test)
        if body:
            self._arm_gates[id(node.body)] = body
        if other and node.orelse:
            self._arm_gates[id(node.orelse)] = other
        if other and not node.orelse:
            self._exit_gates[id(node)] = other  # (`after_if`: where the body leaves, the rest runs so)

    def after_if(self, node: ast.If, cond: Sym, token: None) -> None:
        self._loop_taints.pop()
        self._arm_gates.pop(id(node.body), None)
        if node.orelse:
            self._arm_gates.pop(id(node.orelse), None)
        other = self._exit_gates.pop(id(node), None)
        if other and not node.orelse and last_statement(node.body) == "return" \
                and self._gate_node is not None and any(st is node for st in self._gate_node.body):
            # `if not sync: return` among the function's own statements: the rest of it runs
            # where the test fails (not inside a loop, whose body may run no time, a `try`, whose
            # `finally` runs anyway, or a loop's `else`, which a `break` skips)
            self._gates.extend(other)
        self._ungate_both_arms(node)
        control = _control(cond)
        if not self.scope.is_module and _always_exits(node.body) != _always_exits(node.orelse):
            if control:
                self._ret_taints.append(control)  # the rest of the function runs on one side only
            if _implicit(cond):
                self._attr_taints.append(_implicit(cond))
                leaving = node.body if _always_exits(node.body) else node.orelse
                self._attr_fatal.append(self._try_depth == 0 and last_statement(leaving) == "raise"
                                        and not _returns_in(leaving))
            if read_names := _read_names(cond):
                self._attr_params.append(read_names)
            self._exit_counts.append(self._count_of_test(cond, node.test))

    def entered(self, expr: ast.expr, value: Sym) -> None:
        """`with cm:` calls its class's `__enter__` and `__exit__` (`semantics.context_manager_work`):
        recorded as method calls on the manager (the index resolves its class)."""
        facts = self.scope.facts
        if facts is None or not value or not (value.get("cls") or value.get("via") or value.get("refs")):
            return
        for m in ("__enter__", "__exit__"):
            self._special_call(facts, value, m, expr.lineno)

    def _special_call(self, facts: FunctionFacts, value: Sym, method: str, line: int) -> dict:
        """A special method that Python calls on `value` (`__enter__`, `__len__`, `__iter__`),
        recorded as a method call on it (the index resolves its class); the record."""
        recv = _prune({k: v for k, v in value.items() if k in ("cls", "via", "refs")}, 1)
        c = {"l": line, "m": method, "r": recv, "np": 0}
        if len(facts.calls) < CALLS_CAP and c not in facts.calls:
            facts.calls.append(c)
        return c

    def dunder_len(self, v: Sym, node: ast.Call) -> Sym | None:
        """`len(obj)` runs `type(obj).__len__(obj)` (`semantics.StatementRules.dunder_len`): of an
        instance of a project class (known, constructed, or held where the index finds it), a
        call of its `__len__` on the value, resolved by the index as `entered`'s calls are."""
        facts = self.scope.facts
        classes = [v["cls"]] if v.get("cls") else [
            c["n"] for c in v.get("via", []) if "n" in c and self._class_like(c["n"])]
        if facts is None or not (classes or v.get("refs")):
            return None
        return {"via": [self._special_call(facts, v, "__len__", node.lineno)]}

    def _class_like(self, q: str) -> bool:
        """Whether a called name may be a class: capitalised (`Loader`), or a class this module
        defines (`class tqdm:`): constructing it runs its `__init__` with the arguments given."""
        return q.rpartition(".")[2][:1].isupper() or q in self.module_classes

    def _iterates_instance(self, it: Sym, node: ast.AST) -> Sym:
        """Iterating an instance of a project class runs its `__iter__`/`__next__`: recorded as
        calls (their reads reach this function) and part of the iterable's value."""
        facts = self.scope.facts
        # The class: known (`self`), or a constructor call the value comes from (resolved by the
        # index; a name that is not a class resolves to nothing).
        classes = [it["cls"]] if it.get("cls") else [
            c["n"] for c in it.get("via", []) if "n" in c and self._class_like(c["n"])]
        if facts is None:
            return it
        if not classes:
            if not (it.get("refs") or it.get("via")):
                return it
            # A class the index finds (an attribute holding one project class's instances): its
            # `__iter__`, called on the value.
            return sym_join(it, {"via": [self._special_call(facts, it, "__iter__", node.lineno)]})
        calls = [{"l": node.lineno, "n": f"{cls}.{m}"} for cls in classes[:2] for m in semantics.ITERATION_METHODS]
        for c in calls:
            if len(facts.calls) < CALLS_CAP and c not in facts.calls:
                facts.calls.append(c)
        return sym_join(it, {"via": calls})

    # `st_For` (semantics.StatementRules): an iteration's order is a list of sources; a yield in
    # the body carries what decides the iterations (`_loop_taints`).
    iterated = _iterates_instance
    statement_reader = property(lambda self: _STATEMENTS)

    def iteration(self, it: Sym, node: ast.expr) -> tuple[Sym, Sym, list]:
        elem = sym_element(it)
        order = list(it.get("order", ()))
        if it.get("u"):
            order.append(self.src(semantics.set_iteration_desc(it["u"]), node, kinds.SET_ORDER))
            elem = sym_join(elem, {"order": [order[-1]]})
        return it, elem, order

    def bind_iteration(self, target: ast.expr, iterable: ast.expr, elem: Sym) -> None:
        self.bind(target, elem)

    iteration_count = staticmethod(lambda it, iterable, node: sym_taint(it))

    def enter_iteration(self, it: Sym) -> None:
        self._loop_taints.append(_count_taint(it))  # (a yield in the body runs as often as it decides)

    def leave_iteration(self) -> None:
        self._loop_taints.pop()

    def order_free(self, n: str, order: list, node: ast.For) -> None:
        v = self.scope.env[n] if n in self.scope.env else None
        if v and (v.get("order") or v.get("via")):
            # What calls on the elements return (resolved later) goes through an order-free
            # record too; order from elsewhere stays.
            rest = [o for o in v.get("order", ()) if o not in order]
            out = _strip_order(v, node.lineno)
            self.scope.env[n] = dict(out, order=rest) if rest else out

    def st_FunctionDef(self, node):
        qual = self._qualname(node.name)
        deco_jit = None
        is_property = False
        decos: list[str] = []  # project functions applied as decorators (`semantics.GATED_CALL`)
        static_lits: tuple[list[int], list[str]] = ([], [])
        for d in node.decorator_list:
            dq = self.qualify(d.func if isinstance(d, ast.Call) else d)
            if dq in ("property", "functools.cached_property", "cached_property"):
                is_property = semantics.CACHED_PROPERTY if dq != "property" else True
            elif dq in K.JIT_WRAPPERS and not (isinstance(d, ast.Call) and semantics.jit_runs_locally(
                    [(k.arg, k.value) for k in d.keywords], read, self.qualify)):
                deco_jit = semantics.jit_kind(K.JIT_WRAPPERS[dq], [k.arg for k in d.keywords if k.arg]
                                              if isinstance(d, ast.Call) else [])
                static_lits = literal_statics(d.keywords) if isinstance(d, ast.Call) else ([], [])
            elif dq in ("functools.partial", "partial") and isinstance(d, ast.Call) and d.args and self.qualify(d.args[0]) in K.JIT_WRAPPERS:
                if semantics.jit_runs_locally([(k.arg, k.value) for k in d.keywords], read, self.qualify):
                    continue
                deco_jit = semantics.jit_kind(K.JIT_WRAPPERS[self.qualify(d.args[0])], [k.arg for k in d.keywords if k.arg])
                static_lits = literal_statics(d.keywords)
            else:
                dv = self.ev(d)
                if dv.get("jitf"):  # `@donating_jit`, a `functools.partial(jax.jit, ...)` of this module
                    deco_jit, static_lits = dv["jitf"][0], (dv["jitf"][1], dv["jitf"][2])
                elif not isinstance(d, ast.Call) and len(dv.get("refs", ())) == 1 and len(decos) < MAX_ITEMS:
                    decos.append(dv["refs"][0])
        defaults = {}
        a = node.args
        pos = a.posonlyargs + a.args
        const_defaults = {}
        for p, dflt in list(zip(pos[len(pos) - len(a.defaults):], a.defaults)) + list(zip(a.kwonlyargs, a.kw_defaults)):
            if dflt is not None and (c := semantics.constant_repr(dflt, read)) is not None:
                const_defaults[p.arg] = c
        for p, dflt in zip(pos[len(pos) - len(a.defaults):], a.defaults):
            defaults[p.arg] = sym_taint(self.ev(dflt))
            if isinstance(dflt, ast.Constant) and isinstance(dflt.value, str):
                self._str_defaults.setdefault(qual, {})[p.arg] = dflt.value  # (see key_params)
        for p, dflt in zip(a.kwonlyargs, a.kw_defaults):
            if dflt is not None:
                defaults[p.arg] = sym_taint(self.ev(dflt))
        params = [p.arg for p in pos + a.kwonlyargs] + ([a.vararg.arg] if a.vararg else []) + ([a.kwarg.arg] if a.kwarg else [])
        self._positional[qual] = [p.arg for p in pos]
        facts = FunctionFacts(qual, node.lineno, params=params, cls=self.class_stack[-1].name if self.class_stack else None,
                              jit=deco_jit, prop=is_property, decos=decos, statics=_static_params(static_lits, [p.arg for p in pos]),
                              defaults=const_defaults,
                              host_defaults=[p.arg for p, d in list(zip(pos[len(pos) - len(a.defaults):], a.defaults))
                                             + list(zip(a.kwonlyargs, a.kw_defaults)) if d is not None and self.is_host(d)])
        if self._names_stop and _raises_stop_iteration(node):
            facts.flags += "n"  # ends an iteration by raising StopIteration (read by taint._method_call)
        self.summary.functions[qual] = facts
        in_class_body = bool(self.class_stack) and self.class_stack[-1].name == qual.rsplit(".", 1)[0]
        own = list(_own_nodes(node.body))  # (one walk of its own body for both scans below)
        if in_class_body and pos:
            facts.writes = _self_writes(own, pos[0].arg)
        facts.path_writes = _path_params(own, params, self.qualify)
        if in_class_body:
            self.class_stack[-1].methods.append(node.name)
        value: Sym = {"refs": [qual]}
        if deco_jit:
            value = {"callable": f"`{node.name}` ({deco_jit})", "refs": [qual]}
            if self._deco_may_run_locally(node, deco_jit, qual):
                value["hl"] = True
                facts.flags += "l"
                self._local_jits.add(qual)
        if self.scope.is_module and not self.class_stack and self._closes_over_host_only(qual):
            facts.flags += "k"
        if not in_class_body and (not self.scope.is_module or deco_jit):
            self.scope.env[node.name] = value
        self.pending.append((node, facts, params, defaults, self.scope, list(self.class_stack)))

    st_AsyncFunctionDef = st_FunctionDef

    def _qualname(self, name: str) -> str:
        cls = self.class_stack[-1].name if self.class_stack and self._in_class_body else None
        return semantics.qualname(name, self.module, cls, None if self.scope.is_module else self.scope.facts.name)

    def st_ClassDef(self, node: ast.ClassDef):
        qual = self._qualname(node.name)
        bases = []
        for b in node.bases:
            bq = self.qualify(b)
            if bq:
                bases.append(bq)
        cf = ClassFacts(qual, node.lineno, bases)
        self.summary.classes[qual] = cf
        self.class_stack.append(cf)
        saved_scope, saved_in = self.scope, self._in_class_body
        self._in_class_body = True
        # Class bodies: a class body runs as a namespace of its own: whatever its statements bind
        # (any assignment target: a name, a tuple or list of names, `x += ...`) becomes a class
        # attribute, and a later statement of the body reads the names bound before it (not the
        # methods: their names resolve past the class). `rank, size = jax.process_index(), ...`
        # binds `rank` to its own element, as the same assignment does in a function.
        module_env = self.scope.env
        body_env = Env(parent=module_env)
        for s in node.body:
            for t in (s.targets if isinstance(s, ast.Assign) else [s.target] if isinstance(s, (ast.AnnAssign, ast.AugAssign)) else []):
                for n in _nodes(t):
                    if isinstance(n, ast.Name) and n.id not in cf.sure_attrs:
                        cf.sure_attrs.append(n.id)
            if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.stmt(s)
                continue
            self.scope.env = body_env
            try:
                self._class_body_stmt(s, cf)
            finally:
                self.scope.env = module_env
        self._dataclass_init(node, qual, cf)
        cf.counts = self._class_counts(node)
        self.scope, self._in_class_body = saved_scope, saved_in
        self.class_stack.pop()

    def _class_body_stmt(self, s: ast.stmt, cf: ClassFacts) -> None:
        """One assignment of a class body (run in the body's own namespace, `st_ClassDef`)."""
        if isinstance(s, ast.Assign):
            v = self.ev(s.value)
            if v.get("statics") and isinstance(s.value, ast.Call) and self.qualify(s.value.func) not in ("staticmethod", "classmethod"):
                # `apply = jax.jit(_apply, static_argnums=(0, 2))` binds like a function:
                # called through an instance (`self.apply(x, n)`), positions count `self`.
                v = dict(v, statics=[[p - 1 if p is not None else None, n] for p, n in v["statics"] if p != 0])
            for t in s.targets:
                if isinstance(t, ast.Name):
                    cf.attrs[t.id] = sym_join(cf.attrs.get(t.id), v)
                    self.scope.env[t.id] = v
                elif isinstance(t, (ast.Tuple, ast.List)) and all(
                        isinstance(n, ast.Name) for n in _nodes(t) if not isinstance(n, (ast.Tuple, ast.List, ast.Starred, ast.Load, ast.Store))):
                    # (the elements as `bind` gives them to the same names in a function; a list
                    # display unpacks element by element, as a tuple display does)
                    before = dict(self.scope.env.own)
                    tv = v
                    if isinstance(s.value, ast.List) and not any(isinstance(e, ast.Starred) for e in s.value.elts):
                        tv = dict(v, **self.ev_Tuple(ast.Tuple(elts=s.value.elts, ctx=ast.Load())))
                    self.bind(t, tv)
                    for n in _nodes(t):
                        if isinstance(n, ast.Name) and (n.id in self.scope.env.own) and self.scope.env.own[n.id] is not before.get(n.id):
                            cf.attrs[n.id] = sym_join(cf.attrs.get(n.id), self.scope.env.own[n.id])
        elif isinstance(s, ast.AnnAssign) and s.value is not None and isinstance(s.target, ast.Name):
            # dataclass-style fields with defaults
            v = self.ev(s.value)
            cf.attrs[s.target.id] = sym_join(cf.attrs.get(s.target.id), v)
            self.scope.env[s.target.id] = v
        elif isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name):
            # `offset += jax.process_index()`: the attribute holds the old value combined with the new
            v = sym_join(self.scope.env.get(s.target.id) or {}, self.ev(s.value))
            cf.attrs[s.target.id] = sym_join(cf.attrs.get(s.target.id), v)
            self.scope.env[s.target.id] = v

    def _dataclass_init(self, node: ast.ClassDef, qual: str, cf: ClassFacts) -> None:
        """A dataclass (`@dataclass`, a `NamedTuple`, ...) without its own `__init__`: the one
        written for it takes the fields, in order, and stores each in its attribute, so the
        attribute holds what the constructions pass (`ip`, as an `__init__` that stores its
        parameter). Fields after `KW_ONLY`, of `kw_only=True`, or after a base's fields (not
        counted here) are matched by keyword only."""
        decos = [(self.qualify(d.func if isinstance(d, ast.Call) else d), d) for d in node.decorator_list]
        deco = next((d for q, d in decos if q in K.DATACLASS_DECORATORS), None)
        base = any(b in K.DATACLASS_BASES for b in cf.bases)
        if (deco is None and not base) or any(isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
                                               and s.name == "__init__" for s in node.body):
            return
        kw_only = isinstance(deco, ast.Call) and any(
            k.arg == "kw_only" and isinstance(k.value, ast.Constant) and k.value.value is True for k in deco.keywords)
        kw_only = kw_only or any(b not in K.DATACLASS_BASES and b != "object" for b in cf.bases)
        init = f"{qual}.__init__"
        params = ["self"]
        for s in node.body:
            if not (isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)):
                continue
            ann = _unparse(s.annotation)
            if ann.endswith("KW_ONLY"):
                kw_only = True
                continue
            if "ClassVar" in ann or "InitVar" in ann:
                continue
            if isinstance(s.value, ast.Call) and any(k.arg == "init" and isinstance(k.value, ast.Constant)
                                                     and k.value.value is False for k in s.value.keywords):
                continue  # `field(init=False)`
            name = s.target.id
            pos = -1 if kw_only else len(params) - 1
            params.append(name)
            cf.attrs[name] = sym_join(cf.attrs.get(name), {"ip": [f"{init}:{pos}:{name}"]})
        if len(params) > 1:
            self.summary.functions[init] = FunctionFacts(init, node.lineno, params=params, cls=qual)
            cf.methods.append("__init__")

    def st_Try(self, node) -> None:
        self._try_depth += 1  # (a `raise` in here may be caught: `_attr_fatal`)
        try:
            super().st_Try(node)
        finally:
            self._try_depth -= 1
        # A body that returns and a handler that goes on (a local read with a shared fallback after
        # the `try`): a failure on one process sends it alone on (MCJ104's "fallback", for the prefilter).
        if not self.scope.is_module and "r" not in self.scope.facts.flags and _returns_in(node.body) \
                and any(not _leaves(h.body) for h in node.handlers):
            self.scope.facts.flags += "r"

    st_TryStar = st_Try

    def st_Global(self, node):
        if not self.scope.is_module:
            self.scope.declared.update(node.names)

    def _may_declare_global(self) -> bool:
        """Whether the file may hold a `global` statement (`semantics.may_declare`)."""
        return not self._text or semantics.may_declare(self._text)

    def declared_global(self, name: str) -> bool:
        # (semantics.StatementRules.declared_global)
        if self._stores is None:
            self._stores = _module_stores(self.tree, self._may_declare_global())
        return self._stores.get(name) == -1

    st_Nonlocal = st_Global

    def run_function(self, node, facts: FunctionFacts, params: list[str], defaults: dict, outer: _Scope | None, classes):
        env: dict[str, Sym] = {}
        annotated = {p.arg for p in node.args.posonlyargs + node.args.args + node.args.kwonlyargs
                     if isinstance(p.annotation, ast.Name) and p.annotation.id in ("int", "float")}
        decorators = [q for d in node.decorator_list if (q := self.qualify(d.func if isinstance(d, ast.Call) else d))]
        for p in params:
            env[p] = dict(sym_join({"params": [p]}, defaults.get(p)), lp=[p])  # (process-local if it is passed so)
            if p in annotated:
                env[p]["num"] = True
            fixture = semantics.fixture_param_source(p, facts.name, self.module, facts.cls, decorators, self.path)
            if fixture is not None:  # (pytest passes a per-process fixture)
                self.summary.direct_sources = True
                env[p] = sym_join(env[p], {"pd": [self.src(fixture, node, kinds.PROCESS_ID)]})
        if facts.cls and params and params[0] in ("self", "cls"):
            env[params[0]] = {"cls": facts.cls}
        saved = (self.scope, self.class_stack, self._in_class_body, self._loop_taints, self._ret_taints, self._exit_counts,
                 self._attr_taints, self._attr_fatal, self._try_depth, self._attr_params)
        saved_gates = (self._gates, self._gate_names, self._gate_node)
        self._gates, self._gate_names, self._gate_node = [], None, node
        self._ret_taints, self._exit_counts, self._attr_taints, self._attr_fatal, self._attr_params = [], [], [], [], []
        self._try_depth = 0
        self.scope = _Scope(facts, env, outer)
        a = node.args
        pos = a.posonlyargs + a.args
        offset = 1 if facts.cls and params and params[0] in ("self", "cls") else 0
        self.scope.param_pos = {p.arg: i - offset for i, p in enumerate(pos) if i >= offset}
        self.scope.param_pos.update((p.arg, -1) for p in a.kwonlyargs)
        self.scope.none_params = {
            p.arg for p, d in list(zip(pos[len(pos) - len(a.defaults):], a.defaults)) + list(zip(a.kwonlyargs, a.kw_defaults))
            if isinstance(d, ast.Constant) and d.value is None}
        self.class_stack, self._in_class_body, self._loop_taints = classes, False, []
        if node.name in self._signal_handlers():
            # A signal handler's body runs on the processes the signal reached (semantics.SIGNAL_HANDLER_DESC).
            self._attr_taints.append({"pd": [[semantics.SIGNAL_HANDLER_DESC, node.lineno, kinds.SIGNAL]]})
            self._attr_fatal.append(False)
        try:
            self.run_block(node.body)
            if facts.returns.get("shp"):
                facts.sized_by = list(facts.returns.pop("shp"))
            if not _always_exits(node.body):
                self._note_none_return(None)  # (falling off the end returns None)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not (
                    self._names_yield and any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in _own_nodes(node.body))):
                self._none_structure(facts)  # (a generator returns a generator either way)
            else:
                self._none_returns.pop(facts.name, None)
                self._empty_returns.pop(facts.name, None)
                self._filled_returns.discard(facts.name)
                self._display_returns.pop(facts.name, None)
                self._counted_returns.pop(facts.name, None)
        finally:
            (self.scope, self.class_stack, self._in_class_body, self._loop_taints, self._ret_taints, self._exit_counts,
             self._attr_taints, self._attr_fatal, self._try_depth, self._attr_params) = saved
            self._gates, self._gate_names, self._gate_node = saved_gates

    def _stores_by_own_calls(self) -> None:
        """A method storing its parameter into an attribute of its object (`def allocate(self, n):
        self.num_blocks = n`, `FunctionFacts.param_writes`) stores there what each call passes:
        where it is called on `self` in its own class (`self.allocate(local_budget)`), the
        attribute may hold that argument afterwards. Joined into `ClassFacts.cond_attrs`: a
        guess (`ProjectIndex.attr`), as which store a later read sees is not followed."""
        for cf, q, args, kwargs in self._self_calls:
            f = self.summary.functions.get(q)
            if f is None or not f.param_writes or f.cls != cf.name:
                continue
            offset = 1 if f.params and f.params[0] in ("self", "cls") else 0
            given = {f.params[offset + i]: a for i, a in enumerate(args) if offset + i < len(f.params)}
            given.update((k, v) for k, v in kwargs.items() if k in f.params)
            for attr, params in f.param_writes.items():
                v: Sym = {}
                for p in params:
                    v = sym_join(v, given.get(p))
                if v:
                    cf.cond_attrs[attr] = _prune(sym_join(cf.cond_attrs.get(attr), v))

    def _signal_handlers(self) -> frozenset[str]:
        """Names of the functions and methods this module installs as signal handlers."""
        if self._handlers is None:
            self._handlers = frozenset(
                name for node in (_nodes(self.tree) if "signal" in self.imports_text else ())
                if isinstance(node, ast.Call) and (name := semantics.signal_handler_name(
                    self.qualify(node.func), node.args, read)) is not None)
        return self._handlers

    def run(self) -> ModuleSummary:
        self.run_block(self.tree.body)
        self.summary.globals = self.module_scope.env.flat()
        mf = self.mod_facts
        if mf.device_access and (not self.summary.initialize_line or mf.device_access[1] < self.summary.initialize_line):
            self.summary.import_device_access = mf.device_access
        while self.pending:
            node, facts, params, defaults, outer, classes = self.pending.pop(0)
            self.run_function(node, facts, params, defaults, outer, classes)
        self._stores_by_own_calls()
        self.summary.refs_used = sorted(r for r in self._refs if r.startswith(".") or not r.startswith(_EXTERNAL_ROOTS))
        self.summary.pins_cpu = self._pins_cpu()
        # The module-wide scans below share one list of the module's nodes (`ast.walk`'s order):
        # each walked the whole tree on its own, together ~20% of the summary pass.
        nodes = _nodes(self.tree)
        names_processes = _names_processes(nodes)
        self.summary.process_free_test = semantics.is_test_module(self.path) and not names_processes
        # (a module naming the multi-process API is no local-only program, whatever devices it
        # builds; naming it does not make its device sets global for a module importing it)
        scope = _device_scope(nodes, self.imports) if self._names_devices else ""
        self.summary.device_scope = "" if scope == "local" and names_processes else scope
        self.summary.test_plugins = _pytest_plugins(nodes) if self._names_plugins else []
        if self.summary.initialize_line:
            self.summary.initialize_gates = _initialize_gates(self.tree.body, lambda f: self.qualify(f) == K.INITIALIZE,
                                                              lambda e: _root_name(e) in self.imports)
        self.summary.mode_sets = _mode_sets(nodes)
        self.summary.value_refs = self._value_refs(nodes)
        return self.summary

    def _value_refs(self, nodes: list[ast.AST]) -> list[str]:
        """Project functions named here other than as the callee of a call (see `value_refs`):
        loaded names and `module.attr` reads, except a call's callee and an attribute's base
        (`mod.f`: read as the attribute). `nodes`: `_nodes(self.tree)`."""
        out = set()
        defs, imports = self.module_defs, self.imports
        placed = set()  # (ids of the callees and attribute bases: not named as values)
        for n in nodes:
            t = type(n)
            if t is ast.Call:
                placed.add(id(n.func))
            elif t is ast.Attribute:
                placed.add(id(n.value))
        for n in nodes:
            t = type(n)
            if t is ast.Name:
                if type(n.ctx) is ast.Load and id(n) not in placed:
                    q = defs.get(n.id) or imports.get(n.id)
                    if q and not q.startswith(_EXTERNAL_ROOTS):
                        out.add(q)
            elif t is ast.Attribute:
                v = n.value
                if type(n.ctx) is ast.Load and type(v) is ast.Name and v.id in imports and id(n) not in placed:
                    q = f"{imports[v.id]}.{n.attr}"
                    if not q.startswith(_EXTERNAL_ROOTS):
                        out.add(q)
        return sorted(out)

    def _pins_cpu(self) -> bool:
        """Whether the module, run as a script, confines JAX to devices of its own process
        unconditionally: pins it to the CPU backend, an assignment `os.environ["JAX_PLATFORMS"] =
        "cpu"`, `os.environ.setdefault("JAX_PLATFORMS", "cpu")` or a
        `jax.config.update("jax_platforms", "cpu")`, or confines the TPU runtime to a slice of
        its own host, `os.environ["TPU_HOST_BOUNDS"] = "1,1,1"` (`_one_host_bounds`), among its
        top-level statements (those of its `__main__` guard included)."""
        stmts = list(self.tree.body)
        for st in self.tree.body:
            if isinstance(st, ast.If) and _is_main_guard(st.test):
                stmts += st.body
        for st in stmts:
            if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Subscript):
                t = st.targets[0]
                if self.qualify(t.value) == "os.environ" and _pinned(_const(t.slice), _const(st.value)):
                    return True
            if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) and len(st.value.args) == 2:
                c = st.value
                # `os.environ.setdefault("JAX_PLATFORMS", "cpu")`: the script's own choice, unless
                # the caller's environment names another platform
                if self.qualify(c.func) == "os.environ.setdefault" and _pinned(_const(c.args[0]), _const(c.args[1])):
                    return True
                if self.qualify(c.func) == "jax.config.update" and _const(c.args[0]) in K.PLATFORM_CONFIG_KEYS \
                        and _const(c.args[1]) == "cpu":
                    return True
        return False


def _pinned(key: object, value: object) -> bool:
    """Whether setting environment variable `key` to `value` confines JAX to this process's own
    devices: the CPU platform (`knowledge.PLATFORM_ENV_KEYS`), or a TPU slice of this host alone
    (`knowledge.ONE_HOST_ENV_KEYS` all ones, `"1,1,1"`: each process so launched is a job of its
    own, whatever `TPU_WORKER_ID` the launcher gives it)."""
    if key in K.PLATFORM_ENV_KEYS:
        return value == "cpu"
    return key in K.ONE_HOST_ENV_KEYS and isinstance(value, str) \
        and all(p.strip() == "1" for p in value.split(","))


def _names_processes(nodes: list[ast.AST]) -> bool:
    """Whether the module (`nodes`: `_nodes` of it) names anything of the multi-process API, a
    multi-process test plugin or a per-process fixture or environment variable
    (`knowledge.MULTI_PROCESS_NAMES`)."""
    names = K.MULTI_PROCESS_NAMES | K.PROCESS_DEPENDENT_FIXTURES.keys()
    for n in nodes:
        t = type(n)
        name = (n.id if t is ast.Name else n.attr if t is ast.Attribute else n.arg if t is ast.arg
                else n.name if t is ast.alias else n.value if t is ast.Constant and type(n.value) is str else None)
        if name is None:
            continue
        if name in names or name in K.PER_PROCESS_ENV_KEYS or (t is ast.alias and any(p in names for p in name.split("."))):
            return True
    return False


def _collective_name(q: str) -> bool:
    """A library call the analysis knows as cross-process work (`knowledge.COLLECTIVE_CALLS`,
    global array constructors, checkpointers), but the `jax.lax` axis collectives: those run
    inside a mapped computation, over its mesh's devices."""
    return ((q in K.COLLECTIVE_CALLS or q in K.GLOBAL_ARRAY_CONSTRUCTORS) and not q.startswith("jax.lax.")) \
        or q.startswith(K.CHECKPOINTER_PREFIXES)


# Every name `_device_scope` reads contains one of these (an alias too: `from jax import devices as d`)
# but `jax.distributed`, whose `initialize()` the index checks on its own.
# (Plain substrings, each looked for on its own: a regular expression of their alternation tried
# at every position of a file cost twice as much.)
_DEVICE_WORDS = tuple(sorted(
    {"devices", "device_count", "device_mesh", "make_mesh", "Mesh", "pmap", "xmap", "make_array_from", "orbax",
     "multihost_utils", *K.COLLECTIVE_METHOD_NAMES}
    | {q.rsplit(".", 1)[-1] for q in K.COLLECTIVE_CALLS if not q.startswith("jax.lax.")}))


def _device_scope(nodes: list[ast.AST], imports: dict[str, str]) -> str:
    """Which devices the module (`nodes`: `_nodes` of it) names: "global" where it names a device
    set spanning every process or builds one (`knowledge.GLOBAL_DEVICE_NAMES`; a
    `create_device_mesh` given no devices whose shape is not the local device count; a `Mesh` of
    devices not known to be local; a pmap given no `devices=`), else "local" where it builds a
    device set of this process's devices (`knowledge.LOCAL_DEVICE_CALLS`: a mesh of them, a pmap
    given them, a one-device mesh), else ""."""
    def dotted(n: ast.AST) -> str | None:
        if type(n) is ast.Name:
            return imports.get(n.id)
        if type(n) is ast.Attribute:
            base = dotted(n.value)
            return None if base is None else f"{base}.{n.attr}"
        return None

    def own(call: ast.Call) -> bool:
        """A local-devices call asking for this process's devices: `jax.local_devices(process_index=p)`
        (or a positional `p`) gives process p's, whoever asks; only `jax.process_index()` is its own."""
        if dotted(call.func) not in K.LOCAL_DEVICE_CALLS:
            return False
        who = [k.value for k in call.keywords if k.arg in ("process_index", "host_id")] + call.args[:1]
        return all(type(w) is ast.Call and dotted(w.func) in ("jax.process_index", "jax.host_id") for w in who)

    def local_count(e: ast.AST) -> bool:
        """`jax.local_device_count()`, `len(jax.local_devices())`, or a name bound to one."""
        if type(e) is ast.Name:
            return e.id in counts
        if type(e) is ast.Call and dotted(e.func) == "jax.local_device_count":
            return not e.args
        return (type(e) is ast.Call and type(e.func) is ast.Name and e.func.id == "len" and len(e.args) == 1
                and type(e.args[0]) is ast.Call and dotted(e.args[0].func) == "jax.local_devices" and own(e.args[0]))

    def local_shape(shape: ast.AST | None) -> bool | None:
        """A mesh shape whose product is the local device count (True) or 1 (None: one device in
        all, since `create_device_mesh` takes every device); False for any other."""
        if type(shape) not in (ast.Tuple, ast.List):
            return False
        n = sum(1 for e in shape.elts if local_count(e))
        if n > 1 or not all(local_count(e) or (type(e) is ast.Constant and e.value == 1) for e in shape.elts):
            return False
        return True if n else None

    def reads_local(n: ast.AST) -> bool:
        return any((type(m) is ast.Call and (own(m) or id(m) in local_meshes))
                   or (type(m) is ast.Name and m.id in local_names) for m in _nodes(n))

    calls, refs, assigns = [], [], []  # (one walk: most modules name no device set at all)
    for n in nodes:
        t = type(n)
        if t is ast.Call:
            calls.append(n)
        elif t is ast.Name or t is ast.Attribute or t is ast.alias:
            refs.append(n)
        elif (t is ast.Assign or t is ast.AnnAssign) and n.value is not None:
            assigns.append((n.value, [m for tg in (n.targets if t is ast.Assign else [n.target]) for m in _nodes(tg)
                                      if type(m) is ast.Name]))
    counts: set[str] = set()
    counts |= {t.id for v, ts in assigns for t in ts if len(ts) == 1 and local_count(v)}
    if any(dotted(n.func) in K.LOCAL_DEVICE_CALLS and not own(n) for n in calls):
        return "global"  # (another process's devices)
    # It must build a device set of its own (naming the local count for a batch size is not one).
    scope = ""
    local_meshes: set[int] = set()  # `create_device_mesh` calls over this process's devices
    for n in calls:
        if dotted(n.func) in K.DEVICE_MESH_BUILDERS:
            shape = n.args[0] if n.args else next((k.value for k in n.keywords if k.arg == "mesh_shape"), None)
            if len(n.args) > 1 or any(k.arg == "devices" for k in n.keywords):
                continue  # (the devices given are checked where they are named)
            if local_shape(shape) is False:
                return "global"
            local_meshes.add(id(n))
            scope = "local"
    # Names bound to local devices, their count or a mesh of them, to a fixpoint.
    local_names: set[str] = set()
    while scope or counts or any(dotted(n) in K.LOCAL_DEVICE_CALLS for n in refs if type(n) is not ast.alias):
        new = {t.id for v, ts in assigns if reads_local(v) for t in ts}
        if new <= local_names:
            break
        local_names |= new
    placed: set[int] = set()  # the callees of calls given this process's devices
    for n in calls:
        q = dotted(n.func)
        devices = next((k.value for k in n.keywords if k.arg == "devices"), None)
        if q in K.MESH_CONSTRUCTORS:
            devices = n.args[0] if n.args else devices
            if devices is None or not reads_local(devices):
                return "global"
            scope = "local"
        elif devices is not None and reads_local(devices):
            # (`partial(jax.pmap, devices=...)` places the wrapper it binds)
            placed.add(id(n.args[0] if q == "functools.partial" and n.args else n.func))
            scope = "local"
    for n in refs:
        t = type(n)
        if t is ast.Name or t is ast.Attribute:
            if t is ast.Attribute and n.attr in K.COLLECTIVE_METHOD_NAMES:
                return "global"  # (a barrier, whatever the receiver)
            q = dotted(n)
            if q is None:
                continue
            if q in K.GLOBAL_DEVICE_NAMES or q.startswith(K.GLOBAL_DEVICE_PREFIXES) or _collective_name(q):
                return "global"
            if q in K.DEVICE_SPANNING_WRAPPERS and id(n) not in placed:
                return "global"  # (a decorator, or a call given no devices)
        elif t is ast.alias and (n.name in K.GLOBAL_DEVICE_NAMES or n.name.startswith(K.GLOBAL_DEVICE_PREFIXES)):
            return "global"
    return scope


def _pytest_plugins(nodes: list[ast.AST]) -> list[str]:
    """The plugin modules a `pytest_plugins = [...]` assignment (among `nodes`, `_nodes` of the
    module) makes pytest load with this test module or conftest (their fixtures run in its
    process: an autouse one may initialize); "?" for a value that is not a literal string or
    list/tuple of strings."""
    out: list[str] = []
    for n in nodes:
        if isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            if not any(isinstance(t, ast.Name) and t.id == "pytest_plugins" for t in targets):
                continue
            v = n.value
            elts = [v] if isinstance(v, ast.Constant) else v.elts if isinstance(v, (ast.List, ast.Tuple)) else [None]
            out += [e.value if isinstance(e, ast.Constant) and isinstance(e.value, str) else "?" for e in elts]
    return out


def _const(node) -> object:
    return node.value if isinstance(node, ast.Constant) else None


_BUILTIN_NAMES = frozenset(dir(__import__("builtins")))


def _free_names(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """Names a def's body reads from enclosing scopes (loads of names it never binds; its
    decorators and defaults run where the def is, not in the body)."""
    bound: set[str] = set()
    declared: set[str] = set()
    loads: set[str] = set()
    for st in fn.body:
        for n in _nodes(st):
            if isinstance(n, ast.Name):
                (loads if isinstance(n.ctx, ast.Load) else bound).add(n.id)
            elif isinstance(n, ast.arg):
                bound.add(n.arg)
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bound.add(n.name)
            elif isinstance(n, (ast.Import, ast.ImportFrom)):
                bound.update((a.asname or a.name).split(".")[0] for a in n.names)
            elif isinstance(n, ast.ExceptHandler) and n.name:
                bound.add(n.name)
            elif isinstance(n, (ast.Global, ast.Nonlocal)):
                declared.update(n.names)
    a = fn.args
    bound.update(x.arg for x in a.posonlyargs + a.args + a.kwonlyargs + [v for v in (a.vararg, a.kwarg) if v])
    return (loads - bound) | (loads & declared)


def _root_name(e: ast.expr) -> str | None:
    """The name an attribute chain starts from (`a` of `a.b.c`), None where it is no name."""
    while type(e) is ast.Attribute:
        e = e.value
    return e.id if type(e) is ast.Name else None


def _mode_test(test: ast.expr, static) -> tuple[str, bool] | None:
    """A test of a mode value against a string (`x.mode == "L"`, `mode != "L"`): ("mode=L", whether
    it holds where the value is L); None for any other test. A dunder (`__name__`) or a name
    `static` resolves through the imports (`sys.platform`, a module's constant) is a fact of the
    interpreter or of a library, no mode a program selects (`static`: whether it starts from an
    imported name)."""
    if type(test) is ast.Compare and len(test.ops) == 1 and type(test.ops[0]) in (ast.Eq, ast.NotEq):
        a, b = test.left, test.comparators[0]
        if type(a) is ast.Constant:
            a, b = b, a
        if type(b) is ast.Constant and type(b.value) is str:
            name = a.attr if type(a) is ast.Attribute else a.id if type(a) is ast.Name else None
            if name is not None and not name.startswith("__") and not static(a):
                return f"{name}={b.value}", type(test.ops[0]) is ast.Eq
    return None


def _initialize_gates(body: list[ast.stmt], is_initialize, static, gate: str = "") -> list[str]:
    """The mode test that gates each `jax.distributed.initialize()` call in `body` (see
    `ModuleSummary.initialize_gates`): an enclosing `if mode == "L":` (or the `else` of `!=`),
    or an earlier `if mode != "L": return` of the same block (`_mode_test`; `static`: whether an
    expression names something through the imports). A function's body starts ungated."""
    out: list[str] = []
    for st in body:
        t = type(st)
        if t in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            out += _initialize_gates(st.body, is_initialize, static)
            continue
        if t is ast.If:
            m = _mode_test(st.test, static)
            out += _initialize_gates([ast.Expr(st.test)], is_initialize, static, gate)
            out += _initialize_gates(st.body, is_initialize, static, m[0] if m and m[1] else gate)
            out += _initialize_gates(st.orelse, is_initialize, static, m[0] if m and not m[1] else gate)
            if m and not m[1] and _leaves(st.body) and not gate:
                gate = m[0]  # (what follows runs only where the value is L)
            continue
        blocks = [getattr(st, f) for f in ("body", "orelse", "finalbody") if isinstance(getattr(st, f, None), list)]
        blocks += [h.body for h in getattr(st, "handlers", ())] + [c.body for c in getattr(st, "cases", ())]
        if blocks:
            heads = [x for f in ("test", "iter", "subject") if isinstance(x := getattr(st, f, None), ast.expr)]
            heads += [i.context_expr for i in getattr(st, "items", ())]
            out += _initialize_gates([ast.Expr(h) for h in heads], is_initialize, static, gate)
            for b in blocks:
                out += _initialize_gates(b, is_initialize, static, gate)
            continue
        out += [gate for n in ast.walk(st) if type(n) is ast.Call and is_initialize(n.func)]
    return out


_OPTION_CALLS = ("add_argument", "DEFINE_string", "DEFINE_enum", "DEFINE", "option", "Option")


def _mode_sets(nodes: list[ast.AST]) -> list[str]:
    """The mode values the module gives (`ModuleSummary.mode_sets`): "=L" for a string literal it
    produces as a value — passed by keyword, assigned, returned, put in a dict or given as a
    parameter's default (directly or as an arm of `a if c else b`, `a or b`), whatever the name:
    a helper may hand it on; "attr=*" for a value of keyword `attr=` that is not a literal (nor
    the same-named parameter handed on) and for a command-line option named attr: whoever
    launches the program may give it any value. A literal in a collection (a tuple of the
    allowed values) or a comparison selects nothing."""
    lits: set[str] = set()
    star: set[str] = set()
    kinds = _MODE_NODE_TYPES

    def value(v: ast.AST | None) -> None:
        t = type(v)
        if t is ast.Constant:
            if type(v.value) is str and len(v.value) <= 64:
                lits.add(v.value)
        elif t is ast.IfExp:
            value(v.body)
            value(v.orelse)
        elif t is ast.BoolOp:
            for x in v.values:
                value(x)

    for n in nodes:
        t = type(n)
        if t not in kinds:
            continue
        if t is ast.keyword:
            v = n.value
            if type(v) is ast.Constant:
                value(v)
            elif n.arg is not None and not (type(v) is ast.Name and v.id == n.arg):
                star.add(n.arg)
                value(v)
        elif t is ast.Assign or t is ast.AnnAssign or t is ast.Return:
            value(n.value)
        elif t is ast.Dict:
            for v in n.values:
                value(v)
        elif t is ast.arguments:
            for d in n.defaults:
                value(d)
            for d in n.kw_defaults:
                value(d)
        else:  # (a call)
            f = n.func
            if (f.attr if type(f) is ast.Attribute else f.id if type(f) is ast.Name else "") in _OPTION_CALLS:
                for a in n.args[:2]:
                    if type(a) is ast.Constant and type(a.value) is str:
                        star.add(a.value.lstrip("-").replace("-", "_"))
    return sorted({f"={v}" for v in lits} | {f"{k}=*" for k in star})


_MODE_NODE_TYPES = frozenset({ast.keyword, ast.Assign, ast.AnnAssign, ast.Return, ast.Dict, ast.arguments, ast.Call})


def _nodes(root: ast.AST) -> list[ast.AST]:
    """Every node under `root` (itself included), as `ast.walk` finds them less the
    `Load`/`Store`/`Del` context markers (a third of its nodes), in about half its time, and in
    its order (breadth first, each node's children in field order: the markers have none)."""
    out = [root]
    for n in out:  # (grows while it is read)
        _push_children(n, out)
    return out


_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}
# Fields that never hold a node (Python's grammar, Parser/Python.asdl: an identifier, int, string
# or constant): skipped by `_push_children`, which looked at each of them on every visit.
_SCALAR_FIELDS = frozenset({"id", "attr", "arg", "module", "level", "kind", "type_comment", "asname", "conversion",
                            "simple", "is_async"})
_SCALAR_FIELDS_OF: dict[type, frozenset[str]] = {
    ast.FunctionDef: frozenset({"name"}), ast.AsyncFunctionDef: frozenset({"name"}), ast.ClassDef: frozenset({"name"}),
    ast.alias: frozenset({"name"}), ast.ExceptHandler: frozenset({"name"}), ast.Constant: frozenset({"value"}),
    ast.Global: frozenset({"names"}), ast.Nonlocal: frozenset({"names"}),
}


_TYPE_ALIAS = getattr(ast, "TypeAlias", None)  # (Python 3.12+)


def _scope_bindings(node: ast.AST, may_declare: bool = True) -> tuple[list[str], list[tuple[str, object]], set[str]]:
    """What a function or module binds in its own scope, as `semantics.scope_counts` reads it:
    (each name binding, repeated as often as it is bound: parameters, assignment, loop, `with`,
    `except`, import, walrus, comprehension, `match` captures, `del`, a nested function's or
    class's name; the (name, value) of each one-target assignment, a tuple display unpacked
    position by position; the names declared `global`/`nonlocal` there or, `may_declare`, in a
    nested function or class). The precise pass's `taint._scope_bindings` on its own tree."""
    body = node.body if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef)) else [node]
    bound: list[str] = []
    assigns: list[tuple[str, object]] = []
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        a = node.args
        bound += [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs + [v for v in (a.vararg, a.kwarg) if v]]
    declared: set[str] = set()
    todo: list[ast.AST] = list(body)
    while todo:
        n = todo.pop()
        t = type(n)
        if t in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            bound.append(n.name)
            if may_declare:
                declared.update(x for g in _nodes(n) if isinstance(g, (ast.Global, ast.Nonlocal)) for x in g.names)
            continue
        if t is ast.Lambda:
            continue
        if t is ast.Assign and len(n.targets) == 1:
            tgt, val = n.targets[0], n.value
            pairs = [(tgt, val)] if type(tgt) is ast.Name else list(zip(tgt.elts, val.elts)) \
                if type(tgt) is ast.Tuple and type(val) is ast.Tuple and len(tgt.elts) == len(val.elts) else []
            assigns += [(a_.id, b_) for a_, b_ in pairs if type(a_) is ast.Name]
        elif t is ast.Name and not isinstance(n.ctx, ast.Load):
            bound.append(n.id)
        elif t is _TYPE_ALIAS:  # (read as the assignment a host without it parses: `cst_to_ast`)
            assigns.append((n.name.id, n.value))
        elif t in (ast.Import, ast.ImportFrom):
            bound += [(al.asname or al.name).split(".")[0] for al in n.names if al.name != "*"]
        elif t is ast.ExceptHandler and n.name:
            bound.append(n.name)
        elif t in (ast.Global, ast.Nonlocal):
            declared.update(n.names)
        elif t in (ast.MatchAs, ast.MatchStar) and n.name:
            bound.append(n.name)
        elif t is ast.MatchMapping and n.rest:
            bound.append(n.rest)
        _push_children(n, todo)
    return bound, assigns, declared


def _attribute_stores(tree: ast.Module) -> dict[str, list]:
    """Every store into an object's attribute in the module (`x.attr = v`, any receiver):
    attr -> [(line, receiver's name or None, the value stored or None where it is not one
    expression: `x.a += 1`, `for x.a in ...`, a tuple unpacked from a call)]."""
    out: dict[str, list] = {}
    seen: set[int] = set()  # (the attributes of an assignment's targets, read with their values)
    for n in _nodes(tree):
        t = type(n)
        if t is ast.Assign:
            seen.update(id(a) for tgt in n.targets for a in (tgt.elts if type(tgt) in (ast.Tuple, ast.List) else [tgt]))
            for tgt in n.targets:
                pairs = [(tgt, n.value)] if type(tgt) is not ast.Tuple and type(tgt) is not ast.List else \
                    list(zip(tgt.elts, n.value.elts)) if type(n.value) is ast.Tuple and len(tgt.elts) == len(n.value.elts) \
                    else [(e, None) for e in tgt.elts]
                for a, v in pairs:
                    if type(a) is ast.Attribute:
                        out.setdefault(a.attr, []).append((a.lineno, a.value.id if type(a.value) is ast.Name else None, v))
                    elif type(a) in (ast.Tuple, ast.List, ast.Starred):
                        for x in _nodes(a):
                            if type(x) is ast.Attribute and not isinstance(x.ctx, ast.Load):
                                out.setdefault(x.attr, []).append((x.lineno, None, None))
        elif t is ast.Attribute and not isinstance(n.ctx, ast.Load) and id(n) not in seen:
            out.setdefault(n.attr, []).append((n.lineno, None, None))  # (augmented, annotated, a loop's target, `del`)
    out[_STORE_LINES] = sorted((line, a) for a, here in out.items() for line, r, _ in here if r is not None)
    return out


_STORE_LINES = " lines"  # (`_attribute_stores`' key of its stores through a name, by line: no attribute's name)


def _count_members(node: ast.ClassDef, is_count, stores: dict[str, list]) -> list[str]:
    """The members of a class that hold the number of processes on every object: an attribute
    stored in its methods through their object (`self.size = jax.process_count()`, or unpacked
    from a tuple display) or in its body, and every store of that attribute name anywhere in the
    module (any receiver) the count; a property whose every `return` gives the count, and no
    store of its name; "name()" for such a method. `is_count`: whether a value is the count
    (`semantics.is_process_count` with the module's constants). Stores in other modules are not
    seen (a subclass elsewhere storing another value)."""
    out: list[str] = []
    end = getattr(node, "end_lineno", None) or node.lineno
    body_stores: dict[str, list] = {}
    defs: dict[str, list] = {}
    for st in node.body:
        if type(st) is ast.Assign:
            for tgt in st.targets:
                if type(tgt) is ast.Name:
                    body_stores.setdefault(tgt.id, []).append(st.value)
                else:
                    for x in _nodes(tgt):
                        if type(x) is ast.Name:
                            body_stores.setdefault(x.id, []).append(None)
        elif type(st) is ast.AnnAssign and type(st.target) is ast.Name:
            body_stores.setdefault(st.target.id, []).append(st.value)
        elif type(st) in (ast.FunctionDef, ast.AsyncFunctionDef):
            defs.setdefault(st.name, []).append(st)
    selves = {"self", "cls"} | {st.args.args[0].arg for fs in defs.values() for st in fs if st.args.args}
    lines = stores.get(_STORE_LINES, [])  # (the stores through a name, by line: those in this class)
    spanned = {a for _, a in lines[bisect.bisect_left(lines, (node.lineno, "")):bisect.bisect_right(lines, (end, "\U0010ffff"))]}
    for attr in sorted(spanned):
        here = stores[attr]
        mine = [(r, v) for line, r, v in here if node.lineno <= line <= end and r in selves]
        if not mine or attr in defs:
            continue
        if all(v is not None and is_count(v) for _, r, v in here) \
                and all(v is not None and is_count(v) for v in body_stores.get(attr, [])):
            out.append(attr)
    for attr, vals in body_stores.items():
        if attr not in out and attr not in defs and attr not in stores and all(v is not None and is_count(v) for v in vals):
            out.append(attr)
    for name, fs in defs.items():
        if len(fs) != 1 or name in body_stores:
            continue
        f = fs[0]
        decos = [d.id if type(d) is ast.Name else d.attr if type(d) is ast.Attribute else None for d in f.decorator_list]
        is_prop = decos in (["property"], ["cached_property"])
        if decos and not is_prop:
            continue
        if is_prop and name in stores:
            continue  # (a setter elsewhere)
        rets = [n for n in _own_nodes(f.body) if type(n) is ast.Return]
        if rets and all(r.value is not None and is_count(r.value) for r in rets) \
                and not any(type(n) in (ast.Yield, ast.YieldFrom) for n in _own_nodes(f.body)):
            out.append(name if is_prop else f"{name}()")
    return sorted(out)


def _module_stores(tree: ast.Module, may_declare_global: bool = True) -> dict[str, int]:
    """How many times each name is bound in the module's own scope (not in its functions), and
    -1 for names a function declares `global` (none when `may_declare_global` is False: the
    source has no `global` keyword, so function bodies need no walk)."""
    out: dict[str, int] = {}
    todo: list[ast.AST] = list(tree.body)
    while todo:
        n = todo.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            if may_declare_global:
                for g in _nodes(n):
                    if isinstance(g, ast.Global):
                        out.update((x, -1) for x in g.names)
            continue
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load) and out.get(n.id, 0) >= 0:
            out[n.id] = out.get(n.id, 0) + 1
        _push_children(n, todo)
    return out


def _module_host_names(tree: ast.Module, is_host, stores: dict[str, int]) -> set[str]:
    """Module-level names every binding of which is a top-level assignment of host data
    (`is_host(node, names known so far)`; `stores`: `_module_stores(tree)`)."""
    out: set[str] = set()
    top: dict[str, list] = {}
    for st in tree.body:
        if isinstance(st, ast.Assign) and all(isinstance(t, ast.Name) for t in st.targets):
            for t in st.targets:
                top.setdefault(t.id, []).append(st.value)
        elif isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name) and st.value is not None:
            top.setdefault(st.target.id, []).append(st.value)
    for name, values in top.items():  # (in order: a later name may use an earlier one)
        if stores.get(name, 0) == len(values) and all(is_host(v, out) for v in values):
            out.add(name)
    return out


# Refs into these libraries never name project facts: not worth keeping for the prefilter.
_EXTERNAL_ROOTS = ("jax.", "numpy.", "os.", "sys.", "typing.", "collections.", "functools.", "logging.", "math.",
                   "tensorflow.", "torch.", "flax.", "optax.", "re.", "abc.", "dataclasses.", "itertools.")



def _container_root(e):
    return semantics.container_root(e, read)
VIA_DEPTH = 2  # nested call records kept inside a call record's arguments/receiver
# Call records the index resolves by a rule of their own, not by passing their arguments' taint
# through: order-free builtins (`sorted`, `len`: no order) and the pseudo-calls that grade a
# value (a piece of equal ones, a file's content, an element...). `_prune` keeps them at its
# depth bound, arguments flattened, so the bound never turns `sorted(listing)` back into the
# listing's order or a guess into a certain step.
_KEPT_AT_BOUND = frozenset(K.ORDER_INSENSITIVE) | {
    ELEMENT_CALL, SAME_LENGTH_CALL, TIED_SORT_CALL, evidence.FILE_CONTENT_CALL, evidence.EQUAL_PIECES_CALL,
    evidence.SPLIT_POINTS_CALL,
    evidence.STORED_ATTRIBUTE_CALL, evidence.STORED_ELEMENT_CALL, evidence.POSSIBLY_EMPTY_CALL,
    evidence.BOUNDED_COUNT_CALL}


def _keyed(args: list[Sym], kwargs: dict[str | None, Sym]) -> list[tuple[int | str, Sym]]:
    """A call's argument values as (position or keyword name, value); `**kwargs` as "**"."""
    return [*enumerate(args), *((k if k is not None else "**", v) for k, v in kwargs.items())]


def _arg_sym(a: Sym) -> Sym:
    """What a construction's argument hands the attribute `__init__` stores from it: its taint,
    whether it is a global array, and what decides its count where a display or comprehension
    built it ("argcnt")."""
    out = sym_taint(a)
    if out and a.get("cnt") is not None:
        # (a list or dict built by a display or comprehension: what decides how many elements it
        # has, apart from what they hold; read only by `ProjectIndex._some_constructions`)
        out = dict(out, argcnt=_count_taint(a["cnt"]))
    if a.get("u"):
        out = dict(out, u=a["u"])  # (a set: iterating the attribute follows its hash order)
    return dict(out, glob=True) if a.get("glob") else out


def _raises_stop_iteration(fdef: ast.AST) -> bool:
    """Whether a function's own body (not a nested def's) raises `StopIteration` and advances an
    iterator it is given: `next(p)` of a parameter, or a parameter handed to a method of its own
    object (`self._fill(it)`) that may. A raise on other state (a step counter) says nothing of
    the argument."""
    params = {a.arg for a in fdef.args.posonlyargs + fdef.args.args + fdef.args.kwonlyargs} - {"self", "cls"}
    advances = any(isinstance(n, ast.Call) and any(isinstance(a, ast.Name) and a.id in params for a in n.args)
                   and (isinstance(n.func, ast.Name) and n.func.id == "next"
                        or isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name)
                        and n.func.value.id == "self")
                   for n in _nodes(fdef))
    if not advances:
        return False
    stack = _children(fdef)
    while stack:
        n = stack.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(n, ast.Raise) and n.exc is not None:
            e = n.exc.func if isinstance(n.exc, ast.Call) else n.exc
            if isinstance(e, ast.Name) and e.id == "StopIteration":
                return True
        _push_children(n, stack)
    return False


def _is_self_attribute(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"


def _constructs(call: dict) -> bool:
    """Whether a call record may construct a project class (`Args(...)`: a capitalised name
    outside the libraries' roots), whose attributes a read of its result takes one by one."""
    n = call.get("n")
    return bool(n) and n.rpartition(".")[2][:1].isupper() and not n.startswith(_EXTERNAL_ROOTS)


def _prune(sym: Sym, depth: int = VIA_DEPTH) -> Sym:
    """Bound the nesting of call records (`f(g(h(x)))` chains): below `depth`, a call counts as
    passing its arguments' taint through, like a library call. Without this, summaries of long
    expression chains grow exponentially (a 39 kB file gave a 23 MB summary). At the bound, a
    value that reads attributes of what its calls return (`refs`: `Args(...).data_folder`) keeps
    its constructions of project classes one level more: folded, a construction's arguments would
    become every attribute read of it (`my_rank=jax.process_index()` reaching `.data_folder`)."""
    vias = sym.get("via")
    if not vias:
        return sym
    out = {k: v for k, v in sym.items() if k != "via"}
    kept = []
    for call in vias:
        if "ga" in call:
            kept.append(call)  # (an attribute's attribute: a leaf, its receiver only references)
        elif depth > 0 or call.get("n") in _KEPT_AT_BOUND or (depth == 0 and sym.get("refs") and _constructs(call)):
            c = dict(call)
            c.pop("pa", None)  # read only from the function's own call list
            c.pop("pk", None)
            for key in ("a", "r", "v"):
                if key in c:
                    c[key] = _prune(c[key], max(depth - 1, -1))
            kept.append(c)
        else:
            for key in ("a", "r"):
                inner = call.get(key)
                if inner:
                    out = sym_join(out, {k: v for k, v in sym_taint(_prune(inner, 0)).items()})
    if kept:
        out["via"] = kept
    return out


def _none_guard(test: ast.expr, scope: _Scope) -> tuple[str, str] | None:
    """(function, param) when `test` is `param is None` for a parameter defaulting to None that
    still holds the argument (`kinds.guarded` marks the sources it guards; the index resolves
    the mark per call), else None."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Is)
            and isinstance(test.left, ast.Name) and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value is None):
        return None
    name = test.left.id
    if scope.is_module or name not in scope.none_params or scope.env.get(name, {}).get("params") != [name]:
        return None
    return scope.facts.name, name


def _empty_display(e: ast.expr) -> bool:
    """`{}`, `[]`, `()`, `dict()`, `list()`, `tuple()`: a container with no elements."""
    if isinstance(e, ast.Dict):
        return not e.keys
    if isinstance(e, (ast.List, ast.Tuple)):
        return not e.elts
    return isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id in ("dict", "list", "tuple") \
        and not e.args and not e.keywords


_COUNT_KEEPING = frozenset({"zip", "enumerate"})  # builtins as long as their (shortest) argument


def _own_store_key(attr: str) -> str:
    """The scope binding that holds what a method stored in `self.attr` (`stored_by_call`); the
    colon keeps it apart from names and from `semantics.stored_attribute_key`, so an arm that
    stored nothing keeps what another arm stored, joined."""
    return f"self:{attr}"


def _with_stored_attribute(obj: Sym, value: Sym, line: int) -> Sym:
    """`obj` after `value` was stored into one of its attributes (`param.attr = value`, a copy
    with a field replaced): what the value holds, resolved by the index as
    `evidence.stored_attribute` (a guess: a read of another attribute sees it too); `obj` itself
    where the value holds nothing."""
    stored = sym_element(value)
    if not stored:
        return obj
    return sym_join(obj, {"via": [{"l": line, "n": evidence.STORED_ATTRIBUTE_CALL, "a": _prune(stored)}]})


def _resolved_later(v: Sym, line: int, name: str, keys: tuple[str, ...]) -> Sym:
    """`v` as the argument of the pseudo-call `name` (an `evidence.*_CALL`) the index resolves by
    the evidence rule of that name; `v` itself where it holds none of `keys` (nothing to grade)."""
    if not any(k in v for k in keys):
        return v
    return {"via": [{"l": line, "n": name, "a": _prune(v)}]}


def _count_of(v: Sym) -> Sym | None:
    """What decides how many elements a container has, where its count is known ("cnt"; a tuple
    display's elements, "tup": decided by nothing); None where it is not."""
    c = v.get("cnt")
    return c if c is not None else ({} if v.get("tup") is not None else None)


def _display_length(e: ast.expr) -> int | None:
    """How many elements a list or tuple display holds, None for anything else (or a `*x` in it)."""
    if isinstance(e, (ast.List, ast.Tuple)) and not any(isinstance(x, ast.Starred) for x in e.elts):
        return len(e.elts)
    return None


def _as_tuple(v: Sym, n: int) -> Sym:
    """`v` as a tuple of `n` elements when it is only the result of calls: element i is element i
    of each call's result (`"ix"` on a copy of the call record; the index takes the callee's i-th
    return value, or an element of the whole result when the callee's tuple is not known)."""
    if "tup" in v or set(v) != {"via"}:
        return v
    return dict(v, tup=[{"via": [dict(c, ix=i) for c in v["via"]]} for i in range(n)])


def _measured_iterable(node: ast.Call) -> ast.Name | None:
    """`xs` of `max(len(s) for s in xs)` / `max(s.shape[0] for s in xs)` / `max(map(len, xs))`
    (the twin of taint.FileAnalysis._measured_elements)."""
    if len(node.args) != 1 or node.keywords:
        return None
    arg = node.args[0]
    if isinstance(arg, (ast.GeneratorExp, ast.ListComp)) and len(arg.generators) == 1 \
            and isinstance(arg.generators[0].iter, ast.Name) and isinstance(arg.generators[0].target, ast.Name):
        name = arg.generators[0].target.id

        def rooted(e: ast.expr) -> bool:
            while isinstance(e, (ast.Subscript, ast.Attribute)):
                e = e.value
            return isinstance(e, ast.Name) and e.id == name

        e = arg.elt
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id == "len" and len(e.args) == 1:
            return arg.generators[0].iter if rooted(e.args[0]) else None
        if isinstance(e, ast.Subscript):
            e = e.value
        if isinstance(e, ast.Attribute) and e.attr in ("shape", "size") and rooted(e.value):
            return arg.generators[0].iter
        return None
    if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Name) and arg.func.id == "map" and len(arg.args) == 2 \
            and isinstance(arg.args[0], ast.Name) and arg.args[0].id == "len" and isinstance(arg.args[1], ast.Name):
        return arg.args[1]
    return None


def _reads_enumerate_position(node: ast.expr) -> bool:
    """Whether a comprehension's key or value reads the counter of an `enumerate` it iterates
    (`{w: i for i, w in enumerate(words)}`): a position in that order, a value of its own that
    differs where the order does (the precise pass keeps such a source apart: `_POSITION`)."""
    names = set()
    for gen in getattr(node, "generators", ()):
        pos = semantics.enumerate_position(gen.iter, gen.target, read)
        if isinstance(pos, ast.Name):
            names.add(pos.id)
    parts = [getattr(node, "key", None), getattr(node, "value", None), getattr(node, "elt", None)]
    return bool(names) and any(isinstance(n, ast.Name) and n.id in names
                               for p in parts if p is not None for n in ast.walk(p))


def _strip_order(v: Sym, line: int | None = None) -> Sym:
    """The value after an order-insensitive operation (`sorted`, `in`, `len`, ...): no order
    taint, and parameters marked so the index knows their order does not flow through. With
    `line`, what the index resolves later (calls, references) goes through an order-insensitive
    call record too: `sorted(int(m.group(1)) for m in listing)` has no order, whatever the calls
    on the listing's elements return."""
    out = {k: x for k, x in v.items() if k not in ("order", "u")}
    if "params" in out:
        out["params"] = [p if p.endswith("!o") else p + "!o" for p in out["params"]]
    if line is not None and ("via" in out or "refs" in out):
        inner = {k: out.pop(k) for k in ("via", "refs", "elem") if k in out}
        out["via"] = [{"l": line, "n": "sorted", "a": _prune(inner)}]
    return out


_SEED_CALL = re.compile(r"\b([A-Za-z_]\w*(?:\.random)?)\.seed\(\s*[^)\s]")


def _seeded_rngs(source: str, imports: dict[str, str]) -> list[str]:
    """RNG modules the file seeds (`random.seed(...)`, `np.random.seed(...)`): their module-level
    functions are deterministic here. (A text search: walking the whole tree for it costs as
    much as the rest of the summary.)"""
    out = set()
    for m in _SEED_CALL.finditer(source):
        head, _, tail = m.group(1).partition(".")
        q = imports.get(head, head) + ("." + tail if tail else "")
        if q in ("random", "numpy.random"):
            out.add(q)
    return sorted(out)


def _is_main_guard(test) -> bool:
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"
            and len(test.comparators) == 1 and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == "__main__")


_STATEMENTS = semantics.Statements(read, read_ast.statements, read_ast.names_in, read_ast.same)


def _on_self(node: ast.expr, scope) -> bool:
    """`node` is the method's own object (its first parameter, `self`)."""
    return isinstance(node, ast.Name) and not scope.is_module and bool(scope.facts.params) \
        and node.id == scope.facts.params[0] == "self"


def _sym_names(sym: Sym, key: str) -> set[str]:
    """Every name a Sym lists under `key` ("refs", "params"), at any depth (the calls it was
    computed through included)."""
    out: set[str] = set()
    stack: list = [sym]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            for k, v in x.items():
                if k == key:
                    out.update(v)
                else:
                    stack.append(v)
        elif isinstance(x, list):
            stack.extend(x)
    return out


def _read_names(cond: Sym) -> Sym:
    """The parameters and project references a condition reads (`_written_from`), {} if none."""
    if not (cond.get("params") or cond.get("via") or cond.get("refs")):
        return {}
    return {"params": sorted(_sym_params(cond)), "refs": sorted(_sym_refs(cond))}


def _sym_refs(sym: Sym) -> set[str]:
    """Every project reference a Sym names, at any depth."""
    return _sym_names(sym, "refs")


def _sym_params(sym: Sym) -> set[str]:
    """Every parameter a Sym names, at any depth (order-free ones too)."""
    return {p.removesuffix("!o") for p in _sym_names(sym, "params")}


def _self_writes(own: list, me: str) -> list[str]:
    """The attributes of `me` (a method's first parameter) that a method's body assigns, deletes
    or changes in place (`me.x = v`, `me.x += 1`, `me.d[k] = v`, `me.xs.append(v)`:
    `semantics.IN_PLACE_METHODS`). `own`: the nodes of its body, nested scopes left out
    (`_own_nodes`)."""
    out: set[str] = set()
    for n in own:
        targets: list = []
        if isinstance(n, (ast.Assign, ast.Delete)):
            targets = list(n.targets)
        elif isinstance(n, (ast.AugAssign, ast.AnnAssign)):
            targets = [n.target]
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in semantics.IN_PLACE_METHODS:
            targets = [n.func.value]
        while targets:
            t = targets.pop()
            if isinstance(t, (ast.Tuple, ast.List)):
                targets.extend(t.elts)
                continue
            while isinstance(t, (ast.Subscript, ast.Starred)):
                t = t.value
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == me:
                out.add(t.attr)
    return sorted(out)[:40]


def _own_nodes(stmts: list) -> Iterator[ast.AST]:
    """Every node of `stmts` and below, nested scopes (functions, lambdas, classes) left out."""
    todo = list(stmts)
    while todo:
        n = todo.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        yield n
        _push_children(n, todo)  # (no caller looks at the context markers)


def _called_funcs(stmts: list) -> set[str]:
    """The code of every callee called in `stmts` (`self.book.mark`), nested scopes left out."""
    return {_unparse(n.func) for n in _own_nodes(stmts) if isinstance(n, ast.Call)}


def _surely_called_names(stmts: list) -> set[str]:
    """The plain names called on every path through `stmts` (a call under a nested `if` in one
    arm only, in a loop's body, a `try` body a handler may cut short, an `x and f()` or after the
    block leaves is on some paths only; a `try` body's first statement, and the whole body where
    every handler leaves): where an arm calls `fn` whichever way it goes."""
    out: set[str] = set()
    for st in stmts:
        if isinstance(st, ast.If):
            out |= _sure_calls_of(st.test)
            out |= _surely_called_names(st.body) & _surely_called_names(st.orelse)
        elif isinstance(st, (ast.With, ast.AsyncWith)):
            for item in st.items:
                out |= _sure_calls_of(item.context_expr)
            out |= _surely_called_names(st.body)
        elif isinstance(st, (ast.For, ast.AsyncFor)):
            out |= _sure_calls_of(st.iter)
        elif isinstance(st, ast.While):
            out |= _sure_calls_of(st.test)
        elif isinstance(st, ast.Try) or type(st).__name__ == "TryStar":
            out |= _surely_called_names(st.finalbody)
            if all(semantics.always_leaves(h.body, last_statement) for h in st.handlers):
                # (every way that goes on past the `try` ran its whole body, and its `else:`)
                out |= _surely_called_names(st.body) | _surely_called_names(st.orelse)
            elif st.body:
                out |= _surely_called_names(st.body[:1])  # (its first statement starts in any case)
        elif isinstance(st, ast.Match):
            out |= _sure_calls_of(st.subject)
        elif not isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out |= _sure_calls_of(st)
        if semantics.always_leaves([st], last_statement):
            break  # (what follows is not reached)
    return out


def _sure_calls_of(node: ast.AST) -> set[str]:
    """The plain names a simple statement or expression calls whenever it runs (not the later
    operands of `and`/`or`, the arms of `a if c else b`, comprehension bodies, lambdas)."""
    out: set[str] = set()
    todo = [node]
    while todo:
        n = todo.pop()
        if isinstance(n, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.ListComp, ast.SetComp,
                          ast.DictComp, ast.GeneratorExp)):
            continue
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name):
            out.add(n.func.id)
        if isinstance(n, ast.BoolOp):
            todo.append(n.values[0])
        elif isinstance(n, ast.IfExp):
            todo.append(n.test)
        else:
            _push_children(n, todo)
    return out


def _children(n: ast.AST) -> list[ast.AST]:
    """`list(ast.iter_child_nodes(n))` less the context markers (no expression), in its order,
    without its two generators."""
    out: list[ast.AST] = []
    _push_children(n, out)
    return out


def _push_children(n: ast.AST, todo: list) -> None:
    """`todo.extend(ast.iter_child_nodes(n))` less the context markers (see `_nodes`)."""
    t = type(n)
    fields = _CHILD_FIELDS.get(t)
    if fields is None:
        scalar = _SCALAR_FIELDS_OF.get(t, frozenset())
        fields = _CHILD_FIELDS[t] = tuple(f for f in t._fields if f != "ctx" and f not in _SCALAR_FIELDS and f not in scalar)
    for f in fields:
        v = getattr(n, f, None)
        if type(v) is list:
            todo.extend([x for x in v if isinstance(x, ast.AST)])
        elif isinstance(v, ast.AST):
            todo.append(v)


def _params_read(sym: object, depth: int = 0) -> list:
    """The parameters a value's summary reads, at any depth (through the calls computing it:
    `json.loads(sample["reference"])`), but those read for their order only ("!o")."""
    out: list = []
    if depth > 6:
        return out
    if isinstance(sym, dict):
        for k, v in sym.items():
            if k == "params" and isinstance(v, list):
                out = _merge_list(out, [p for p in v if isinstance(p, str) and not p.endswith("!o")])
            elif isinstance(v, (dict, list)):
                out = _merge_list(out, _params_read(v, depth + 1))
    elif isinstance(sym, list):
        for x in sym:
            out = _merge_list(out, _params_read(x, depth + 1))
    return out


def _control(cond: Sym) -> Sym:
    """What a branch on `cond` adds to the constants and functions returned under it (see
    `_Summarizer._chooses`): when the decision also involves the function's parameters, only
    those (as a returned parameter would be), where the caller's arguments may make it the same
    everywhere (orbax's `should_skip_process_sync(processes)` is process-dependent only for a
    one-process subset)."""
    if "params" in cond:
        # Only the parameters (and attributes read: `if ctx.busy: return False`), and only into a
        # returned `True`/`False` (`_p`): a predicate's answer is its conditions', decided by the
        # caller's arguments (`should_skip_process_sync(None)` stays the same everywhere); a
        # number picked by a parameter (`process_replica_id(i)`'s -1) names a group, not a choice.
        out = {k: v for k, v in cond.items() if k in ("params", "refs")}
        return dict(out, _p=True) if out else out
    return {k: v for k, v in cond.items() if k in ("pd", "pdc", "order", "hash", "via", "refs")}


def _implicit(cond: Sym) -> Sym:
    """What a condition carries into the attributes assigned under it (semantics.IMPLICIT_KEYS)."""
    return {k: v for k, v in cond.items() if k in semantics.IMPLICIT_KEYS}


def _is_bool_constant(e: ast.expr) -> bool:
    return isinstance(e, ast.Constant) and isinstance(e.value, bool)


def _returns_in(body: list[ast.stmt]) -> bool:
    """A `return` in these statements (not in a nested function or class)."""
    stack = list(body)
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Return):
            return True
        if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            _push_children(n, stack)
    return False


def _leaves(body: list[ast.stmt]) -> bool:
    """A handler body with a top-level `raise`/`return`/`break`/`continue` (it does not go on)."""
    return any(isinstance(x, (ast.Raise, ast.Return, ast.Break, ast.Continue)) for x in body)


def _endless_loop(node: ast.While) -> bool:
    """`while True:` (or `while 1:`) whose body has no `break` of its own and no `return`: a
    generator yielding in it yields forever, however many elements its inner loops take."""
    if not (isinstance(node.test, ast.Constant) and node.test.value in (True, 1)) or node.orelse:
        return False
    stack: list[tuple[ast.AST, bool]] = [(s, False) for s in node.body]
    while stack:
        n, nested = stack.pop()
        if isinstance(n, ast.Return) or isinstance(n, ast.Break) and not nested:
            return False
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        inner = nested or isinstance(n, (ast.For, ast.AsyncFor, ast.While))
        stack.extend((c, inner) for c in _children(n))
    return True


def _always_exits(body: list[ast.stmt]) -> bool:
    return semantics.always_leaves(body, last_statement)



def _expr_name(node: ast.expr | None) -> str:
    return semantics.expr_name(node, read, none="?")


def parse(source: str, path: str) -> ast.Module:
    """The file's `ast` tree: the host's parser (fast), else libcst's, which reads the grammars of
    Python 3.8-3.14 whatever Python runs the linter (a 3.12 `type X = ...` under 3.11)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarnings of the linted code are not ours to print
            return ast.parse(source, filename=path)
    except SyntaxError as e:
        tree = None if (e.msg or "").startswith("too many") else _parse_newer_grammar(source)  # (nesting limits)
        if tree is None:
            raise AnalysisError(path, f"syntax error: {e.msg}", e.lineno, (e.offset or 1) - 1) from None
        return tree
    except (ValueError, RecursionError, MemoryError) as e:
        raise AnalysisError(path, f"cannot parse: {type(e).__name__}: {e}") from None


_MAX_BRACKET_DEPTH = 200  # the host parser's own limit ("too many nested parentheses")


def _bracket_depth(source: str) -> int:
    """The deepest bracket nesting, counting brackets in strings and comments too (an upper bound)."""
    depth = deepest = 0
    for ch in source:
        if ch in "([{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in ")]}":
            depth -= 1
    return deepest


def _parse_newer_grammar(source: str) -> ast.Module | None:
    """The tree of a source the host's parser refused, through libcst; None if libcst refuses it
    too, or if it nests deeper than the host's parser allows (libcst's native parser overflows
    the C stack, killing the process, on nesting in the thousands)."""
    import libcst as cst

    from mcjax_lint.analysis.cst_to_ast import to_ast

    if max(source.count("("), source.count("["), source.count("{")) > _MAX_BRACKET_DEPTH \
            and _bracket_depth(source) > _MAX_BRACKET_DEPTH:
        return None
    try:
        module = cst.parse_module(source)
    except (cst.ParserSyntaxError, cst.CSTValidationError, ValueError, RecursionError, MemoryError):
        return None  # (CSTValidationError: a name the host grammar refuses, e.g. a non-printable char)
    try:
        return to_ast(module)
    except Exception:  # noqa: BLE001 (a tree libcst accepts that no host grammar has: the host's error stands)
        return None


def summarize_source(source: str, path: str, module: str) -> ModuleSummary:
    tree = parse(source, path)
    is_package = os.path.basename(path) == "__init__.py"
    try:
        return _Summarizer(path, module, tree, is_package, source).run()
    except RecursionError:
        raise AnalysisError(path, "source nested too deeply to analyse") from None


def _path_params(own: list, params: list[str], qualify) -> list[str]:
    """The parameters of a function that name a path it writes a file at
    (`FunctionFacts.path_writes`): a parameter read in the path of a writing call
    (`semantics.written_path`) of its own body (not of functions defined in it). `own`: the nodes
    of its body, nested scopes left out (`_own_nodes`), in their order."""
    out: list[str] = []
    for n in own:
        if isinstance(n, ast.Call):
            path = semantics.written_path(n, qualify, read)
            if path is not None:
                for x in ast.walk(path):
                    if isinstance(x, ast.Name) and x.id in params and x.id not in out:
                        out.append(x.id)
    return out
