# Multi-GPU PPO value training: the running observation normalizer merges every process's batch moments before updating
# Source: https://github.com/Denys88/rl_games/pull/363
# Written for the mcjax sealed14 evaluation (not copied); run as 2 processes by benchmarks/sealed14/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("dp",))
ROWS = NamedSharding(MESH, P("dp", None))
VEC = NamedSharding(MESH, P("dp"))
REPL = NamedSharding(MESH, P())
OBS_DIM, ENVS_PER_RANK, EPOCHS, HORIZON = 3, 16, 5, 4


class RunningMeanStd:
    def __init__(self, shape, epsilon=1e-4):
        self.mean = np.zeros(shape, np.float64)
        self.var = np.ones(shape, np.float64)
        self.count = epsilon

    def update_from_moments(self, batch_mean, batch_var, batch_count):
        delta = batch_mean - self.mean
        tot = self.count + batch_count
        self.mean = self.mean + delta * batch_count / tot
        m2 = self.var * self.count + batch_var * batch_count + delta ** 2 * self.count * batch_count / tot
        self.var, self.count = m2 / tot, tot

    def update(self, x):
        self.update_from_moments(x.mean(axis=0), x.var(axis=0), x.shape[0])

    def normalize(self, x):
        return ((x - self.mean) / np.sqrt(self.var + 1e-8)).astype(np.float32)


class VecEnv:
    """Each rank steps its own envs; the terrain curriculum differs by rank, so observation scales differ."""

    def __init__(self, rank):
        self.rng = np.random.default_rng(1234 + rank)
        self.offset, self.scale = 2.0 * rank, 1.0 + rank

    def rollout(self):
        obs = self.rng.normal(size=(HORIZON * ENVS_PER_RANK, OBS_DIM)) * self.scale + self.offset
        returns = obs.sum(axis=1) * 0.1
        return obs, returns.astype(np.float32)


@jax.jit
def value_step(w, obs, ret):
    loss, g = jax.value_and_grad(lambda w: jnp.mean((obs @ w - ret) ** 2))(w)
    return w - 0.05 * g, loss


class A2CAgent:
    def __init__(self, rank):
        self.env = VecEnv(rank)
        self.obs_rms = RunningMeanStd((OBS_DIM,))
        self.w = jax.device_put(np.zeros(OBS_DIM, np.float32), REPL)

    def update_normalizer(self, obs):
        local = np.concatenate([obs.mean(axis=0), obs.var(axis=0), [obs.shape[0]]])
        stats = np.asarray(multihost_utils.process_allgather(local))        # [num_processes, 2*OBS_DIM+1]
        counts = stats[:, -1]
        means, variances = stats[:, :OBS_DIM], stats[:, OBS_DIM:2 * OBS_DIM]
        total = counts.sum()
        g_mean = (counts[:, None] * means).sum(axis=0) / total
        g_var = (counts[:, None] * (variances + (means - g_mean) ** 2)).sum(axis=0) / total
        self.obs_rms.update_from_moments(g_mean, g_var, total)   # same global statistics on every rank

    def train_epoch(self):
        obs, ret = self.env.rollout()
        self.update_normalizer(obs)
        norm = self.obs_rms.normalize(obs)
        self.w, loss = value_step(self.w, jax.make_array_from_process_local_data(ROWS, norm),
                                  jax.make_array_from_process_local_data(VEC, ret))
        return loss

    def evaluate(self, probe):
        w = np.asarray(self.w.addressable_data(0))
        return float((self.obs_rms.normalize(probe) @ w)[0])


def main():
    agent = A2CAgent(jax.process_index())
    for _ in range(EPOCHS):
        loss = agent.train_epoch()
    multihost_utils.sync_global_devices("training done")
    probe = np.array([[1.0, 1.0, 1.0]])
    print("RESULT loss", round(float(loss), 4))
    print("RESULT obs_mean", np.round(agent.obs_rms.mean, 3).tolist())
    print("RESULT probe_value", round(agent.evaluate(probe), 4))


if __name__ == "__main__":
    main()
