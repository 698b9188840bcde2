# Lightning-style periodic checkpoint callback calls trainer.save_checkpoint (gather + barrier inside) on the global-zero process only
# Source: https://github.com/ZettaAI/zetta_utils/pull/969
# Written for the mcjax sealed17 evaluation (not copied); run as 2 processes by benchmarks/sealed17/run_pair.py.
import os
import pickle
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class Trainer:
    def __init__(self, mesh, params):
        self.mesh = mesh
        self.params = params
        self.global_step = 0

    @property
    def is_global_zero(self):
        return jax.process_index() == 0

    def save_checkpoint(self, filepath):
        # strategy.save_checkpoint: every process must enter, the gathered state is written by rank zero
        state = {k: np.asarray(multihost_utils.process_allgather(v, tiled=True)) for k, v in sorted(self.params.items())}
        if self.is_global_zero:
            with open(filepath, "wb") as fp:
                pickle.dump({"step": self.global_step, "state": state}, fp)
        multihost_utils.sync_global_devices(f"save_checkpoint_{self.global_step}")  # strategy.barrier()


class PeriodicCheckpoint:
    def __init__(self, dirpath, every):
        self.dirpath, self.every = dirpath, every

    def on_train_batch_end(self, trainer):
        if trainer.global_step % self.every != 0:
            return
        path = os.path.join(self.dirpath, f"step={trainer.global_step}.ckpt")
        if trainer.is_global_zero:
            trainer.save_checkpoint(path)


@jax.jit
def train_step(params, x, y):
    def loss_fn(p):
        return jnp.mean((jnp.tanh(x @ p["w1"]) @ p["w2"] - y) ** 2)
    loss, g = jax.value_and_grad(loss_fn)(params)
    return jax.tree.map(lambda a, b: a - 0.1 * b, params, g), loss


def main():
    ckpt_dir = os.path.join(tempfile.gettempdir(), "mcjax_sealed17_rank0_guard_save_checkpoint", os.environ.get("JOB_ID", "0"))
    os.makedirs(ckpt_dir, exist_ok=True)
    mesh = Mesh(np.array(jax.devices()), ("data",))
    init = np.random.default_rng(0)
    params = {"w1": jax.device_put(init.normal(size=(5, 4)).astype(np.float32) * 0.4, NamedSharding(mesh, P(None, "data"))),
              "w2": jax.device_put(init.normal(size=(4,)).astype(np.float32) * 0.4, NamedSharding(mesh, P()))}
    trainer = Trainer(mesh, params)
    callback = PeriodicCheckpoint(ckpt_dir, every=3)
    batch = NamedSharding(mesh, P("data"))
    rng = np.random.default_rng(11 + jax.process_index())
    for _ in range(7):
        x = rng.normal(size=(4, 5)).astype(np.float32)
        y = np.cos(x.sum(axis=1)).astype(np.float32)
        trainer.params, loss = train_step(trainer.params, jax.make_array_from_process_local_data(batch, x),
                                          jax.make_array_from_process_local_data(batch, y))
        trainer.global_step += 1
        callback.on_train_batch_end(trainer)
    with open(os.path.join(ckpt_dir, "step=6.ckpt"), "rb") as fp:
        saved = pickle.load(fp)
    print("RESULT saved_step", saved["step"])
    print("RESULT saved_w2", np.round(saved["state"]["w2"], 4).tolist())
    print("RESULT final_loss", round(float(loss), 5))


if __name__ == "__main__":
    main()
