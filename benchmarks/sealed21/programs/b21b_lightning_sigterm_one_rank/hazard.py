# Lightning-style fit loop with the signal connector: a SIGTERM handler marks the trainer, and at
# the end of each training step the loop saves a checkpoint and raises SIGTERMException so the
# job can be requeued. The FaultInjection callback plays the cluster: it preempts one node (the
# node of global rank 0) at a fixed step by sending SIGTERM to that node's process.
import os
import signal
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class SIGTERMException(SystemExit):
    pass


class FaultInjection:
    def __init__(self, preempt_rank=0, at_step=3):
        self.preempt_rank, self.at_step = preempt_rank, at_step

    def on_train_batch_end(self, trainer, step):
        if trainer.global_rank == self.preempt_rank and step == self.at_step:
            os.kill(os.getpid(), signal.SIGTERM)


class Trainer:
    def __init__(self, callbacks, max_steps=8, ckpt_dir=None):
        self.callbacks = callbacks
        self.max_steps = max_steps
        self.ckpt_dir = ckpt_dir
        self.global_rank = jax.process_index()
        self.global_step = 0
        self.received_sigterm = False
        signal.signal(signal.SIGTERM, self._sigterm_notifier_fn)

    def _sigterm_notifier_fn(self, signum, frame):
        self.received_sigterm = True

    def save_checkpoint(self, params):
        if self.global_rank == 0:
            np.savez(os.path.join(self.ckpt_dir, f"step={self.global_step}.npz"), **params)

    def on_advance_end(self, params):
        if self.received_sigterm:
            self.save_checkpoint(params)
            raise SIGTERMException(1)

    def fit(self, model, batches):
        params = model.init_params()
        for step, (x, y) in enumerate(batches[:self.max_steps]):
            params = model.training_step(params, x, y)
            self.global_step = step + 1
            for cb in self.callbacks:
                cb.on_train_batch_end(self, step)
            self.on_advance_end(params)
        return params


class Regressor:
    def __init__(self, dim=5, lr=0.1):
        self.dim, self.lr = dim, lr
        self._grad = jax.jit(jax.grad(lambda p, x, y: jnp.mean((x @ p["w"] + p["b"] - y) ** 2)))

    def init_params(self):
        return {"w": np.zeros(self.dim, np.float32), "b": np.zeros((), np.float32)}

    def training_step(self, params, x, y):
        grads = self._grad(params, x, y)
        grads = {k: np.asarray(multihost_utils.process_allgather(np.asarray(g))).mean(0)
                 for k, g in grads.items()}
        return {k: np.asarray(params[k] - self.lr * grads[k]) for k in params}


def main():
    rank = jax.process_index()
    rng = np.random.default_rng(31 + rank)
    batches = [(x, x.sum(-1) * 0.5) for x in rng.normal(size=(8, 16, 5)).astype(np.float32)]
    ckpt_dir = tempfile.mkdtemp(prefix=f"ckpt_{os.environ.get('JOB_ID', 'local')}_")
    trainer = Trainer(callbacks=[FaultInjection()], ckpt_dir=ckpt_dir)
    model = Regressor()
    try:
        params = trainer.fit(model, batches)
        status = "finished"
    except SIGTERMException:
        params = None
        status = "preempted"
    print(f"rank {rank}: {status} at step {trainer.global_step}")
    steps = np.asarray(multihost_utils.process_allgather(np.int32(trainer.global_step)))
    print("RESULT status", status)
    print("RESULT global_steps", steps.tolist())


if __name__ == "__main__":
    main()
