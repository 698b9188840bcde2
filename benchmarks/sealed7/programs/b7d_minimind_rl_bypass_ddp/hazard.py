# MiniMind GRPO trainer: the loss-bearing forward runs on the unwrapped model, bypassing the data-parallel wrapper
# Source: https://github.com/jingyaogong/minimind/issues/853
# Port to multi-controller JAX of the silent replica divergence reported there; written for the mcjax sealed7 set.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("dp",))
DATA = NamedSharding(MESH, P("dp"))
REPL = NamedSharding(MESH, P())
HIDDEN = 8


def policy_logprob(params, tokens):
    h = jnp.tanh(tokens @ params["w1"])
    return jax.nn.log_softmax(h @ params["w2"], axis=-1)[:, 0]


def grpo_loss(params, tokens, advantages):
    return -jnp.mean(policy_logprob(params, tokens) * advantages)


class DistributedDataParallel:
    """Data-parallel wrapper: its forward/backward runs over the global batch on the mesh."""

    def __init__(self, module_params):
        self.module = module_params  # the replica held by this process
        self._grad = jax.jit(jax.grad(grpo_loss), out_shardings=REPL)

    def grad(self, tokens: np.ndarray, advantages: np.ndarray):
        g_tokens = jax.make_array_from_process_local_data(DATA, tokens)
        g_adv = jax.make_array_from_process_local_data(DATA, advantages)
        params = jax.device_put(self.module, REPL)
        return self._grad(params, g_tokens, g_adv)


_local_grad = jax.jit(jax.grad(grpo_loss))


def local_grads(params, tokens, advantages):
    return _local_grad(params, jnp.asarray(tokens), jnp.asarray(advantages))


def sgd(params, grads, lr=0.5):
    return jax.tree.map(lambda p, g: np.asarray(p) - lr * np.asarray(g), params, grads)


def rollout(rng, n=4):
    tokens = rng.normal(size=(n, HIDDEN)).astype(np.float32)
    rewards = rng.uniform(size=(n,)).astype(np.float32)
    return tokens, (rewards - rewards.mean()).astype(np.float32)  # group-relative advantages


def train_grpo(model: DistributedDataParallel, steps: int):
    rng = np.random.default_rng(100 + jax.process_index())  # each rank samples its own prompts
    for _ in range(steps):
        tokens, adv = rollout(rng)
        model_unwrapped = model.module if isinstance(model, DistributedDataParallel) else model
        grads = local_grads(model_unwrapped, tokens, adv)
        model.module = sgd(model.module, grads)
    return model.module


init = np.random.default_rng(0)
params = {"w1": init.normal(size=(HIDDEN, HIDDEN)).astype(np.float32) * 0.3,
          "w2": init.normal(size=(HIDDEN, 4)).astype(np.float32) * 0.3}
final = train_grpo(DistributedDataParallel(params), steps=5)
print("RESULT", round(float(np.sum(final["w1"])), 5), round(float(np.sum(final["w2"] ** 2)), 5))
