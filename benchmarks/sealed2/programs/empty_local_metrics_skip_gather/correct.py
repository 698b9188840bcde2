# Per-layer monitor metrics are gathered across ranks; a rank with no monitored layer still joins the gather
# Source: https://github.com/bo-ke/llm-internal-medicine/pull/45
# Written for the mcjax sealed2 evaluation (not copied); run as 2 processes by benchmarks/sealed2/run_pair.py.
import os

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MONITORED_LAYERS = ["decoder.0", "decoder.1", "decoder.2", "decoder.3"]
METRICS = ("act_rms", "grad_rms")


def stage_layers(rank: int, world: int) -> list[str]:
    """Pipeline stages: the last stage holds only the LM head (no monitored layer)."""
    if rank == world - 1:
        return ["lm_head"]
    return MONITORED_LAYERS[rank::max(world - 1, 1)]


def collect_local_metrics(layers: list[str], step: int) -> dict[str, dict[str, float]]:
    rng = np.random.default_rng(step)
    return {name: {m: float(rng.uniform()) for m in METRICS} for name in layers if name in MONITORED_LAYERS}


def _gather_fn(local: dict[str, dict[str, float]]) -> np.ndarray:
    table = np.full((len(MONITORED_LAYERS), len(METRICS)), np.nan, np.float32)
    for name, vals in local.items():
        table[MONITORED_LAYERS.index(name)] = [vals[m] for m in METRICS]
    return np.asarray(multihost_utils.process_allgather(table))


def gather_and_aggregate(local: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    tables = _gather_fn(local)
    if np.isnan(tables).all():
        return {}
    merged = np.nanmax(tables, axis=0)
    return {name: dict(zip(METRICS, map(float, merged[i]))) for i, name in enumerate(MONITORED_LAYERS)
            if not np.isnan(merged[i]).all()}


layers = stage_layers(jax.process_index(), jax.process_count())
summary = []
for step in range(3):
    agg = gather_and_aggregate(collect_local_metrics(layers, step))
    summary.append(sorted((k, round(v["act_rms"], 3)) for k, v in agg.items()))
    if jax.process_index() == 0:
        print(f"step {step}: {len(agg)} layers monitored", flush=True)

print("RESULT", summary)
