# stable-baselines PPO1-style learner (JAX port): every worker collects a segment, gradients are
# averaged over workers (MpiAdam), and the learning rate is annealed linearly with the number of
# timesteps seen so far.
# Source: https://github.com/hill-a/stable-baselines/issues/50 (fixed in https://github.com/hill-a/stable-baselines/pull/52)
# Written for the mcjax sealed5 evaluation (not copied); run as 2 processes by benchmarks/sealed5/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

OB_DIM = 3


class MpiAdam:
    def __init__(self, size, beta1=0.9, beta2=0.999, epsilon=1e-8):
        self.m = np.zeros(size, np.float32)
        self.v = np.zeros(size, np.float32)
        self.t = 0
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon
        self.mesh = jax.sharding.Mesh(np.array(jax.devices()), ("workers",))
        self._avg = jax.jit(lambda g: jnp.mean(g, 0), out_shardings=NamedSharding(self.mesh, P()))

    def update(self, theta, localg, stepsize):
        g = jax.make_array_from_process_local_data(NamedSharding(self.mesh, P("workers")),
                                                   localg[None].astype(np.float32))
        globalg = np.asarray(self._avg(g))
        self.t += 1
        a = stepsize * np.sqrt(1 - self.beta2**self.t) / (1 - self.beta1**self.t)
        self.m = self.beta1 * self.m + (1 - self.beta1) * globalg
        self.v = self.beta2 * self.v + (1 - self.beta2) * globalg * globalg
        return theta - a * self.m / (np.sqrt(self.v) + self.epsilon)


def traj_segment_generator(rank, horizon=64):
    """Yields segments; total_timestep counts the steps of the episodes finished in the segment."""
    rng = np.random.default_rng(rank)
    while True:
        obs = rng.normal(size=(horizon, OB_DIM)).astype(np.float32)
        ret = (obs @ np.array([1.0, -2.0, 0.5], np.float32)).astype(np.float32)
        ep_lens = []
        t = 0
        while True:
            length = int(rng.integers(10, 30))
            if t + length > horizon:
                break
            ep_lens.append(length)
            t += length
        yield {"ob": obs, "tdlamret": ret, "ep_lens": ep_lens, "total_timestep": sum(ep_lens)}


@jax.jit
def vf_grad(theta, ob, ret):
    return jax.grad(lambda w: jnp.mean((ob @ w - ret) ** 2))(theta)


class PPO1:
    def __init__(self, optim_stepsize=0.05, schedule="linear", n_iters=6, total_timesteps=400):
        self.optim_stepsize = optim_stepsize
        self.schedule = schedule
        self.n_iters = n_iters
        self.total_timesteps = total_timesteps
        self.theta = np.zeros(OB_DIM, np.float32)
        self.adam = MpiAdam(OB_DIM)

    def learn(self):
        seg_gen = traj_segment_generator(jax.process_index())
        timesteps_so_far = 0
        for _ in range(self.n_iters):
            if self.schedule == "constant":
                cur_lrmult = 1.0
            else:
                cur_lrmult = max(1.0 - float(timesteps_so_far) / self.total_timesteps, 0.1)
            seg = next(seg_gen)
            g = np.asarray(vf_grad(self.theta, seg["ob"], seg["tdlamret"]))
            self.theta = self.adam.update(self.theta, g, self.optim_stepsize * cur_lrmult)
            counts = multihost_utils.process_allgather(np.int32(seg["total_timestep"]))
            timesteps_so_far += int(np.sum(counts))
        return timesteps_so_far


def main():
    model = PPO1()
    steps = model.learn()
    print(f"RESULT timesteps_so_far {steps}")
    print(f"RESULT theta {np.round(model.theta, 5).tolist()}")


if __name__ == "__main__":
    main()
