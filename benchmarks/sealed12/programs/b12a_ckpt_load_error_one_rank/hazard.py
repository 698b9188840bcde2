# A checkpoint-load error raised on one process leaves the other waiting in the post-load barrier
# Source: https://github.com/NVIDIA/Megatron-LM/pull/367
# Written for the mcjax sealed12 evaluation (not copied); run as 2 processes by benchmarks/sealed12/run_pair.py.
import json
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CKPT_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed12_ckpt_load_error_one_rank",
                        os.environ.get("JOB_ID", "local"))
SAVE_AT, TRAIN_ITERS = 3, 6
PREEMPTED_MID_WRITE = {1}   # the preemption hit host 1 while it was writing its shard


class ShardCheckpointer:
    def __init__(self):
        self.rank = jax.process_index()
        os.makedirs(CKPT_DIR, exist_ok=True)

    def path(self, iteration):
        return os.path.join(CKPT_DIR, f"iter_{iteration:07d}", f"mp_rank_{self.rank:02d}.json")

    def save(self, iteration, shard):
        os.makedirs(os.path.dirname(self.path(iteration)), exist_ok=True)
        payload = json.dumps({"iteration": iteration, "shard": shard.tolist()})
        if self.rank in PREEMPTED_MID_WRITE:
            payload = payload[: len(payload) // 2]
        with open(self.path(iteration), "w") as f:
            f.write(payload)

    def read(self, iteration):
        with open(self.path(iteration)) as f:
            state = json.load(f)
        return state["iteration"], np.asarray(state["shard"], np.float32)


class Model:
    def __init__(self):
        self.mesh = jax.make_mesh((jax.device_count(),), ("mp",))
        self.sharding = NamedSharding(self.mesh, P("mp"))
        self.step_fn = jax.jit(lambda w: w - 0.1 * jnp.tanh(w) * jnp.mean(w), out_shardings=self.sharding)
        self.iteration = 0
        self.weights = self._from_local(np.full((2,), 1.0 + jax.process_index(), np.float32))

    def _from_local(self, shard):
        return jax.make_array_from_process_local_data(self.sharding, shard)

    def train(self, until, ckpt):
        while self.iteration < until:
            self.weights = self.step_fn(self.weights)
            self.iteration += 1
            if self.iteration == SAVE_AT:
                ckpt.save(self.iteration, np.asarray(self.weights.addressable_data(0)))


def load_checkpoint(model, ckpt, iteration):
    model.iteration, shard = ckpt.read(iteration)
    model.weights = model._from_local(shard)
    multihost_utils.sync_global_devices("checkpoint loaded")
    print(f"rank {ckpt.rank}: loaded iteration {model.iteration}")


def main():
    ckpt = ShardCheckpointer()
    Model().train(SAVE_AT, ckpt)              # first job, preempted right after the save
    model = Model()
    load_checkpoint(model, ckpt, SAVE_AT)
    model.train(TRAIN_ITERS, ckpt)
    total = jax.jit(jnp.sum, out_shardings=NamedSharding(model.mesh, P()))(model.weights)
    print("RESULT iteration", model.iteration)
    print("RESULT weights_sum", round(float(total), 5))


main()
