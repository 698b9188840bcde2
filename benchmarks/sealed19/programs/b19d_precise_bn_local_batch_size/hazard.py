# PreciseBN hook: recompute SyncBN population statistics after training, on every worker
# Source: https://github.com/facebookresearch/detectron2/issues/5398
# Written for the mcjax sealed19 evaluation (not copied); run as 2 processes by benchmarks/sealed19/run_pair.py.
import itertools
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

IN_DIM, HIDDEN = 8, 4
NUM_PRECISE_BN_ITERS = 5


class SyncBatchNorm:
    def __init__(self, num_features, momentum=0.1):
        self.momentum = momentum
        self.running_mean = np.zeros(num_features)
        self.running_var = np.ones(num_features)

    def __call__(self, x):
        local = np.concatenate([x.sum(0), (x ** 2).sum(0), [x.shape[0]]])
        total = np.asarray(multihost_utils.process_allgather(local)).sum(axis=0)
        count = total[-1]
        mean = total[:HIDDEN] / count
        var = total[HIDDEN:2 * HIDDEN] / count - mean ** 2
        self.running_mean = (1 - self.momentum) * self.running_mean + self.momentum * mean
        self.running_var = (1 - self.momentum) * self.running_var + self.momentum * var * count / (count - 1)
        return (x - mean) / np.sqrt(var + 1e-5)


class Backbone:
    def __init__(self, key):
        self.w = np.asarray(jax.random.normal(key, (IN_DIM, HIDDEN)))
        self.bn = SyncBatchNorm(HIDDEN)
        self.features = jax.jit(lambda w, x: jnp.tanh(x @ w))

    def __call__(self, x):
        return self.bn(np.asarray(self.features(self.w, x)))


class _PopulationVarianceEstimator:
    def __init__(self, mean_buffer, var_buffer):
        self.pop_mean = np.zeros_like(mean_buffer)
        self.pop_square_mean = np.zeros_like(var_buffer)
        self.tot = 0

    def update(self, batch_mean, batch_var, batch_size):
        self.tot += batch_size
        batch_square_mean = batch_mean ** 2 + batch_var * (batch_size - 1) / batch_size
        self.pop_mean += (batch_mean - self.pop_mean) * (batch_size / self.tot)
        self.pop_square_mean += (batch_square_mean - self.pop_square_mean) * (batch_size / self.tot)

    @property
    def pop_var(self):
        return self.pop_square_mean - self.pop_mean ** 2


def update_bn_stats(model, data_loader, num_iters=200):
    bn = model.bn
    momentum_actual = bn.momentum
    bn.momentum = 1.0
    estimator = _PopulationVarianceEstimator(bn.running_mean, bn.running_var)
    ind = -1
    for ind, inputs in enumerate(itertools.islice(data_loader, num_iters)):
        model(inputs)
        batch_size = inputs.shape[0]
        estimator.update(bn.running_mean, bn.running_var, batch_size)
    assert ind == num_iters - 1, f"update_bn_stats is meant to run for {num_iters} iterations, stopped at {ind}"
    bn.running_mean = estimator.pop_mean
    bn.running_var = estimator.pop_var
    bn.momentum = momentum_actual


def build_precise_bn_loader(rank, batch_size=16):
    rng = np.random.default_rng(31 + rank)
    num_images = 69 if rank == 0 else 76
    images = rng.normal(loc=0.3 * rank, size=(num_images, IN_DIM)).astype(np.float32)
    for start in range(0, num_images, batch_size):
        yield images[start:start + batch_size]


def main():
    rank = jax.process_index()
    model = Backbone(jax.random.PRNGKey(0))
    update_bn_stats(model, build_precise_bn_loader(rank), NUM_PRECISE_BN_ITERS)
    print("RESULT bn_running_mean", np.round(model.bn.running_mean, 5).tolist())
    print("RESULT bn_running_var", np.round(model.bn.running_var, 5).tolist())


if __name__ == "__main__":
    main()
