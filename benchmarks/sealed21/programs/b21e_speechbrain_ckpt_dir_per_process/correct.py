import os
import pathlib
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CKPT_PREFIX = "CKPT"
METAFNAME = f"{CKPT_PREFIX}.yaml"


def if_main_process():
    return jax.process_index() == 0


class LinearBrain:
    def __init__(self, features=4, lr=0.1):
        self.params = {"w": jnp.zeros(features), "b": jnp.zeros(())}
        self.lr = lr
        self._grad = jax.jit(jax.value_and_grad(self._loss))

    @staticmethod
    def _loss(params, x, y):
        return jnp.mean((x @ params["w"] + params["b"] - y) ** 2)

    def fit_batch(self, x, y):
        loss, grads = self._grad(self.params, x, y)
        flat, tree = jax.tree_util.tree_flatten(grads)
        avg = [np.asarray(multihost_utils.process_allgather(np.asarray(g))).mean(0) for g in flat]
        grads = jax.tree_util.tree_unflatten(tree, avg)
        self.params = jax.tree_util.tree_map(lambda p, g: p - self.lr * g, self.params, grads)
        return float(loss)

    def save(self, path):
        np.savez(path, **{k: np.asarray(v) for k, v in self.params.items()})

    def load(self, path):
        with np.load(path) as f:
            self.params = {k: jnp.asarray(f[k]) for k in f.files}


class Checkpointer:
    def __init__(self, checkpoints_dir, recoverables):
        self.checkpoints_dir = pathlib.Path(checkpoints_dir)
        self.checkpoints_dir.mkdir(parents=True, exist_ok=True)
        self.recoverables = recoverables

    def _new_checkpoint_dirpath(self):
        stamp = time.strftime("%Y-%m-%d+%H-%M-%S")
        suffix_num = 0
        while (self.checkpoints_dir / f"{CKPT_PREFIX}+{stamp}+{suffix_num:02d}").exists():
            suffix_num += 1
        return self.checkpoints_dir / f"{CKPT_PREFIX}+{stamp}+{suffix_num:02d}"

    def save_checkpoint(self, meta):
        if if_main_process():
            ckpt_dir = self._new_checkpoint_dirpath()
            os.makedirs(ckpt_dir)
            (ckpt_dir / METAFNAME).write_text("".join(f"{k}: {v}\n" for k, v in meta.items()))
            encoded = np.frombuffer(str(ckpt_dir).encode().ljust(512), dtype=np.uint8)
        else:
            encoded = np.zeros(512, dtype=np.uint8)
        encoded = np.asarray(multihost_utils.broadcast_one_to_all(encoded))
        ckpt_dir = pathlib.Path(encoded.tobytes().decode().strip())
        rank = jax.process_index()
        for name, obj in self.recoverables.items():
            obj.save(ckpt_dir / f"{name}.rank{rank}.npz")
        multihost_utils.sync_global_devices("checkpoint saved")
        return ckpt_dir

    def find_checkpoints(self):
        return sorted(p for p in self.checkpoints_dir.iterdir() if p.name.startswith(CKPT_PREFIX))

    def recover_if_possible(self):
        ckpts = self.find_checkpoints()
        if not ckpts:
            return None
        latest = ckpts[-1]
        rank = jax.process_index()
        for name, obj in self.recoverables.items():
            obj.load(latest / f"{name}.rank{rank}.npz")
        return latest


def make_data(rank, n_batches=6, batch=16, features=4):
    rng = np.random.default_rng(100 + rank)
    x = rng.normal(size=(n_batches, batch, features)).astype(np.float32)
    y = (x @ np.arange(1, features + 1, dtype=np.float32) + 0.5).astype(np.float32)
    return list(zip(x, y))


def main():
    rank = jax.process_index()
    save_root = pathlib.Path(tempfile.gettempdir()) / f"sb_results_{os.environ.get('JOB_ID', 'local')}" / "save"
    brain = LinearBrain()
    checkpointer = Checkpointer(save_root, {"model": brain})
    data = make_data(rank)
    for epoch in range(2):
        losses = [brain.fit_batch(x, y) for x, y in data]
        ckpt = checkpointer.save_checkpoint({"epoch": epoch, "loss": round(float(np.mean(losses)), 4)})
        print(f"rank {rank}: epoch {epoch} saved {ckpt.name}")

    restored = LinearBrain()
    checkpointer.recoverables = {"model": restored}
    latest = checkpointer.recover_if_possible()
    w = np.asarray(multihost_utils.process_allgather(np.asarray(restored.params["w"])))
    print("RESULT checkpoints", len(checkpointer.find_checkpoints()))
    print("RESULT recovered_from", latest.name.rsplit("+", 1)[-1])
    print("RESULT weights", np.round(w[0], 4).tolist())
    print("RESULT replicas_in_sync", bool(np.allclose(w, w[0])))


if __name__ == "__main__":
    main()
