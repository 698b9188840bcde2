"""On-disk cache under `<project>/.mcjax_cache/` (gitignored by a `.gitignore` inside it).

Layout, per tool version and code fingerprint (`v1-<version>-<code>/`):

- `files.json` — per file (project-relative path): stat signature, content digest, module name,
  digest of its summary (or the error that kept it from being summarised), its suppression
  comments. Small: a warm run with nothing changed reads only this and the findings.
- `summaries/<digest>.pickle` — the engine's summaries (`to_dict()` form), content-addressed,
  read only when the project index has to be rebuilt. Pickled, not JSON: a JSON round trip
  loses which parts of a summary are shared objects, and the index's memos rely on that
  sharing (from JSON the index builds ~15x slower on the corpus).
- `findings-<settings>.json` — per file: the raw engine findings and the key they were computed
  under (file digest + the project fingerprint). A record whose key differs is recomputed, so
  findings never depend on the cache's state.
- `index-<settings>-<project>.pickle` — the last project indexes (rebuilding one is the costly
  global step), each keyed by the position-free project fingerprint and stored with the summary
  digests it was built from (its base), so that an edit that only moved lines is served by
  moving the index's quoted lines (`analysis/relocate.py`) instead of a rebuild. Its big tables
  are stored in buckets of keys, each unpickled when a key of it is first read
  (`analysis/lazy_table.py`): a one-file run reads a few hundred facts of it, not all.

A pickle from a cloned repository could run code when loaded, so every pickle is signed with an
HMAC under a per-user key kept outside the project (`~/.cache/mcjax/cache-key`, mode 0600) and
loaded only when the signature matches; without such a key nothing is cached. The small tables
are JSON.

The stat signature only saves re-reading a file: it is trusted when the file's mtime is older
than the moment the digest was taken (minus a margin), as git does for its index, so a file
rewritten within one timestamp tick is always re-read.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import pickle
import secrets
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcjax_lint import __version__

CACHE_FORMAT = 6  # 6: findings at one position merged, their other chains in `also`. 3: files.json records the position-free summary digest; the index pickle its base. 4: index tables in buckets; shapes carried forward. 5: findings carry their chain, sources their guesses
_RACY_MARGIN_NS = 2_000_000_000  # files touched within 2 s of being hashed are re-read
_GITIGNORE = "# Created by mcjax-lint; never commit this cache.\n*\n"


def stat_signature(st: os.stat_result) -> list[int]:
    return [st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns]


@dataclass
class FileRecord:
    sig: list[int]  # stat signature when `digest` was taken
    checked_ns: int  # when the digest was taken
    digest: str  # content hash
    module: str
    summary_digest: str | None  # None when the file could not be summarised
    error: str | None  # why the file could not be summarised
    suppressions: list[list[Any]] = field(default_factory=list)
    # Names the summary's class of equal position-free forms (relocate.position_free): an edit
    # that only moves lines keeps it, and with it the project's fingerprint. A new summary's own
    # digest, or the previous summary's shape when the two differ only in positions (computing
    # a position-free digest of every summary cost ~1.6 s CPU per cold run on the corpus).
    shape_digest: str | None = None

    def stat_trusted(self, st: os.stat_result) -> bool:
        return stat_signature(st) == self.sig and st.st_mtime_ns < self.checked_ns - _RACY_MARGIN_NS

    def to_json(self) -> list:
        return [self.sig, self.checked_ns, self.digest, self.module, self.summary_digest, self.error, self.suppressions,
                self.shape_digest]

    @classmethod
    def from_json(cls, v: list) -> "FileRecord":
        return cls(*v)


@dataclass
class FindingsRecord:
    key: str
    findings: list[dict]
    # When the prefilter skipped the file: the (project fingerprint, summary digest) it decided
    # on. `needs_full_analysis(summary, index)` depends on nothing else, so an edit that keeps
    # the summary (a comment, a body change the summary does not see) is settled without
    # loading the index.
    prefiltered: str | None = None


class Cache:
    """Load the small tables once, update in memory, save what changed (atomically)."""

    def __init__(self, directory: Path, code_fingerprint: str, settings_fingerprint: str) -> None:
        self.root_dir = directory
        self.dir = directory / f"v{CACHE_FORMAT}-{__version__}-{code_fingerprint}"
        self.settings_fingerprint = settings_fingerprint
        self.files: dict[str, FileRecord] = {}
        self.findings: dict[str, FindingsRecord] = {}
        self._files_dirty = False
        self._findings_dirty = False
        self._load()

    @property
    def _files_path(self) -> Path:
        return self.dir / "files.json"

    @property
    def _findings_path(self) -> Path:
        return self.dir / f"findings-{self.settings_fingerprint}.json"

    def _index_path(self, project_fingerprint: str) -> Path:
        return self.dir / f"index-{self.settings_fingerprint}-{project_fingerprint[:16]}.pickle"

    def _load(self) -> None:
        data = _read_json(self._files_path)
        if isinstance(data, dict):
            try:
                self.files = {k: FileRecord.from_json(v) for k, v in data.items()}
            except (TypeError, ValueError):
                self.files = {}
        data = _read_json(self._findings_path)
        if isinstance(data, dict):
            try:
                self.findings = {k: FindingsRecord(v[0], v[1], v[2]) for k, v in data.items()}
            except (TypeError, ValueError, IndexError, KeyError):
                self.findings = {}

    # -- summaries (content-addressed)
    def summary(self, digest: str) -> dict | None:
        return read_summary(self.dir / "summaries", digest)

    def summaries_dir(self) -> Path | None:
        """The directory workers write summaries into (created now), or None if unwritable."""
        if not self._ensure_dir("summaries"):
            return None
        self._summaries_written = True
        return self.dir / "summaries"

    def _ensure_dir(self, sub: str = "") -> bool:
        d = self.dir / sub if sub else self.dir
        try:
            new = not self.dir.exists()
            d.mkdir(parents=True, exist_ok=True)
            if new:
                self._drop_old_versions()
            gi = self.root_dir / ".gitignore"
            if not gi.exists():
                gi.write_text(_GITIGNORE)
        except OSError:
            return False
        return True

    _summaries_written = False

    # -- records
    def put_file(self, rel: str, record: FileRecord) -> None:
        self.files[rel] = record
        self._files_dirty = True

    def touch_file(self, rel: str, sig: list[int], checked_ns: int) -> None:
        rec = self.files[rel]
        if rec.sig != sig or rec.checked_ns != checked_ns:
            rec.sig, rec.checked_ns = sig, checked_ns
            self._files_dirty = True

    def put_findings(self, rel: str, key: str, findings: list[dict], prefiltered: str | None = None) -> None:
        old = self.findings.get(rel)
        if old is None or old.key != key or old.findings != findings or old.prefiltered != prefiltered:
            self.findings[rel] = FindingsRecord(key, findings, prefiltered)
            self._findings_dirty = True

    def forget_missing(self, present: set[str]) -> None:
        """Drop records of files that are no longer part of the project."""
        for table, attr in ((self.files, "_files_dirty"), (self.findings, "_findings_dirty")):
            gone = [k for k in table if k not in present]
            for k in gone:
                del table[k]
            if gone:
                setattr(self, attr, True)

    # -- the project index (signed pickle)
    def load_index(self, project_fingerprint: str) -> tuple[dict[str, str], Any] | None:
        """(base: rel -> summary digest the index was built from, index), or None. The index
        built for this fingerprint, else the newest one (the runner brings it up to date when
        it can, see runner._relocated)."""
        path = self._index_path(project_fingerprint)
        if not path.exists():
            try:
                olds = sorted(self.dir.glob(f"index-{self.settings_fingerprint}-*.pickle"),
                              key=lambda p: p.stat().st_mtime, reverse=True)
            except OSError:
                olds = []
            if not olds:
                return None
            path = olds[0]
        try:
            blob = path.read_bytes()
        except OSError:
            return None
        payload = unsign(blob)
        if payload is None:
            return None
        # Views, not copies: the index is tens of MB and a one-file run has ~0.5 s in all.
        cut = bytes(payload[:100]).find(b"\n")
        if cut < 0 or path.name != self._index_path(bytes(payload[:cut]).decode("ascii", "replace")).name:
            return None
        try:
            loaded = _loads(payload[cut + 1:])
        except Exception:  # a stale class layout or a truncated file: rebuild
            return None
        if not (isinstance(loaded, tuple) and len(loaded) == 2 and isinstance(loaded[0], dict)):
            return None
        return loaded

    def save_index(self, project_fingerprint: str, index: Any, background: bool = False,
                   base: dict[str, str] | None = None) -> None:
        """Keep the index for the next run (written by `save()`). `background`: pickle and write it
        in a forked child while this process goes on (Linux; `save()` waits for it) — the
        analysis needs the index in memory now, not on disk. Only from a single-threaded process:
        a fork copies no other thread, so a lock one of them held (JAX imported in the same
        process, as under pytest) would never be released in the child."""
        if background and single_threaded() and self._ensure_dir():
            target = self._index_path(project_fingerprint)
            pid = os.fork()
            if pid == 0:  # the child: write, and leave without running the parent's exit code
                code = 1
                try:
                    import gc

                    gc.disable()  # the collector would touch (and copy) every shared page
                    payload = pickle.dumps((base or {}, index), protocol=pickle.HIGHEST_PROTOCOL)
                    write_bytes(target, sign(project_fingerprint.encode() + b"\n" + payload))
                    code = 0
                finally:
                    os._exit(code)
            self._index_writer = pid
            self._pending_index_path = target
            return
        try:
            payload = pickle.dumps((base or {}, index), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # an index that cannot be pickled is simply rebuilt next time
            return
        self._pending_index = sign(project_fingerprint.encode() + b"\n" + payload)
        self._pending_index_path = self._index_path(project_fingerprint)

    def wait_index_writer(self, limit: float = 120.0) -> None:
        """Wait for the index writer; one stuck past `limit` seconds is killed (the index is only
        a cache: the next run rebuilds it) rather than left to hang the linter."""
        if self._index_writer is not None:
            deadline = time.monotonic() + limit
            try:
                while os.waitpid(self._index_writer, os.WNOHANG) == (0, 0):
                    if time.monotonic() > deadline:
                        os.kill(self._index_writer, signal.SIGKILL)
                        os.waitpid(self._index_writer, 0)
                        break
                    time.sleep(0.01)
            except (ChildProcessError, ProcessLookupError):
                pass
            self._index_writer = None
            self._prune_indexes()

    _pending_index_path: Path | None = None

    _pending_index: bytes | None = None

    _index_writer: int | None = None

    # -- saving
    def save(self) -> None:
        """Write what changed. A cache that cannot be written only costs time on the next run."""
        self.wait_index_writer()
        try:
            if not (self._files_dirty or self._findings_dirty or self._pending_index or self._summaries_written):
                return
            if self._summaries_written:
                self._summaries_written = False
                self._prune_summaries(self.dir / "summaries")
            if not self.dir.exists():
                self.dir.mkdir(parents=True, exist_ok=True)
                self._drop_old_versions()
            gi = self.root_dir / ".gitignore"
            if not gi.exists():
                gi.write_text(_GITIGNORE)
            if self._files_dirty:
                write_bytes(self._files_path, json.dumps({k: v.to_json() for k, v in self.files.items()},
                                                          separators=(",", ":")).encode())
            if self._findings_dirty:
                write_bytes(self._findings_path, json.dumps({k: [v.key, v.findings, v.prefiltered] for k, v in self.findings.items()},
                                                             separators=(",", ":")).encode())
            if self._pending_index and self._pending_index_path is not None:
                write_bytes(self._pending_index_path, self._pending_index)
                self._pending_index = None
                self._prune_indexes()
            self._files_dirty = self._findings_dirty = False
        except OSError:
            pass

    def _prune_indexes(self) -> None:
        """Keep the two newest indexes: an edit and its revert both stay cheap."""
        try:
            olds = sorted(self.dir.glob(f"index-{self.settings_fingerprint}-*.pickle"),
                          key=lambda p: p.stat().st_mtime, reverse=True)
            for old in olds[2:]:
                old.unlink(missing_ok=True)
        except OSError:
            pass


    def _drop_old_versions(self, keep: int = 3) -> None:
        """Caches of other tool versions (or edited analysis code) pile up: keep the newest few."""
        import shutil

        dirs = [d for d in self.root_dir.iterdir() if d.is_dir() and d.name.startswith("v") and d != self.dir]
        dirs.sort(key=lambda d: d.stat().st_mtime, reverse=True)
        for d in dirs[keep - 1:]:
            shutil.rmtree(d, ignore_errors=True)

    def _prune_summaries(self, sdir: Path) -> None:
        """Delete summaries no record names once they clearly outnumber the live ones."""
        names = os.listdir(sdir)
        if len(names) <= 2 * len(self.files) + 64:
            return
        live = {f"{r.summary_digest}.pickle" for r in self.files.values()}
        for name in names:
            if name not in live and name.endswith(".pickle"):
                try:
                    os.unlink(sdir / name)
                except OSError:
                    pass


def read_summary(directory: Path, digest: str) -> dict | None:
    """A cached summary (`summaries/<digest>.pickle`), or None when missing or not signed."""
    try:
        blob = (directory / f"{digest}.pickle").read_bytes()
    except OSError:
        return None
    payload = unsign(blob)
    if payload is None:
        return None
    try:
        data = _loads(payload)
    except Exception:
        return None
    return data if isinstance(data, dict) else None


def _loads(payload: bytes) -> Any:
    """pickle.loads without the cyclic GC: unpickling allocates millions of long-lived objects
    and no garbage, and the collector's repeated passes over them tripled the index's load
    time. The loaded objects are then frozen out of later collections (they live as long as
    the run), or the next full collection would scan them all again."""
    import gc

    enabled = gc.isenabled()
    gc.disable()
    try:
        obj = pickle.loads(payload)
        gc.freeze()
        return obj
    finally:
        if enabled:
            gc.enable()


def sign(payload: bytes) -> bytes:
    """`payload` prefixed with its HMAC under the per-user key (see the module docstring)."""
    key = user_key()
    assert key is not None, "sign() needs the user key; check cache_available() first"
    return hmac.new(key, payload, hashlib.sha256).hexdigest().encode() + b"\n" + payload


def unsign(blob: bytes) -> memoryview | None:
    """The payload of a signed blob (a view into it), or None if the signature does not match
    this user's key."""
    key = user_key()
    cut = blob.find(b"\n", 0, 80)
    if key is None or cut < 0:
        return None
    payload = memoryview(blob)[cut + 1:]
    if not hmac.compare_digest(blob[:cut], hmac.new(key, payload, hashlib.sha256).hexdigest().encode()):
        return None
    return payload


def cache_available() -> bool:
    return user_key() is not None


def now_ns() -> int:
    return time.time_ns()


_KEY: list[bytes | None] = []


def user_key() -> bytes | None:
    """The per-user secret that signs pickled cache entries; None when it cannot be kept."""
    if not _KEY:
        _KEY.append(_load_user_key())
    return _KEY[0]


def _load_user_key() -> bytes | None:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mcjax"
    path = base / "cache-key"
    try:
        data = path.read_bytes()
        if len(data) >= 32 and (os.stat(path).st_mode & 0o077) == 0:
            return data
        if len(data) >= 32:
            return None  # readable by others: do not trust it
    except OSError:
        pass
    try:
        base.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(secrets.token_bytes(32))
        return path.read_bytes()
    except OSError:
        try:  # another process created it first
            data = path.read_bytes()
            return data if len(data) >= 32 else None
        except OSError:
            return None


def _read_json(path: Path) -> Any:
    try:
        with open(path, "rb") as f:
            return json.loads(f.read())
    except (OSError, ValueError):
        return None


def write_bytes(path: Path, data: bytes) -> None:
    # Atomic replace: concurrent linters (pre-commit may run several) never see a torn file.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def single_threaded() -> bool:
    """True on Linux when this process has one OS thread (native ones included, which
    `threading` does not see)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return False
