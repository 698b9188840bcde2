# Accelerate eval loop (fixed): every process calls gather_for_metrics; only the main process counts
# Source: https://github.com/huggingface/accelerate/issues/2785 (port of an Accelerate
# torch.distributed hang to multi-process JAX)
# Written for the mcjax sealed8 evaluation (not copied); run as 2 processes by benchmarks/sealed8/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class GradientState:
    def __init__(self):
        self.end_of_dataloader = False
        self.remainder = -1


class ShardedLoader:
    """Each process reads every num_processes-th sample; the last batch is padded by repetition."""

    def __init__(self, dataset: np.ndarray, batch_size: int, state: GradientState):
        self.dataset, self.batch_size, self.state = dataset, batch_size, state

    def __iter__(self):
        n, world = len(self.dataset), jax.process_count()
        total_batch = self.batch_size * world
        self.state.remainder = n % total_batch
        num_batches = -(-n // total_batch)
        for b in range(num_batches):
            idx = np.arange(b * total_batch, (b + 1) * total_batch) % n
            self.state.end_of_dataloader = b == num_batches - 1
            yield self.dataset[idx[jax.process_index()::world]]


class Accelerator:
    def __init__(self):
        self.gradient_state = GradientState()
        self.mesh = jax.make_mesh((jax.device_count(),), ("data",))

    @property
    def is_main_process(self) -> bool:
        return jax.process_index() == 0

    def prepare_data_loader(self, dataset, batch_size):
        return ShardedLoader(dataset, batch_size, self.gradient_state)

    def gather(self, tensor):
        return multihost_utils.process_allgather(tensor, tiled=True)

    def gather_for_metrics(self, tensor):
        gathered = self.gather(tensor)
        if self.gradient_state.end_of_dataloader and self.gradient_state.remainder > 0:
            gathered = jax.tree_util.tree_map(lambda t: t[: self.gradient_state.remainder], gathered)
        return gathered

    def wait_for_everyone(self):
        multihost_utils.sync_global_devices("accelerate.wait_for_everyone")


@jax.jit
def model_apply(w, x):
    return jnp.argmax(x @ w, axis=-1)


def evaluate(accelerator: Accelerator, w, loader):
    correct, seen = 0, 0
    for batch in loader:
        x = jnp.asarray(batch[:, :-1], jnp.float32)
        labels = jnp.asarray(batch[:, -1], jnp.int32)
        preds = model_apply(w, x)
        preds, refs = accelerator.gather_for_metrics((preds, labels))
        if accelerator.is_main_process:
            correct += int(jnp.sum(preds == refs))
            seen += int(refs.shape[0])
    return correct, seen


def main():
    rng = np.random.default_rng(0)
    feats = rng.normal(size=(21, 4)).astype(np.float32)
    data = np.concatenate([feats, (feats[:, :1] > 0).astype(np.float32)], axis=1)
    accelerator = Accelerator()
    loader = accelerator.prepare_data_loader(data, batch_size=4)
    w = jnp.asarray(rng.normal(size=(4, 2)), jnp.float32)
    correct, seen = evaluate(accelerator, w, loader)
    accelerator.wait_for_everyone()
    summary = multihost_utils.broadcast_one_to_all(np.array([correct, seen], np.int32))
    print(f"RESULT accuracy {int(summary[0])}/{int(summary[1])}", flush=True)


if __name__ == "__main__":
    main()
