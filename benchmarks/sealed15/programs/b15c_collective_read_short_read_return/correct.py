# Two-phase collective read: an aggregator's short read is exchanged with the round's data, and all processes stop together
# Source: https://github.com/pmodels/mpich/issues/6585
# Written for the mcjax sealed15 evaluation (not copied); run as 2 processes by benchmarks/sealed15/run_pair.py.
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

WORK = os.path.join(tempfile.gettempdir(), "mcjax_sealed15_collective_read", os.environ.get("JOB_ID", "job"))
CFG = {"header_len": 40, "written_len": 36, "coll_bufsize": 10}
MESH = jax.make_mesh((jax.device_count(),), ("rank",))
_sum = jax.jit(lambda x: jnp.sum(x, axis=0), out_shardings=NamedSharding(MESH, P()))


def comm_sum(values):
    local = np.asarray(values, np.float64)[None, :]
    return np.asarray(_sum(jax.make_array_from_process_local_data(NamedSharding(MESH, P("rank")), local)))


def write_dataset(path):
    """The writer's header promises header_len values, but the run was cut short."""
    if jax.process_index() == 0:
        data = np.sin(np.arange(CFG["written_len"]) * 0.3)
        with open(path, "wb") as fh:
            fh.write(np.asarray([CFG["header_len"]], np.int64).tobytes())
            fh.write(data.astype(np.float64).tobytes())
    multihost_utils.sync_global_devices("dataset_written")


def read_at(path, offset, count):
    with open(path, "rb") as fh:
        fh.seek(8 + 8 * offset)
        raw = fh.read(8 * count)
    if len(raw) < 8 * count:
        raise IOError(f"short read at {offset}: {len(raw) // 8} of {count}")
    return np.frombuffer(raw, np.float64)


def read_coll(path):
    """Each process aggregates one file domain and reads it in rounds of coll_bufsize values."""
    rank, nproc, buf = jax.process_index(), jax.process_count(), CFG["coll_bufsize"]
    with open(path, "rb") as fh:
        header = np.frombuffer(fh.read(8), np.int64).astype(np.int32)
    total = int(np.asarray(multihost_utils.broadcast_one_to_all(header))[0])   # process 0's header is authoritative
    domain = -(-total // nproc)
    ntimes = -(-domain // buf)
    pieces = []
    for m in range(ntimes):
        err, chunk = 0.0, np.zeros(buf)
        try:
            chunk = read_at(path, rank * domain + m * buf, buf)
        except IOError:
            err = 1.0
        exchanged = np.asarray(multihost_utils.process_allgather(np.concatenate([[err], chunk])))
        if exchanged[:, 0].max() > 0:
            return None
        pieces.append(exchanged[:, 1:])
    return np.concatenate(pieces, axis=1)


def main():
    os.makedirs(WORK, exist_ok=True)
    path = os.path.join(WORK, "field.dat")
    write_dataset(path)
    data = read_coll(path)
    ok = data is not None
    local = float(np.sum(data[jax.process_index()])) if ok else 0.0
    checksum = comm_sum([local, float(ok)])
    print("RESULT read_ok", ok)
    print("RESULT checksum", round(float(checksum[0]), 8), "ok_count", int(checksum[1]))


main()
