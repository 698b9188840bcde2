# VALL-E trainer: one rank exhausts its bucketed loader first and enters the validation reduce
# Source: https://github.com/lifeiteng/vall-e/pull/93
# Port to multi-controller JAX of the DDP hang fixed there; written for the mcjax sealed7 set.
import os
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("dp",))
DATA = NamedSharding(MESH, P("dp"))


@dataclass
class Params:
    max_duration: float = 12.0
    valid_interval: int = 1000
    num_epochs: int = 1
    lr: float = 0.002


class DynamicBucketingSampler:
    """Packs cuts of this rank's shard into batches of at most max_duration seconds."""

    def __init__(self, durations: np.ndarray, max_duration: float):
        self.durations = durations
        self.max_duration = max_duration

    def __iter__(self):
        batch, total = [], 0.0
        for i, d in enumerate(self.durations):
            if batch and total + d > self.max_duration:
                yield np.array(batch)
                batch, total = [], 0.0
            batch.append(i)
            total += d
        if batch:
            yield np.array(batch)


@dataclass
class MetricsTracker:
    values: dict = field(default_factory=dict)

    def add(self, key: str, value: float) -> None:
        self.values[key] = self.values.get(key, 0.0) + value

    def reduce(self) -> dict:
        keys = sorted(self.values)
        local = np.array([self.values[k] for k in keys], np.float32)
        summed = multihost_utils.process_allgather(local).sum(axis=0)
        return dict(zip(keys, summed.tolist()))


@jax.jit
def train_step(w, x):
    loss, g = jax.value_and_grad(lambda v: jnp.mean((x @ v - 1.0) ** 2))(w)
    return w - 0.002 * g, loss


def to_global(batch_ids: np.ndarray, durations: np.ndarray):
    feats = np.stack([np.full((4,), durations[i], np.float32) for i in batch_ids[:2]])
    if len(feats) < 2:
        feats = np.concatenate([feats, feats])
    return jax.make_array_from_process_local_data(DATA, feats)


def compute_validation_loss(w, valid_feats) -> dict:
    tracker = MetricsTracker()
    tracker.add("loss", float(jnp.mean((valid_feats @ w - 1.0) ** 2)))
    tracker.add("frames", float(valid_feats.shape[0]))
    return tracker.reduce()


def train_one_epoch(params, w, train_dl, durations, valid_feats):
    tot_loss = MetricsTracker()
    for batch_idx, batch in enumerate(train_dl):
        x = to_global(batch, durations)
        w, loss = train_step(w, x)
        tot_loss.add("loss", float(loss))
        if (batch_idx + 1) % params.valid_interval == 0:
            compute_validation_loss(w, valid_feats)
    valid = compute_validation_loss(w, valid_feats)
    return w, tot_loss, valid


params = Params()
rng = np.random.default_rng(1234 + jax.process_index())  # this rank's shard of the cut set
durations = rng.uniform(1.0, 6.0, size=40).round(2)
train_dl = DynamicBucketingSampler(durations, params.max_duration)
valid_feats = jnp.full((2, 4), 0.5, jnp.float32)
w = jnp.zeros((4, 1), jnp.float32)
for epoch in range(params.num_epochs):
    w, tot_loss, valid = train_one_epoch(params, w, train_dl, durations, valid_feats)
print("RESULT", round(float(jnp.sum(w)), 5), round(valid["loss"], 5), valid["frames"])
