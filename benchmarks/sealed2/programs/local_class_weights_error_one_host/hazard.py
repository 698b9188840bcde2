# Setup computes class weights from the host's own shard; a host missing a class fails while the others go on
# Source: https://github.com/dbbs-lab/bsb-core/issues/509
# Written for the mcjax sealed2 evaluation (not copied); run as 2 processes by benchmarks/sealed2/run_pair.py.
import collections
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("data",))
DATA = NamedSharding(MESH, P("data"))
REPL = NamedSharding(MESH, P())
NUM_CLASSES = 4


def load_local_labels() -> np.ndarray:
    """Labels of this host's shard (sorted files: the rare class 3 happens to sit in host 0's files)."""
    rng = np.random.default_rng(jax.process_index())
    labels = rng.integers(0, 3, size=24)
    if jax.process_index() == 0:
        labels[:2] = 3
    return labels


def class_weights(labels: np.ndarray) -> np.ndarray:
    counts = collections.Counter(labels.tolist())
    total = sum(counts.values())
    return np.array([total / (NUM_CLASSES * counts[c]) for c in range(NUM_CLASSES)], np.float32)


@jax.jit
def weighted_step(w, x, y, cw):
    def loss_fn(w):
        logits = x @ w
        logp = jax.nn.log_softmax(logits)
        onehot = jax.nn.one_hot(y, NUM_CLASSES)
        nll = -jnp.sum(logp * onehot, axis=-1)
        return jnp.mean(nll * (onehot @ cw))
    loss, g = jax.value_and_grad(loss_fn)(w)
    return w - 0.1 * g, loss


class Setup:
    def boot(self):
        self.labels = load_local_labels()
        self.weights = jax.device_put(class_weights(self.labels), REPL)

    def run(self, steps: int):
        w = jax.device_put(jnp.zeros((3, NUM_CLASSES)), REPL)
        rng = np.random.default_rng(10 + jax.process_index())
        for i in range(steps):
            idx = rng.choice(len(self.labels), 4, replace=False)
            x = jax.make_array_from_process_local_data(DATA, rng.normal(size=(4, 3)).astype(np.float32))
            y = jax.make_array_from_process_local_data(DATA, self.labels[idx].astype(np.int32))
            w, loss = weighted_step(w, x, y, self.weights)
        return float(loss)


setup = Setup()
setup.boot()
print("RESULT", round(setup.run(4), 5))
