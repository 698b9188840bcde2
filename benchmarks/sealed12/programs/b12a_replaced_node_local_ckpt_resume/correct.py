# After a node is replaced, the most recent node-local checkpoint is found across nodes and broadcast from its owner
# Source: https://github.com/pytorch/elastic/pull/93
# Written for the mcjax sealed12 evaluation (not copied); run as 2 processes by benchmarks/sealed12/run_pair.py.
import json
import os
import shutil
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

ROOT = os.path.join(tempfile.gettempdir(), "mcjax_sealed12_replaced_node_local_ckpt_resume",
                    os.environ.get("JOB_ID", "local"))
NODE_LOCAL_DIR = os.path.join(ROOT, f"node{jax.process_index()}")   # no globally visible storage
EPOCHS, STEPS_PER_EPOCH, FAILED_AFTER_EPOCH, REPLACED_NODE = 4, 2, 2, 1


class State:
    def __init__(self, repl):
        self.repl = repl
        self.epoch = 0
        self.weights = jax.device_put(jnp.array([0.3, -0.2, 0.8, 0.1], jnp.float32), repl)

    def save(self):
        os.makedirs(NODE_LOCAL_DIR, exist_ok=True)
        host = np.asarray(self.weights.addressable_data(0))
        with open(os.path.join(NODE_LOCAL_DIR, "checkpoint.json"), "w") as f:
            json.dump({"epoch": self.epoch, "weights": host.tolist()}, f)

    def read_local(self):
        """(epoch, host copy of the weights) from this node's disk, or the fresh state if there is none."""
        path = os.path.join(NODE_LOCAL_DIR, "checkpoint.json")
        if not os.path.exists(path):
            return self.epoch, np.asarray(self.weights.addressable_data(0))
        with open(path) as f:
            ckpt = json.load(f)
        return ckpt["epoch"], np.asarray(ckpt["weights"], np.float32)


def train(state, until_epoch, dp):
    step = jax.jit(lambda w, x: w - 0.1 * jnp.mean(x) * jnp.tanh(w), out_shardings=state.repl)
    while state.epoch < until_epoch:
        for i in range(STEPS_PER_EPOCH):
            local = np.full((2,), 0.5 + 0.1 * i + 0.05 * jax.process_index(), np.float32)
            state.weights = step(state.weights, jax.make_array_from_process_local_data(dp, local))
        state.epoch += 1
        state.save()                       # local rank 0 of every node writes its own copy


def main():
    mesh = jax.make_mesh((jax.device_count(),), ("dp",))
    dp, repl = NamedSharding(mesh, P("dp")), NamedSharding(mesh, P())
    train(State(repl), FAILED_AFTER_EPOCH, dp)        # the first incarnation, lost after epoch 2
    if jax.process_index() == REPLACED_NODE:          # the replacement container has an empty disk
        shutil.rmtree(NODE_LOCAL_DIR, ignore_errors=True)
    multihost_utils.sync_global_devices("rendezvous of the new worker group")

    state = State(repl)
    epoch, weights = state.read_local()
    src = int(np.argmax(multihost_utils.process_allgather(np.array([epoch], np.int32))[:, 0]))
    epoch, weights = multihost_utils.broadcast_one_to_all(
        (np.array(epoch, np.int32), weights), is_source=jax.process_index() == src)
    state.epoch, state.weights = int(epoch), jax.device_put(np.asarray(weights), repl)
    print(f"process {jax.process_index()}: resuming at epoch {state.epoch}")
    train(state, EPOCHS, dp)
    total = jax.jit(jnp.sum, out_shardings=repl)(state.weights)
    print("RESULT final_epoch", state.epoch)
    print("RESULT weights_sum", round(float(total), 5))


main()
