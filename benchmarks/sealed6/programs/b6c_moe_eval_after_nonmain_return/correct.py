# Expert-parallel MoE course script: the final eval forward (an all-to-all) runs on every rank, only the printing is guarded
# Source: https://github.com/yiqiao-yin/deepspeed-course/pull/28 (port of the DeepSpeed EP teardown hang to JAX)
# Written for the mcjax sealed6 evaluation (not copied); run as 2 processes by benchmarks/sealed6/run_pair.py.
import argparse
import os
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))
HIDDEN, TOKENS = 4, 6


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--expert-parallel", action="store_true", default=True)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--lr", type=float, default=0.05)
    return p.parse_args([])


class MoELayer:
    """One expert per device along the "ep" axis; tokens travel to their expert and back with all-to-all."""

    def __init__(self, mesh):
        self.mesh = mesh
        rng = np.random.default_rng(0)
        num_experts = mesh.shape["ep"]
        self.params = {
            "gate": jax.device_put(rng.normal(size=(HIDDEN, num_experts)).astype(np.float32), NamedSharding(mesh, P())),
            "experts": jax.device_put(0.5 * rng.normal(size=(num_experts, HIDDEN, HIDDEN)).astype(np.float32),
                                      NamedSharding(mesh, P("ep"))),
        }

    def apply(self, params, x):
        @partial(jax.shard_map, mesh=self.mesh, in_specs=(P(), P("ep"), P("ep")), out_specs=P("ep"))
        def moe(gate, experts, x):
            probs = jax.nn.softmax(x @ gate, axis=-1)                        # [T, E]
            dispatch = jnp.einsum("te,th->eth", probs, x)                     # send every token to every expert, weighted
            recv = jax.lax.all_to_all(dispatch, "ep", split_axis=0, concat_axis=0, tiled=True)
            out = jnp.tanh(recv @ experts[0])
            back = jax.lax.all_to_all(out, "ep", split_axis=0, concat_axis=0, tiled=True)
            return back.sum(axis=0) + x
        return moe(params["gate"], params["experts"], x)


def main():
    args = parse_args()
    mesh = jax.make_mesh((jax.device_count(),), ("ep",))
    is_main = jax.process_index() == 0
    model = MoELayer(mesh)
    batch = NamedSharding(mesh, P("ep"))

    @jax.jit
    def train_step(params, x, y):
        loss, grads = jax.value_and_grad(lambda p: jnp.mean((model.apply(p, x) - y) ** 2))(params)
        return jax.tree.map(lambda p, g: p - args.lr * g, params, grads), loss

    rng = np.random.default_rng(42 + jax.process_index())
    for _ in range(args.steps):
        x = rng.normal(size=(TOKENS, HIDDEN)).astype(np.float32)
        xs = jax.make_array_from_process_local_data(batch, x)
        ys = jax.make_array_from_process_local_data(batch, np.roll(x, 1, axis=1))
        model.params, loss = train_step(model.params, xs, ys)
    print("RESULT train loss", round(float(loss), 4))

    xe = np.linspace(-1, 1, TOKENS * HIDDEN, dtype=np.float32).reshape(TOKENS, HIDDEN)
    out = jax.jit(model.apply)(model.params, jax.make_array_from_process_local_data(batch, xe))
    eval_out = np.asarray(out.addressable_data(0))
    if is_main:
        print("eval sample:", eval_out[0])
    print("RESULT eval", round(float(np.abs(eval_out).mean()), 4))


if __name__ == "__main__":
    main()
