# A speed-monitor callback derives from RankZeroCallback, so the engine runs it only on rank 0, yet it all-reduces
# Source: https://github.com/mosaicml/composer/issues/239
# Written for the mcjax sealed4 evaluation (not copied): a port of a MosaicML Composer (torch.distributed) callback
# bug to multi-controller JAX; run as 2 processes by benchmarks/sealed4/run_pair.py.
import enum
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("ranks",))
PER_RANK = NamedSharding(MESH, P("ranks"))


class dist:
    @staticmethod
    def get_global_rank() -> int:
        return jax.process_index()

    @staticmethod
    def all_reduce(value: np.ndarray) -> np.ndarray:
        stacked = jax.make_array_from_process_local_data(PER_RANK, value[None])
        return np.asarray(_sum_over_ranks(stacked))


@jax.jit
def _sum_over_ranks(x):
    return jnp.sum(x, axis=0)


class Event(enum.Enum):
    BATCH_END = "batch_end"
    EPOCH_END = "epoch_end"


class Callback:
    def run_event(self, event, state, logger):
        fn = getattr(self, event.value, None)
        if fn is not None:
            fn(state, logger)


class RankZeroCallback(Callback):
    """Callbacks that only need to run on the global rank zero process."""

    def run_event(self, event, state, logger):
        if dist.get_global_rank() != 0:
            return
        super().run_event(event, state, logger)


class SpeedMonitor(Callback):
    def __init__(self):
        self.batch_num_samples = []

    def batch_end(self, state, logger):
        num_samples = dist.all_reduce(np.array([state.batch_size], np.float32))
        self.batch_num_samples.append(float(num_samples[0]))
        if dist.get_global_rank() == 0:  # only the logging is rank-zero
            logger.append(("throughput/samples", self.batch_num_samples[-1]))


class State:
    def __init__(self):
        self.params = jnp.zeros((4,), jnp.float32)
        self.batch_size = 0
        self.step = 0


class Engine:
    def __init__(self, state, callbacks, logger):
        self.state, self.callbacks, self.logger = state, callbacks, logger

    def run_event(self, event):
        for cb in self.callbacks:
            cb.run_event(event, self.state, self.logger)


@jax.jit
def _train_step(params, batch):
    g = jax.grad(lambda p: jnp.mean((batch @ p - 1.0) ** 2))(params)
    return params - 0.1 * g


def fit(engine, num_batches):
    state = engine.state
    for i in range(num_batches):
        local = np.random.default_rng(i * 2 + dist.get_global_rank()).normal(size=(4, 4)).astype(np.float32)
        state.params = _train_step(state.params, jax.make_array_from_process_local_data(PER_RANK, local))
        state.batch_size, state.step = local.shape[0], state.step + 1
        engine.run_event(Event.BATCH_END)


logged = []
engine = Engine(State(), [SpeedMonitor()], logged)
fit(engine, 6)
print("RESULT step", engine.state.step)
print("RESULT params", np.round(np.asarray(engine.state.params), 4).tolist())
