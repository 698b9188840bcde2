# Port of a Captum distributed feature-importance bug to multi-controller JAX: the permutation loop
# skips a feature on a process whose batch has fewer than two events for it (nothing to permute),
# but the model forward it skips contains an all-to-all, so that process issues one fewer
# collective than the others.
# Source: https://github.com/meta-pytorch/captum/pull/1877
# Written for the mcjax sealed7 evaluation (not copied); run as 2 processes by benchmarks/sealed7/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

FEATURES = ["age", "clicks", "views", "dwell"]
EVENT_BASED = {"clicks", "views"}
BATCH = 4


class ShardedModel:
  """Forward with an all-to-all across processes (as with sharded embedding tables)."""

  def __init__(self):
    self.mesh = jax.sharding.Mesh(np.array(jax.devices()), ("x",))
    self.sharding = NamedSharding(self.mesh, P("x"))
    self.w = jnp.asarray(np.linspace(-1.0, 1.0, len(FEATURES)), jnp.float32)
    self._fwd = jax.jit(jax.shard_map(self._body, mesh=self.mesh, in_specs=(P(), P("x")),
                                      out_specs=P("x")))

  @staticmethod
  def _body(w, x):
    exchanged = jax.lax.all_to_all(x, "x", 0, 0, tiled=True)
    scores = jnp.tanh(exchanged @ w)
    back = jax.lax.all_to_all(scores[:, None], "x", 0, 0, tiled=True)
    return back[:, 0]

  def forward(self, local_dense):
    x = jax.make_array_from_process_local_data(self.sharding, local_dense)
    out = self._fwd(self.w, x)
    return np.asarray(out.addressable_shards[0].data)


class FeatureImportance:

  def __init__(self, model, seed=0):
    self.model = model
    self.rng = np.random.default_rng(seed)
    self.scores = np.zeros(len(FEATURES), np.float32)

  @staticmethod
  def _dense(batch):
    return np.stack([batch[f] for f in FEATURES], axis=1).astype(np.float32)

  @staticmethod
  def _num_events(batch, feature):
    return int(np.count_nonzero(batch[feature]))

  def _permute(self, batch, feature):
    out = dict(batch)
    out[feature] = batch[feature][self.rng.permutation(len(batch[feature]))]
    return out

  def attribute(self, batch):
    baseline = self.model.forward(self._dense(batch))
    for j, feature in enumerate(FEATURES):
      if feature in EVENT_BASED and self._num_events(batch, feature) < 2:
        continue  # cannot permute fewer than two events
      perturbed = self.model.forward(self._dense(self._permute(batch, feature)))
      self.scores[j] += float(np.mean(np.abs(baseline - perturbed)))


def batches(num_batches=3):
  rng = np.random.default_rng(10 + jax.process_index())
  for b in range(num_batches):
    batch = {"age": rng.normal(size=BATCH), "dwell": rng.normal(size=BATCH),
             "clicks": rng.integers(0, 3, size=BATCH) * (rng.random(BATCH) < 0.8),
             "views": rng.integers(1, 5, size=BATCH).astype(np.float64)}
    if b == 1 and jax.process_index() == 1:
      batch["clicks"] = np.array([0, 0, 2, 0])  # a single click event in this process's batch
    yield batch


def main():
  fi = FeatureImportance(ShardedModel())
  for batch in batches():
    fi.attribute(batch)
  total = np.asarray(multihost_utils.process_allgather(fi.scores)).sum(axis=0)
  print(f"RESULT importance {np.round(total, 5).tolist()}")


if __name__ == "__main__":
  main()
