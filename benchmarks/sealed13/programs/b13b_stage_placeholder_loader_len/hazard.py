# Pipeline stages other than the first iterate a placeholder dataset of a hard-coded size instead of the real loader's length
# Source: https://github.com/msr-fiddle/pipedream/issues/80
# Written for the mcjax sealed13 evaluation (not copied); run as 2 processes by benchmarks/sealed13/run_pair.py.
import os
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

FEAT, BATCH, LR = 6, 4, 0.05
REAL_NUM_SAMPLES = 50
SYNTHETIC_NUM_SAMPLES = 40  # placeholder size for stages that never read inputs
MESH = Mesh(np.array(jax.devices()), ("stage",))
STAGE_MAP = {0: [0], 1: [1]}  # stage -> processes


class RealDataset:
    def __init__(self, n):
        rng = np.random.default_rng(9)
        self.x = rng.normal(size=(n, FEAT)).astype(np.float32)
        self.y = np.tanh(self.x[:, :3].sum(axis=1)).astype(np.float32)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


class SyntheticDataset:
    """Later stages receive activations from the previous stage; their loader only paces the loop."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return np.zeros((FEAT,), np.float32), np.float32(0.0)


def data_loader(dataset, batch_size):  # drop_last=True
    for s in range(0, len(dataset) - batch_size + 1, batch_size):
        items = [dataset[i] for i in range(s, s + batch_size)]
        yield np.stack([a for a, _ in items]), np.stack([b for _, b in items])


@partial(jax.shard_map, mesh=MESH, in_specs=(P("stage"), P("stage"), P("stage")), out_specs=P())
def pipeline_loss(params, x, y):
    stage = jax.lax.axis_index("stage")
    h = jnp.tanh(x[0] @ params[0])  # stage 0: first layer on the real inputs
    h, yy = jax.lax.ppermute((h, y[0]), "stage", [(0, 1), (1, 0)])  # activations and labels move on
    out = (h @ params[0]).sum(axis=-1)  # stage 1: second layer
    local = jnp.where(stage == 1, jnp.mean((out - yy) ** 2), 0.0)
    return jax.lax.psum(local, "stage")


@jax.jit
def train_step(params, x, y):
    loss, g = jax.value_and_grad(pipeline_loss)(params, x, y)
    return params - LR * g, loss


def main():
    stage = next(s for s, procs in STAGE_MAP.items() if jax.process_index() in procs)
    if stage == 0:
        dataset = RealDataset(REAL_NUM_SAMPLES)
    else:
        dataset = SyntheticDataset(SYNTHETIC_NUM_SAMPLES)
    sharding = NamedSharding(MESH, P("stage"))
    init = np.random.default_rng(0).normal(scale=0.3, size=(len(STAGE_MAP), FEAT, FEAT)).astype(np.float32)
    params = jax.make_array_from_callback(init.shape, sharding, lambda idx: init[idx])
    steps, loss = 0, None
    for bx, by in data_loader(dataset, BATCH):
        x = jax.make_array_from_process_local_data(sharding, bx[None])
        y = jax.make_array_from_process_local_data(sharding, by[None])
        params, loss = train_step(params, x, y)
        steps += 1
    print("RESULT steps", steps)
    print("RESULT loss", round(float(loss), 5))


main()
