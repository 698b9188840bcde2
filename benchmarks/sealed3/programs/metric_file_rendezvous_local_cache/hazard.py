# Distributed metric: every process writes its predictions to a cache file and process 0 gathers them by file
# Source: https://github.com/huggingface/datasets/issues/4420
# Written for the mcjax sealed3 evaluation (not copied); run as 2 processes by benchmarks/sealed3/run_pair.py.
import os
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


def default_metrics_cache() -> str:
    """Like HF_METRICS_CACHE under the job's scratch TMPDIR: a directory local to this node."""
    return tempfile.mkdtemp(prefix="hf_metrics_")


class DistributedAccuracy:
    def __init__(self, num_process: int, process_id: int, experiment_id: str,
                 cache_dir: str | None = None, timeout: float = 5.0):
        self.num_process, self.process_id = num_process, process_id
        self.experiment_id, self.timeout = experiment_id, timeout
        self.data_dir = os.path.join(cache_dir or default_metrics_cache(), "accuracy", "default")
        os.makedirs(self.data_dir, exist_ok=True)
        self._preds, self._refs = [], []

    def _cache_file(self, pid: int) -> str:
        return os.path.join(self.data_dir, f"{self.experiment_id}-{self.num_process}-{pid}.npz")

    def add_batch(self, predictions, references):
        self._preds.append(np.asarray(predictions))
        self._refs.append(np.asarray(references))

    def _finalize(self):
        path = self._cache_file(self.process_id)
        np.savez(path, predictions=np.concatenate(self._preds), references=np.concatenate(self._refs))
        open(path + ".done", "w").close()

    def _get_all_cache_files(self) -> list[str]:
        paths = [self._cache_file(pid) for pid in range(self.num_process)]
        deadline = time.monotonic() + self.timeout
        for pid, path in enumerate(paths):
            while not os.path.exists(path + ".done"):
                if time.monotonic() > deadline:
                    raise ValueError(f"Cannot acquire lock on cached file {path} for process {pid}.")
                time.sleep(0.05)
        return paths

    def compute(self) -> dict | None:
        self._finalize()
        if self.process_id != 0:
            return None
        paths = self._get_all_cache_files()
        files = [dict(np.load(p)) for p in paths]
        for p in paths:  # release and delete the cache files, as the metric does after computing
            os.remove(p)
            os.remove(p + ".done")
        preds = np.concatenate([f["predictions"] for f in files])
        refs = np.concatenate([f["references"] for f in files])
        return {"accuracy": float(np.mean(preds == refs)), "count": int(len(refs))}


class Evaluator:
    def __init__(self, mesh):
        self.sharding = NamedSharding(mesh, P("data"))
        self.w = jnp.asarray(np.random.default_rng(0).normal(size=(4, 3)).astype(np.float32))
        self._predict = jax.jit(lambda w, x: jnp.argmax(x @ w, axis=-1))

    def evaluate(self, metric: DistributedAccuracy, steps: int = 3) -> dict:
        rng = np.random.default_rng(17 + jax.process_index())
        for _ in range(steps):
            x = rng.normal(size=(4, 4)).astype(np.float32)
            y = rng.integers(0, 3, size=4)
            preds = self._predict(self.w, jax.make_array_from_process_local_data(self.sharding, x))
            local_preds = np.concatenate([np.asarray(s.data) for s in preds.addressable_shards])
            metric.add_batch(predictions=local_preds, references=y)
        result = metric.compute()
        acc = np.float32(result["accuracy"] if result else 0.0)
        return {"accuracy": float(multihost_utils.broadcast_one_to_all(acc))}


def main():
    mesh = jax.sharding.Mesh(np.array(jax.devices()), ("data",))
    metric = DistributedAccuracy(jax.process_count(), jax.process_index(), experiment_id="glue_mrpc_eval")
    print("RESULT", f"accuracy={Evaluator(mesh).evaluate(metric)['accuracy']:.4f}")


if __name__ == "__main__":
    main()
