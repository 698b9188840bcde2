# Evaluator pads each rank's requests so every rank runs the same number of LM batches, storing
# and reading the padding under the same request-type key (the fix from the report)
# Source: https://github.com/EleutherAI/lm-evaluation-harness/issues/951
# Written for the mcjax sealed6 evaluation (not copied); run as 2 processes by benchmarks/sealed6/run_pair.py.
import collections
import itertools
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

VOCAB, DIM, CTX = 48, 8, 12


class Instance:
    def __init__(self, doc_id, args, repeats=1):
        self.doc_id, self.args, self.repeats, self.resps = doc_id, args, repeats, []


class MultipleChoiceTask:
    OUTPUT_TYPE = "multiple_choice"

    def __init__(self, name, n_docs, n_choices):
        self.name, self.n_docs, self.n_choices = name, n_docs, n_choices
        self._instances = []

    def test_docs(self):
        rng = np.random.default_rng(sum(map(ord, self.name)))
        for _ in range(self.n_docs):
            yield rng.integers(1, VOCAB, size=(self.n_choices, CTX)).astype(np.int32)

    def build_all_requests(self, rank, world_size, limit=None):
        docs = itertools.islice(enumerate(self.test_docs()), rank, limit, world_size)
        for doc_id, doc in docs:
            for choice in doc:
                self._instances.append(Instance(doc_id, (choice,)))

    @property
    def instances(self):
        return self._instances


class ShardedLM:
    def __init__(self, batch_size):
        self.rank, self.world_size = jax.process_index(), jax.process_count()
        self.batch_size = batch_size
        self.mesh = jax.sharding.Mesh(np.array(jax.devices()), ("data",))
        self.data = NamedSharding(self.mesh, P("data"))
        emb = np.linspace(-1.0, 1.0, VOCAB * DIM, dtype=np.float32).reshape(VOCAB, DIM)
        self.params = jax.device_put(emb, NamedSharding(self.mesh, P()))
        self._score = jax.jit(lambda emb, tok: jnp.sum(jax.nn.log_softmax(emb[tok] @ emb.T), axis=(1, 2)))

    def loglikelihood(self, requests):
        out = []
        for i in range(0, len(requests), self.batch_size):
            chunk = [r.args[0] for r in requests[i:i + self.batch_size]]
            chunk += [chunk[-1]] * (self.batch_size - len(chunk))
            tokens = jax.make_array_from_process_local_data(self.data, np.stack(chunk))
            scores = multihost_utils.process_allgather(self._score(self.params, tokens), tiled=True)
            local = np.asarray(scores).reshape(self.world_size, self.batch_size)[self.rank]
            out.extend(float(s) for s in local[:len(requests[i:i + self.batch_size])])
        return out


def evaluate(lm, tasks):
    requests = collections.defaultdict(list)
    padding_requests = collections.defaultdict(int)
    for task in tasks:
        task.build_all_requests(lm.rank, lm.world_size)
        reqtype = "loglikelihood" if task.OUTPUT_TYPE == "multiple_choice" else task.OUTPUT_TYPE
        requests[reqtype].extend(task.instances)
        if lm.world_size > 1:
            counts = multihost_utils.process_allgather(np.int32(len(task._instances)))
            numpad = int(max(counts)) - int(counts[lm.rank])
            padding_requests[reqtype] += numpad

    for reqtype, reqs in requests.items():
        cloned = [r for r in reqs for _ in range(r.repeats)]
        if lm.world_size > 1 and padding_requests[reqtype] > 0:
            cloned.extend([cloned[-1]] * padding_requests[reqtype])
        resps = getattr(lm, reqtype)(cloned)
        for x, req in zip(resps, cloned):
            req.resps.append(x)
        multihost_utils.sync_global_devices(f"after_{reqtype}")

    results = {}
    for task in tasks:
        by_doc = collections.defaultdict(list)
        for inst in task.instances:
            by_doc[inst.doc_id].append(inst.resps[0])
        correct = sum(int(np.argmax(v) == 0) for v in by_doc.values())
        totals = multihost_utils.process_allgather(np.array([correct, len(by_doc)], np.int32))
        results[task.name] = float(totals[:, 0].sum()) / float(totals[:, 1].sum())
    return results


if __name__ == "__main__":
    lm = ShardedLM(batch_size=4)
    tasks = [MultipleChoiceTask("arc_easy", n_docs=7, n_choices=4),
             MultipleChoiceTask("piqa", n_docs=5, n_choices=2)]
    for name, acc in sorted(evaluate(lm, tasks).items()):
        print("RESULT", name, round(acc, 4))
