# Tensor bus between a trainer process and a rollout process: every side walks the routes in one canonical sorted order
# Source: https://github.com/cmriat/Etha/pull/111
# Written for the mcjax sealed16 evaluation (not copied); run as 2 processes by benchmarks/sealed16/run_pair.py.
import os
from dataclasses import dataclass

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

ROLES = {0: "trainer", 1: "rollout"}


@dataclass(frozen=True)
class Route:
    name: str
    src: str
    dst: str
    shape: tuple


ROUTES = (
    Route("policy_weights", src="trainer", dst="rollout", shape=(16,)),
    Route("rollout_batch", src="rollout", dst="trainer", shape=(4, 3)),
)


class TensorBus:
    """Moves one buffer per route; every process joins every route's exchange."""

    def __init__(self, role, rank):
        self.role, self.rank = role, rank
        self.received = {}

    def local_plan(self):
        sends = [r for r in ROUTES if r.src == self.role]
        recvs = [r for r in ROUTES if r.dst == self.role]
        return sorted(sends + recvs, key=lambda r: r.name)  # one global order on every process

    def payload(self, route, step):
        if route.src != self.role:
            return np.zeros(route.shape, np.float32)
        base = 1.0 if route.name == "policy_weights" else 10.0
        return np.full(route.shape, base + step, np.float32) + np.arange(np.prod(route.shape)).reshape(route.shape)

    def transfer(self, route, step):
        buf = self.payload(route, step)
        gathered = multihost_utils.process_allgather(buf)  # the route's exchange (all processes)
        src_rank = [k for k, v in ROLES.items() if v == route.src][0]
        out = np.asarray(gathered[src_rank])
        if route.dst == self.role:
            self.received[route.name] = out
        return float(out.sum())

    def run_step(self, step):
        return {route.name: self.transfer(route, step) for route in self.local_plan()}


def main():
    rank = jax.process_index()
    bus = TensorBus(ROLES[rank], rank)
    checks = []
    for step in range(3):
        sums = bus.run_step(step)
        checks.append(round(sums["policy_weights"] + sums["rollout_batch"], 2))
    multihost_utils.sync_global_devices("bus done")
    print("RESULT route_checksums", checks)


if __name__ == "__main__":
    main()
