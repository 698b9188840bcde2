"""Fetch the real-JAX-code corpus used by the lint benchmarks and the precision study.

Downloads pinned wheels (or sdists where no wheel exists) with `pip download --no-deps`, unpacks
them into the gitignored `benchmarks/corpus/<package>/`, and prints lines of Python code per
package. Third-party code is never committed (see .gitignore).

    python benchmarks/fetch_corpus.py            # fetch what is missing, print LOC
    python benchmarks/fetch_corpus.py --force    # re-download and re-unpack everything
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

# Pinned so that figures in docs/benchmarks.md stay comparable between runs.
PACKAGES: dict[str, str] = {
    "orbax-checkpoint": "0.12.8",
    "flax": "0.12.8",
    "paxml": "1.4.0",
    "praxis": "1.4.0",
    "levanter": "1.1",
    "kauldron": "1.4.2",
    "clu": "0.0.12",
    "easydel": "0.3.0",
    "jaxline": "0.0.8",
}

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"


def _download(name: str, version: str, dest: Path) -> Path:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps",
           "--quiet", "-d", str(dest), f"{name}=={version}"]
    subprocess.run(cmd, check=True, timeout=600)
    files = sorted(dest.iterdir())
    if len(files) != 1:
        raise SystemExit(f"fetch_corpus: expected one file for {name}=={version}, got {files}")
    return files[0]


def _unpack(archive: Path, out: Path) -> None:
    """Extract only the .py files (no code runs: wheels/sdists are just archives)."""
    out.mkdir(parents=True, exist_ok=True)
    if archive.suffix == ".whl" or archive.suffix == ".zip":
        with zipfile.ZipFile(archive) as z:
            for member in z.namelist():
                if member.endswith(".py") and ".." not in Path(member).parts:
                    target = out / member
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(z.read(member))
    else:
        with tarfile.open(archive) as t:
            for m in t.getmembers():
                if m.isfile() and m.name.endswith(".py") and ".." not in Path(m.name).parts:
                    # Drop the sdist's top-level "name-version/" directory.
                    rel = Path(*Path(m.name).parts[1:])
                    target = out / rel
                    target.parent.mkdir(parents=True, exist_ok=True)
                    f = t.extractfile(m)
                    assert f is not None
                    target.write_bytes(f.read())


def count_loc(root: Path) -> tuple[int, int]:
    """(files, lines) over the .py files under root."""
    files = lines = 0
    for p in root.rglob("*.py"):
        files += 1
        with open(p, "rb") as f:
            lines += sum(1 for _ in f)
    return files, lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--force", action="store_true", help="re-download and re-unpack every package")
    ap.add_argument("--corpus", type=Path, default=CORPUS, help="where to unpack (default: %(default)s)")
    args = ap.parse_args(argv)

    args.corpus.mkdir(parents=True, exist_ok=True)
    total_files = total_lines = 0
    print(f"{'package':<18} {'version':<8} {'files':>6} {'LOC':>9}")
    for name, version in PACKAGES.items():
        out = args.corpus / name
        stamp = out / ".version"
        if args.force or not stamp.exists() or stamp.read_text().strip() != version:
            shutil.rmtree(out, ignore_errors=True)
            with tempfile.TemporaryDirectory() as tmp:
                archive = _download(name, version, Path(tmp))
                _unpack(archive, out)
            stamp.write_text(version + "\n")
        files, lines = count_loc(out)
        total_files += files
        total_lines += lines
        print(f"{name:<18} {version:<8} {files:>6} {lines:>9}")
    print(f"{'total':<18} {'':<8} {total_files:>6} {total_lines:>9}")
    print(f"corpus: {args.corpus}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
