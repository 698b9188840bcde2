# lm-eval-harness style `loglikelihood` for multiple-choice tasks, distributed over processes:
# requests are grouped by question (all answer choices of a question share a context), the
# question groups are split across ranks, every rank scores its requests, and the scores are
# all-gathered and put back into request order.
import os
from collections import defaultdict

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

VOCAB, DIM = 20, 6


def all_gather(x):
    return np.asarray(multihost_utils.process_allgather(np.asarray(x)))


def build_requests(seed=11):
    """(question_id, context tokens, continuation tokens, is_gold) for 3 questions."""
    rng = np.random.default_rng(seed)
    requests = []
    for qid, num_choices in enumerate([4, 4, 2]):
        context = rng.integers(1, VOCAB, size=5)
        gold = int(rng.integers(num_choices))
        for c in range(num_choices):
            requests.append((qid, context, rng.integers(1, VOCAB, size=2), c == gold))
    return requests


@jax.jit
def continuation_logprob(params, tokens, n_cont):
    h = params["emb"][tokens[:-1]]
    logp = jax.nn.log_softmax(h @ params["out"], -1)
    per_tok = jnp.take_along_axis(logp, tokens[1:, None], -1)[:, 0]
    return jnp.sum(jnp.where(jnp.arange(per_tok.shape[0]) >= per_tok.shape[0] - n_cont, per_tok, 0.0))


class MLXLM:
    def __init__(self, seed=0):
        k1, k2 = jax.random.split(jax.random.PRNGKey(seed))
        self.params = {"emb": jax.random.normal(k1, (VOCAB, DIM)), "out": jax.random.normal(k2, (DIM, VOCAB))}

    def loglikelihood(self, requests):
        rank, size = jax.process_index(), jax.process_count()
        group_reqs = defaultdict(list)
        for idx, req in enumerate(requests):
            group_reqs[req[0]].append((idx, req))
        indices, responses = [], []
        for v in group_reqs.values():
            idx, resp = zip(*v)
            indices.extend(idx)
            responses.append(resp)

        # split data across ranks
        local_questions = responses[rank::size]
        scores = []
        for question in local_questions:
            for _, context, continuation, _ in question:
                tokens = np.concatenate([context, continuation]).astype(np.int32)
                scores.append(float(continuation_logprob(self.params, tokens, len(continuation))))

        num_results = len(requests)
        scores = np.array(scores, np.float32)
        if size > 1:
            per_group = int(np.ceil(num_results / size))
            scores = np.pad(scores, (0, per_group - len(scores)))
            scores = all_gather(scores[np.newaxis]).reshape(size, per_group)
            scores = scores.T.reshape(-1)
        inv_sort = np.argsort(np.array(indices))
        return scores[:num_results][inv_sort]


def main():
    requests = build_requests()
    scores = MLXLM().loglikelihood(requests)
    correct = []
    for qid in sorted({r[0] for r in requests}):
        idx = [i for i, r in enumerate(requests) if r[0] == qid]
        pred = idx[int(np.argmax(scores[idx]))]
        correct.append(requests[pred][3])
    print("RESULT scores", np.round(scores, 3).tolist())
    print("RESULT acc", round(float(np.mean(correct)), 4))


if __name__ == "__main__":
    main()
