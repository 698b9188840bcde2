# A GRPO trainer in the style of AReaL's distributed rollout: each data-parallel rank runs its own
# rollout workflow (K samples per prompt), prepares the groups (rewards -> group-normalised advantages),
# then redistributes the trajectories across the data-parallel group and takes a gradient step whose
# gradients are averaged over all ranks.
import os
from dataclasses import dataclass
from typing import List, Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

N_SAMPLES = 4
FEATURES = 6


@dataclass
class Trajectory:
    prompt_id: int
    features: np.ndarray
    reward: float
    usable: bool = True


class RolloutWorkflow:
    """Generates K trajectories per prompt; an aborted generation (e.g. the inference server dropped
    the request after the max-new-tokens budget) comes back as an unusable member of its group."""

    def __init__(self, rank: int):
        self.rng = np.random.default_rng(100 + rank)
        self.rank = rank

    def run(self, step: int, prompts: List[int]) -> List[List[Trajectory]]:
        groups = []
        for p in prompts:
            group = []
            for k in range(N_SAMPLES):
                x = self.rng.normal(size=FEATURES).astype(np.float32)
                aborted = self.rng.random() < 0.03
                group.append(Trajectory(p, x, float(x[:2].sum() > 0), usable=not aborted))
            groups.append(group)
        return groups


def prepare_groups(groups: List[List[Trajectory]]):
    feats, advs = [], []
    for group in groups:
        mask = np.array([t.usable for t in group])
        r = np.array([t.reward for t in group], np.float32)
        adv = np.zeros(N_SAMPLES, np.float32)
        if mask.sum() >= 2:  # unusable members never enter the group statistics; they train with weight 0
            ru = r[mask]
            adv[mask] = (ru - ru.mean()) / (ru.std() + 1e-6)
        feats.extend(t.features for t in group)
        advs.extend(adv)
    return np.stack(feats), np.asarray(advs, np.float32)


def redistribute_trajectories(feats, advs):
    # all-gather every rank's prepared batch so that each rank can take its balanced slice
    all_feats = np.asarray(multihost_utils.process_allgather(feats))
    all_advs = np.asarray(multihost_utils.process_allgather(advs))
    return all_feats.reshape(-1, FEATURES), all_advs.reshape(-1)


@jax.jit
def policy_grad(w, x, adv):
    def loss(w):
        logp = jax.nn.log_sigmoid(x @ w)
        return -jnp.mean(adv * logp)
    return jax.value_and_grad(loss)(w)


class DistRolloutCoordinator:
    def __init__(self, rank: int, world: int):
        self.rank, self.world = rank, world
        self.workflow = RolloutWorkflow(rank)

    def _synchronize_head_error(self, error) -> bool:
        flags = np.asarray(multihost_utils.process_allgather(np.int32(error is not None)))
        return bool(flags.any())

    def prepare_batch(self, step: int, prompts: List[int]) -> Optional[tuple]:
        groups = self.workflow.run(step, prompts)
        preparation_error = None
        try:
            feats, advs = prepare_groups(groups)
        except ValueError as e:
            preparation_error = e
        if self._synchronize_head_error(preparation_error):
            return None
        x, a = redistribute_trajectories(feats, advs)
        n = len(x) // self.world
        return x[self.rank * n:(self.rank + 1) * n], a[self.rank * n:(self.rank + 1) * n]


def main():
    rank, world = jax.process_index(), jax.process_count()
    coord = DistRolloutCoordinator(rank, world)
    w = jnp.zeros(FEATURES)
    steps_trained = 0
    for step in range(8):
        prompts = [step * 8 + rank * 4 + i for i in range(4)]
        batch = coord.prepare_batch(step, prompts)
        if batch is None:
            continue
        loss, g = policy_grad(w, *batch)
        g = np.asarray(multihost_utils.process_allgather(np.asarray(g))).mean(0)
        w = w - 0.5 * g
        steps_trained += 1
    weights = np.asarray(multihost_utils.process_allgather(np.asarray(w)))
    print("RESULT steps_trained", steps_trained)
    print("RESULT weights", np.round(weights[0], 4).tolist())
    print("RESULT replicas_in_sync", bool(np.allclose(weights, weights[0])))


if __name__ == "__main__":
    main()
