# A small data-parallel regression trainer with an accelerate-style multi-process logger:
# `get_logger(__name__).info(msg, main_process_only=..., in_order=...)` either logs on the main
# process only, or lets every rank log its own line in rank order (a barrier per rank).
import logging
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")


class PartialState:
    @property
    def process_index(self):
        return jax.process_index()

    @property
    def num_processes(self):
        return jax.process_count()

    @property
    def is_main_process(self):
        return self.process_index == 0

    def wait_for_everyone(self):
        multihost_utils.sync_global_devices("accelerate.wait_for_everyone")


class MultiProcessAdapter(logging.LoggerAdapter):
    @staticmethod
    def _should_log(main_process_only):
        state = PartialState()
        return not main_process_only or (main_process_only and state.is_main_process)

    def log(self, level, msg, *args, **kwargs):
        main_process_only = kwargs.pop("main_process_only", True)
        in_order = kwargs.pop("in_order", False)
        if self.isEnabledFor(level):
            msg, kwargs = self.process(msg, kwargs)
            if not in_order and self._should_log(main_process_only):
                self.logger.log(level, msg, *args, **kwargs)
            elif in_order:
                state = PartialState()
                for i in range(state.num_processes):
                    if i == state.process_index:
                        self.logger.log(level, msg, *args, **kwargs)
                    state.wait_for_everyone()


def get_logger(name):
    return MultiProcessAdapter(logging.getLogger(name), {})


logger = get_logger("train")


def make_shard(rank, n=64, features=4):
    rng = np.random.default_rng(100 + rank)
    x = rng.normal(size=(n, features)).astype(np.float32)
    w_true = np.arange(1, features + 1, dtype=np.float32)
    y = x @ w_true + 0.1 * rng.normal(size=n).astype(np.float32)
    return x, y


@jax.jit
def loss_and_grad(w, x, y):
    def loss_fn(w):
        return jnp.mean((x @ w - y) ** 2)
    return jax.value_and_grad(loss_fn)(w)


def all_reduce_mean(g):
    return np.asarray(multihost_utils.process_allgather(np.asarray(g))).mean(0)


def train(num_steps=12, lr=0.05, log_every=4):
    state = PartialState()
    x, y = make_shard(state.process_index)
    w = jnp.zeros(x.shape[1])
    for step in range(1, num_steps + 1):
        loss, grad = loss_and_grad(w, x, y)
        w = w - lr * all_reduce_mean(grad)
        if step % log_every == 0:
            logger.info(f"[rank {state.process_index}] step {step} local loss {float(loss):.4f}", in_order=True)
    return w


def main():
    w = train()
    gathered = np.asarray(multihost_utils.process_allgather(np.asarray(w)))
    print("RESULT weights", np.round(gathered[0], 4).tolist())
    print("RESULT replicas_in_sync", bool(np.allclose(gathered, gathered[0])))


if __name__ == "__main__":
    main()
