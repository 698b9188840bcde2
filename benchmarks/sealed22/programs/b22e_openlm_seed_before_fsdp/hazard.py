import os
import random
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
    seed: int = 42
    hidden_dim: int = 16
    vocab_size: int = 32
    seq_len: int = 8
    batch_size: int = 4
    lr: float = 0.1
    steps: int = 5
    rank: int = 0
    world_size: int = 1


def random_seed(seed=42, rank=0):
    np.random.seed(seed + rank)
    random.seed(seed + rank)


class Transformer:
    """Parameters are created lazily (meta device) and materialized by the sharding wrapper."""

    def __init__(self, args):
        self.shapes = {"embed": (args.vocab_size, args.hidden_dim), "out": (args.hidden_dim, args.vocab_size)}
        self.vocab_size = args.vocab_size
        self.seq_len = args.seq_len

    def reset_parameters(self):
        return {k: (np.random.randn(*s) * 0.02).astype(np.float32) for k, s in self.shapes.items()}


def create_model(args):
    return Transformer(args)


def fsdp_wrap(model, mesh):
    replicated = NamedSharding(mesh, P())
    local = model.reset_parameters()
    return {k: jax.make_array_from_process_local_data(replicated, v, v.shape) for k, v in local.items()}


def loss_fn(params, tokens):
    h = params["embed"][tokens[:, :-1]]
    logits = h @ params["out"]
    logp = jax.nn.log_softmax(logits, -1)
    return -jnp.take_along_axis(logp, tokens[:, 1:, None], -1).mean()


def main():
    args = Args(rank=jax.process_index(), world_size=jax.process_count())
    mesh = Mesh(np.array(jax.devices()), ("dp",))
    random_seed(args.seed, 0)
    model = create_model(args)
    random_seed(args.seed, args.rank)
    if args.rank == 0:
        run_id = "%08x" % np.random.randint(0, 2**31)
        print(f"params logged under run {run_id}")
    params = fsdp_wrap(model, mesh)

    data_sharding = NamedSharding(mesh, P("dp"))
    step_fn = jax.jit(lambda p, t: jax.tree_util.tree_map(lambda w, g: w - args.lr * g, p, jax.grad(loss_fn)(p, t)),
                      out_shardings=NamedSharding(mesh, P()))
    eval_fn = jax.jit(loss_fn)
    for step in range(args.steps):
        local_tokens = np.random.randint(0, model.vocab_size, size=(args.batch_size, model.seq_len))
        tokens = jax.make_array_from_process_local_data(data_sharding, local_tokens)
        params = step_fn(params, tokens)

    local_embed = np.asarray(params["embed"].addressable_data(0))
    print("RESULT steps", args.steps)
    print("RESULT embed_checksum", round(float(local_embed.sum()), 5))
    print("RESULT out_norm", round(float(np.linalg.norm(np.asarray(params["out"].addressable_data(0)))), 5))
    gathered = multihost_utils.process_allgather(local_embed)
    print("RESULT replicas_match", bool(np.allclose(gathered, gathered[0])))


if __name__ == "__main__":
    main()
