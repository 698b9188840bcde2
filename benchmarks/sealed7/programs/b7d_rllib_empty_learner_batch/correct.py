# RLlib LearnerGroup: a learner whose share of the sample is empty skips its update step
# Source: https://github.com/ray-project/ray/pull/66030
# Port to multi-controller JAX of the fix (learners agree on the number of steps first); written for the mcjax sealed7 set.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("learner",))
SHARDED = NamedSharding(MESH, P("learner"))
REPL = NamedSharding(MESH, P())
MINIBATCH = 4
OBS = 5


class EnvRunnerGroup:
    """Samples the same episodes on every process (seeded), a varying number per iteration."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)

    def sample(self, iteration: int) -> list:
        num_episodes = [4, 2, 1, 2][iteration % 4]  # async env runners return what is ready
        return [self.rng.normal(size=(MINIBATCH, OBS)).astype(np.float32) for _ in range(num_episodes)]


@jax.jit
def _train_step(w, obs):
    loss, g = jax.value_and_grad(lambda v: jnp.mean(jnp.tanh(obs @ v) ** 2))(w)
    return w - 0.1 * g, loss


class Learner:
    def __init__(self):
        self.rank = jax.process_index()
        self.num_learners = jax.process_count()
        self.weights = jax.device_put(jnp.full((OBS, 3), 0.2, jnp.float32), REPL)
        self.num_updates = 0

    def _learner_connector(self, episodes: list) -> list:
        return episodes[self.rank::self.num_learners]  # this learner's share of the episodes

    def _num_minibatch_steps(self, batch: list) -> int:
        # all learners agree how often they step: the minimum over learners (0 if any is empty)
        counts = multihost_utils.process_allgather(np.array(len(batch), np.int32))
        return int(np.min(counts))

    def update(self, episodes: list) -> dict:
        batch = self._learner_connector(episodes)
        num_steps = self._num_minibatch_steps(batch)
        if num_steps == 0:
            return {}
        loss = None
        for i in range(num_steps):
            obs = jax.make_array_from_process_local_data(SHARDED, batch[i])
            self.weights, loss = _train_step(self.weights, obs)
            self.num_updates += 1
        return {"loss": float(loss)}


runners = EnvRunnerGroup(seed=11)
learner = Learner()
metrics = {}
for it in range(4):
    metrics = learner.update(runners.sample(it)) or metrics
print("RESULT", learner.num_updates, round(float(jnp.sum(learner.weights ** 2)), 5), metrics)
