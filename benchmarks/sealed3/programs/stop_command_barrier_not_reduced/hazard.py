# A remote "stop early" command reaches only the global-zero process; a barrier does not share it
# Source: https://github.com/talmolab/sleap-nn/pull/471
# Written for the mcjax sealed3 evaluation (not copied); run as 2 processes by benchmarks/sealed3/run_pair.py.
import os
import queue
import threading

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("data",))
BATCH = NamedSharding(MESH, P("data"))


class Strategy:
    def barrier(self, name: str) -> None:
        multihost_utils.sync_global_devices(name)

    def reduce_boolean_decision(self, decision: bool, all: bool = True) -> bool:
        flags = multihost_utils.process_allgather(np.array(decision))
        return bool(flags.all() if all else flags.any())


class RemoteGui(threading.Thread):
    """Stands in for the GUI on the other side of the ZMQ socket: the user presses Stop after step 2."""

    def __init__(self, progress: queue.Queue, commands: queue.Queue):
        super().__init__(daemon=True)
        self.progress, self.commands = progress, commands

    def run(self):
        while True:
            step = self.progress.get()
            if step >= 2:
                self.commands.put({"command": "stop"})
                return


class TrainingControllerZMQ:
    def __init__(self, poll_timeout_s: float = 5.0):
        self.poll_timeout_s = poll_timeout_s
        self.commands = None
        self.progress = None

    def on_train_start(self, trainer):
        if trainer.is_global_zero:  # only rank 0 binds the controller socket
            self.commands, self.progress = queue.Queue(), queue.Queue()
            RemoteGui(self.progress, self.commands).start()

    def on_train_batch_end(self, trainer, step: int):
        if trainer.is_global_zero:
            self.progress.put(step)
            try:
                msg = self.commands.get(timeout=self.poll_timeout_s if step >= 2 else 0.01)
            except queue.Empty:
                msg = None
            if msg and msg["command"] == "stop":
                trainer.should_stop = True
        trainer.strategy.barrier(f"controller_{step}")


@jax.jit
def train_step(w, x, y):
    loss, g = jax.value_and_grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
    return w - 0.1 * g, loss


class Trainer:
    def __init__(self, callbacks, max_steps: int):
        self.callbacks = callbacks
        self.max_steps = max_steps
        self.strategy = Strategy()
        self.is_global_zero = jax.process_index() == 0
        self.should_stop = False

    def fit(self, w):
        rng = np.random.default_rng(100 + jax.process_index())
        for cb in self.callbacks:
            cb.on_train_start(self)
        step = 0
        for step in range(self.max_steps):
            x = jax.make_array_from_process_local_data(BATCH, rng.normal(size=(4, 3)).astype(np.float32))
            y = jax.make_array_from_process_local_data(BATCH, rng.normal(size=(4,)).astype(np.float32))
            w, loss = train_step(w, x, y)
            for cb in self.callbacks:
                cb.on_train_batch_end(self, step)
            if self.should_stop:
                break
        return w, step


trainer = Trainer([TrainingControllerZMQ()], max_steps=8)
w0 = jax.device_put(np.zeros(3, np.float32), NamedSharding(MESH, P()))
w, last = trainer.fit(w0)
print("RESULT stopped_at", last)
print("RESULT weights", np.round(np.asarray(w.addressable_data(0)), 4).tolist())
