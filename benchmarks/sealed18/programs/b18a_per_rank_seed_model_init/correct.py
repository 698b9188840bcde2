# Denoising autoencoder, data parallel: per-rank noise RNG, initial weights synced from the master
# Source: https://github.com/pytorch/xla/issues/2911
# Written for the mcjax sealed18 evaluation (not copied); run as 2 processes by benchmarks/sealed18/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

FLAGS = {"seed": 1, "in_dim": 10, "hidden": 6, "batch_size": 8, "num_steps": 15, "lr": 0.05, "noise_std": 0.3}


def init_model(key):
    k_enc, k_dec = jax.random.split(key)
    return {"enc": jax.random.normal(k_enc, (FLAGS["in_dim"], FLAGS["hidden"])) * 0.2,
            "dec": jax.random.normal(k_dec, (FLAGS["hidden"], FLAGS["in_dim"])) * 0.2}


def reconstruction_loss(params, noisy, clean):
    recon = jnp.tanh(noisy @ params["enc"]) @ params["dec"]
    return jnp.mean((recon - clean) ** 2)


def train_loop_fn(params, key, mesh, rank):
    grad_fn = jax.jit(jax.grad(reconstruction_loss))
    all_reduce_mean = jax.jit(lambda g: jnp.mean(g, axis=0), out_shardings=NamedSharding(mesh, P()))
    data_rng = np.random.default_rng(100 + rank)
    for step in range(FLAGS["num_steps"]):
        clean = data_rng.normal(size=(FLAGS["batch_size"], FLAGS["in_dim"])).astype(np.float32)
        key, noise_key = jax.random.split(key)
        noisy = clean + FLAGS["noise_std"] * jax.random.normal(noise_key, clean.shape)
        grads = grad_fn(params, noisy, clean)
        reduced = {}
        for name, g in grads.items():
            stacked = jax.make_array_from_process_local_data(NamedSharding(mesh, P("replica")),
                                                             np.asarray(g)[None])
            reduced[name] = np.asarray(all_reduce_mean(stacked).addressable_shards[0].data)
        params = {name: params[name] - FLAGS["lr"] * reduced[name] for name in params}
    return params


def main():
    rank = jax.process_index()
    mesh = Mesh(np.array(jax.devices()), ("replica",))
    key = jax.random.PRNGKey(FLAGS["seed"] + rank)
    key, init_key = jax.random.split(key)
    params = init_model(init_key)
    # every replica starts from the master's initial weights; the per-rank key is kept for the noise
    params = {name: np.asarray(p) for name, p in params.items()}
    params = multihost_utils.broadcast_one_to_all(params)
    params = train_loop_fn(params, key, mesh, rank)
    checksum = {name: round(float(np.abs(np.asarray(p)).sum()), 4) for name, p in sorted(params.items())}
    print("RESULT steps", FLAGS["num_steps"])
    print("RESULT param_checksum", checksum)


if __name__ == "__main__":
    main()
