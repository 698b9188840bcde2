# DIY-style block I/O (JAX port): each process serialises its blocks into one shared file; the file
# offset of every block comes from a global sum of the sizes written so far.
# Source: https://github.com/diatomic/test/issues/30
# Written for the mcjax sealed5 evaluation (not copied); run as 2 processes by benchmarks/sealed5/run_pair.py.
import dataclasses
import math
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class Communicator:
    def __init__(self):
        self.mesh = jax.sharding.Mesh(np.array(jax.devices()), ("p",))
        self.rank, self.size = jax.process_index(), jax.process_count()
        self._sum = jax.jit(lambda a: jnp.sum(a, axis=0), out_shardings=NamedSharding(self.mesh, P()))
        self._gather = jax.jit(lambda a: a, out_shardings=NamedSharding(self.mesh, P()))

    def _global(self, local):
        return jax.make_array_from_process_local_data(NamedSharding(self.mesh, P("p")),
                                                      np.asarray(local)[None])

    def all_reduce(self, value):
        return int(np.asarray(self._sum(self._global(np.int32(value)))))

    def all_gather(self, values):
        return np.asarray(self._gather(self._global(np.asarray(values, np.int64))))


@dataclasses.dataclass
class Block:
    gid: int
    data: np.ndarray

    def save(self) -> bytes:
        return self.data.astype(np.float32).tobytes()


class Master:
    """Holds the blocks assigned to this process (round-robin over processes)."""

    def __init__(self, comm, nblocks, block_size=16):
        self.comm = comm
        self.nblocks = nblocks
        self.blocks = {}
        for gid in range(comm.rank, nblocks, comm.size):
            rng = np.random.default_rng(gid)
            self.blocks[gid] = Block(gid, rng.normal(size=block_size + gid))

    def local_block(self, i):
        gid = i * self.comm.size + self.comm.rank
        return self.blocks.get(gid)


def write_blocks(path, master):
    comm = master.comm
    rounds = math.ceil(master.nblocks / comm.size)
    offset = 0
    offset_counts = []
    with open(path, "wb") as f:
        for i in range(rounds):
            block = master.local_block(i)
            if block is not None:
                buf = block.save()
                count = len(buf)
                shift = comm.all_reduce(count)      # bytes written by everyone this round
                f.write(buf)
                offset_counts.append((block.gid, offset, count))
                offset += shift
            else:
                # this rank writes nothing this round but still joins the reduction with 0
                shift = comm.all_reduce(0)
                # -1 indicates that there is no block written here from this rank
                offset_counts.append((-1, offset, 0))
                offset += shift
    table = comm.all_gather([c for _, _, c in offset_counts])
    return offset_counts, table


def main():
    comm = Communicator()
    master = Master(comm, nblocks=5)       # 5 blocks on 2 processes: 3 + 2
    path = os.path.join(tempfile.gettempdir(),
                        f"diy_blocks_{os.environ.get('JOB_ID', 'local')}_{comm.rank}.bin")
    offsets, table = write_blocks(path, master)
    print(f"RESULT count_table {table.tolist()}")
    print(f"RESULT total_bytes {int(table.sum())}")


if __name__ == "__main__":
    main()
