# A LiBai-style trainer: rank 0 writes the model checkpoint (one file per state-dict key) into the
# output directory, which lives on each node's local disk; on resume, the Checkpointer lists the
# keys of the checkpoint directory and loads every tensor as a global (replicated) tensor whose
# value comes from rank 0.
import json
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

JOB = os.environ.get("JOB_ID", "job")


class NodeLocalPathManager:
    """Paths under the output dir resolve to this node's local scratch disk."""

    def __init__(self, node_rank):
        self.root = os.path.join(tempfile.gettempdir(), f"libai_{JOB}", f"node{node_rank}")

    def local(self, path):
        return os.path.join(self.root, path)

    def ls(self, path):
        full = self.local(path)
        return os.listdir(full) if os.path.isdir(full) else []

    def mkdirs(self, path):
        os.makedirs(self.local(path), exist_ok=True)


def broadcast_py_object(obj, src=0):
    payload = np.frombuffer(json.dumps(obj).encode(), np.uint8) if jax.process_index() == src else np.zeros(0, np.uint8)
    size = int(multihost_utils.broadcast_one_to_all(np.array([payload.size], np.int32))[0])
    buf = np.zeros(size, np.uint8)
    buf[:payload.size] = payload
    data = np.asarray(multihost_utils.broadcast_one_to_all(buf)).astype(np.uint8)
    return json.loads(data.tobytes().decode())


class Checkpointer:
    def __init__(self, model, save_dir, path_manager):
        self.model = model
        self.save_dir = save_dir
        self.path_manager = path_manager

    def save(self, name):
        path = os.path.join(self.save_dir, name)
        self.path_manager.mkdirs(path)
        if jax.process_index() == 0:
            for key, value in self.model.state_dict().items():
                np.save(self.path_manager.local(os.path.join(path, key + ".npy")), np.asarray(value))
        multihost_utils.sync_global_devices(f"save {name}")

    def _load_file(self, path):
        data = {}
        keys = sorted(k[:-4] for k in self.path_manager.ls(path))
        keys = broadcast_py_object(keys, src=0)
        shapes = {k: np.shape(v) for k, v in self.model.state_dict().items()}
        for key in keys:
            if jax.process_index() == 0:
                local = np.load(self.path_manager.local(os.path.join(path, key + ".npy")))
            else:
                local = np.zeros(shapes[key], np.float32)
            data[key] = np.asarray(multihost_utils.broadcast_one_to_all(local))
        return data

    def resume_or_load(self, name):
        state = self._load_file(os.path.join(self.save_dir, name))
        self.model.load_state_dict(state)
        return len(state)


class MLP:
    def __init__(self, seed):
        rng = np.random.default_rng(seed)
        self.params = {"fc1.weight": rng.normal(size=(4, 8)).astype(np.float32),
                       "fc1.bias": np.zeros(8, np.float32),
                       "fc2.weight": rng.normal(size=(8, 1)).astype(np.float32)}

    def state_dict(self):
        return dict(self.params)

    def load_state_dict(self, state):
        self.params.update({k: np.asarray(v, np.float32) for k, v in state.items()})


def loss_fn(params, x, y):
    h = jnp.tanh(x @ params["fc1.weight"] + params["fc1.bias"])
    return jnp.mean((h @ params["fc2.weight"] - y) ** 2)


grad_fn = jax.jit(jax.grad(loss_fn))


def train(model, steps, rank, lr=0.05):
    rng = np.random.default_rng(100 + rank)
    for _ in range(steps):
        x = rng.normal(size=(16, 4)).astype(np.float32)
        y = x.sum(1, keepdims=True).astype(np.float32)
        grads = grad_fn({k: jnp.asarray(v) for k, v in model.params.items()}, x, y)
        for k in sorted(grads):
            g = np.asarray(multihost_utils.process_allgather(np.asarray(grads[k]))).mean(0)
            model.params[k] = model.params[k] - lr * g


def main():
    rank = jax.process_index()
    paths = NodeLocalPathManager(node_rank=rank)
    model = MLP(seed=0)
    train(model, 5, rank)
    Checkpointer(model, "output/model", paths).save("model_0000004")

    resumed = MLP(seed=1 + rank)
    loaded = Checkpointer(resumed, "output/model", paths).resume_or_load("model_0000004")
    print(f"rank {rank}: loaded {loaded} tensors")
    train(resumed, 3, rank)
    w = np.asarray(multihost_utils.process_allgather(resumed.params["fc2.weight"].ravel()))
    print("RESULT fc2_weight", np.round(w[0], 4).tolist())
    print("RESULT replicas_in_sync", bool(np.allclose(w, w[0])))


if __name__ == "__main__":
    main()
