# Video model: on the first frame of each clip the SyncBN refinement module is not called; clip boundaries differ per process
# Source: https://github.com/pytorch/pytorch/issues/44957
# Written for the mcjax sealed10 evaluation (not copied); run as 2 processes by benchmarks/sealed10/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class VideoConfig:
    channels: int = 3
    frames_per_step: int = 2      # each process feeds 2 frames (rows) per step
    steps: int = 6                # synchronous steps per epoch (same on every process)
    clip_lengths: tuple = ((3, 3), (2, 4))  # clip lengths (in steps) of each process's videos


MESH = Mesh(np.array(jax.devices()), ("data",))
ROWS = NamedSharding(MESH, P("data"))


@jax.jit
def model_a(x):
    """Per-frame encoder producing a probability distribution over channels."""
    return jax.nn.softmax(2.0 * x, axis=-1)


@jax.jit
def model_b(stuff):
    """SyncBatchNorm over the global batch: statistics are reduced across all processes."""
    mean = jnp.mean(stuff, axis=0, keepdims=True)
    var = jnp.var(stuff, axis=0, keepdims=True)
    return (stuff - mean) / jnp.sqrt(var + 1e-5)


class VideoModel:
    def __init__(self):
        self.iter = 0            # frame index inside the current clip

    def start_clip(self):
        self.iter = 0

    def forward(self, x):
        if self.iter != 0:
            stuff = model_a(x)
            out = model_b(stuff)
        else:
            out = model_a(x)     # first frame: no temporal refinement
        self.iter += 1
        return out


def frames(cfg, clip, t):
    rng = np.random.default_rng(1000 * jax.process_index() + 10 * clip + t)
    return rng.normal(size=(cfg.frames_per_step, cfg.channels)).astype(np.float32)


def frame_schedule(cfg):
    """(clip, frame) pairs this process streams, one per synchronous step."""
    sched = [(c, t) for c, n in enumerate(cfg.clip_lengths[jax.process_index()]) for t in range(n)]
    return sched[: cfg.steps]


def main():
    cfg = VideoConfig()
    model = VideoModel()
    checksum = 0.0
    schedule = frame_schedule(cfg)
    for step in range(cfg.steps):
        clip, t = schedule[step]
        if t == 0:
            model.start_clip()
        x = jax.make_array_from_process_local_data(ROWS, frames(cfg, clip, t))
        out = model.forward(x)
        checksum += float(jnp.sum(jnp.abs(out)))   # reduction over the global output
    multihost_utils.sync_global_devices("epoch_end")
    print("RESULT steps", cfg.steps)
    print("RESULT checksum", f"{checksum:.4f}")


if __name__ == "__main__":
    main()
