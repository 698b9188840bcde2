# A preemption signal seen by one process makes it leave the training loop at its own batch boundary
# Source: https://github.com/ai2cm/ace/pull/1407
# Written for the mcjax sealed11 evaluation (not copied); run as 2 processes by benchmarks/sealed11/run_pair.py.
import os
import signal
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

RESTART_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed11_preemption_signal_local_break",
                           os.environ.get("JOB_ID", "local"))
MAX_BATCHES = 10
# The scheduler's SIGTERM reaches the nodes at different times: node 0 during batch 3, node 1 during batch 6.
SIGNAL_AT_BATCH = {0: 3, 1: 6}


class PreemptionHandler:
    def __init__(self):
        self.requested = False
        signal.signal(signal.SIGTERM, self._on_sigterm)

    def _on_sigterm(self, signum, frame):
        self.requested = True


def simulated_scheduler(batch):
    if batch == SIGNAL_AT_BATCH[jax.process_index()]:
        os.kill(os.getpid(), signal.SIGTERM)


class Stepper:
    def __init__(self):
        self.mesh = jax.make_mesh((jax.device_count(),), ("data",))
        self.data = NamedSharding(self.mesh, P("data"))
        self.params = jax.device_put(np.ones((4,), np.float32), NamedSharding(self.mesh, P()))
        self._train = jax.jit(lambda p, x: p - 0.05 * jnp.mean(x, axis=0) * p)

    def train_on_batch(self, batch):
        local = np.full((2, 4), 0.1 * (batch + 1) + 0.3 * jax.process_index(), np.float32)
        self.params = self._train(self.params, jax.make_array_from_process_local_data(self.data, local))

    def save_restart_checkpoint(self, batch):
        params = multihost_utils.process_allgather(self.params, tiled=True)
        if jax.process_index() == 0:
            os.makedirs(RESTART_DIR, exist_ok=True)
            np.savez(os.path.join(RESTART_DIR, "restart.npz"), params=np.asarray(params), batch=batch)
        multihost_utils.sync_global_devices("restart checkpoint written")


def train():
    handler = PreemptionHandler()
    stepper = Stepper()
    batch = 0
    while batch < MAX_BATCHES:
        stepper.train_on_batch(batch)
        simulated_scheduler(batch)
        batch += 1
        if handler.requested:
            print(f"process {jax.process_index()}: preempted, leaving the training loop after batch {batch}")
            stepper.save_restart_checkpoint(batch)
            break
    return stepper, batch


def main():
    stepper, batch = train()
    print("RESULT stopped_after_batch", batch)
    print("RESULT params", [round(float(v), 5) for v in np.asarray(stepper.params.addressable_data(0))])


main()
