# A DLRover-style flash checkpoint: every rank copies its state into the node's shared memory
# often (cheap), and the state is persisted to shared storage less often. After the elastic agent
# relaunches the workers, each rank restores from shared memory when the node still holds a
# snapshot and falls back to the storage checkpoint otherwise, then training resumes.
import json
import os
import shutil
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

JOB_DIR = os.path.join(tempfile.gettempdir(), f"dlrover_{os.environ.get('JOB_ID', 'job')}")
MAX_STEPS, MEMORY_INTERVAL, STORAGE_INTERVAL = 20, 5, 10


class SharedMemoryHandler:
    """Stands in for the node's /dev/shm segment owned by the local agent."""

    def __init__(self, node_rank):
        self.path = os.path.join(JOB_DIR, f"shm_node{node_rank}")

    def save(self, step, state):
        os.makedirs(self.path, exist_ok=True)
        np.savez(os.path.join(self.path, "state.npz"), **state)
        with open(os.path.join(self.path, "meta.json"), "w") as f:
            json.dump({"step": step}, f)

    def load(self):
        meta = os.path.join(self.path, "meta.json")
        if not os.path.exists(meta):
            return -1, None
        with open(meta) as f:
            step = json.load(f)["step"]
        return step, dict(np.load(os.path.join(self.path, "state.npz")))

    def unlink(self):
        shutil.rmtree(self.path, ignore_errors=True)


class FlashCheckpointer:
    def __init__(self, node_rank):
        self.shm = SharedMemoryHandler(node_rank)
        self.storage = os.path.join(JOB_DIR, "storage")

    def save_checkpoint(self, step, state, to_storage):
        self.shm.save(step, state)
        if to_storage and jax.process_index() == 0:
            os.makedirs(self.storage, exist_ok=True)
            np.savez(os.path.join(self.storage, f"checkpoint-{step}.npz"), **state)
        if to_storage:
            multihost_utils.sync_global_devices(f"storage {step}")

    def _load_from_storage(self):
        files = sorted(os.listdir(self.storage), key=lambda n: int(n.split("-")[1].split(".")[0]))
        step = int(files[-1].split("-")[1].split(".")[0])
        return step, dict(np.load(os.path.join(self.storage, files[-1])))

    def load_checkpoint(self):
        step, state = self.shm.load()
        steps = np.asarray(multihost_utils.process_allgather(np.array([step], np.int32))).ravel()
        if state is not None and (steps == step).all():
            return step, state
        return self._load_from_storage()


@jax.jit
def grad_fn(w, x, y):
    return jax.grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)


def train(ckpt, state, start_step, rank, stop_at=None):
    rng = np.random.default_rng(7 + rank)
    for step in range(start_step, MAX_STEPS):
        if stop_at is not None and step == stop_at:
            return step
        x = rng.normal(size=(8, 4)).astype(np.float32)
        y = (x @ np.arange(1, 5, dtype=np.float32))[:, None]
        g = np.asarray(grad_fn(state["w"], x, y))
        state["w"] = state["w"] - 0.05 * np.asarray(multihost_utils.process_allgather(g)).mean(0)
        done = step + 1
        if done % MEMORY_INTERVAL == 0:
            ckpt.save_checkpoint(done, state, to_storage=done % STORAGE_INTERVAL == 0)
    return MAX_STEPS


def main():
    rank = jax.process_index()
    ckpt = FlashCheckpointer(node_rank=rank)
    state = {"w": np.zeros((4, 1), np.float32)}
    train(ckpt, state, 0, rank, stop_at=17)
    # The agent of node 1 is relaunched on a replacement host: its shared memory starts empty.
    replaced_nodes = [jax.process_count() - 1]
    if rank in replaced_nodes:
        ckpt.shm.unlink()
    multihost_utils.sync_global_devices("relaunch")

    step, state = ckpt.load_checkpoint()
    print(f"rank {rank}: resumed from step {step}")
    train(ckpt, state, step, rank)
    w = np.asarray(multihost_utils.process_allgather(state["w"].ravel()))
    print("RESULT final_w", np.round(w[0], 4).tolist())
    print("RESULT replicas_in_sync", bool(np.allclose(w, w[0])))


if __name__ == "__main__":
    main()
