"""Line moves without a rebuild: summaries compared with their positions left out, and a cached
project index moved to the current lines of the files whose definitions only moved.

A summary (its `to_dict()` form) holds positions in a few known places: `"l"` of a call,
`"line"` of a function or class, the second element of each direct source (`pd`, `pdc`,
`order`, `hash`, `lmax`, a structure's `tr`, an environment parameter's `envp`: `[desc, line(,
code)]`), of each operation on a global array and each parameter jitted (`glob_ops`,
`param_jits`: `[desc, line, ...]`) and of `collective` / `device_access` /
`import_device_access` (`[desc, line]`), and `initialize_line` (whose being non-zero is a fact,
kept). `position_free()` gives the summary with those zeroed, and the positions in walk order:
two summaries with the same position-free form give the index the same facts except for the
lines the facts quote, which `line_map()` pairs up.

The index records which file each quoted origin (`utils.py:12`) came from, and which files'
sources a cap on the number of sources compared (`values.CAP_LOG`): a cap keeps the sources
with the smallest lines, so after a move it could keep other ones, and the index must then be
rebuilt. `relocate_index()` rewrites the quoted lines of moved files in the index's facts, or
says it cannot (an origin it cannot attribute to one file, a capped file, a line that moved to
two places): the caller rebuilds then.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from typing import Any

_SOURCE_KEYS = ("pd", "pdc", "order", "hash", "lmax", "tr", "envp", "glob_ops", "param_jits")  # [description, line, ...] lists
_PAIR_KEYS = ("collective", "device_access", "import_device_access")


def position_free(summary: dict) -> tuple[Any, list[int]]:
    """(copy of `summary` with its positions zeroed, the positions in walk order). Objects shared
    inside the summary stay shared in the copy (walked once), so the copy pickles as compactly."""
    positions: list[int] = []
    memo: dict[int, Any] = {}

    def walk(x: Any) -> Any:
        if isinstance(x, dict):
            hit = memo.get(id(x))
            if hit is not None:
                return hit
            out: dict = {}
            memo[id(x)] = out
            for k, v in x.items():
                if (k == "l" or k == "line") and type(v) is int:
                    positions.append(v)
                    out[k] = 0
                elif k in _SOURCE_KEYS and isinstance(v, list) and v and isinstance(v[0], list):
                    srcs = []
                    for s in v:
                        if len(s) >= 2 and type(s[1]) is int:
                            positions.append(s[1])
                            s = [s[0], 0, *s[2:]]
                        srcs.append(s)
                    out[k] = srcs
                elif k in _PAIR_KEYS and isinstance(v, list) and len(v) == 2 and type(v[1]) is int:
                    positions.append(v[1])
                    out[k] = [v[0], 0]
                elif k == "initialize_line" and type(v) is int:
                    positions.append(v)
                    out[k] = 1 if v else 0
                else:
                    out[k] = walk(v)
            return out
        if isinstance(x, list):
            hit = memo.get(id(x))
            if hit is not None:
                return hit
            out_l: list = []
            memo[id(x)] = out_l
            out_l.extend(walk(v) for v in x)
            return out_l
        return x

    return walk(summary), positions


def line_map(old: dict, new: dict) -> dict[int, int] | None:
    """Old line -> new line for two summaries of one file that differ only in positions; None when
    they differ otherwise or a line went to two places (an edit that split a line)."""
    a, pa = position_free(old)
    b, pb = position_free(new)
    if a != b or len(pa) != len(pb):
        return None
    out: dict[int, int] = {}
    for x, y in zip(pa, pb):
        if out.setdefault(x, y) != y:
            return None
    return out


class Unrelocatable(Exception):
    """The cached index cannot be moved to the current lines: rebuild it."""


_ANCHOR = re.compile(r"\(([^()\s:]+):(\d+)\)")
# Resolved values: sources with origins (`_gates`: `ProjectIndex.param_gate`'s conditions, None for
# a parameter run on every process).
_VAL_TABLES = ("returns", "_attr_cache", "_global_cache", "_gates")
_TEXT_TABLES = ("collective", "device_access")  # descriptions with `(file.py:line)` anchors


def quoting_table(index: Any) -> dict[str, list[tuple[str, str]]]:
    """File name (`utils.py`) -> the (table, key) of every fact that quotes a line of a file of
    that name: what `relocate_index` must look at when such a file moved (kept with the cached
    index, so a move touches a few facts instead of unpickling and walking all of them)."""
    out: dict[str, list[tuple[str, str]]] = {}
    memo: dict[int, set[str]] = {}

    def of_text(s: str | None) -> set[str]:
        return {m.group(1) for m in _ANCHOR.finditer(s)} if s and "(" in s else set()

    def of_val(v: Any) -> set[str]:
        hit = memo.get(id(v))
        if hit is None:
            hit = of_text(v.callable)
            for srcs in (v.pd, v.pdc, v.order, v.hash, v.shape, v.tree):
                hit.update(x.origin.rpartition(":")[0] for x in srcs if x.origin)
            for x in v.items or ():
                hit |= of_val(x)
            for _, x in v.keys or ():
                hit |= of_val(x)
            memo[id(v)] = hit
        return hit

    for name in (*_VAL_TABLES, *_TEXT_TABLES):
        table = index.__dict__.get(name, {}) if name == "_gates" else getattr(index, name)
        of = of_val if name in _VAL_TABLES else of_text
        for k, v in table.items():
            if v is None:
                continue
            for short in of(v):
                out.setdefault(short, []).append((name, k))
    return out


def relocate_index(index: Any, moves: dict[str, dict[int, int]], summaries: dict[str, Any],
                   partial: frozenset[str] | set[str] = frozenset()) -> None:
    """Move the lines the index quotes for files whose definitions moved.

    `moves`: path -> (old line -> new line); `summaries`: path -> the file's current
    `ModuleSummary` (the index's own stubs of it are refreshed from it). Raises `Unrelocatable`
    (the index is then left half-moved: the caller must drop it). `partial`: files whose map
    covers only what did not change (`plan_change`); their other origins are forgotten."""
    origins: dict[str, dict[int, Any]] = index._origin_paths
    from mcjax_lint.analysis.values import most_certain  # (values imports semantics, which this module precedes)
    capped = index._capped_paths
    by_short: dict[str, tuple[str, dict[int, int]]] = {}
    for path, m in moves.items():
        if all(x == y for x, y in m.items()):
            continue  # nothing of this file moved (a function added at its end): no fact to touch
        if path in capped:
            raise Unrelocatable(f"{path}: a capped source set compared its sources")
        short = os.path.basename(path)
        if short in by_short:
            raise Unrelocatable(f"two moved files named {short}")
        by_short[short] = (path, m)

    def new_line(short: str, line: int) -> int | None:
        """The current line of origin `short:line`, None if it is not a moved file's."""
        hit = by_short.get(short)
        if hit is None:
            return None
        path, m = hit
        owner = origins.get(short, {}).get(line)
        if owner is None:
            raise Unrelocatable(f"origin {short}:{line} not recorded")
        if owner != path:
            if isinstance(owner, tuple) and path in owner:
                raise Unrelocatable(f"origin {short}:{line} is ambiguous")
            return None  # another file of the same name, not moved
        nl = m.get(line)
        if nl is None:
            raise Unrelocatable(f"origin {short}:{line} has no position in the summary")
        return nl

    def fix_text(s: str | None) -> str | None:
        if not s or "(" not in s:
            return s

        def sub(mo: re.Match) -> str:
            nl = new_line(mo.group(1), int(mo.group(2)))
            return mo.group(0) if nl is None else f"({mo.group(1)}:{nl})"

        return _ANCHOR.sub(sub, s)

    def fix_srcs(srcs: frozenset) -> frozenset:
        if not srcs:
            return srcs
        # Built afresh, not edited in place: a source moved onto the line of another one (35 -> 38
        # while 38 -> 41) must not be discarded when that other one moves on.
        out, moved = [], False
        for s in srcs:
            if s.origin:
                short, _, ln = s.origin.rpartition(":")
                if short in by_short:
                    nl = new_line(short, int(ln))
                    if nl is not None and nl != s.line:
                        out.append(replace(s, line=nl, origin=f"{short}:{nl}"))
                        moved = True
                        continue
            out.append(s)
        return most_certain(out) if moved else srcs  # (one source moved onto its twin: as a rebuild joins them)

    def fix_val(v: Any) -> Any:
        pd, pdc, order, hsh = fix_srcs(v.pd), fix_srcs(v.pdc), fix_srcs(v.order), fix_srcs(v.hash)
        shape, tree = fix_srcs(v.shape), fix_srcs(v.tree)
        callable_ = fix_text(v.callable)
        items = tuple(fix_val(x) for x in v.items) if v.items else v.items
        keys = tuple((k, fix_val(x)) for k, x in v.keys) if v.keys else v.keys  # (each key's value apart)
        if (pd is v.pd and pdc is v.pdc and order is v.order and hsh is v.hash and shape is v.shape
                and tree is v.tree and callable_ == v.callable and (items is v.items or items == v.items)
                and (keys is v.keys or keys == v.keys)):
            return v
        return replace(v, pd=pd, pdc=pdc, order=order, hash=hsh, shape=shape, tree=tree, callable=callable_, items=items,
                       keys=keys)

    quoting = index.__dict__.get("_quoting")
    if quoting is None:  # an index built in this process: look at every fact
        todo = [(name, k) for name in (*_VAL_TABLES, *_TEXT_TABLES) if by_short
                for k in (index.__dict__.get(name, {}) if name == "_gates" else getattr(index, name))]
    else:  # a cached one: only the facts that quote a file of a moved file's name
        todo = sorted({entry for short in by_short for entry in quoting.get(short, ())})
    for name, k in todo:
        table = index.__dict__.get(name, {}) if name == "_gates" else getattr(index, name)
        v = table.get(k)
        if v is None:
            continue  # reset by `forget_changes`: re-solved after
        nv = fix_val(v) if name in _VAL_TABLES else fix_text(v)
        if nv is not v and nv != v:
            table[k] = nv

    # Later relocations read the origins at their new lines.
    for short, (path, m) in by_short.items():
        table = origins.get(short, {})
        moved = {}
        for line, owner in list(table.items()):
            if owner == path:
                del table[line]
                if line in m or path not in partial:
                    moved[m.get(line, line)] = path
            elif isinstance(owner, tuple) and path in owner:
                raise Unrelocatable(f"origin {short}:{line} is ambiguous")
        for line, path_ in moved.items():
            prev = table.get(line)
            table[line] = path_ if prev is None else tuple(sorted({*(prev if isinstance(prev, tuple) else (prev,)), path_}))

    # The per-file stubs (lines of definitions, the MCJ401 facts) come from the current summaries.
    imports_changed = False
    for path, s in summaries.items():
        for q, f in s.functions.items():
            stub = index.functions.get(q)
            if stub is not None:
                stub.line = f.line
                # (the lines of its reductions of parameters: `ProjectIndex.glob_param_work`)
                stub.glob_ops = [g for g in stub.glob_ops if "params" not in g[2]] + \
                    [list(g) for g in f.glob_ops if "params" in g[2]]
        for q, c in s.classes.items():
            stub = index.classes.get(q)
            if stub is not None:
                stub.line = c.line
                stub.cond_attrs, stub.sure_attrs = dict(c.cond_attrs), list(c.sure_attrs)  # (`absent_unless`)
                stub.absent_conds = dict(c.absent_conds)
                stub.counts = list(c.counts)  # (`ProjectIndex.count_member`)
        stub = index.modules.get(s.module)
        if stub is not None:
            if (stub.import_device_access != s.import_device_access or stub.imported_modules != s.imported_modules
                    or stub.lazy_imports != s.lazy_imports or stub.test_plugins != s.test_plugins):
                imports_changed = True
            stub.initialize_line = s.initialize_line
            stub.initialize_script_only = s.initialize_script_only
            stub.initialize_gates = list(s.initialize_gates)
            stub.mode_sets = list(s.mode_sets)
            stub.pins_cpu = s.pins_cpu
            stub.process_free_test = s.process_free_test
            stub.device_scope = s.device_scope
            stub.test_plugins = list(s.test_plugins)
            stub.import_device_access = s.import_device_access
            stub.imported_modules = list(s.imported_modules)
            stub.lazy_imports = list(s.lazy_imports)
            stub.imports = dict(s.imports)
        else:
            imports_changed = True
    if imports_changed:  # import-time device access reads these only (it walks every module)
        index._module_device_access = index._import_device_access()
        index._importers = None  # (who imports whom: `single_process_script`)
        index._importers_of = None
    index.__dict__.pop("_mode_memo", None)  # (`mode_not_selected`: mode values may have changed)
    index.__dict__.pop("_gated_initialize", None)


# --- a real change in one file, re-solved without a rebuild -------------------------------------

# Identifiers (any letter, as Python's) and the dotted runs they form, in one pass over a file's
# distinct strings joined by NUL (no string of a summary holds one).
_DOTTED = re.compile(r"[^\W\d]\w*(?:\.[^\W\d]\w*)*")
_CONTAINERS = (dict, list, tuple)


def mentions_of(obj: Any) -> set[str]:
    """Every identifier in any string of a summary part (keys included), and every pair of
    identifiers joined by a dot (`types.jax` is how another file reaches an import of `types`):
    whatever name another file could resolve through its imports, calls, references, bases or
    attribute names. The distinct strings are collected first and scanned in one regex pass
    (walking and scanning string by string took ~3 s on the 687 kLOC corpus, at every cold run)."""
    strs: set[str] = set()
    seen: set[int] = set()
    todo = [obj]
    while todo:
        x = todo.pop()
        if type(x) is str:
            strs.add(x)
            continue
        if id(x) in seen:
            continue
        seen.add(id(x))
        if isinstance(x, dict):
            for k, v in x.items():
                if type(k) is str:
                    strs.add(k)
                elif isinstance(k, _CONTAINERS):
                    todo.append(k)
                if type(v) is str:
                    strs.add(v)
                elif isinstance(v, _CONTAINERS):
                    todo.append(v)
        elif isinstance(x, (list, tuple)):
            for v in x:
                if type(v) is str:
                    strs.add(v)
                elif isinstance(v, _CONTAINERS):
                    todo.append(v)
    out: set[str] = set()
    for run in set(_DOTTED.findall("\0".join(strs))):
        if "." in run:
            parts = run.split(".")
            out.update(parts)
            out.update(f"{a}.{b}" for a, b in zip(parts, parts[1:]))
        else:
            out.add(run)
    return out


def mentions_by_module(modules: dict[str, Any]) -> dict[str, Any]:
    """Identifier -> the modules whose summaries mention it (a tuple of one or two), or None when
    more do (kept with the cached index)."""
    out: dict[str, Any] = {}
    for m, s in modules.items():
        for t in mentions_of(s.to_dict()):
            prev = out.get(t, ())
            if prev is None:
                continue
            out[t] = (*prev, m) if len(prev) < 2 else None
    return out


# Module-level summary fields neither the index nor the analysis reads (the summary's own
# prefilter flags): a change there does not stop a re-solve.
_UNREAD = frozenset({"direct_sources", "order_sources", "hash_calls", "refs_used"})


def _pair(old: Any, new: Any, into: dict[int, int]) -> None:
    a, pa = position_free(old)
    b, pb = position_free(new)
    if a != b or len(pa) != len(pb):
        raise Unrelocatable("parts differ")
    for x, y in zip(pa, pb):
        if into.setdefault(x, y) != y:
            raise Unrelocatable(f"line {x} went to two places")


class ChangePlan:
    """What re-solving one changed file needs: the functions to re-solve (`names`), the old
    names to forget, and the old -> new lines of what did not change (for `relocate_index`)."""

    def __init__(self, path: str, module: str, names: list[str], gone: list[str], lines: dict[int, int], summary: Any,
                 added: list[str] = ()):
        self.path, self.module, self.names, self.gone, self.lines, self.summary = path, module, names, gone, lines, summary
        self.added = list(added)


def _without_methods(classes: dict | None) -> dict:
    """A summary's classes without their method lists (a method added or removed changes the
    list only: the method itself is judged with the functions)."""
    return {q: {k: v for k, v in c.items() if k != "methods"} for q, c in (classes or {}).items()}


def _is_special(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


def _without_ip(obj: Any) -> Any:
    """A copy of a summary part without its `"ip"` entries (see `summary._init_params`)."""
    if isinstance(obj, dict):
        return {k: _without_ip(v) for k, v in obj.items() if k != "ip"}
    if isinstance(obj, list):
        return [_without_ip(v) for v in obj]
    return obj


def _called_names(obj: Any) -> set[str]:
    """The `"n"` (callee by name) of every call in a summary part, nested ones included."""
    out: set[str] = set()
    todo = [obj]
    while todo:
        x = todo.pop()
        if isinstance(x, dict):
            n = x.get("n")
            if type(n) is str:
                out.add(n)
            todo.extend(v for v in x.values() if isinstance(v, (dict, list)))
        elif isinstance(x, list):
            todo.extend(v for v in x if isinstance(v, (dict, list)))
    return out


def class_named_outside(classes: set[str], mentions: dict, module: str, other_new_mentions: set[str]) -> str | None:
    """The bare name of one of `classes` that a file other than `module` mentions (every way to
    construct a class names it so: the qualified name, a re-export, a subclass's bases), if any."""
    for c in sorted(classes):
        t = c.rsplit(".", 1)[-1]
        owners = mentions.get(t, ())
        if owners is None or any(m != module for m in owners) or t in other_new_mentions:
            return t
    return None


def reached_as(q: str, facts: dict) -> str:
    """What another file's summary must mention to read function `q`: `<module's last
    part>.<name>` for a function; the bare name for a method (or a function nested in one)."""
    return q.rsplit(".", 1)[-1] if facts.get("cls") else ".".join(q.split(".")[-2:])


def _constant_arguments(functions: dict, index: Any) -> list:
    """What `index.decided` reads of a file's functions: their constant defaults, and the
    supplied parameters and literal arguments of each call that has literal arguments or names a
    function that could be decided (`index.decision_callees`); callbacks passed to one."""
    callees = getattr(index, "decision_callees", set())
    typed = getattr(index, "param_classes", {})
    follow = index._follow_reexport
    methods = getattr(index, "methods_by_name", {})
    gated = getattr(index, "work_gates", {})

    def via(v: dict | None) -> list:
        return [x.get("n") for x in (v or {}).get("via", ())]

    def counts(c: dict) -> bool:
        n = follow(c["n"]) if "n" in c else None
        f = index.functions.get(n) if n is not None else None
        return (n is not None and (n in callees or (c.get("kc") and f is not None and not f.cls))) \
            or any(follow(x) in callees for x in c.get("cb", ()))

    out = []
    for q, d in functions.items():
        # (methods are not decided, but a method's defaults decide its gated work: `work_gates`)
        entry = (sorted((d.get("defaults") or {}).items()) if not d.get("cls") or q in gated else [],
                 sorted(str([c.get("n"), c.get("np"), c.get("kw"), sorted((c.get("kc") or {}).items()), c.get("cb")])
                        for c in d.get("calls", ()) if counts(c)),
                 # (and the classes of its arguments, by call: `index.param_classes`)
                 sorted(str([c.get("n"), c.get("np"), c.get("kw"),
                             sorted((k, via(v)) for k, v in (c.get("gv") or {}).items())])
                        for c in d.get("calls", ()) if "n" in c and (c.get("gv") or follow(c["n"]) in typed))
                 # (a method's: by its name and receiver, every call of a project method's name)
                 + sorted(str([c["m"], c.get("np"), c.get("kw"), sorted((k, via(v)) for k, v in (c.get("gv") or {}).items()),
                               via(c.get("r")), (c.get("r") or {}).get("refs")])
                          for c in d.get("calls", ()) if "n" not in c and c.get("m") in methods),
                 sorted(str([fw.get("n"), sorted(fw.get("fw", {}).items())]) for fw in d.get("forwards", ())
                        if "n" in fw and follow(fw["n"]) in typed))
        if entry[0] or entry[1] or entry[2]:
            out.append((q, entry))
    return sorted(out)


def plan_change(index: Any, old: dict, new: dict, summary: Any, other_new_mentions: set[str]) -> ChangePlan:
    """A file whose summary changed in its functions and methods only (a class's list of methods
    aside), when nothing outside the file can read what changed: no other file's summary mentions
    a changed function as `<module's last part>.<name>` (nor one of the file's own functions
    that reads one, transitively), nor, for a method, its bare name (a method is reached by
    name from any receiver: `x.save()`, a property `x.step`, a subclass's `self.save()`, the
    resolution by name of an unknown receiver's method); no special method changed (`__init__`,
    `__call__`, ... are run by constructions and calls that never name them, on instances that
    reach other files through values); the changed functions construct no project class
    (constructor arguments flow into attributes) and pass no callbacks (they flow into the
    callee's facts); no module-level value (a class attribute, a global) reads a changed name.
    Then only that file's changed functions and their readers in the file can get other facts;
    everything else is as a rebuild would give. Raises `Unrelocatable` otherwise."""
    for k in set(old) | set(new):
        if k in _UNREAD or k in ("imported_modules", "lazy_imports", "imports", "initialize_gates", "mode_sets"):
            continue  # imported modules: only import-time device access reads them, recomputed after
            # (mode gates and values: read from the stubs, updated, by `mode_not_selected`)
        if k == "device_scope" and not any(m.device_scope == "local" and m.module != summary.module
                                           for m in index.modules.values()):
            continue  # (read only by local-only scripts importing the module: none; its own stub is updated)
        if k == "classes":
            if position_free(_without_methods(old.get(k)))[0] != position_free(_without_methods(new.get(k)))[0]:
                raise Unrelocatable("module-level summary changed (classes)")
        elif k != "functions" and position_free({k: old.get(k)})[0] != position_free({k: new.get(k)})[0]:
            # (under its key: a top-level `[desc, line]` such as `import_device_access` is a
            # position only there)
            raise Unrelocatable(f"module-level summary changed ({k})")
    fo, fn = old["functions"], new["functions"]
    if _constant_arguments(fo, index) != _constant_arguments(fn, index):
        # (the index decides branches on them from every file's calls at once: `index.decided`)
        raise Unrelocatable("constant arguments or defaults changed")
    norm_o = {q: position_free(d)[0] for q, d in fo.items()}
    norm_n = {q: position_free(d)[0] for q, d in fn.items()}
    changed = {q for q in set(fo) | set(fn) if norm_o.get(q) != norm_n.get(q)}
    lines: dict[int, int] = {}
    for k in old:
        if k not in ("functions", "imported_modules", "lazy_imports", "imports", "device_scope") and k not in _UNREAD:
            _pair({k: _without_methods(old[k]) if k == "classes" else old[k]},
                  {k: _without_methods(new[k]) if k == "classes" else new[k]}, lines)
    for q in sorted(set(fo) & set(fn)):
        if q not in changed:
            trial = dict(lines)
            try:
                _pair(fo[q], fn[q], trial)
                lines = trial
            except Unrelocatable:
                # Equal but for positions that do not pair up (a statement added before the
                # one whose line a fact quotes, quoting the same thing): facts quote other lines.
                changed.add(q)
    tokens = {q.rsplit(".", 1)[-1] for q in changed}
    io, inew = old.get("imports", {}), new.get("imports", {})
    imported = {k for k in set(io) | set(inew) if io.get(k) != inew.get(k)}
    names = set(changed) & set(fn)
    # Summaries hold qualified names, so a changed import is read as `<this module>.<name>` only
    # (a re-export); a changed function by its name. What the file's own functions must not read
    # unless re-solved:
    last = new["module"].rsplit(".", 1)[-1]
    inside = tokens | {f"{last}.{name}" for name in imported}
    # An `__init__` that changed or reads what changed (and exists before and after) is read by
    # the constructions of its class and of the file's subclasses (its `collective`, the `g` flag
    # of a configured process subset), by nothing that names it: `built` holds those classes;
    # they must not be named outside the file, and the file's functions that construct one are
    # re-solved (and so on, to a fixpoint).
    built: set[str] = set()
    inits: set[str] = set()
    resolved_class: dict[str, str] = {}

    def constructs(d: Any) -> bool:
        for n in _called_names(d):
            hit = resolved_class.get(n)
            if hit is None:
                hit = resolved_class[n] = index.resolve_class_name(index._follow_reexport(n))
            if hit in built:
                return True
        return False

    grow = True
    while grow:
        grow = False
        for q in sorted((changed | names) - inits):
            cls = fn.get(q, fo.get(q, {})).get("cls")
            if q.rsplit(".", 1)[-1] == "__init__" and cls and q == f"{cls}.__init__" and q in fo and q in fn:
                inits.add(q)
                built |= {c for c in new.get("classes", {}) if cls in index.mro(c)} | {cls}
        for q, d in fn.items():
            if q not in names and (mentions_of(d) & inside or (built and constructs(d))):
                names.add(q)
                tokens.add(q.rsplit(".", 1)[-1])
                inside.add(q.rsplit(".", 1)[-1])
                grow = True
    module = new["module"]
    skip = {"functions", "imports", "imported_modules", "lazy_imports", *_UNREAD}
    # Module-level values (class attributes, bases, globals); a class's own list of methods is
    # no reader, nor is the name of the `__init__` whose constructions' arguments an attribute
    # holds (`"ip"`: the index reads the constructions, not that function's facts).
    outside = mentions_of(_without_ip({k: _without_methods(v) if k == "classes" else v for k, v in new.items() if k not in skip})) | mentions_of(
        _without_ip({k: _without_methods(v) if k == "classes" else v for k, v in old.items() if k not in skip}))
    if outside & inside:
        raise Unrelocatable("a module-level value reads a changed function or import")
    mentions = index._mentions
    if built:
        values = [new.get("globals"), old.get("globals")] + [c.get("attrs") for part in (old, new)
                                                              for c in (part.get("classes") or {}).values()]
        if any(constructs(v) for v in values):
            raise Unrelocatable("a module-level value constructs a class whose __init__ changed")
        t = class_named_outside(built, mentions, module, other_new_mentions)
        if t:
            raise Unrelocatable(f"class `{t}` (its __init__ changed) is mentioned outside {new['path']}")
    # Another file reaches this file's imports only as `<this module>.<name>` (re-exports).
    for name in imported:
        owners = mentions.get(f"{last}.{name}", ())
        if owners is None or any(m != module for m in owners) or f"{last}.{name}" in other_new_mentions:
            raise Unrelocatable(f"import `{name}` may be re-exported")
    # Another file reaches a function of this file only through a name that ends in
    # `<last part of its module>.<function>`: the qualified name, a namespace-package variant
    # (`orbax.checkpoint.mod.f` for module `checkpoint.mod`), or an import that re-exports it
    # (the re-exporting file's summary holds the qualified name). That pair must not be
    # mentioned elsewhere; the bare name alone refused every common name (`save`, `main`).
    # A method (or a function nested in one), though, is reached by its bare name.
    for q in sorted(changed | names):
        t = reached_as(q, fn.get(q) or fo.get(q))
        if q in inits:
            continue  # judged by its classes above
        if _is_special(t):
            raise Unrelocatable(f"special method {q} changed")
        owners = mentions.get(t, ())
        if owners is None or any(m != module for m in owners) or t in other_new_mentions:
            raise Unrelocatable(f"`{t}` is mentioned outside {new['path']}")
    piece_helpers = getattr(index, "piece_helpers", ())
    for q in names | changed:
        for d in (fo.get(q), fn.get(q)):
            if d is None:
                continue
            for call in d.get("calls", ()):
                if call.get("cb") or call.get("cbc"):
                    raise Unrelocatable(f"{q} passes a callback")
                if "n" in call and piece_helpers and index._follow_reexport(call["n"]) in piece_helpers:
                    # (what its calls pass counts for the instances it builds: `ProjectIndex._caller_counts`)
                    raise Unrelocatable(f"{q} calls a helper that builds an instance from a piece")
                if "n" in call and index.resolve_class_name(index._follow_reexport(call["n"])) in index.classes:
                    # Constructor arguments flow into attributes (resolved with the cached index):
                    # a changed construction, or one whose arguments read what changed, is not
                    # followed here. An unchanged one re-solved for its `__init__` is.
                    if q in changed or mentions_of({k: v for k, v in call.items() if k not in ("n", "l")}) & inside:
                        raise Unrelocatable(f"{q} constructs a project class")
    return ChangePlan(new["path"], module, sorted(names), sorted(changed - set(fn)), lines, summary, sorted(set(fn) - set(fo)))


def forget_changes(index: Any, plans: list[ChangePlan]) -> None:
    """Reset the facts of the planned functions (so a fact that no longer holds goes) and put the
    changed files' function facts in place; then `relocate_index`, then `resolve_changes`."""
    for plan in plans:
        restores = getattr(index, "restores", {})
        if plan.summary.restores or any(p == plan.path for v in restores.values() for _, p in v):
            # (`ProjectIndex.restores` is built from every file's summary at once, lines included)
            raise Unrelocatable("an attribute stored again from its own value")
        for q in plan.gone + plan.names:
            if q in index.local_unless:
                # Its callers decided call by call whether it does collective work there.
                raise Unrelocatable(f"{q} does jitted work on its parameters")
            for table in (index.returns, index.param_flow, index.returned_params, index.item_flow, index.collective, index.env_params,
                          index.device_access, index.callback_params):
                table.pop(q, None)
        shipped = index.__dict__.get("_self_call_names")
        returned = index.__dict__.get("_returned_calls")
        structure = index.__dict__.get("_structure_returns")
        for q in plan.gone + plan.names:
            if shipped is not None:
                shipped.pop(q, None)  # (its facts in place hold its calls: `ProjectIndex.method_writes`)
            if returned is not None:
                returned.pop(q, None)  # (and its return: `ProjectIndex.made_instance`)
            if structure is not None:
                structure.pop(q, None)  # (and its result's structure: `ProjectIndex._structure_by_arguments`)
        for q in plan.gone:
            index.functions.pop(q, None)
            index.fn_path.pop(q, None)
        for q in plan.names:
            index.functions[q] = plan.summary.functions[q]
            index.fn_path[q] = plan.path
        # Methods added or removed: the classes' lists and the methods by name (only this file
        # mentions a changed method's name, so only its methods are listed under it).
        for q, c in plan.summary.classes.items():
            stub = index.classes.get(q)
            if stub is not None and stub.methods != c.methods:
                stub.methods = list(c.methods)
        for name in {q.rsplit(".", 1)[-1] for q in plan.gone + plan.added}:
            was = [m for m in index.methods_by_name.get(name, ()) if index.fn_path.get(m) != plan.path and m not in plan.gone]
            own = [q for q, f in plan.summary.functions.items()
                   if f.cls and q.count(".") == f.cls.count(".") + 1 and q.rsplit(".", 1)[1] == name]
            if was and own:
                raise Unrelocatable(f"methods named {name} in other files")
            if own or was:
                index.methods_by_name[name] = was or own
            else:
                index.methods_by_name.pop(name, None)
    index._reexport_cache = {}
    index._mro_cache = {}
    index.__dict__.pop("_subclass_cache", None)
    index._props_cache = {}
    index._cond_stores = {}
    index._cond_calls_by_name = None  # (rebuilt from the functions now in place)
    index._wuc_memo, index._several_memo, index._elsewhere_memo = {}, {}, {}
    index._named_calls_memo, index._params_in_memo = {}, {}


def resolve_changes(index: Any, plans: list[ChangePlan]) -> None:
    """Re-solve the planned functions with everything else fixed. Raises
    `Unrelocatable` when the result could differ from a rebuild: no fixpoint within the cap, or
    a collective / device-access description the rebuild could have taken from another call
    (the rebuild keeps the first one found, which depends on the order facts were found in)."""
    names = [q for plan in plans for q in plan.names]
    if not index.resolve_again(names):
        raise Unrelocatable("the re-solved functions did not settle")
    for q in names:
        f = index.functions[q]
        path = index.fn_path[q]
        if q in index.local_unless:
            raise Unrelocatable(f"{q} does jitted work on its parameters")
        if q in index.collective and not f.collective:
            found = sum(1 for call in f.calls if index.call_collective(call, path))
            if found != 1:
                raise Unrelocatable(f"{q}: collective through {found} calls")
        if q in index.device_access and not f.device_access:
            found = 0
            for call in f.calls:
                n = call.get("n")
                if n and index._follow_reexport(n) in index.device_access and index._follow_reexport(n) != q:
                    found += 1
            if found != 1:
                raise Unrelocatable(f"{q}: device access through {found} calls")
