# When the root's result publishing raises, it skips the closing barrier the other processes still enter
# Source: https://github.com/ai-dynamo/aiconfigurator/pull/1542
# Written for the mcjax sealed11 evaluation (not copied); run as 2 processes by benchmarks/sealed11/run_pair.py.
import csv
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

OUT_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed11_root_publish_failure_skips_barrier",
                       os.environ.get("JOB_ID", "local"))


@dataclass
class CollectorConfig:
    tokens_per_rank: list = field(default_factory=lambda: [8, 64, 256])
    hidden: int = 16
    peak_bandwidth_gbps: dict = field(default_factory=lambda: {"gpu": 450.0, "cpu": 0.0})
    repeats: int = 3


def measure_a2a(mesh, tokens, hidden, repeats):
    """Time an expert-parallel all-to-all style exchange; returns (checksum, seconds)."""
    sharding = NamedSharding(mesh, P("ep", None))
    local = np.full((tokens, hidden), jax.process_index() + 1.0, np.float32)
    x = jax.make_array_from_process_local_data(sharding, local)
    exchange = jax.jit(lambda a: jnp.roll(a, tokens, axis=0) * 2.0, out_shardings=sharding)
    out = exchange(x).block_until_ready()
    start = time.perf_counter()
    for _ in range(repeats):
        out = exchange(x).block_until_ready()
    elapsed = (time.perf_counter() - start) / repeats
    checksum = jax.jit(jnp.sum, out_shardings=NamedSharding(mesh, P()))(out)
    return float(checksum), elapsed


def _write_rows(rows, path):
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["tokens", "checksum", "seconds"])
        writer.writerows(rows)


def _write_sidecar(rows, cfg, path):
    peak = cfg.peak_bandwidth_gbps[jax.devices()[0].platform]
    bytes_moved = np.array([r[0] * cfg.hidden * 4 for r in rows], np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        efficiency = bytes_moved / np.array([r[2] for r in rows]) / 1e9 / peak
    with open(path, "w") as f:
        json.dump({"rows": len(rows), "efficiency": efficiency.tolist()}, f, allow_nan=False)


def main():
    cfg = CollectorConfig()
    mesh = jax.make_mesh((jax.device_count(),), ("ep",))
    rows, run_failed = [], False
    try:
        for tokens in cfg.tokens_per_rank:
            checksum, seconds = measure_a2a(mesh, tokens, cfg.hidden, cfg.repeats)
            rows.append((tokens, checksum, seconds))
        if jax.process_index() == 0:
            os.makedirs(OUT_DIR, exist_ok=True)
            _write_rows(rows, os.path.join(OUT_DIR, "moe_a2a_perf.csv"))
            _write_sidecar(rows, cfg, os.path.join(OUT_DIR, "moe_a2a_perf.json"))
    except BaseException as error:
        run_failed = True
        print(f"[moe_a2a] publish failed on process {jax.process_index()}: {error}", file=sys.stderr)
    finally:
        if not run_failed:
            multihost_utils.sync_global_devices("moe_a2a collector done")
    print("RESULT checksums", [round(r[1], 3) for r in rows])
    print("RESULT run_failed", run_failed)


main()
