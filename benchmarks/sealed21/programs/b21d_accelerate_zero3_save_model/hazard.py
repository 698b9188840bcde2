# An Accelerate-style training script with ZeRO-3-like sharded parameters: every process keeps one shard
# of each parameter, the full weights are gathered for the forward pass, gradients are reduced, and the
# model is saved periodically with `save_model`, which consolidates the 16-bit weights on the main
# process (the gather itself is a collective every process takes part in).
import os
import shutil
import tempfile
from collections import OrderedDict

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class ShardedModel:
    def __init__(self, shapes, rank, world, seed=0):
        self.rank, self.world = rank, world
        rng = np.random.default_rng(seed)
        full = {k: rng.normal(size=s).astype(np.float32) * 0.1 for k, s in shapes.items()}
        self.shards = {k: np.array_split(v.ravel(), world)[rank] for k, v in full.items()}
        self.shapes = shapes

    def gather_full(self):
        out = {}
        for k, shard in self.shards.items():
            parts = np.asarray(multihost_utils.process_allgather(shard))
            out[k] = parts.reshape(-1)[: int(np.prod(self.shapes[k]))].reshape(self.shapes[k])
        return out

    def _zero3_consolidated_16bit_state_dict(self):
        full = self.gather_full()
        if self.rank != 0:
            return None
        return OrderedDict((k, v.astype(np.float16)) for k, v in full.items())


class Accelerator:
    def __init__(self):
        self.process_index = jax.process_index()
        self.is_main_process = self.process_index == 0

    def get_state_dict(self, model):
        return model._zero3_consolidated_16bit_state_dict()

    def save_model(self, model, save_directory, safe_serialization=True):
        state_dict = self.get_state_dict(model)
        if safe_serialization:
            state_dict = clean_state_dict_for_safetensors(state_dict)
        if self.is_main_process:
            os.makedirs(save_directory, exist_ok=True)
            np.savez(os.path.join(save_directory, "model.npz"), **state_dict)

    def reduce(self, x):
        return np.asarray(multihost_utils.process_allgather(np.asarray(x))).mean(0)


def clean_state_dict_for_safetensors(state_dict):
    ptrs = {}
    for name, tensor in state_dict.items():
        ptrs.setdefault(tensor.ctypes.data, []).append(name)
    return {k: np.ascontiguousarray(v) for k, v in state_dict.items()}


def loss_fn(params, x, y):
    h = jnp.tanh(x @ params["w1"])
    return jnp.mean((h @ params["w2"] - y) ** 2)


def main():
    rank, world = jax.process_index(), jax.process_count()
    accelerator = Accelerator()
    model = ShardedModel({"w1": (6, 8), "w2": (8, 2)}, rank, world)
    grad_fn = jax.jit(jax.value_and_grad(loss_fn))
    rng = np.random.default_rng(10 + rank)
    out_dir = os.path.join(tempfile.gettempdir(), "b21d_zero3_" + os.environ.get("JOB_ID", "job"))
    for step in range(1, 9):
        x = rng.normal(size=(16, 6)).astype(np.float32)
        y = np.stack([x[:, 0] * x[:, 1], x[:, 2]], axis=1)
        params = model.gather_full()
        loss, grads = grad_fn(params, x, y)
        for k, g in grads.items():
            g = accelerator.reduce(g).ravel()
            model.shards[k] = model.shards[k] - 0.5 * np.array_split(g, world)[rank]
        if step % 4 == 0:
            accelerator.save_model(model, os.path.join(out_dir, f"checkpoint-{step}"))
    final = model.gather_full()
    if accelerator.is_main_process:
        shutil.rmtree(out_dir, ignore_errors=True)
    print("RESULT w2", np.round(final["w2"].ravel(), 4).tolist())
    print("RESULT mean_last_loss", round(float(accelerator.reduce(np.float32(loss))), 4))


if __name__ == "__main__":
    main()
