import logging
import os
import pickle
import shutil
import tempfile
from pathlib import Path
from typing import Any, Dict

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))
log = logging.getLogger("olmo.checkpoint")
D_MODEL = 8


def get_global_rank() -> int:
    return jax.process_index()


def barrier():
    multihost_utils.sync_global_devices("olmo_barrier")


def load_state_dict(load_path, fname, local_cache=None) -> Dict[str, Any]:
    with open(Path(load_path) / fname, "rb") as f:
        return pickle.load(f)


def load_model_and_optim_state(load_path, mesh):
    full = np.load(Path(load_path) / "model" / "weights.npy")
    sharding = NamedSharding(mesh, P("fsdp"))
    return jax.make_array_from_callback(full.shape, sharding, lambda idx: full[idx])


class OlmoCoreCheckpointer:
    def save_checkpoint(self, dir, params, trainer_state):
        dir = Path(dir)
        full = np.asarray(multihost_utils.process_allgather(params, tiled=True))
        if get_global_rank() == 0:
            (dir / "model").mkdir(parents=True, exist_ok=True)
            np.save(dir / "model" / "weights.npy", full)
        (dir / "train").mkdir(parents=True, exist_ok=True)
        with open(dir / "train" / f"rank{get_global_rank()}.pt", "wb") as f:
            pickle.dump(trainer_state, f)
        barrier()

    def restore_checkpoint(self, load_path, mesh, *, local_cache=None):
        log.info("Loading model and optimizer state...")
        params = load_model_and_optim_state(load_path, mesh)

        log.info("Loading trainer state...")
        trainer_state = load_state_dict(load_path, f"train/rank{get_global_rank()}.pt", local_cache=local_cache)

        barrier()
        return params, trainer_state


def write_single_node_checkpoint(path):
    """Checkpoint written earlier by a single-process run."""
    if get_global_rank() == 0:
        (Path(path) / "model").mkdir(parents=True, exist_ok=True)
        (Path(path) / "train").mkdir(parents=True, exist_ok=True)
        np.save(Path(path) / "model" / "weights.npy", np.linspace(0.5, -0.5, D_MODEL).astype(np.float32))
        with open(Path(path) / "train" / "rank0.pt", "wb") as f:
            pickle.dump({"global_step": 1000, "global_train_examples_seen_this_epoch": 64000, "epoch": 0}, f)
    barrier()


def train_steps(params, trainer_state, mesh, steps=3, lr=0.05):
    step_fn = jax.jit(lambda w, x: w - lr * jax.grad(lambda w: jnp.mean((x @ w - 1.0) ** 2))(w),
                      out_shardings=NamedSharding(mesh, P("fsdp")))
    rng = np.random.default_rng(trainer_state["global_step"] + get_global_rank())
    for _ in range(steps):
        local_x = rng.normal(size=(4, D_MODEL)).astype(np.float32)
        x = jax.make_array_from_process_local_data(NamedSharding(mesh, P("fsdp")), local_x)
        params = step_fn(params, x)
        trainer_state["global_step"] += 1
    return params, trainer_state


def main():
    mesh = Mesh(np.array(jax.devices()), ("fsdp",))
    root = Path(tempfile.gettempdir()) / f"olmo_ckpt_{os.environ.get('JOB_ID', 'local')}"
    load_path = root / "step1000-unsharded"
    write_single_node_checkpoint(load_path)

    checkpointer = OlmoCoreCheckpointer()
    params, trainer_state = checkpointer.restore_checkpoint(load_path, mesh)
    params, trainer_state = train_steps(params, trainer_state, mesh)
    checkpointer.save_checkpoint(root / f"step{trainer_state['global_step']}", params, trainer_state)

    print("RESULT global_step", trainer_state["global_step"])
    print("RESULT examples_seen", trainer_state["global_train_examples_seen_this_epoch"])
    print("RESULT params", np.round(np.asarray(multihost_utils.process_allgather(params, tiled=True)), 4).tolist())
    barrier()
    if get_global_rank() == 0:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
