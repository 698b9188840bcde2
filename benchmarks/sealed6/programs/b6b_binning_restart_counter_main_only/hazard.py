# Particle binning plugin: after a restart only the main rank restores the reduce counter, so only it
# enters the end-of-run partial dump and its reduction
# Source: https://github.com/ComputationalRadiationPhysics/picongpu/issues/5642 (port of the PIConGPU binning hang to JAX)
# Written for the mcjax sealed6 evaluation (not copied); run as 2 processes by benchmarks/sealed6/run_pair.py.
import json
import os
import tempfile
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("ranks",))
CKPT_DIR = Path(tempfile.gettempdir()) / f"b6b_binning_{os.environ.get('JOB_ID', 'local')}"
N_BINS = 16
EDGES = jnp.linspace(-3.0, 3.0, N_BINS + 1)


@jax.jit
def _reduce_hist(stacked):
    return jnp.sum(stacked, axis=0)


@jax.jit
def push(p, step):
    return p + 0.05 * jnp.sin(0.1 * step + p)


class Binner:
    def __init__(self, name, notify_period, dump_period):
        self.name, self.notify_period, self.dump_period = name, notify_period, dump_period
        self.is_main = jax.process_index() == 0
        self.hist = np.zeros(N_BINS, np.float32)
        self.reduce_counter = 0
        self.dumps = []

    def notify(self, step, momenta):
        if step % self.notify_period:
            return
        self.hist += np.asarray(jnp.histogram(momenta, bins=EDGES)[0], np.float32)
        self.reduce_counter += 1
        if self.reduce_counter == self.dump_period:
            self._dump(step)

    def _dump(self, step):
        local = self.hist[None, :]
        stacked = jax.make_array_from_process_local_data(NamedSharding(MESH, P("ranks")), local)
        total = np.asarray(_reduce_hist(stacked)) / self.reduce_counter
        self.dumps.append((step, self.reduce_counter, round(float(total.sum()), 3)))
        if self.is_main:
            (CKPT_DIR / f"{self.name}_dump_{step}.json").write_text(json.dumps(total.tolist()))
        self.hist[:] = 0.0
        self.reduce_counter = 0

    def checkpoint(self, step):
        state = {"reduce_counter": self.reduce_counter, "hist": self.hist.tolist()}
        (CKPT_DIR / f"{self.name}_{step}_rank{jax.process_index()}.json").write_text(json.dumps(state))
        if self.is_main:
            (CKPT_DIR / f"{self.name}_{step}_meta.json").write_text(json.dumps(state))

    def restart(self, step):
        self.hist[:] = json.loads((CKPT_DIR / f"{self.name}_{step}_rank{jax.process_index()}.json").read_text())["hist"]
        if self.is_main:
            meta = json.loads((CKPT_DIR / f"{self.name}_{step}_meta.json").read_text())
            self.reduce_counter = meta["reduce_counter"]

    def end_of_run(self, step):
        if self.reduce_counter > 0:
            self._dump(step)


def run(binner, momenta, first, last, checkpoint_at=None):
    for step in range(first, last + 1):
        momenta = push(momenta, step)
        binner.notify(step, momenta)
        if step == checkpoint_at:
            binner.checkpoint(step)
    return momenta


CKPT_DIR.mkdir(parents=True, exist_ok=True)
rng = np.random.default_rng(11 + jax.process_index())
momenta = jnp.asarray(rng.normal(size=256).astype(np.float32))

first_job = Binner("pz_hist", notify_period=5, dump_period=3)
momenta = run(first_job, momenta, 0, 80, checkpoint_at=80)

restarted = Binner("pz_hist", notify_period=5, dump_period=3)
restarted.restart(80)
run(restarted, momenta, 81, 84)
restarted.end_of_run(84)
print("RESULT dumps", restarted.dumps, flush=True)
print("RESULT counter after end of run", restarted.reduce_counter, flush=True)
