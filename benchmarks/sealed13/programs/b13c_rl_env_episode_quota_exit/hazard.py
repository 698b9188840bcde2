# Multi-robot PPO: each env process runs its own MAX_EPISODES episodes, so the fast robot's process leaves the step loop
# Source: https://github.com/Acmece/rl-collision-avoidance/issues/24
# Written for the mcjax sealed13 evaluation (not copied); run as 2 processes by benchmarks/sealed13/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CFG = {"max_episodes": 3, "max_ep_len": 12, "horizon": 4, "lr": 0.05, "total_steps": 36}
MESH = jax.make_mesh((jax.device_count(),), ("env",))
ENV_SHARD, REPL = NamedSharding(MESH, P("env")), NamedSharding(MESH, P())


class StageWorld:
    """One robot per process; robot i's goal is further away for larger i (as in the stage map)."""

    def __init__(self, index):
        self.index = index
        self.goal = 1.0 + 3.0 * index

    def reset(self):
        self.pos, self.vel, self.step_count = 0.0, 0.0, 0
        return self.obs()

    def obs(self):
        return np.array([self.pos - self.goal, self.vel, 1.0], np.float32)

    def step(self, action):
        self.vel = 0.5 * float(action)
        self.pos += self.vel
        self.step_count += 1
        dist = abs(self.pos - self.goal)
        reached = dist < 0.2
        return self.obs(), (1.0 if reached else -0.1 * dist), reached or self.step_count >= CFG["max_ep_len"]


def gather_rows(row):
    """comm.gather of every env's row, as one env-sharded global array."""
    return jax.make_array_from_process_local_data(ENV_SHARD, np.asarray(row, np.float32)[None])


policy = jax.jit(lambda w, s: jnp.tanh(-(s @ w)), out_shardings=REPL)
update = jax.jit(lambda w, s, r: w + CFG["lr"] * jnp.mean(r[..., None] * s, axis=(0, 1)), out_shardings=REPL)


def run(env, w):
    buff_s, buff_r, global_step, episodes, ep_returns = [], [], 0, 0, []
    for _ in range(CFG["max_episodes"]):
        state, terminal, ep_reward = env.reset(), False, 0.0
        while not terminal:
            actions = np.asarray(policy(w, gather_rows(state)))
            state_next, r, terminal = env.step(actions[env.index])
            buff_s.append(state)
            buff_r.append(r)
            global_step += 1
            ep_reward += r
            if global_step % CFG["horizon"] == 0:
                w = update(w, gather_rows(np.stack(buff_s)), gather_rows(np.array(buff_r)))
                buff_s, buff_r = [], []
            state = state_next
        episodes += 1
        ep_returns.append(ep_reward)
    return w, global_step, episodes, ep_returns


def main():
    env = StageWorld(jax.process_index())
    w0 = jnp.asarray(np.array([1.0, 0.0, 0.0], np.float32))
    w, steps, episodes, returns = run(env, w0)
    summary = multihost_utils.process_allgather(np.array([episodes, float(np.mean(returns))], np.float32))
    print("RESULT policy", [round(float(v), 4) for v in np.asarray(w)])
    print("RESULT episodes_total", int(summary[:, 0].sum()))
    print("RESULT mean_return", round(float(summary[:, 1].mean()), 4))


main()
