# PPO rewards under zigzag context parallelism: the scalar terminal reward is always added on CP rank 0, at its last local response position
# Source: https://github.com/THUDM/slime/pull/2375
# Written for the mcjax sealed15 evaluation (not copied); run as 2 processes by benchmarks/sealed15/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("cp",))
PER_RANK = NamedSharding(MESH, P("cp"))
CP_RANK, CP_SIZE = jax.process_index(), jax.process_count()


@dataclass
class Sample:
    total_len: int
    response_len: int
    reward: float


@dataclass
class PPOConfig:
    kl_coef: float = 0.05
    gamma: float = 1.0


def zigzag_positions(total_len, cp_rank, cp_size):
    """Positions this CP rank holds: chunks r and 2*cp-1-r of the padded sequence."""
    padded = -(-total_len // (2 * cp_size)) * (2 * cp_size)
    chunk = padded // (2 * cp_size)
    idx = list(range(cp_rank * chunk, (cp_rank + 1) * chunk))
    j = 2 * cp_size - 1 - cp_rank
    idx += list(range(j * chunk, (j + 1) * chunk))
    return [p for p in idx if p < total_len], padded


def local_kl(positions, sample):
    rng = np.random.default_rng(sample.total_len * 31 + sample.response_len)
    kl_all = rng.uniform(0.0, 0.2, size=sample.total_len).astype(np.float32)
    return kl_all[positions]


@jax.jit
def _sum_over_cp(x):
    return jnp.sum(x, axis=0)


def compute_rewards(sample, cfg):
    positions, padded = zigzag_positions(sample.total_len, CP_RANK, CP_SIZE)
    first_pred = sample.total_len - sample.response_len - 1       # position predicting the first response token
    resp = [p for p in positions if first_pred <= p <= sample.total_len - 2]
    kl = local_kl(resp, sample)
    rewards = -cfg.kl_coef * kl
    if CP_RANK == 0:
        rewards[-1] += sample.reward            # terminal reward on CP rank 0's last response position
    full = np.zeros((padded,), np.float32)
    full[resp] = rewards
    # gather the per-position rewards of all CP ranks into the full sequence
    g = jax.make_array_from_process_local_data(PER_RANK, full[None])
    return np.asarray(_sum_over_cp(g))[first_pred:sample.total_len - 1]


def discounted_returns(rewards, gamma):
    out, running = np.zeros_like(rewards), 0.0
    for t in range(len(rewards) - 1, -1, -1):
        running = rewards[t] + gamma * running
        out[t] = running
    return out


def main():
    cfg = PPOConfig()
    batch = [Sample(total_len=12, response_len=4, reward=1.0), Sample(total_len=9, response_len=3, reward=0.5)]
    for i, s in enumerate(batch):
        rewards = compute_rewards(s, cfg)
        rets = discounted_returns(rewards, cfg.gamma)
        print(f"RESULT sample{i} returns", np.round(rets, 4).tolist())


if __name__ == "__main__":
    main()
