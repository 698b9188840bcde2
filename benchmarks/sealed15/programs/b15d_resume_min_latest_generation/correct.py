# Node-local checkpoint recovery: every process restores the newest step that is valid on all nodes
# Source: https://github.com/LMResiliency/lm-resiliency/pull/85
# Written for the mcjax sealed15 evaluation (not copied); run as 2 processes by benchmarks/sealed15/run_pair.py.
import os
import tempfile
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("dp",))
ROWS = NamedSharding(MESH, P("dp"))
REPL = NamedSharding(MESH, P())
RANK = jax.process_index()


@dataclass
class RecoveryConfig:
    root: str = os.path.join(tempfile.gettempdir(), "mcjax_sealed15_b15d_resume_min_latest_generation",
                             os.environ.get("JOB_ID", "local"))
    candidate_steps: tuple = (10, 20, 30)
    dim: int = 4


def shard_path(cfg, step):
    return os.path.join(cfg.root, f"node{RANK}", f"step_{step:06d}.npz")


def simulate_previous_run(cfg):
    """What the node-local tier holds after the crash: node 0 died before writing step 30,
    node 1's step-20 shard was left half-written by an earlier crash."""
    os.makedirs(os.path.dirname(shard_path(cfg, 0)), exist_ok=True)
    for step in cfg.candidate_steps:
        if RANK == 0 and step == 30:
            continue
        path = shard_path(cfg, step)
        if RANK == 1 and step == 20:
            with open(path, "wb") as f:
                f.write(b"PK\x03\x04truncated")
            continue
        w = np.full((cfg.dim,), step / 100.0, np.float32)
        np.savez(path, w=w, step=np.int64(step))


def is_valid(path):
    try:
        with np.load(path) as z:
            return "w" in z and "step" in z
    except Exception:
        return False


def local_generations(cfg):
    return [s for s in cfg.candidate_steps if os.path.exists(shard_path(cfg, s)) and is_valid(shard_path(cfg, s))]


def choose_restore_step(cfg):
    gens = local_generations(cfg)
    mask = np.array([s in gens for s in cfg.candidate_steps])
    all_masks = multihost_utils.process_allgather(mask)          # every node's valid generations
    common = [s for s, ok in zip(cfg.candidate_steps, np.all(all_masks, axis=0)) if ok]
    return max(common)                      # newest generation that every node can load


def load_shard(cfg, step):
    with np.load(shard_path(cfg, step)) as z:
        return z["w"].copy(), int(z["step"])


@jax.jit
def train_step(w, x, y):
    loss, g = jax.value_and_grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
    return w - 0.1 * g, loss


def main():
    cfg = RecoveryConfig()
    simulate_previous_run(cfg)
    multihost_utils.sync_global_devices("node-local tier ready")
    step = choose_restore_step(cfg)
    w_local, restored = load_shard(cfg, step)
    w = jax.device_put(w_local, REPL)
    rng = np.random.default_rng(RANK)
    for _ in range(3):
        x = rng.normal(size=(4, cfg.dim)).astype(np.float32)
        y = x.sum(axis=1)
        w, loss = train_step(w, jax.make_array_from_process_local_data(ROWS, x),
                             jax.make_array_from_process_local_data(ROWS, y))
    print("RESULT restored_step", restored)
    print("RESULT final_loss", round(float(loss), 4))


if __name__ == "__main__":
    main()
