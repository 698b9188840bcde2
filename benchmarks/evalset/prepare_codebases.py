"""Export an evaluation set's codebases (benchmarks/<set>/codebases.json) from git checkouts.

Shared by the sets' entry points (benchmarks/<set>/prepare_codebases.py, whose docstrings give the
commands). Third-party code is never committed. The script reads a directory holding one git checkout (or
bare mirror) per codebase, at any of these places:

    CHECKOUTS/<owner>+<name>/repo    (the layout of the project's mirror service)
    CHECKOUTS/<owner>/<name>
    CHECKOUTS/<name>

With `--clone`, a missing checkout is first fetched from GitHub at exactly the pinned commit
(`git init` + `git fetch --depth 1 https://github.com/<owner>/<name> <commit>`) into
CHECKOUTS/<owner>+<name>/repo. The script checks that the recorded commit is present, then writes
the `.py` files of exactly that commit to OUT/<owner>+<name>/ (with an empty `[tool.mcjax]`
pyproject.toml, so that each is linted as its own project with the default configuration) and
prints a line per codebase: files, lines, commit and, where the set asks for it (the second
set), how many code lines (comments excluded) call a multi-process JAX API (MULTIHOST_API below),
which must not be 0.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

# The multi-process JAX APIs whose use admitted a codebase (old spellings included).
MULTIHOST_API = re.compile(
    r"jax\.distributed\.initialize|process_index|process_count|multihost_utils|host_id\(|host_count\("
    r"|sync_global_devices|broadcast_one_to_all|process_allgather")


def load_manifest(set_dir: Path) -> list[dict]:
    return json.loads((set_dir / "codebases.json").read_text())["codebases"]


def key(repo: str) -> str:
    """Directory name used for a codebase: owner+name."""
    return repo.replace("/", "+", 1)


def find_checkout(checkouts: Path, repo: str) -> Path | None:
    owner, name = repo.split("/", 1)
    for cand in (checkouts / key(repo) / "repo", checkouts / owner / name, checkouts / name, checkouts / key(repo)):
        if cand.is_dir():
            return cand
    return None


def _git(repo_dir: Path, *args: str, binary: bool = False):
    out = subprocess.run(["git", "-C", str(repo_dir), *args], capture_output=True, check=False, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.decode(errors="replace").strip().splitlines()[-1] if out.stderr else "git failed")
    return out.stdout if binary else out.stdout.decode()


def clone(checkouts: Path, repo: str, commit: str) -> Path:
    """Fetch only the pinned commit from GitHub (GitHub serves a commit by its sha)."""
    dest = checkouts / key(repo) / "repo"
    dest.mkdir(parents=True, exist_ok=True)
    _git(dest, "init", "--quiet", "--bare")
    _git(dest, "fetch", "--quiet", "--depth", "1", f"https://github.com/{repo}", commit)
    return dest


def multihost_api_use(data: bytes) -> int:
    """Code lines (not comments) of one file that name a multi-process JAX API."""
    return sum(1 for line in data.decode(errors="replace").splitlines()
               if MULTIHOST_API.search(line) and not line.lstrip().startswith("#"))


def export(repo_dir: Path, commit: str, dest: Path) -> tuple[int, int, list[str], tuple[int, int]]:
    """Write the .py files of `commit` under dest; return (files, lines, .py paths whose content
    the checkout lacks: a partial mirror may omit its largest blobs, (files, lines) using a
    multi-process JAX API)."""
    _git(repo_dir, "cat-file", "-e", f"{commit}^{{commit}}")
    listing = _git(repo_dir, "ls-tree", "-r", "-z", commit, binary=True).split(b"\0")
    entries = []
    for row in filter(None, listing):
        meta, _, path = row.partition(b"\t")
        _mode, kind, sha = meta.split()
        name = path.decode(errors="surrogateescape")
        if kind == b"blob" and name.endswith(".py") and ".." not in Path(name).parts:
            entries.append((sha.decode(), name))
    batch = subprocess.run(["git", "-C", str(repo_dir), "cat-file", "--batch"], capture_output=True, check=True,
                           input=b"".join(f"{sha}\n".encode() for sha, _ in entries), timeout=600).stdout
    files = lines = api_files = api_lines = 0
    absent, pos = [], 0
    for sha, name in entries:
        eol = batch.index(b"\n", pos)
        header = batch[pos:eol].split()
        pos = eol + 1
        if header[-1] == b"missing":
            absent.append(name)
            continue
        size = int(header[2])
        data = batch[pos:pos + size]
        pos += size + 1
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        files += 1
        lines += data.count(b"\n")
        uses = multihost_api_use(data)
        api_files += uses > 0
        api_lines += uses
    (dest / "pyproject.toml").write_text("[tool.mcjax]\n")
    (dest / ".commit").write_text(commit + "\n")
    return files, lines, absent, (api_files, api_lines)


def main(doc: str, set_dir: Path, multihost_api: bool) -> int:
    """The command line for the set in set_dir; doc is the entry point's docstring (its first line
    describes it), multihost_api whether each codebase must use a multi-process JAX API (printed)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("checkouts", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--clone", action="store_true", help="fetch a missing checkout's pinned commit from GitHub")
    ap.add_argument("--only", nargs="*", default=[], help="owner/name of the codebases to export")
    args = ap.parse_args()
    failed = 0
    for cb in load_manifest(set_dir):
        if args.only and cb["repo"] not in args.only:
            continue
        repo_dir = find_checkout(args.checkouts, cb["repo"])
        if repo_dir is None and args.clone:
            try:
                repo_dir = clone(args.checkouts, cb["repo"], cb["commit"])
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                print(f"{cb['repo']}: clone failed: {e}", file=sys.stderr)
                failed += 1
                continue
        if repo_dir is None:
            print(f"{cb['repo']}: no checkout under {args.checkouts} (try --clone)", file=sys.stderr)
            failed += 1
            continue
        dest = args.out / key(cb["repo"])
        try:
            files, lines, absent, (api_files, api_lines) = export(repo_dir, cb["commit"], dest)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            print(f"{cb['repo']}: commit {cb['commit'][:12]} not usable in {repo_dir}: {e}", file=sys.stderr)
            failed += 1
            continue
        note = f" ({len(absent)} .py files absent from this checkout: {absent[:3]})" if absent else ""
        if not multihost_api:
            print(f"{cb['repo']:<40} {cb['commit'][:12]} files={files} lines={lines}{note}")
            continue
        print(f"{cb['repo']:<40} {cb['commit'][:12]} files={files} lines={lines} "
              f"multihost_api_files={api_files} multihost_api_lines={api_lines}{note}")
        if api_lines == 0:
            print(f"{cb['repo']}: no multi-process JAX API use at {cb['commit'][:12]}", file=sys.stderr)
            failed += 1
    return 1 if failed else 0
