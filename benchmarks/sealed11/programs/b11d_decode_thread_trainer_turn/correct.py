# A background continuous-batching decode thread grants the trainer a turn once every process's trainer has asked
# Source: https://github.com/huggingface/transformers/pull/48382
# Written for the mcjax sealed11 evaluation (not copied); run as 2 processes by benchmarks/sealed11/run_pair.py.
import os
import queue
import threading

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

VOCAB, NEED, MAX_STEPS = 8, 4, 6
MESH = Mesh(np.array(jax.devices()), ("dp",))
ROWS = NamedSharding(MESH, P("dp"))
REPL = NamedSharding(MESH, P())


class SharedModel:
    def __init__(self):
        self.head = jax.device_put(np.roll(np.eye(VOCAB, dtype=np.float32), 1, axis=1), ROWS)
        self.value = jax.device_put(np.zeros(VOCAB, np.float32), REPL)
        self._decode = jax.jit(lambda h, t: jnp.argmax(jax.nn.one_hot(t, VOCAB) @ h, axis=-1).astype(jnp.int32))
        self._train = jax.jit(jax.value_and_grad(lambda v, t: jnp.mean((v[t] - 1.0) ** 2)))

    def decode(self, local_tokens):
        out = self._decode(self.head, jax.make_array_from_process_local_data(ROWS, local_tokens))
        return np.asarray(multihost_utils.global_array_to_host_local_array(out, MESH, P("dp")))

    def train_step(self, local_samples):
        loss, g = self._train(self.value, jax.make_array_from_process_local_data(ROWS, local_samples))
        self.value = self.value - 0.5 * g
        return float(loss)


class ContinuousBatchingManager:
    def __init__(self, model, prompts):
        self.model = model
        self.tokens = prompts
        self.outputs = queue.Queue(maxsize=1)
        self._turn_requested = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def request_turn(self):
        self._turn_requested.set()

    def _emit(self, item):
        self.outputs.put(item)
        self.outputs.join()  # the consumer has handled it before the loop goes on

    def _loop(self):
        for step in range(MAX_STEPS):
            local = np.array([len(self.tokens), int(self._turn_requested.is_set())], np.int32)
            agreed = np.asarray(multihost_utils.process_allgather(local)).reshape(-1, 2)
            if int(agreed[:, 0].max()) == 0:
                break
            if int(agreed[:, 1].min()) == 1:
                self._turn_requested.clear()
                self._emit("TURN")
            self.tokens = self.model.decode(self.tokens)
            self._emit(self.tokens.copy())
        self._emit(None)


def trainer_main(model, manager):
    samples, losses, requested = [], [], False
    manager.thread.start()
    while True:
        item = manager.outputs.get()
        if item is None:
            manager.outputs.task_done()
            break
        if isinstance(item, str):
            losses.append(round(model.train_step(np.array(samples[:NEED], np.int32)), 5))
            samples, requested = samples[NEED:], False
        else:
            samples += [int(t) for t in item if t % 2 == 0]  # keep the even-reward rollouts
            if not requested and len(samples) >= NEED:
                manager.request_turn()
                requested = True
        manager.outputs.task_done()
    manager.thread.join()
    return losses


def main():
    prompts = np.array({0: [2, 4], 1: [3, 5]}[jax.process_index()], np.int32)  # per-process rollouts
    model = SharedModel()
    losses = trainer_main(model, ContinuousBatchingManager(model, prompts))
    print("RESULT losses", losses)
    print("RESULT value", np.round(np.asarray(model.value.addressable_data(0)), 5).tolist())


if __name__ == "__main__":
    main()
