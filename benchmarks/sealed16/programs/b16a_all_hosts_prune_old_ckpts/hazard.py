# Flax-style save_checkpoint: every process writes the main checkpoint file and prunes old ones, not only process 0
# Source: https://github.com/google/flax/commit/3508ecf41e85dbc1331382fc1ae465ee7a9f0c1d
# Written for the mcjax sealed16 evaluation (not copied); run as 2 processes by benchmarks/sealed16/run_pair.py.
import glob
import os
import pickle
import re
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

PREFIX = "checkpoint_"


def natural_sort(paths):
    return sorted(paths, key=lambda p: [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", p)])


def _save_main_checkpoint_file(payload, ckpt_tmp_path, ckpt_path, checkpoint_files, keep):
    if ckpt_path not in checkpoint_files:
        checkpoint_files = checkpoint_files + [ckpt_path]
    checkpoint_files = natural_sort(checkpoint_files)
    with open(ckpt_tmp_path, "wb") as fp:
        fp.write(payload)
    os.replace(ckpt_tmp_path, ckpt_path)
    if len(checkpoint_files) > keep:
        for path in checkpoint_files[:-keep]:
            os.remove(path)


def save_checkpoint(ckpt_dir, target, step, keep=2):
    ckpt_tmp_path = os.path.join(ckpt_dir, f"{PREFIX}tmp")
    ckpt_path = os.path.join(ckpt_dir, f"{PREFIX}{step}")
    checkpoint_files = [p for p in glob.glob(os.path.join(ckpt_dir, PREFIX + "*")) if not p.endswith("tmp")]
    # Sharded leaves are gathered to the host before serialization (no per-array writer here).
    host_target = {k: np.asarray(multihost_utils.process_allgather(v, tiled=True)) for k, v in sorted(target.items())}
    payload = pickle.dumps({"step": step, "target": host_target})
    _save_main_checkpoint_file(payload, ckpt_tmp_path, ckpt_path, checkpoint_files, keep)
    multihost_utils.sync_global_devices(f"save_checkpoint_{step}")
    return ckpt_path


def restore_latest(ckpt_dir):
    files = natural_sort(p for p in glob.glob(os.path.join(ckpt_dir, PREFIX + "*")) if not p.endswith("tmp"))
    with open(files[-1], "rb") as fp:
        return pickle.load(fp), [os.path.basename(f) for f in files]


@jax.jit
def train_step(params, x, y):
    def loss_fn(p):
        h = jnp.tanh(x @ p["w1"])
        return jnp.mean((h @ p["w2"] - y) ** 2)
    loss, grads = jax.value_and_grad(loss_fn)(params)
    return jax.tree.map(lambda p, g: p - 0.05 * g, params, grads), loss


def main():
    ckpt_dir = os.path.join(tempfile.gettempdir(), "mcjax_sealed16_all_hosts_prune_old_ckpts",
                            os.environ.get("JOB_ID", "0"))
    os.makedirs(ckpt_dir, exist_ok=True)
    mesh = Mesh(np.array(jax.devices()), ("data",))
    rep, batch = NamedSharding(mesh, P()), NamedSharding(mesh, P("data"))
    init = np.random.default_rng(0)
    params = {"w1": jax.device_put(init.normal(size=(5, 4)).astype(np.float32) * 0.3, NamedSharding(mesh, P(None, "data"))),
              "w2": jax.device_put(init.normal(size=(4,)).astype(np.float32) * 0.3, rep)}
    data = np.random.default_rng(100 + jax.process_index())
    for step in range(1, 7):
        x_local = data.normal(size=(3, 5)).astype(np.float32)
        y_local = np.sin(x_local.sum(axis=1)).astype(np.float32)
        params, loss = train_step(params, jax.make_array_from_process_local_data(batch, x_local),
                                  jax.make_array_from_process_local_data(batch, y_local))
        if step % 2 == 0:
            save_checkpoint(ckpt_dir, params, step)
    restored, kept = restore_latest(ckpt_dir)
    print("RESULT kept_checkpoints", kept)
    print("RESULT restored_step", restored["step"])
    print("RESULT final_loss", round(float(loss), 5))
    print("RESULT w2", np.round(restored["target"]["w2"], 5).tolist())


if __name__ == "__main__":
    main()
