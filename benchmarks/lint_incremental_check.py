"""Random edits against a full rebuild: the cached, incremental path must give exactly what
linting from scratch gives.

On a private copy of a project (default: the corpus of benchmarks/fetch_corpus.py, the
packages given by --packages; or any directory with --project), one cold run fills the
cache; then, per random edit of one file (lines inserted, a function added, a process-dependent
helper added, a helper renamed or deleted, an import changed):

1. the edited file alone is linted with the cache, as pre-commit runs it (timed);
2. the project index is taken from the cache's path (cached, moved to new lines, or
   re-solved incrementally: whatever the runner does) and compared, fact by fact, with an index
   built from scratch from the same summaries; the edited file's findings (codes, lines,
   columns, messages) with the ones computed from scratch;
3. every --full-every edits, every file's findings through the cache against from scratch.

Prints every mismatch (and exits 1 if there was one), the count of edits by kind, how the
runner got its index (cached / moved / re-solved / rebuilt) and the pre-commit times.

    python benchmarks/lint_incremental_check.py --edits 40 --seed 1
    python benchmarks/lint_incremental_check.py --project fixtures/lint --edits 30
"""

from __future__ import annotations

import argparse
import ast
import os
import pickle
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
WORK = HERE / ".work"

KINDS = ("insert_lines", "add_function", "add_pd_helper", "rename_helper", "delete_helper", "change_import",
         "method_add_call", "add_method", "edit_init", "change_constant")


# --- linting through the real runner -------------------------------------------------------------


def lint(root: Path, targets: list[Path] | None, *, need_index: bool = False, reference: bool = False):
    from mcjax_lint.config import load_config
    from mcjax_lint.files import Excluder, discover
    from mcjax_lint.runner import lint_files

    cfg = load_config(None, root)
    project = discover([root], Excluder(root.resolve(), cfg.all_excludes))
    tl = project if targets is None else [p.resolve() for p in targets]
    res = lint_files(tl, project, cfg, jobs=None, use_cache=True, cwd=root, need_index=need_index, reference=reference)
    key = sorted((f.path, f.line, f.column, f.end_line, f.end_column, f.code, f.message) for f in res.findings)
    errors = sorted((e.path, e.message) for e in res.file_errors)
    return key, errors, res


def facts(index) -> dict:
    """Everything the index derived, in comparable form (a pickled index: what the runner ships)."""
    out = {
        "returns": dict(index.returns),
        "param_flow": dict(index.param_flow),
        "item_flow": {k: list(v) for k, v in index.item_flow.items()},
        "collective": dict(index.collective),
        "device_access": dict(index.device_access),
        "callback_params": {k: sorted(v) for k, v in index.callback_params.items() if v},
        "module_device_access": dict(index._module_device_access),
        "attrs": dict(index._attr_cache),
        "globals": dict(index._global_cache),
        "function_lines": {q: (f.line, f.cls, tuple(f.params), f.jit, f.flags, f.prop) for q, f in index.functions.items()},
        "class_lines": {q: (c.line, tuple(c.bases), tuple(c.attrs), tuple(c.methods)) for q, c in index.classes.items()},
        "methods_by_name": {k: tuple(v) for k, v in index.methods_by_name.items()},
        "fn_path": dict(index.fn_path),
        "modules": {m: (s.path, s.initialize_line, s.import_device_access, tuple(sorted(s.imports.items())))
                    for m, s in index.modules.items()},
    }
    return out


def shipped(index):
    """The index as the runner caches and ships it (attributes and globals resolved)."""
    return pickle.loads(pickle.dumps(index, protocol=pickle.HIGHEST_PROTOCOL))


def diff_facts(a: dict, b: dict, limit: int = 8) -> list[str]:
    out = []
    for table in a:
        ta, tb = a[table], b[table]
        for k in sorted(set(ta) | set(tb), key=str):
            if ta.get(k) != tb.get(k):
                out.append(f"{table}[{k}]: incremental {ta.get(k)!r} != rebuilt {tb.get(k)!r}")
                if len(out) >= limit:
                    return out
    return out


# --- random edits ------------------------------------------------------------------------------


def _top_functions(tree: ast.Module) -> list[ast.FunctionDef]:
    return [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _methods(tree: ast.Module) -> list[tuple[ast.ClassDef, ast.FunctionDef]]:
    """(class, method) for every method defined directly in a class body (nested classes too)."""
    return [(c, f) for c in ast.walk(tree) if isinstance(c, ast.ClassDef)
            for f in c.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _body_start(f: ast.FunctionDef, lines: list[str]) -> tuple[int, str] | None:
    """(0-based line, indentation) before which a statement can go at the top of `f`'s body
    (after its docstring); None for a one-line body (`def f(self): return 1`)."""
    body = f.body
    first = body[1] if len(body) > 1 and isinstance(body[0], ast.Expr) and isinstance(
        getattr(body[0], "value", None), ast.Constant) and isinstance(body[0].value.value, str) else body[0]
    if first.lineno <= f.lineno or (first is not body[0] and first.lineno <= body[0].end_lineno):
        return None
    line = lines[first.lineno - 1]
    indent = line[:len(line) - len(line.lstrip())]
    if len(indent) != first.col_offset:
        return None
    return first.lineno - 1, indent


def _self_name(f: ast.FunctionDef) -> str | None:
    """The receiver parameter of a plain method (not a static method)."""
    if any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in f.decorator_list):
        return None
    args = f.args.posonlyargs + f.args.args
    return args[0].arg if args else None


# Statements added at the top of a method's body by `method_add_call` (`{s}`: the receiver, `{n}`:
# the edit number, `{m}`: another method of the class): what a pre-commit edit of a method
# typically adds (a call of another method, a process-dependent value, an early return on one,
# a collective).
_METHOD_STMTS = (
    "{s}.{m}()\n",
    "import jax\n_chk_pd{n} = jax.process_index()\n",
    "import jax\nif jax.process_index() == {k}:\n    return None\n",
    "from jax.experimental import multihost_utils\nmultihost_utils.sync_global_devices('chk{n}')\n",
    "print('chk{n}', {s})\n",
)


def edit(rng: random.Random, path: Path, kind: str, n: int) -> str | None:
    """Apply one edit of `kind` to `path`; a description, or None if this file has no place for it."""
    text = path.read_text(encoding="utf-8")
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    lines = text.splitlines(keepends=True)
    if kind == "insert_lines":
        # Blank or comment lines before a top-level or nested statement (its own indentation):
        # definitions below move, nothing else changes.
        stmts = [s for s in ast.walk(tree) if isinstance(s, ast.stmt) and s.col_offset == len(lines[s.lineno - 1]) - len(lines[s.lineno - 1].lstrip())]
        if not stmts:
            return None
        s = rng.choice(stmts)
        pad = rng.choice(["\n", "# moved\n", "\n\n", "\n# moved\n\n"])
        indent = " " * s.col_offset
        pad = "".join(indent + x + "\n" if x else "\n" for x in pad.splitlines())
        lines.insert(s.lineno - 1, pad)
        new, desc = "".join(lines), f"{len(pad.splitlines())} line(s) before line {s.lineno}"
    elif kind == "add_function":
        new = text + f"\n\ndef _check_added_{n}(x):\n    return x + {n}\n"
        desc = f"_check_added_{n}"
    elif kind == "add_pd_helper":
        fns = _top_functions(tree)
        if fns and rng.random() < 0.5:
            at = rng.choice(fns).lineno - 1 - len(rng.choice(fns).decorator_list)
            at = max(0, min(at, len(lines)))
        else:
            at = len(lines)
        helper = f"def _check_pd_{n}():\n    import jax\n    return jax.process_index() == {n % 4}\n\n\n"
        lines.insert(at, ("\n" if at == len(lines) else "") + helper)
        new, desc = "".join(lines), f"_check_pd_{n} at line {at + 1}"
    elif kind in ("rename_helper", "delete_helper"):
        fns = _top_functions(tree)
        if not fns:
            return None
        f = rng.choice(fns)
        start = (f.decorator_list[0].lineno if f.decorator_list else f.lineno) - 1
        if kind == "rename_helper":
            line = lines[f.lineno - 1]
            new_line = line.replace(f"def {f.name}(", f"def {f.name}_renamed{n}(", 1)
            if new_line == line:
                return None
            lines[f.lineno - 1] = new_line
            desc = f"{f.name} -> {f.name}_renamed{n}"
        else:
            del lines[start:f.end_lineno]
            desc = f"deleted {f.name} (lines {start + 1}-{f.end_lineno})"
        new = "".join(lines)
    elif kind == "method_add_call":
        cands = [(c, f) for c, f in _methods(tree) if _self_name(f) and _body_start(f, lines)]
        if not cands:
            return None
        c, f = rng.choice(cands)
        at, indent = _body_start(f, lines)
        s = _self_name(f)
        others = [g.name for owner, g in _methods(tree) if owner is c and g.name != f.name and not g.name.startswith("__")
                  and len(g.args.posonlyargs + g.args.args) == 1 and _self_name(g)]
        stmts = _METHOD_STMTS if others else _METHOD_STMTS[1:]
        stmt = rng.choice(stmts).format(s=s, n=n, k=n % 2, m=rng.choice(others) if others else "")
        lines.insert(at, "".join(indent + x + "\n" for x in stmt.splitlines()))
        new, desc = "".join(lines), f"{c.name}.{f.name}: {stmt.strip().splitlines()[-1]} at line {at + 1}"
    elif kind == "add_method":
        classes = [c for c in ast.walk(tree) if isinstance(c, ast.ClassDef)]
        if not classes:
            return None
        c = rng.choice(classes)
        last = c.body[-1]
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
        line = lines[c.body[0].lineno - 1]
        indent = line[:len(line) - len(line.lstrip())]
        if not indent or len(indent) != c.body[0].col_offset:
            return None
        body = rng.choice(("import jax\nreturn jax.process_index() == {k}\n", "return x + {n}\n",
                           "from jax.experimental import multihost_utils\nmultihost_utils.sync_global_devices('chk{n}')\n"))
        meth = f"def _chk_method{n}(self, x=None):\n" + "".join("    " + b + "\n" for b in body.format(n=n, k=n % 2).splitlines())
        lines.insert(last.end_lineno, "\n" + "".join(indent + x + "\n" if x else "\n" for x in meth.splitlines()))
        new, desc = "".join(lines), f"{c.name}._chk_method{n} after line {last.end_lineno}"
    elif kind == "edit_init":
        cands = [(c, f) for c, f in _methods(tree) if f.name == "__init__" and _self_name(f) and _body_start(f, lines)]
        if not cands:
            return None
        c, f = rng.choice(cands)
        at, indent = _body_start(f, lines)
        s = _self_name(f)
        params = [a.arg for a in f.args.posonlyargs + f.args.args + f.args.kwonlyargs][1:]
        if params and rng.random() < 0.5:
            p = rng.choice(params)
            stmt, what = f"{s}._chk_attr{n} = {p}\n", f"self._chk_attr{n} = {p}"
        else:
            stmt, what = f"import jax\n{s}._chk_attr{n} = jax.process_index()\n", f"self._chk_attr{n} = jax.process_index()"
        lines.insert(at, "".join(indent + x + "\n" for x in stmt.splitlines()))
        new, desc = "".join(lines), f"{c.name}.__init__: {what} at line {at + 1}"
    elif kind == "change_constant":
        consts = [a for a in tree.body if isinstance(a, ast.Assign) and len(a.targets) == 1
                  and isinstance(a.targets[0], ast.Name) and isinstance(a.value, ast.Constant)
                  and a.lineno == a.end_lineno and isinstance(a.value.value, (int, float, str, bool))
                  and lines[a.lineno - 1].strip() == ast.get_source_segment(text, a)]
        if not consts:
            return None
        a = rng.choice(consts)
        name = a.targets[0].id
        value = rng.choice((repr(f"chk{n}"), str(n), "__import__('jax').process_index()",
                            "sorted(__import__('os').listdir('.'))"))
        lines[a.lineno - 1] = f"{name} = {value}\n"
        new, desc = "".join(lines), f"{name} = {value} (line {a.lineno})"
    elif kind == "change_import":
        imps = [s for s in tree.body if isinstance(s, (ast.Import, ast.ImportFrom)) and s.lineno == s.end_lineno]
        if not imps:
            return None
        s = rng.choice(imps)
        line = lines[s.lineno - 1]
        if rng.random() < 0.5:
            lines[s.lineno - 1] = "# " + line  # dropped
            desc = f"dropped import at line {s.lineno}"
        else:
            a = s.names[0]
            local = a.asname or a.name.split(".")[0]
            alias = f"_alias{n}"
            if isinstance(s, ast.ImportFrom):
                lines.insert(s.lineno, f"from {'.' * s.level}{s.module or ''} import {a.name} as {alias}\n")
            else:
                lines.insert(s.lineno, f"import {a.name} as {alias}\n")
            desc = f"added alias import of {a.name} (local {local}) after line {s.lineno}"
        new = "".join(lines)
    else:
        raise ValueError(kind)
    try:
        ast.parse(new)
    except SyntaxError:
        return None
    path.write_text(new, encoding="utf-8")
    return desc


# --- the check ---------------------------------------------------------------------------------


def fresh_copy(src_dirs: list[Path], dest: Path) -> Path:
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    for d in src_dirs:
        shutil.copytree(d, dest / d.name, ignore=shutil.ignore_patterns(".mcjax_cache", "__pycache__", ".version"))
    # Its own project (see lint_speed.py's fresh_tree), files older than the cache will be.
    (dest / "pyproject.toml").write_text("[project]\nname = 'check'\nversion = '0'\n\n[tool.mcjax]\n")
    subprocess.run(["git", "init", "-q", str(dest)], check=True, timeout=60)
    past = time.time() - 60
    for p in dest.rglob("*.py"):
        os.utime(p, (past, past))
    return dest


def check(root: Path, edits: int, seed: int, kinds=KINDS, full_every: int = 0, log=print,
          stop_at_mismatch: bool = False) -> dict:
    """Run the random-edit check on `root` (modified in place). Returns counts and mismatches.
    `stop_at_mismatch`: end after the first edit that mismatches (a test that the check can fail
    needs one; the edits after it would only be more of the same)."""
    rng = random.Random(seed)
    files = sorted(p for p in root.rglob("*.py") if ".mcjax_cache" not in p.parts)
    lint(root, None)  # cold: fills the cache
    time.sleep(0)
    out = {"edits": 0, "by_kind": {}, "mismatches": [], "how": {}, "precommit_s": [], "full_checks": 0, "precommit_no_index": 0}
    n = 0
    attempts = 0
    while out["edits"] < edits and attempts < edits * 20:
        attempts += 1
        kind = rng.choice(kinds)
        path = rng.choice(files)
        n += 1
        desc = edit(rng, path, kind, n)
        if desc is None:
            continue
        out["edits"] += 1
        out["by_kind"][kind] = out["by_kind"].get(kind, 0) + 1
        rel = path.relative_to(root).as_posix()
        t0 = time.perf_counter()
        inc_one, inc_err, pre = lint(root, [path])
        out["precommit_s"].append(time.perf_counter() - t0)
        _, _, inc = lint(root, [path], need_index=True)
        # How the pre-commit run got its index (or, when it needed none, the run that asks for it).
        st = pre.stats if pre.index is not None else inc.stats
        how = ("rebuilt" if st.index_built else "re-solved" if st.resolved
               else "moved" if st.relocated else "cached")
        out["how"][how] = out["how"].get(how, 0) + 1
        if pre.index is None:
            out["precommit_no_index"] += 1
            how += " (pre-commit needed no index)"
        ref_one, ref_err, ref = lint(root, [path], need_index=True, reference=True)
        problems = []
        if inc_one != ref_one or inc_err != ref_err:
            problems.append(f"findings of {rel}: incremental {inc_one + inc_err} != rebuilt {ref_one + ref_err}")
        problems += diff_facts(facts(shipped(inc.index) if inc.stats.index_built else inc.index), facts(shipped(ref.index)))
        if full_every and out["edits"] % full_every == 0:
            out["full_checks"] += 1
            a, ae, _ = lint(root, None)
            b, be, _ = lint(root, None, reference=True)
            if a != b or ae != be:
                problems.append(f"all files: {len(set(a) ^ set(b))} findings differ: {sorted(set(a) ^ set(b))[:4]}")
        note = f"  edit {out['edits']:>3} {kind:<14} {rel}: {desc} -> {how}" + (
            f" ({st.relocation_refused})" if st.relocation_refused else "")
        log(note + (f"  MISMATCH x{len(problems)}" if problems else ""))
        for p in problems:
            log(f"      {p}")
            out["mismatches"].append((out["edits"], kind, rel, desc, p))
        if problems and stop_at_mismatch:
            break
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--project", type=Path, default=None, help="a directory to copy and edit (default: the corpus)")
    ap.add_argument("--packages", default="orbax-checkpoint", help="corpus packages (comma-separated; 'all' for every one)")
    ap.add_argument("--edits", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--full-every", type=int, default=10, help="compare every file's findings every N edits (0: never)")
    args = ap.parse_args(argv)
    if args.project is not None:
        srcs = [args.project.resolve()]
    else:
        pkgs = sorted(p for p in CORPUS.iterdir() if p.is_dir())
        if args.packages != "all":
            pkgs = [p for p in pkgs if p.name in set(args.packages.split(","))]
        srcs = pkgs
    # A directory of this run's own (two runs at once must not edit one copy), removed after.
    root = fresh_copy(srcs, WORK / f"check-tree-{os.getpid()}")
    print(f"project: {', '.join(s.name for s in srcs)} ({sum(1 for _ in root.rglob('*.py'))} files), "
          f"{args.edits} edits, seed {args.seed}", flush=True)
    t0 = time.perf_counter()
    try:
        out = check(root, args.edits, args.seed, tuple(args.kinds.split(",")), args.full_every,
                    log=lambda s: print(s, flush=True))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    pc = out["precommit_s"]
    print(f"\n{out['edits']} edits ({', '.join(f'{k} {v}' for k, v in sorted(out['by_kind'].items()))}); "
          f"index: {', '.join(f'{k} {v}' for k, v in sorted(out['how'].items()))}; "
          f"pre-commit runs that needed no index: {out['precommit_no_index']}; "
          f"{out['full_checks']} whole-project comparisons; {time.perf_counter() - t0:.0f} s")
    if pc:
        print(f"pre-commit run (in-process, edited file alone): median {statistics.median(pc):.2f} s, "
              f"max {max(pc):.2f} s")
    print(f"mismatches: {len(out['mismatches'])}")
    return 1 if out["mismatches"] else 0


if __name__ == "__main__":
    sys.exit(main())
