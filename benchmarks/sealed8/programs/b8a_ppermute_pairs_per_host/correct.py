# Every host passes the same global list of ppermute source/target pairs
# Source: https://github.com/jax-ml/jax/issues/3004 (multi-host ppermute test with perms_host0 / perms_host1 lists)
# Written for the mcjax sealed8 evaluation (not copied); run as 2 processes by benchmarks/sealed8/run_pair.py.
import os
from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class RingLayout:
    """Send every shard to the next device of the ring (the layout in the report's figure)."""
    axis: str = "x"

    def global_order(self):
        return [d.id for d in jax.devices()]

    def perms(self):
        order = self.global_order()
        n = len(order)
        return [(i, (i + 1) % n) for i in range(n)]


class HaloExchange:
    def __init__(self, layout: RingLayout):
        self.layout = layout
        self.mesh = jax.make_mesh((jax.device_count(),), (layout.axis,))
        self.sharding = NamedSharding(self.mesh, P(layout.axis))

    def build(self):
        perm = self.layout.perms()

        @jax.jit
        @partial(jax.shard_map, mesh=self.mesh, in_specs=P(self.layout.axis), out_specs=P(self.layout.axis))
        def shift(block):
            return jax.lax.ppermute(block, self.layout.axis, perm=perm)

        return shift

    def run(self, local_block: np.ndarray, steps: int = 3):
        x = jax.make_array_from_process_local_data(self.sharding, local_block)
        shift = self.build()
        for _ in range(steps):
            x = shift(x) * 0.5 + 1.0
        return multihost_utils.process_allgather(x, tiled=True)


exchange = HaloExchange(RingLayout())
local = np.full((1, 4), float(jax.process_index() + 1), np.float32)
out = exchange.run(local)
print("RESULT ring", np.round(out, 4).tolist())
