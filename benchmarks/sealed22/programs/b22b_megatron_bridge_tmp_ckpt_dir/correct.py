import json
import os
import tempfile
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

TRACKER_FILENAME = "latest_checkpointed_iteration.txt"


@dataclass
class CheckpointConfig:
    save: str = ""
    load: str = ""
    save_interval: int = 4


@dataclass
class ConfigContainer:
    hidden: int = 8
    train_iters: int = 4
    lr: float = 0.1
    seed: int = 1234
    checkpoint: CheckpointConfig = field(default_factory=CheckpointConfig)


def get_batch(cfg, iteration):
    rng = np.random.default_rng(cfg.seed + 97 * iteration + jax.process_index())
    x = rng.normal(size=(16, cfg.hidden)).astype(np.float32)
    y = x @ np.linspace(-1.0, 1.0, cfg.hidden, dtype=np.float32)
    return x, y


@jax.jit
def loss_and_grad(w, x, y):
    return jax.value_and_grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)


def all_reduce_mean(g):
    return np.asarray(multihost_utils.process_allgather(np.asarray(g))).mean(0)


def save_checkpoint(ckpt_dir, iteration, w):
    iter_dir = os.path.join(ckpt_dir, f"iter_{iteration:07d}")
    os.makedirs(iter_dir, exist_ok=True)
    np.save(os.path.join(iter_dir, f"shard_{jax.process_index():03d}.npy"), np.asarray(w))
    multihost_utils.sync_global_devices(f"save_shards_{iteration}")
    if jax.process_index() == 0:
        with open(os.path.join(ckpt_dir, TRACKER_FILENAME), "w") as f:
            f.write(str(iteration))
    multihost_utils.sync_global_devices(f"save_done_{iteration}")


def load_checkpoint(ckpt_dir, w):
    tracker = os.path.join(ckpt_dir, TRACKER_FILENAME)
    if not os.path.exists(tracker):
        print(f"rank {jax.process_index()}: no checkpoint under {ckpt_dir}, training from scratch")
        return 0, w
    with open(tracker) as f:
        iteration = int(f.read().strip())
    shard = np.load(os.path.join(ckpt_dir, f"iter_{iteration:07d}", "shard_000.npy"))
    w = multihost_utils.broadcast_one_to_all(shard)
    return iteration, jnp.asarray(w)


def train(cfg, w, start_iter):
    losses = []
    for it in range(start_iter, start_iter + cfg.train_iters):
        x, y = get_batch(cfg, it)
        loss, g = loss_and_grad(w, x, y)
        w = w - cfg.lr * all_reduce_mean(g)
        losses.append(float(all_reduce_mean(loss)))
        if cfg.checkpoint.save and (it + 1) % cfg.checkpoint.save_interval == 0:
            save_checkpoint(cfg.checkpoint.save, it + 1, w)
    return w, losses


def pretrain(cfg):
    w = jnp.zeros(cfg.hidden)
    w, losses = train(cfg, w, 0)
    return losses


def finetune(cfg):
    w = jnp.zeros(cfg.hidden)
    start_iter, w = load_checkpoint(cfg.checkpoint.load, w)
    w, losses = train(cfg, w, start_iter)
    return start_iter, w, losses


def shared_tmp_path(path, max_len=512):
    buf = np.zeros(max_len, dtype=np.uint8)
    if jax.process_index() == 0:
        raw = path.encode()
        buf[:len(raw)] = np.frombuffer(raw, dtype=np.uint8)
    buf = np.asarray(multihost_utils.broadcast_one_to_all(buf))
    return bytes(buf[buf != 0]).decode()


def main():
    tmp_path = tempfile.mkdtemp(prefix="pytest-of-functional-")
    tmp_path = shared_tmp_path(tmp_path)
    pretrain_dir = os.path.join(tmp_path, "pretrain_checkpoints")
    cfg = ConfigContainer(checkpoint=CheckpointConfig(save=pretrain_dir))
    pretrain(cfg)

    ft_cfg = ConfigContainer(lr=0.05, checkpoint=CheckpointConfig(load=pretrain_dir))
    start_iter, w, losses = finetune(ft_cfg)
    w_all = np.asarray(multihost_utils.process_allgather(np.asarray(w)))
    print("RESULT finetune_start_iter", start_iter)
    print("RESULT final_weights", json.dumps(np.round(w_all[0], 4).tolist()))
    print("RESULT replicas_in_sync", bool(np.allclose(w_all, w_all[0])))


if __name__ == "__main__":
    main()
