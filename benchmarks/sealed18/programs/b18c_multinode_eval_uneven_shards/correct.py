# Multi-node evaluator over a strictly scattered validation set (no duplicated examples), data-parallel forward
# Source: https://github.com/chainer/chainer/pull/8071
# Written for the mcjax sealed18 evaluation (not copied); run as 2 processes by benchmarks/sealed18/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

N_VAL = 513
N_IN, N_HIDDEN, N_CLASS = 32, 64, 10
VAL_BATCHSIZE = 16


def make_validation_set():
    rng = np.random.default_rng(2019)
    x = rng.normal(size=(N_VAL, N_IN)).astype(np.float32)
    y = (np.abs(x[:, :N_CLASS]).argmax(axis=1)).astype(np.int32)
    return x, y


def scatter_dataset(dataset, force_equal_length=True):
    """Split the dataset over processes; without force_equal_length no example is duplicated."""
    x, y = dataset
    n, size, rank = len(x), jax.process_count(), jax.process_index()
    if force_equal_length:
        per = -(-n // size)
        idx = np.arange(rank * per, (rank + 1) * per) % n
    else:
        bounds = [n * i // size for i in range(size + 1)]
        idx = np.arange(bounds[rank], bounds[rank + 1])
    return x[idx], y[idx]


class SerialIterator:
    def __init__(self, dataset, batchsize):
        self.dataset, self.batchsize = dataset, batchsize

    def __iter__(self):
        x, y = self.dataset
        for start in range(0, len(x), self.batchsize):
            yield x[start:start + self.batchsize], y[start:start + self.batchsize]


def convert(batch, batchsize):
    x, y = batch
    pad = batchsize - len(x)
    mask = np.concatenate([np.ones(len(x), np.float32), np.zeros(pad, np.float32)])
    return np.pad(x, ((0, pad), (0, 0))), np.pad(y, (0, pad)), mask


def init_model():
    rng = np.random.default_rng(0)
    return {"w1": jnp.asarray(rng.normal(size=(N_IN, N_HIDDEN)) * 0.2, jnp.float32),
            "w2": jnp.asarray(rng.normal(size=(N_HIDDEN, N_CLASS)) * 0.2, jnp.float32)}


@jax.jit
def eval_step(params, x, y, mask):
    h = jnp.tanh(x @ params["w1"])
    logits = h @ params["w2"]
    logp = jax.nn.log_softmax(logits)
    nll = -jnp.take_along_axis(logp, y[:, None], axis=1)[:, 0]
    correct = (logits.argmax(axis=1) == y).astype(jnp.float32)
    return jnp.sum(nll * mask), jnp.sum(correct * mask), jnp.sum(mask)


class MultiNodeEvaluator:
    def __init__(self, iterator, params, mesh):
        self.iterator, self.params, self.mesh = iterator, params, mesh
        self.sharding = NamedSharding(mesh, P("batch"))

    def _global(self, local):
        return jax.make_array_from_process_local_data(self.sharding, local)

    def evaluate(self):
        totals = np.zeros(3, np.float64)
        rounds = 8  # checks whether local eval is all done every 8 rounds
        local_iter, local_done, n = iter(self.iterator), False, 0
        empty = tuple(a[:0] for a in self.iterator.dataset)
        while True:
            batch = None if local_done else next(local_iter, None)
            if batch is None:
                local_done, batch = True, empty
            x, y, mask = convert(batch, VAL_BATCHSIZE)
            out = eval_step(self.params, self._global(x), self._global(y), self._global(mask))
            totals += np.array([float(v) for v in out])
            n += 1
            if n % rounds == 0 and multihost_utils.process_allgather(np.int32(local_done)).min() == 1:
                break
        loss_sum, correct_sum, count = totals
        return {"validation/main/loss": loss_sum / count, "validation/main/accuracy": correct_sum / count,
                "validation/count": int(count)}


def main():
    mesh = Mesh(np.array(jax.devices()), ("batch",))
    val = scatter_dataset(make_validation_set(), force_equal_length=False)
    evaluator = MultiNodeEvaluator(SerialIterator(val, VAL_BATCHSIZE), init_model(), mesh)
    result = evaluator.evaluate()
    print("RESULT count", result["validation/count"])
    print("RESULT accuracy", round(result["validation/main/accuracy"], 5))
    print("RESULT loss", round(result["validation/main/loss"], 5))


if __name__ == "__main__":
    main()
