"""On-disk cache under `<project>/.mcjax_cache/` (gitignored): per-file summaries and findings.

Two JSON files per tool version (never pickle: a cache in a cloned repository must not be able
to run code):

- `summaries.json` — per file (by project-relative path): stat signature, content digest,
  module name, the engine's summary (or the error that kept it from being summarised), the
  suppression comments. Summaries depend only on the file's bytes, path and module name.
- `findings-<settings>.json` — per file: the raw engine findings and the key they were computed
  under: the file's digest plus the fingerprint of the project facts they depend on. Findings
  never depend on cache state: a record whose key differs is recomputed.

The stat signature only saves re-reading a file: it is trusted when the file's mtime is older
than the moment the digest was taken (minus a margin), as git does for its index, so a file
rewritten within one timestamp tick is always re-read.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcjax_lint import __version__

CACHE_FORMAT = 1
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
    summary: dict | None  # the engine's ModuleSummary.to_dict(), None on error
    summary_digest: str | None
    error: str | None  # why the file could not be summarised
    suppressions: list[list[Any]] = field(default_factory=list)

    def stat_trusted(self, st: os.stat_result) -> bool:
        return stat_signature(st) == self.sig and st.st_mtime_ns < self.checked_ns - _RACY_MARGIN_NS

    def to_json(self) -> list:
        return [self.sig, self.checked_ns, self.digest, self.module, self.summary, self.summary_digest,
                self.error, self.suppressions]

    @classmethod
    def from_json(cls, v: list) -> "FileRecord":
        return cls(*v)


@dataclass
class FindingsRecord:
    key: str
    findings: list[dict]


class Cache:
    """Load once, update in memory, save what changed (atomically) at the end."""

    def __init__(self, directory: Path, summary_version: str, settings_fingerprint: str) -> None:
        self.dir = directory / f"v{CACHE_FORMAT}-{__version__}"
        self.root_dir = directory
        self.summary_version = summary_version
        self.settings_fingerprint = settings_fingerprint
        self.files: dict[str, FileRecord] = {}
        self.findings: dict[str, FindingsRecord] = {}
        self._files_dirty = False
        self._findings_dirty = False
        self._load()

    # -- paths
    @property
    def _summaries_path(self) -> Path:
        return self.dir / f"summaries-{self.summary_version}.json"

    @property
    def _findings_path(self) -> Path:
        return self.dir / f"findings-{self.summary_version}-{self.settings_fingerprint}.json"

    def _load(self) -> None:
        data = _read_json(self._summaries_path)
        if isinstance(data, dict):
            try:
                self.files = {k: FileRecord.from_json(v) for k, v in data.get("files", {}).items()}
            except (TypeError, ValueError):
                self.files = {}
        data = _read_json(self._findings_path)
        if isinstance(data, dict):
            try:
                self.findings = {k: FindingsRecord(v[0], v[1]) for k, v in data.get("files", {}).items()}
            except (TypeError, ValueError, IndexError):
                self.findings = {}

    # -- updates
    def put_file(self, rel: str, record: FileRecord) -> None:
        self.files[rel] = record
        self._files_dirty = True

    def touch_file(self, rel: str, sig: list[int], checked_ns: int) -> None:
        rec = self.files[rel]
        if rec.sig != sig or rec.checked_ns != checked_ns:
            rec.sig, rec.checked_ns = sig, checked_ns
            self._files_dirty = True

    def put_findings(self, rel: str, key: str, findings: list[dict]) -> None:
        self.findings[rel] = FindingsRecord(key, findings)
        self._findings_dirty = True

    def forget_missing(self, present: set[str]) -> None:
        """Drop records of files that no longer exist in the project."""
        for table, attr in ((self.files, "_files_dirty"), (self.findings, "_findings_dirty")):
            gone = [k for k in table if k not in present]
            for k in gone:
                del table[k]
            if gone:
                setattr(self, attr, True)

    def save(self) -> None:
        """Write what changed. A cache that cannot be written is skipped silently: it only
        costs time on the next run, never correctness."""
        try:
            if not (self._files_dirty or self._findings_dirty):
                return
            self.dir.mkdir(parents=True, exist_ok=True)
            gi = self.root_dir / ".gitignore"
            if not gi.exists():
                gi.write_text(_GITIGNORE)
            if self._files_dirty:
                _write_json(self._summaries_path, {"files": {k: v.to_json() for k, v in self.files.items()}})
            if self._findings_dirty:
                _write_json(self._findings_path,
                            {"files": {k: [v.key, v.findings] for k, v in self.findings.items()}})
            self._files_dirty = self._findings_dirty = False
        except OSError:
            pass


def now_ns() -> int:
    return time.time_ns()


def _read_json(path: Path) -> Any:
    try:
        with open(path, "rb") as f:
            return json.loads(f.read())
    except (OSError, ValueError):
        return None


def _write_json(path: Path, data: Any) -> None:
    # Atomic replace: concurrent linters (pre-commit runs several) never see a torn file.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, separators=(",", ":"))
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
