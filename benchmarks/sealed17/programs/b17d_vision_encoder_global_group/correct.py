# DP-attention VLM server: the vision tower reduces over the DP rank's own attention-TP group, so only that rank needs to run it
# Source: https://github.com/sgl-project/sglang/issues/36802
# Written for the mcjax sealed17 evaluation (not copied); run as 2 processes by benchmarks/sealed17/run_pair.py.
import os
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class ModelConfig:
    hidden: int = 8
    patch_dim: int = 4
    # DP rank 0 receives the request with an image, DP rank 1 a text-only request
    requests: dict = field(default_factory=lambda: {0: {"tokens": 5, "image_patches": 3},
                                                     1: {"tokens": 5, "image_patches": 0}})


def vision_tower(patches, w_patch):
    # row-parallel projection: the partial sums of every shard are all-reduced
    return jnp.sum(jnp.tanh(patches @ w_patch), axis=0)


def lm_mlp(x, w):
    return jnp.sum(jax.nn.silu(x @ w))


class VisionLanguageWorker:
    def __init__(self, cfg, rank):
        self.cfg = cfg
        self.rank = rank
        self.global_mesh = Mesh(np.array(jax.devices()), ("tp",))
        self.attn_tp_mesh = Mesh(np.array(jax.local_devices()), ("tp",))
        rng = np.random.default_rng(7)
        self.w_patch = jnp.asarray(rng.standard_normal((cfg.patch_dim, cfg.hidden)).astype(np.float32))
        self.w_mlp = jnp.asarray(rng.standard_normal((cfg.hidden, cfg.hidden)).astype(np.float32) / 4)
        self.encode = jax.jit(vision_tower)
        self.mlp = jax.jit(lm_mlp)

    def encode_images(self, num_patches):
        patches = np.full((num_patches, self.cfg.patch_dim), 0.25, np.float32)
        patches *= np.arange(1, num_patches + 1, dtype=np.float32)[:, None]
        group = self.attn_tp_mesh
        sharding = NamedSharding(group, P("tp", None))
        if group is self.global_mesh:
            x = jax.make_array_from_process_local_data(sharding, patches)
        else:
            x = jax.device_put(patches, sharding)
        return np.asarray(jax.device_get(self.encode(x, self.w_patch)))

    def forward(self, req):
        emb = np.zeros((req["tokens"], self.cfg.hidden), np.float32)
        emb += np.arange(req["tokens"], dtype=np.float32)[:, None] / 10.0
        if req["image_patches"] > 0:
            emb[0] += self.encode_images(req["image_patches"])
        x = jax.make_array_from_process_local_data(NamedSharding(self.global_mesh, P("tp", None)), emb)
        return float(self.mlp(x, self.w_mlp))


def main():
    cfg = ModelConfig()
    rank = jax.process_index()
    worker = VisionLanguageWorker(cfg, rank)
    out = worker.forward(cfg.requests[rank])
    multihost_utils.sync_global_devices("first batch done")
    print("RESULT lm_out", round(out, 3))


if __name__ == "__main__":
    main()
