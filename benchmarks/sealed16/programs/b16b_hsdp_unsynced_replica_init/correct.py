# LLM-Foundry-style pretraining with hybrid sharding (HSDP): sync_module_states is forced on, so rank 0's initial weights reach every replica
# Source: https://github.com/mosaicml/llm-foundry/pull/830
# Written for the mcjax sealed16 evaluation (not copied); run as 2 processes by benchmarks/sealed16/run_pair.py.
import os
import warnings

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("replicate",))     # one device per replica group here
MODEL_CFG = {"d_model": 8, "vocab": 12, "init_device": "cpu", "init_std": 0.3}
FSDP_CFG = {"sharding_strategy": "HYBRID_SHARD", "mixed_precision": "DEFAULT"}
RANK_ZERO_SEED = 17


def seed_all_for_rank():
    """Composer-style: every rank seeds with rank_zero_seed + global rank (different dropout masks per rank)."""
    return np.random.default_rng(RANK_ZERO_SEED + jax.process_index())


def process_init_device(model_cfg, fsdp_config):
    if model_cfg.get("init_device") == "mixed":
        fsdp_config.setdefault("sync_module_states", True)
        fsdp_config.setdefault("load_monolith_rank0_only", True)
    if fsdp_config.get("sharding_strategy", "FULL_SHARD") in ("HYBRID_SHARD", "_HYBRID_SHARD_ZERO2") \
            and not fsdp_config.get("sync_module_states", False):
        warnings.warn("Setting `sync_module_states = True` for FSDP. This is required when using hybrid sharding.")
        fsdp_config["sync_module_states"] = True
    return fsdp_config


def build_model(model_cfg, rng):
    d, v, std = model_cfg["d_model"], model_cfg["vocab"], model_cfg["init_std"]
    return {"wte": (rng.normal(size=(v, d)) * std).astype(np.float32),
            "mlp": (rng.normal(size=(d, d)) * std).astype(np.float32)}


def wrap_fsdp(params, fsdp_config):
    if fsdp_config.get("sync_module_states", False):
        params = {k: np.asarray(v) for k, v in multihost_utils.broadcast_one_to_all(params).items()}
    return params


def lm_loss(params, tokens, mask):
    h = params["wte"][tokens[:, :-1]]
    h = h + mask * jnp.tanh(h @ params["mlp"])
    logp = jax.nn.log_softmax(h @ params["wte"].T, -1)
    return -jnp.mean(jnp.take_along_axis(logp, tokens[:, 1:, None], -1))


@jax.jit
def train_step(params, tokens, mask):
    loss, g = jax.value_and_grad(lm_loss)(params, tokens, mask)
    return jax.tree.map(lambda p, gp: p - 0.3 * gp, params, g), loss


def main():
    rng = seed_all_for_rank()
    fsdp_config = process_init_device(MODEL_CFG, dict(FSDP_CFG))
    params = wrap_fsdp(build_model(MODEL_CFG, rng), fsdp_config)
    for step in range(4):
        data_rng = np.random.default_rng(1000 + 10 * step + jax.process_index())
        local = data_rng.integers(0, MODEL_CFG["vocab"], size=(4, 7)).astype(np.int32)
        tokens = multihost_utils.host_local_array_to_global_array(local, MESH, P("replicate"))
        local_mask = (rng.random((4, 1, MODEL_CFG["d_model"])) > 0.1).astype(np.float32)   # this rank's dropout
        mask = multihost_utils.host_local_array_to_global_array(local_mask, MESH, P("replicate"))
        new_params, loss = train_step(params, tokens, mask)
        params = {k: np.asarray(v.addressable_data(0)) for k, v in new_params.items()}   # local replica
    eval_tokens = np.arange(14, dtype=np.int32).reshape(2, 7) % MODEL_CFG["vocab"]
    eval_loss = float(lm_loss(params, eval_tokens, np.ones((2, 1, MODEL_CFG["d_model"]), np.float32)))
    print("RESULT eval_loss", round(eval_loss, 5))
    print("RESULT wte_checksum", round(float(np.abs(params["wte"]).sum()), 4))


if __name__ == "__main__":
    main()
