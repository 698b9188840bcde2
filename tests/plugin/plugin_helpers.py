"""Shared pieces of the pytest plugin's tests: real multi-process runs through `pytester`."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

# Prepended to every generated test module: a real cross-process array and collective.
PRELUDE = '''\
import os
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P


def global_array(local):
    """A global array with one row per process, and the replicated sharding for results."""
    mesh = Mesh(np.array(jax.devices()), ("p",))
    return (jax.make_array_from_process_local_data(NamedSharding(mesh, P("p")), np.asarray(local, np.float32)),
            NamedSharding(mesh, P()))


def record(name, **data):
    """Leave a trace of this process in the test directory (the outer test reads it)."""
    data.update(pid=os.getpid(), index=jax.process_index(), count=jax.process_count(),
                coordinator=os.environ.get("MCJAX_COORDINATOR_ADDRESS"), time=time.time())
    with open(os.path.join(os.environ["MCJAX_TEST_TRACES"], f"{name}-{jax.process_index()}.json"), "w") as f:
        f.write(__import__("json").dumps(data))
'''

# Inner runs must always end: the outer pytest-timeout, plus this bound on each subprocess.
RUN_TIMEOUT = 150


def make_module(pytester: pytest.Pytester, name: str, body: str) -> Path:
    return pytester.makepyfile(**{name: PRELUDE + "\n\n" + body})


def line_of(path: Path, marker: str) -> int:
    """1-based line of the unique line containing `marker` (a `# <marker>` comment in the source)."""
    hits = [i for i, line in enumerate(path.read_text().splitlines(), 1) if marker in line]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """The real plugin (pytest11 entry point) in a real pytest subprocess; MCJAX_TEST_TRACES is set
    by the `inner` fixture (conftest.py)."""
    (pytester.path / "traces").mkdir(exist_ok=True)
    # hypothesis's plugin is not needed here and costs ~1 s of start-up in every process (the
    # plugin forwards -p options to its worker processes).
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-rA", *args,
                                         timeout=RUN_TIMEOUT)


def traces(pytester: pytest.Pytester, name: str) -> list[dict]:
    out = []
    for f in sorted((pytester.path / "traces").glob(f"{name}-*.json")):
        out.append(json.loads(f.read_text()))
    return sorted(out, key=lambda d: d["index"])


def report_path(output: str) -> Path:
    m = re.search(r"full report: (\S+)", output)
    assert m, "no report path in the failure message"
    return Path(m.group(1))


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False
