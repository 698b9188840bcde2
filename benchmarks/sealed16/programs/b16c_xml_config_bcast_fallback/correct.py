# I/O setup: rank 0 reads the XML config and broadcasts it; a missing file is broadcast as an error so every rank falls back to defaults
# Source: https://github.com/ornladios/ADIOS2/issues/1938
# Written for the mcjax sealed16 evaluation (not copied); run as 2 processes by benchmarks/sealed16/run_pair.py.
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


def workdir():
    d = Path(tempfile.gettempdir()) / "mcjax_sealed16_xml_config_bcast_fallback" / os.environ.get("JOB_ID", "local")
    d.mkdir(parents=True, exist_ok=True)
    return d


def broadcast_file(path):
    """Rank 0 reads the file, every rank receives its contents."""
    data, n = None, np.int32(0)
    if jax.process_index() == 0:
        try:
            data = np.frombuffer(Path(path).read_bytes(), np.uint8)
            n = np.int32(data.size)
        except OSError:
            n = np.int32(-1)                           # tell the other ranks the read failed
    n = int(multihost_utils.broadcast_one_to_all(n))
    if n < 0:
        raise FileNotFoundError(path)                  # raised on every rank alike
    buf = data if data is not None else np.zeros(n, np.uint8)
    return bytes(np.asarray(multihost_utils.broadcast_one_to_all(buf)).astype(np.uint8)).decode()


@dataclass
class IOEngine:
    engine: str = "BP4"
    flush_every: int = 2

    @classmethod
    def from_xml(cls, path):
        text = broadcast_file(path)
        eng = re.search(r'<engine type="(\w+)"', text)
        flush = re.search(r'key="FlushStepsCount" value="(\d+)"', text)
        return cls(eng.group(1) if eng else "BP4", int(flush.group(1)) if flush else 2)


def make_io(path):
    try:
        return IOEngine.from_xml(path)
    except OSError:                                    # no config file: initialise with the defaults
        return IOEngine()


def main():
    rank, nproc = jax.process_index(), jax.process_count()
    base = workdir()
    io = make_io(base / "adios2_config.xml")          # the run was started without a config file

    field = np.linspace(0.0, 1.0, 8, dtype=np.float32) + rank
    flushed = []
    for step in range(6):
        field = 0.5 * (field + np.roll(field, 1))
        full = np.asarray(multihost_utils.process_allgather(field))      # the step's global variable
        if (step + 1) % io.flush_every == 0:
            if rank == 0:
                np.save(base / f"out_{io.engine}_{step}.npy", full)
            flushed.append(step)
    print("RESULT engine", io.engine, "flush_every", io.flush_every)
    print("RESULT flushed", flushed, "checksum", round(float(full.sum()), 4))


if __name__ == "__main__":
    main()
