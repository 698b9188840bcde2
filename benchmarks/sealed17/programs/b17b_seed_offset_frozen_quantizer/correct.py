# SpeechBrain-style BEST-RQ setup: one seed on every process, so the frozen quantizer (never broadcast) is identical everywhere
# Source: https://github.com/speechbrain/speechbrain/pull/2814
# Written for the mcjax sealed17 evaluation (not copied); run as 2 processes by benchmarks/sealed17/run_pair.py.
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
class HParams:
    seed: int = 1986
    feat_dim: int = 8
    proj_dim: int = 4
    codebook_size: int = 5
    lr: float = 0.1
    steps: int = 6


def seed_everything(hp):
    # same seed on every process: modules that DDP never broadcasts are still initialised identically
    return np.random.default_rng(hp.seed)


class RandomProjectionQuantizer:
    """Frozen BEST-RQ target generator: no trainable parameters, so the DDP wrapper never syncs it."""

    def __init__(self, rng, hp):
        self.proj = rng.normal(size=(hp.feat_dim, hp.proj_dim)).astype(np.float32)
        self.codebook = rng.normal(size=(hp.codebook_size, hp.proj_dim)).astype(np.float32)


def init_trainable(rng, hp):
    return {"enc": rng.normal(size=(hp.feat_dim, hp.codebook_size)).astype(np.float32) * 0.2}


def ddp_broadcast_trainable(params):
    # DistributedDataParallel's constructor: broadcast the trainable state from rank 0
    return multihost_utils.broadcast_one_to_all(params)


def quantize(proj, codebook, x):
    z = x @ proj
    d = jnp.sum((z[:, None, :] - codebook[None]) ** 2, axis=-1)
    return jnp.argmin(d, axis=-1)


@jax.jit
def train_step(params, proj, codebook, x):
    targets = quantize(proj, codebook, x)
    def loss_fn(p):
        logits = x @ p["enc"]
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), targets[:, None], axis=1))
    loss, g = jax.value_and_grad(loss_fn)(params)
    return jax.tree.map(lambda a, b: a - 0.1 * b, params, g), loss


def main():
    hp = HParams()
    mesh = Mesh(np.array(jax.devices()), ("data",))
    rep, batch = NamedSharding(mesh, P()), NamedSharding(mesh, P("data"))
    rng = seed_everything(hp)
    quantizer = RandomProjectionQuantizer(rng, hp)
    params = ddp_broadcast_trainable(init_trainable(rng, hp))
    params = jax.tree.map(lambda a: jax.device_put(np.asarray(a), rep), params)
    proj = jax.device_put(quantizer.proj, rep)
    codebook = jax.device_put(quantizer.codebook, rep)
    data_rng = np.random.default_rng(7)
    corpus = data_rng.normal(size=(hp.steps, 2 * 6, hp.feat_dim)).astype(np.float32)
    lo = jax.process_index() * 6
    for step in range(hp.steps):
        x = jax.make_array_from_process_local_data(batch, corpus[step, lo:lo + 6])
        params, loss = train_step(params, proj, codebook, x)
    probe = jax.device_put(corpus[0, :4], rep)
    codes = np.asarray(jax.jit(quantize)(proj, codebook, probe))
    print("RESULT final_loss", round(float(loss), 4))
    print("RESULT probe_targets", codes.tolist())


if __name__ == "__main__":
    main()
