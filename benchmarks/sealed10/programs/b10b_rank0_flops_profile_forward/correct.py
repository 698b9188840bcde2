# Every N steps every rank runs the profiled forward of the ZeRO-3-style sharded model; rank 0 alone reports FLOPs
# Source: https://github.com/deepspeedai/DeepSpeedExamples/issues/344
# Written for the mcjax sealed10 evaluation (not copied); run as 2 processes by benchmarks/sealed10/run_pair.py.
import os
import time
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class Args:
    hidden: int = 8
    per_device_batch: int = 4
    num_steps: int = 6
    num_print_steps: int = 3
    lr: float = 0.05


MESH = Mesh(np.array(jax.devices()), ("dp",))
SHARDED = NamedSharding(MESH, P("dp"))      # ZeRO-3: parameters partitioned over ranks
REPLICATED = NamedSharding(MESH, P())


def init_params(args):
    rng = np.random.default_rng(0)  # same seed everywhere: identical full weights before partitioning
    w1 = rng.normal(scale=0.3, size=(args.hidden, args.hidden)).astype(np.float32)
    w2 = rng.normal(scale=0.3, size=(args.hidden, 1)).astype(np.float32)
    return {"w1": jax.device_put(w1, SHARDED), "w2": jax.device_put(w2, SHARDED)}


def forward(params, x):
    h = jnp.tanh(x @ params["w1"])  # the partitioned weights are gathered for the matmul
    return (h @ params["w2"])[:, 0]


@jax.jit
def train_step(params, x, y):
    def loss_fn(p):
        return jnp.mean((forward(p, x) - y) ** 2)
    loss, grads = jax.value_and_grad(loss_fn)(params)
    params = jax.tree_util.tree_map(lambda p, g: p - 0.05 * g, params, grads)
    return params, loss


profiled_forward = jax.jit(lambda params, x: jnp.sum(forward(params, x) ** 2))


class FlopsProfiler:
    def __init__(self, args):
        self.args = args
        self.t0 = None

    def start_profile(self):
        self.t0 = time.perf_counter()

    def stop_profile(self, out):
        jax.block_until_ready(out)
        return 2 * self.args.hidden * self.args.hidden * self.args.per_device_batch, time.perf_counter() - self.t0


def get_batch(args, step):
    rank = jax.process_index()
    rng = np.random.default_rng(1000 * step + rank)
    x = rng.normal(size=(args.per_device_batch, args.hidden)).astype(np.float32)
    y = np.sin(x.sum(axis=1)).astype(np.float32)
    return (multihost_utils.host_local_array_to_global_array(x, MESH, P("dp")),
            multihost_utils.host_local_array_to_global_array(y, MESH, P("dp")))


def main():
    args = Args()
    global_rank = jax.process_index()
    params = init_params(args)
    prof = FlopsProfiler(args)
    losses = []
    for step in range(args.num_steps):
        x, y = get_batch(args, step)
        if (step + 1) % args.num_print_steps == 0:
            prof.start_profile()
            out = profiled_forward(params, x)
            flops, dt = prof.stop_profile(out)
            if global_rank == 0:
                print(f"step {step} flops {flops} in {dt:.4f}s")
        params, loss = train_step(params, x, y)
        losses.append(float(loss))
    multihost_utils.sync_global_devices("train_done")
    w1 = np.asarray(multihost_utils.process_allgather(params["w1"], tiled=True))
    print("RESULT losses", " ".join(f"{l:.5f}" for l in losses))
    print("RESULT w1_sum", f"{w1.sum():.5f}")


if __name__ == "__main__":
    main()
