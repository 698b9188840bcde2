# An RL trainer packs rollout responses into as few sequences as possible and deals the packs to ranks
# Source: https://github.com/allenai/open-instruct/pull/1308
# Written for the mcjax sealed12 evaluation (not copied); run as 2 processes by benchmarks/sealed12/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

PACK_LENGTH, VOCAB, DIM, LR = 64, 40, 16, 0.1
MESH = Mesh(np.array(jax.devices()), ("dp",))


def rollouts():
    """Generated responses (short ones, as in a batch of quick refusals) with their advantages."""
    rng = np.random.default_rng(5)  # the driver hands every learner rank the same rollout batch
    lengths = [5, 7, 4, 6, 3, 8]
    return [(rng.integers(1, VOCAB, size=n).astype(np.int32), float(rng.normal())) for n in lengths]


def pack_sequences(seqs, pack_length, world_size):
    """First-fit-decreasing packing into the fewest packs of pack_length tokens."""
    total = sum(len(t) for t, _ in seqs)
    longest = max(len(t) for t, _ in seqs)
    effective = pack_length
    bins = []
    for toks, adv in sorted(seqs, key=lambda s: -len(s[0])):
        for b in bins:
            if b["used"] + len(toks) <= effective:
                b["items"].append((toks, adv)); b["used"] += len(toks)
                break
        else:
            bins.append({"items": [(toks, adv)], "used": len(toks)})
    return bins


def materialize(pack):
    tokens = np.zeros(PACK_LENGTH + 1, np.int32)
    adv = np.zeros(PACK_LENGTH, np.float32)
    pos = 0
    for toks, a in pack["items"]:
        tokens[pos:pos + len(toks)] = toks
        adv[pos:pos + len(toks) - 1] = a
        pos += len(toks)
    return tokens[None, :-1], tokens[None, 1:], adv[None]


def shard(a):
    return jax.make_array_from_process_local_data(NamedSharding(MESH, P("dp")), a)


@jax.jit
def learner_step(params, inputs, targets, adv):
    def loss_fn(p):
        logp = jax.nn.log_softmax(p["emb"][inputs] @ p["out"])
        tok_logp = jnp.take_along_axis(logp, targets[..., None], axis=-1)[..., 0]
        return -jnp.sum(tok_logp * adv) / jnp.maximum(jnp.sum(adv != 0), 1.0)
    loss, g = jax.value_and_grad(loss_fn)(params)
    return jax.tree.map(lambda a, b: a - LR * b, params, g), loss


def main():
    rank, world = jax.process_index(), jax.process_count()
    rng = np.random.default_rng(0)
    params = {"emb": jnp.asarray(rng.normal(0, 0.2, (VOCAB, DIM)).astype(np.float32)),
              "out": jnp.asarray(rng.normal(0, 0.2, (DIM, VOCAB)).astype(np.float32))}
    packs = pack_sequences(rollouts(), PACK_LENGTH, world)
    my_packs = packs[rank::world]
    losses = []
    for pack in my_packs:
        params, loss = learner_step(params, *(shard(a) for a in materialize(pack)))
        losses.append(float(loss))
    print("RESULT packs", len(packs))
    print("RESULT microbatches", len(losses))
    print("RESULT out_norm", round(float(jnp.linalg.norm(params["out"])), 5))


main()
