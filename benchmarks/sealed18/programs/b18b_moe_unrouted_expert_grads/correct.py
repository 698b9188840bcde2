# Data-parallel training of a small mixture-of-experts layer; expert gradients are reduced across processes after backward
# Source: https://github.com/pytorch/pytorch/issues/158719
import os
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.experimental.shard_map import shard_map
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

D_MODEL = 8
NUM_EXPERTS = 4
TOKENS_PER_STEP = 6
STEPS = 3
LR = 0.1


def init_params(seed=0):
    key = jax.random.PRNGKey(seed)
    k_router, *k_experts = jax.random.split(key, NUM_EXPERTS + 1)
    params = {"router": jax.random.normal(k_router, (D_MODEL, NUM_EXPERTS)) * 0.5}
    for e, k in enumerate(k_experts):
        params[f"experts.{e}.w"] = jax.random.normal(k, (D_MODEL, D_MODEL)) * 0.1
    return params


def expert_loss(w, x, target):
    return jnp.sum((x @ w - target) ** 2) / TOKENS_PER_STEP


def backward(params, x, target):
    """Top-1 routing; only experts that received tokens run forward/backward (as in the eager MoE block)."""
    route = np.asarray(jnp.argmax(x @ params["router"], axis=-1))
    grads, loss = {}, 0.0
    for e in range(NUM_EXPERTS):
        idx = np.nonzero(route == e)[0]
        if idx.size == 0:
            continue
        name = f"experts.{e}.w"
        l, g = jax.value_and_grad(expert_loss)(params[name], x[idx], target[idx])
        grads[name] = g
        loss += float(l)
    return grads, loss


class GradReducer:
    def __init__(self, mesh, param_shapes):
        self.mesh = mesh
        self.param_shapes = param_shapes
        self.param_names = list(param_shapes)

    @partial(jax.jit, static_argnums=0)
    def _allreduce(self, flat):
        f = shard_map(lambda a: jax.lax.pmean(a, "dp"), mesh=self.mesh, in_specs=P("dp"), out_specs=P())
        return f(flat)

    def post_backward(self, grads):
        names = list(self.param_names)
        for n in names:
            if n not in grads:
                grads[n] = jnp.zeros(self.param_shapes[n], jnp.float32)
        flat = np.concatenate([np.asarray(grads[n]).ravel() for n in names])[None, :]
        garr = jax.make_array_from_process_local_data(NamedSharding(self.mesh, P("dp")), flat)
        reduced = np.asarray(self._allreduce(garr).addressable_shards[0].data)[0]
        out, offset = {}, 0
        for n in names:
            size = int(np.prod(self.param_shapes[n]))
            out[n] = reduced[offset:offset + size].reshape(self.param_shapes[n])
            offset += size
        return out


def local_batch(step):
    rng = np.random.default_rng(100 + step)
    x = rng.normal(size=(TOKENS_PER_STEP * jax.process_count(), D_MODEL)).astype(np.float32)
    y = np.roll(x, 1, axis=-1)
    r = jax.process_index()
    return jnp.asarray(x[r::jax.process_count()]), jnp.asarray(y[r::jax.process_count()])


def main():
    mesh = Mesh(np.array(jax.devices()), ("dp",))
    params = init_params()
    expert_names = [f"experts.{e}.w" for e in range(NUM_EXPERTS)]
    reducer = GradReducer(mesh, {n: params[n].shape for n in expert_names})
    losses = []
    for step in range(STEPS):
        x, y = local_batch(step)
        grads, loss = backward(params, x, y)
        reduced = reducer.post_backward(grads)
        for name, g in reduced.items():
            params[name] = params[name] - LR * g
        losses.append(loss)
    global_loss = float(np.sum(multihost_utils.process_allgather(np.float32(sum(losses)))))
    print("RESULT expert_norms", [round(float(jnp.linalg.norm(params[n])), 4) for n in expert_names])
    print("RESULT global_loss", round(global_loss, 4))


if __name__ == "__main__":
    main()
