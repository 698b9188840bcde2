# Multiple-choice eval: each process runs its own share of requests in batches, with no padding to the largest share
# Source: https://github.com/EleutherAI/lm-evaluation-harness/pull/679
# Written for the mcjax sealed13 evaluation (not copied); run as 2 processes by benchmarks/sealed13/run_pair.py.
import collections
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("dp",))
ROWS = NamedSharding(MESH, P("dp"))
Instance = collections.namedtuple("Instance", "doc_id choice features target")


class MultipleChoiceTask:
    num_docs, num_choices, dim = 9, 2, 4

    def __init__(self):
        rng = np.random.default_rng(3)
        self.docs = rng.normal(size=(self.num_docs, self.dim)).astype(np.float32)
        self.gold = (self.docs.sum(axis=1) > 0).astype(np.int32)

    def build_all_requests(self, rank, world):
        out = []
        for doc_id in range(rank, self.num_docs, world):
            for c in range(self.num_choices):
                out.append(Instance(doc_id, c, self.docs[doc_id], np.float32(2 * c - 1)))
        return out


class ShardedLM:
    batch_size = 4

    def __init__(self, dim):
        # FSDP-style: the weights are sharded across processes and all-gathered inside every forward
        self.w = jax.device_put(np.linspace(-0.4, 1.0, dim).astype(np.float32), ROWS)
        self._score = jax.jit(lambda w, x, t: -(jnp.tanh(x @ w) - t) ** 2, out_shardings=ROWS)

    def loglikelihood(self, requests):
        out = []
        for start in range(0, len(requests), self.batch_size):
            chunk = requests[start:start + self.batch_size]
            x = np.zeros((self.batch_size, len(chunk[0].features)), np.float32)
            t = np.zeros((self.batch_size,), np.float32)
            for i, req in enumerate(chunk):
                x[i], t[i] = req.features, req.target
            gx, gt = (jax.make_array_from_process_local_data(ROWS, a) for a in (x, t))
            scores = np.asarray(self._score(self.w, gx, gt).addressable_data(0))
            out.extend(scores[:len(chunk)].tolist())
        return out


def evaluate(lm, task):
    rank, world = jax.process_index(), jax.process_count()
    requests = task.build_all_requests(rank, world)
    cloned_reqs = list(requests)
    resps = lm.loglikelihood(cloned_reqs)
    by_doc = collections.defaultdict(dict)
    for req, ll in zip(requests, resps):
        by_doc[req.doc_id][req.choice] = ll
    correct = sum(int(max(lls, key=lls.get) == task.gold[d]) for d, lls in by_doc.items())
    totals = multihost_utils.process_allgather(np.array([correct, len(by_doc)], np.int32))
    return int(totals[:, 0].sum()), int(totals[:, 1].sum())


def main():
    task = MultipleChoiceTask()
    correct, total = evaluate(ShardedLM(task.dim), task)
    print("RESULT docs", total)
    print("RESULT acc", round(correct / total, 4))


if __name__ == "__main__":
    main()
