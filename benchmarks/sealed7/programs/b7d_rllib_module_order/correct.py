# RLlib multi-learner PPO: per-module updates run in the order module ids appear in each learner's batch
# Source: https://github.com/ray-project/ray/issues/63819
# Port to multi-controller JAX with the per-module order made deterministic (sorted module ids); written for the mcjax sealed7 set.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("learner",))
SHARDED = NamedSharding(MESH, P("learner"))
REPL = NamedSharding(MESH, P())
OBS_DIM = {"policy_a": 6, "policy_b": 3}  # heterogeneous policies
MINIBATCH = 8


class MultiAgentBatch:
    def __init__(self):
        self.policy_batches: dict[str, list[np.ndarray]] = {}

    def add_episode(self, module_id: str, obs: np.ndarray) -> None:
        self.policy_batches.setdefault(module_id, []).append(obs)


def episodes_for_this_learner(num_episodes: int = 6):
    """The EnvRunners' episodes routed to this learner (its shard of the sample)."""
    rng = np.random.default_rng(jax.process_index())
    for module_id in rng.choice(sorted(OBS_DIM), size=num_episodes):
        module_id = str(module_id)
        yield module_id, rng.normal(size=(5, OBS_DIM[module_id])).astype(np.float32)


def _ppo_loss(w, obs):
    logits = obs @ w
    return jnp.mean(jax.nn.logsumexp(logits, axis=-1) - logits[:, 0])


@jax.jit
def _update_module(w, obs):
    loss, g = jax.value_and_grad(_ppo_loss)(w, obs)  # mean over the global minibatch: all-reduced
    return w - 0.1 * g, loss


class Learner:
    def __init__(self):
        self.module = {m: jax.device_put(jnp.full((d, 2), 0.1, jnp.float32), REPL) for m, d in OBS_DIM.items()}

    def _minibatch(self, chunks: list) -> jax.Array:
        rows = np.concatenate(chunks)
        local = np.resize(rows, (MINIBATCH, rows.shape[1]))  # cycle samples up to the minibatch size
        return jax.make_array_from_process_local_data(SHARDED, local)

    def update(self, batch: MultiAgentBatch, num_iters: int) -> dict:
        results = {}
        for _ in range(num_iters):
            for module_id in sorted(batch.policy_batches):  # same module order on every learner
                chunks = batch.policy_batches[module_id]
                obs = self._minibatch(chunks)
                self.module[module_id], loss = _update_module(self.module[module_id], obs)
                results[module_id] = float(loss)
        return results


batch = MultiAgentBatch()
for module_id, obs in episodes_for_this_learner():
    batch.add_episode(module_id, obs)
learner = Learner()
results = learner.update(batch, num_iters=3)
print("RESULT", {m: round(v, 5) for m, v in sorted(results.items())},
      {m: round(float(jnp.sum(jnp.abs(w))), 5) for m, w in sorted(learner.module.items())})
