# Checkpointing is keyed to the exchange-attempt step, which every process shares, not to a local exchange's outcome
# Source: https://github.com/plumed/plumed2/pull/831
# Written for the mcjax sealed10 evaluation (not copied); run as 2 processes by benchmarks/sealed10/run_pair.py.
import math
import os
import tempfile

import jax
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))
CKPT_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed10_hrex", os.environ.get("JOB_ID", "local"))
os.makedirs(CKPT_DIR, exist_ok=True)
NSTLIST, REPLEX, CPT_STEP, NSTEPS, DT = 10, 4, 2, 12, 0.05
MESH = jax.make_mesh((jax.device_count(),), ("replicas",), axis_types=(jax.sharding.AxisType.Auto,))
_TOTAL = jax.jit(lambda e: e.sum(), out_shardings=NamedSharding(MESH, P()))


class Replica:
    def __init__(self, rid, beta, scale):
        self.rid, self.beta = rid, beta
        self.x = scale * np.linspace(-1.0, 1.0, 6)

    def energy(self):
        return float(0.5 * np.sum(self.x ** 2))

    def md_step(self):
        self.x = self.x - DT * self.x  # overdamped step in a harmonic well


def local_replicas():
    # two replicas per process; the pair on process 0 is in an unfavourable order, the pair on process 1 is not
    p = jax.process_index()
    betas = [1.0, 0.5] if p == 0 else [0.4, 0.3]
    scales = [2.0, 0.5] if p == 0 else [0.5, 3.0]
    return [Replica(2 * p + i, b, s) for i, (b, s) in enumerate(zip(betas, scales))]


def try_exchange(a, b):
    delta = (a.beta - b.beta) * (b.energy() - a.energy())
    if delta <= 0 or math.exp(-delta) > 0.5:
        a.x, b.x = b.x, a.x
        return True
    return False


def write_checkpoint(step, replicas):
    multihost_utils.sync_global_devices(f"checkpoint-{step}")  # every replica writes at the same step
    states = multihost_utils.process_allgather(np.stack([r.x for r in replicas]).astype(np.float32))
    if jax.process_index() == 0:
        np.save(os.path.join(CKPT_DIR, f"state_{step}.npy"), np.asarray(states))


def run():
    replicas = local_replicas()
    checkpoints, totals, cpt_pending = [], [], True
    for step in range(1, NSTEPS + 1):
        for r in replicas:
            r.md_step()
        local_e = np.array([r.energy() for r in replicas], np.float32)
        e = jax.make_array_from_process_local_data(NamedSharding(MESH, P("replicas")), local_e)
        totals.append(round(float(np.asarray(_TOTAL(e).addressable_data(0))), 4))
        do_repl_ex = step % REPLEX == 0
        exchanged = do_repl_ex and try_exchange(replicas[0], replicas[1])
        bNS = step % NSTLIST == 0 or exchanged  # an exchange forces a new neighbour search
        if cpt_pending and step >= CPT_STEP and (step % NSTLIST == 0 or do_repl_ex):
            write_checkpoint(step, replicas)
            checkpoints.append(step)
            cpt_pending = False
    return checkpoints, totals


def main():
    checkpoints, totals = run()
    print("RESULT checkpoints", checkpoints)
    print("RESULT final_total_energy", totals[-1])


main()
