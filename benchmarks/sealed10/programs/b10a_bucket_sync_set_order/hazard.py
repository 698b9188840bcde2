# The weight syncer walks a set of parameter names into buckets, so each process packs the buckets in its own hash order
# Source: https://github.com/RLinf/RLinf/pull/1355
# Written for the mcjax sealed10 evaluation (not copied); run as 2 processes by benchmarks/sealed10/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

D_MODEL = 4
BUCKET_ELEMS = 2 * D_MODEL * D_MODEL  # two square matrices per bucket
SHAPES = {n: (D_MODEL, D_MODEL) for n in ("embed.weight", "attn.q_proj", "attn.k_proj", "attn.v_proj",
                                          "attn.o_proj", "mlp.up", "mlp.down", "head.weight", "frozen.pos_table")}


def init_params(seed):
    rng = np.random.default_rng(seed)
    return {k: rng.standard_normal(s).astype(np.float32) for k, s in SHAPES.items()}


class BucketWeightSyncer:
    """Pushes the trainer's (process 0's) weights into every rollout replica, bucket by bucket."""

    def __init__(self, names):
        self.param_names_need_sync = {n for n in names if not n.startswith("frozen.")}

    def buckets(self):
        bucket, size = [], 0
        for name in self.param_names_need_sync:
            n = int(np.prod(SHAPES[name]))
            if bucket and size + n > BUCKET_ELEMS:
                yield bucket
                bucket, size = [], 0
            bucket.append(name)
            size += n
        if bucket:
            yield bucket

    def sync(self, params):
        out = dict(params)
        for bucket in self.buckets():
            flat = np.concatenate([params[n].ravel() for n in bucket])
            flat = np.asarray(multihost_utils.broadcast_one_to_all(flat))  # process 0 is the source
            offset = 0
            for n in bucket:
                size = int(np.prod(SHAPES[n]))
                out[n] = flat[offset:offset + size].reshape(SHAPES[n])
                offset += size
        return out


@jax.jit
def rollout_score(params, obs):
    h = jnp.tanh(obs @ params["embed.weight"])
    q, k, v = h @ params["attn.q_proj"], h @ params["attn.k_proj"], h @ params["attn.v_proj"]
    h = h + jnp.tanh(q * k) * v @ params["attn.o_proj"]
    h = h + jnp.tanh(h @ params["mlp.up"]) @ params["mlp.down"]
    return jnp.mean((h @ params["head.weight"]) ** 2)


def main():
    # the trainer (process 0) holds updated weights; rollout replicas start from a stale copy
    params = init_params(7 if jax.process_index() == 0 else 3)
    syncer = BucketWeightSyncer(SHAPES.keys())
    params = syncer.sync(params)
    mesh = jax.make_mesh((jax.device_count(),), ("env",))
    rep, env = NamedSharding(mesh, P()), NamedSharding(mesh, P("env"))
    obs = jax.make_array_from_process_local_data(
        env, np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, D_MODEL) * (1 + jax.process_index()))
    synced = {k: v for k, v in params.items() if not k.startswith("frozen.")}
    score = rollout_score(jax.device_put(synced, rep), obs)
    print("RESULT synced", sorted(synced))
    print("RESULT head_checksum", round(float(np.abs(synced["head.weight"]).sum()), 4))
    print("RESULT score", round(float(score), 5))


main()
