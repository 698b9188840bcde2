# When the root cannot build the clean-entry list it records the error but still joins the broadcasts
# Source: https://github.com/HDFGroup/hdf5/pull/1183
# Written for the mcjax sealed10 evaluation (not copied); run as 2 processes by benchmarks/sealed10/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

ADDR_BUF_CAPACITY = 8   # entries the root may stage in one broadcast
SUCCEED, FAIL = 0, -1


class MetadataCache:
    """Collective metadata cache: the root tracks dirty/clean entries and tells the others what to evict."""

    def __init__(self):
        self.entries = {}
        self.clean_on_root = []

    def touch(self, step, n_entries):
        for i in range(n_entries):
            addr = 4096 * (step * 16 + i)
            self.entries[addr] = step
            if jax.process_index() == 0:
                self.clean_on_root.append(addr)

    def broadcast_clean_list(self):
        """Root builds the address buffer; every process evicts the broadcast addresses."""
        ret = SUCCEED
        num = np.zeros((1,), np.int64)
        addr_buf = np.zeros((ADDR_BUF_CAPACITY,), np.int64)
        if jax.process_index() == 0:
            if len(self.clean_on_root) > ADDR_BUF_CAPACITY:
                print(f"error: can't build address list for {len(self.clean_on_root)} clean entries")
                ret = FAIL  # push the error, but still participate in the broadcasts below
            else:
                num[0] = len(self.clean_on_root)
                addr_buf[:num[0]] = self.clean_on_root
        num = multihost_utils.broadcast_one_to_all(num)
        addr_buf = multihost_utils.broadcast_one_to_all(addr_buf)
        for addr in addr_buf[:int(num[0])]:
            self.entries.pop(int(addr), None)
        self.clean_on_root = []
        return ret


@jax.jit
def train_step(w, x):
    grad = jnp.mean(x, axis=0) * w
    return w - 0.1 * grad


def main():
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    data = NamedSharding(mesh, P("data"))
    w = jax.device_put(np.ones((4,), np.float32), NamedSharding(mesh, P()))
    cache = MetadataCache()
    failures = 0
    for step in range(4):
        x = np.full((2, 4), 0.05 * (step + 1 + jax.process_index()), np.float32)
        w = train_step(w, jax.make_array_from_process_local_data(data, x))
        cache.touch(step, n_entries=3 if step < 2 else 10)  # step 2 dirties more than one buffer holds
        if cache.broadcast_clean_list() != SUCCEED:
            failures += 1
            cache.clean_on_root = []
    print("RESULT cache_entries", len(cache.entries))
    print("RESULT w", [round(float(v), 5) for v in np.asarray(w.addressable_data(0))])


main()
