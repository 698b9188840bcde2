# Evaluator with a prediction-saver handler that keeps rows locally and all-gathers them once at epoch end
# Source: https://github.com/Project-MONAI/MONAI/issues/2095
# Written for the mcjax sealed14 evaluation (not copied); run as 2 processes by benchmarks/sealed14/run_pair.py.
import os
from collections import defaultdict

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NUM_CASES = 9            # validation volumes; split across processes without padding (no duplicated cases)
BATCH = 2


class Engine:
    """A tiny event engine in the style of ignite: handlers fire after each iteration and at epoch end."""

    def __init__(self, step_fn):
        self.step_fn, self.handlers = step_fn, defaultdict(list)
        self.output = None

    def on(self, event, fn):
        self.handlers[event].append(fn)

    def run(self, loader):
        for batch in loader:
            self.output = self.step_fn(batch)
            for fn in self.handlers["ITERATION_COMPLETED"]:
                fn(self)
        for fn in self.handlers["EPOCH_COMPLETED"]:
            fn(self)


def gather_padded(values, width):
    """All-gather a 1-D array whose length may differ by process: pad to `width`, gather, trim."""
    n = np.asarray(multihost_utils.process_allgather(np.int32(len(values))))
    buf = np.full(width, -1.0, np.float32)
    buf[: len(values)] = values
    rows = np.asarray(multihost_utils.process_allgather(buf))
    return np.concatenate([rows[i][: n[i]] for i in range(len(n))])


class ClassificationSaver:
    def __init__(self):
        self.rows, self._ids, self._scores = [], [], []

    def attach(self, engine):
        engine.on("ITERATION_COMPLETED", self.on_iteration)
        engine.on("EPOCH_COMPLETED", self.on_epoch)

    def on_iteration(self, engine):
        ids, scores = engine.output
        self._ids.extend(ids.tolist())             # local only: iteration counts differ between processes
        self._scores.extend(scores.tolist())

    def on_epoch(self, engine):
        width = NUM_CASES                          # an upper bound on any process's case count
        all_ids = gather_padded(np.asarray(self._ids, np.float32), width)
        all_scores = gather_padded(np.asarray(self._scores, np.float32), width)
        self.rows.extend(zip(all_ids.astype(int).tolist(), np.round(all_scores, 4).tolist()))
        self.rows.sort()


@jax.jit
def classify(volumes):
    return jax.nn.sigmoid(jnp.mean(volumes, axis=(1, 2)) * 3.0)


def make_loader(rank, world):
    case_ids = np.arange(NUM_CASES)[rank::world]           # 5 cases on process 0, 4 on process 1
    rng = np.random.default_rng(0)
    volumes = rng.normal(size=(NUM_CASES, 4, 4)).astype(np.float32)
    for start in range(0, len(case_ids), BATCH):
        ids = case_ids[start:start + BATCH]
        yield ids, volumes[ids]


def main():
    engine = Engine(lambda batch: (batch[0], np.asarray(classify(batch[1]))))
    saver = ClassificationSaver()
    saver.attach(engine)
    engine.run(make_loader(jax.process_index(), jax.process_count()))
    print("RESULT saved_rows", len(saver.rows))
    print("RESULT rows", saver.rows)


if __name__ == "__main__":
    main()
