# Model-parallel LM initialisation (vocab-parallel embedding + replicated layers) followed by training steps
# Source: https://github.com/THUDM/SwissArmyTransformer/pull/155
# Written for the mcjax sealed18 evaluation (not copied); run as 2 processes by benchmarks/sealed18/run_pair.py.
import os
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
    seed: int = 1234
    vocab_size: int = 1001
    hidden_size: int = 16
    max_sequence_length: int = 12
    lr: float = 0.05
    train_iters: int = 4


def vocab_range(global_vocab_size, rank, world_size):
    per_partition, rest = divmod(global_vocab_size, world_size)
    start = rank * per_partition + min(rank, rest)
    return start, start + per_partition + (1 if rank < rest else 0)


def init_method_normal(rng, shape, std=0.02):
    return (rng.standard_normal(shape) * std).astype(np.float32)


def build_params(args, rng, rank, world_size):
    """Model-parallel params are initialised per partition; the rest is replicated on every rank."""
    start, end = vocab_range(args.vocab_size, rank, world_size)
    padded = -(-args.vocab_size // world_size)
    word_embeddings = np.zeros((padded, args.hidden_size), np.float32)
    word_embeddings[: end - start] = init_method_normal(rng, (end - start, args.hidden_size))
    replicated = {
        "position_embeddings": init_method_normal(rng, (args.max_sequence_length, args.hidden_size)),
        "final_layernorm_weight": 1.0 + init_method_normal(rng, (args.hidden_size,)),
        "dense_h_to_h": init_method_normal(rng, (args.hidden_size, args.hidden_size)),
    }
    return word_embeddings, replicated


def finalize_replicated_params(replicated):
    # the same seed on every rank is not a guarantee for non-model-parallel params; take rank 0's
    return {k: np.asarray(multihost_utils.broadcast_one_to_all(v)) for k, v in replicated.items()}


def lm_loss(params, tokens):
    emb = jnp.take(params["word_embeddings"], tokens, axis=0) + params["position_embeddings"][None]
    h = jnp.tanh(emb @ params["dense_h_to_h"]) * params["final_layernorm_weight"]
    logits = h @ params["word_embeddings"].T
    return -jnp.mean(jax.nn.log_softmax(logits)[..., 0])


def main():
    args = Args()
    rank, world_size = jax.process_index(), jax.process_count()
    mesh = Mesh(np.array(jax.devices()), ("model",))
    rng = np.random.default_rng(args.seed)  # the same seed on every rank
    word_embeddings, replicated = build_params(args, rng, rank, world_size)
    replicated = finalize_replicated_params(replicated)

    vocab_sharded, rep = NamedSharding(mesh, P("model", None)), NamedSharding(mesh, P())
    padded = word_embeddings.shape[0] * world_size
    params = {"word_embeddings": jax.make_array_from_process_local_data(
        vocab_sharded, word_embeddings, (padded, args.hidden_size))}
    params.update({k: jax.make_array_from_process_local_data(rep, v) for k, v in replicated.items()})

    @jax.jit
    def train_step(params, tokens):
        loss, grads = jax.value_and_grad(lm_loss)(params, tokens)
        return jax.tree.map(lambda p, g: p - args.lr * g, params, grads), loss

    data_rng = np.random.default_rng(7)
    for it in range(args.train_iters):
        tokens = jnp.asarray(data_rng.integers(0, args.vocab_size, size=(4, args.max_sequence_length)))
        params, loss = train_step(params, tokens)
        print("RESULT iter", it, "loss", round(float(loss.addressable_shards[0].data), 5))
    for name in sorted(replicated):
        local = np.asarray(params[name].addressable_shards[0].data)
        print("RESULT", name, round(float(local.sum()), 5))


if __name__ == "__main__":
    main()
