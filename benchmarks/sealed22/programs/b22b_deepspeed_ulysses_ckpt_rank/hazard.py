import os
import shutil
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class UlyssesSPMPU:
    """Sequence-parallel MPU handed to the engine by the Ulysses integration."""

    def __init__(self, sp_size):
        self.sp_size = sp_size

    def get_model_parallel_rank(self):
        return jax.process_index() % self.sp_size

    def get_model_parallel_world_size(self):
        return 1


class DeepSpeedEngine:
    def __init__(self, params, mpu=None, lr=0.1):
        self.params = params
        self.mpu = mpu
        self.lr = lr
        self.global_steps = 0
        self.mp_world_size = 1 if mpu is None else mpu.get_model_parallel_world_size()
        self._grad = jax.jit(jax.value_and_grad(
            lambda p, x, y: jnp.mean((jnp.tanh(x @ p["w1"]) @ p["w2"] - y) ** 2)))

    def _get_ckpt_name(self, checkpoints_path, tag):
        mp_rank = 0 if self.mpu is None else self.mpu.get_model_parallel_rank()
        return os.path.join(checkpoints_path, str(tag), f"mp_rank_{mp_rank:02d}_model_states.npz")

    def train_batch(self, x, y):
        loss, grads = self._grad(self.params, x, y)
        grads = {k: np.asarray(multihost_utils.process_allgather(np.asarray(g))).mean(0) for k, g in grads.items()}
        self.params = {k: self.params[k] - self.lr * grads[k] for k in self.params}
        self.global_steps += 1
        return float(loss)

    def save_checkpoint(self, save_dir):
        tag = f"global_step{self.global_steps}"
        if jax.process_index() == 0:
            os.makedirs(os.path.join(save_dir, tag), exist_ok=True)
            np.savez(self._get_ckpt_name(save_dir, tag), global_steps=self.global_steps,
                     **{k: np.asarray(v) for k, v in self.params.items()})
            with open(os.path.join(save_dir, "latest"), "w") as f:
                f.write(tag)
        multihost_utils.sync_global_devices(f"save_checkpoint_{tag}")

    def load_checkpoint(self, load_dir, load_module_only=True):
        with open(os.path.join(load_dir, "latest")) as f:
            tag = f.read().strip()
        state = np.load(self._get_ckpt_name(load_dir, tag))
        self.params = {k: jnp.asarray(state[k]) for k in self.params}
        if not load_module_only:
            self.global_steps = int(state["global_steps"])
        return tag


def init_params(seed=7, hidden=8):
    rng = np.random.default_rng(seed)
    return {"w1": jnp.asarray(rng.normal(scale=0.3, size=(4, hidden))),
            "w2": jnp.asarray(rng.normal(scale=0.3, size=(hidden, 1)))}


def batches(num, seed):
    rng = np.random.default_rng(seed + 31 * jax.process_index())
    for _ in range(num):
        x = rng.normal(size=(16, 4)).astype(np.float32)
        yield x, np.sin(x.sum(1, keepdims=True))


def main():
    ckpt_dir = os.path.join(tempfile.gettempdir(), f"ds_ckpt_{os.environ.get('JOB_ID', 'local')}")
    base = DeepSpeedEngine(init_params())
    for x, y in batches(3, seed=1):
        base.train_batch(x, y)
    base.save_checkpoint(ckpt_dir)

    sp_engine = DeepSpeedEngine(init_params(seed=99), mpu=UlyssesSPMPU(sp_size=jax.process_count()))
    tag = sp_engine.load_checkpoint(ckpt_dir, load_module_only=True)
    losses = [sp_engine.train_batch(x, y) for x, y in batches(3, seed=2)]
    w2 = np.asarray(multihost_utils.process_allgather(np.asarray(sp_engine.params["w2"])))
    multihost_utils.sync_global_devices("finished")
    if jax.process_index() == 0:
        shutil.rmtree(ckpt_dir, ignore_errors=True)
    print(f"rank {jax.process_index()}: resumed from {tag}, local losses {np.round(losses, 4).tolist()}")
    print("RESULT loaded_tag", tag)
    print("RESULT w2_checksum", round(float(w2[0].sum()), 4))
    print("RESULT replicas_in_sync", bool(np.allclose(w2, w2[0])))


if __name__ == "__main__":
    main()
