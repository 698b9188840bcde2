# One-shot all-reduce: each process sums the gathered partials starting from its own rank, so float32 sums differ
# Source: https://github.com/pytorch/pytorch/pull/129501
# Written for the mcjax sealed10 evaluation (not copied); run as 2 processes by benchmarks/sealed10/run_pair.py.
import os

import jax
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CHUNKS, ACCEPT_THRESHOLD, MAX_LEN = 4, 0.1, 6


class OneShotAllReduce:
    """Gathers every rank's partial sums, then reduces them locally (round-robin over peers)."""

    def __init__(self):
        self.rank, self.world = jax.process_index(), jax.process_count()

    def __call__(self, local_partials):
        gathered = np.asarray(multihost_utils.process_allgather(local_partials)).reshape(-1)
        n = gathered.size
        order = [(self.rank * CHUNKS + i) % n for i in range(n)]  # start at our own buffer to spread link load
        total = np.float32(0.0)
        for j in order:
            total = np.float32(total + gathered[j])
        return total


class VocabParallelVerifier:
    """Scores a drafted token: the logit is a dot product split over the hidden dimension across ranks."""

    def __init__(self, mesh):
        self.mesh = mesh
        self.rank = jax.process_index()
        self.all_reduce = OneShotAllReduce()
        self.shard = NamedSharding(mesh, P("tp"))
        self._partials = jax.jit(lambda h, w: h * w, out_shardings=self.shard)  # elementwise, stays sharded

    def hidden_shard(self, pos):
        base = {0: [1e8, 0.5, -1e8, 0.25], 1: [0.125, 3e7, 0.5, -3e7]}[self.rank]
        return np.array(base, np.float32) * np.float32(1.0 if pos % 2 == 0 else 2.0)

    def score(self, pos, token):
        h = self.hidden_shard(pos)
        w = np.full((CHUNKS,), 1.0 if token % 3 else -1.0, np.float32)
        out = self._partials(jax.make_array_from_process_local_data(self.shard, h),
                             jax.make_array_from_process_local_data(self.shard, w))
        local = np.asarray(out.addressable_data(0), np.float32)
        return self.all_reduce(local)


def speculative_decode(verifier, draft):
    """Accept the drafted pair when the target logit clears the threshold, otherwise take one token."""
    pos, accepted = 0, []
    while pos < MAX_LEN:
        logit = verifier.score(pos, draft[pos])
        step = 2 if logit > ACCEPT_THRESHOLD else 1
        accepted.append((pos, step))
        pos += step
    return accepted


def main():
    mesh = jax.make_mesh((jax.device_count(),), ("tp",), axis_types=(jax.sharding.AxisType.Auto,))
    verifier = VocabParallelVerifier(mesh)
    draft = [4, 7, 2, 8, 5, 1, 3, 6]
    accepted = speculative_decode(verifier, draft)
    print("RESULT steps", len(accepted))
    print("RESULT accepted", accepted)


main()
