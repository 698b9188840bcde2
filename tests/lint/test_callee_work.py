"""Divergence.same_work: one inliner of a callee's collective work (`_reached`), asked with two
admission rules. Two paths pair up when each call of a same-file function, replaced by its body's
collective work, gives the same calls in the same order: every comparison follows plain helpers
(straight-line, host work only: `PLAIN_HELPERS`); the arms of an `if` also follow any callee
without an early way out whose work is under no branch or loop (`ANY_CALLEE`)."""

import textwrap

from mcjax_lint.analysis import divergence as D
from mcjax_lint.api import lint_paths

SOURCE = """
import jax
import numpy as np
from jax.experimental import multihost_utils as mu


@jax.jit
def forward(x):
    return x * 2


def sync_counts(n):
    return mu.process_allgather(np.int32(n))


class Runner:
    def busy(self, x, n):
        counts = sync_counts(n)
        return forward(x)

    def idle(self, x):                # a plain helper: the same two calls
        counts = sync_counts(0)
        return forward(x)

    def idle_logged(self, x):         # host work in a loop besides: the same two calls
        for k in range(3):
            print("idle", k)
        counts = sync_counts(0)
        return forward(x)

    def idle_skips(self, x):          # host work, and no sync
        for k in range(3):
            print("idle", k)
        return forward(x)

    def plain_arms(self, x, n):
        if jax.process_index() == 0:
            y = self.busy(x, n)
        else:
            y = self.idle(x)
        return y

    def host_work_arms(self, x, n):
        if jax.process_index() == 0:
            y = self.busy(x, n)
        else:
            y = self.idle_logged(x)
        return y

    def skipping_arms(self, x, n):
        if jax.process_index() == 0:
            y = self.busy(x, n)
        else:
            y = self.idle_skips(x)
        return y
"""
SYNC_FORWARD = "(process_allgather(np.int32(n)), forward(·))"


def _short(seq) -> str:
    names = []
    for t in seq:
        head, _, args = t.key.partition("(")
        names.append(head.rsplit(".", 1)[-1] + "(" + args)
    return "(" + ", ".join(names) + ")"


def test_both_rules_go_through_one_inliner(tmp_path, monkeypatch):
    asked: dict = {}
    reached = D.Divergence._reached

    def recording(self, seq, callees, depth=0, seen=frozenset(), bound=None):
        out = reached(self, seq, callees, depth, seen, bound)
        if depth == 0:
            asked.setdefault(callees, []).append((self.fa.line(seq[0].node), _short(out)))
        return out

    monkeypatch.setattr(D.Divergence, "_reached", recording)
    f = tmp_path / "m.py"
    f.write_text(textwrap.dedent(SOURCE).lstrip())
    findings, errors = lint_paths([f], observed=False)
    assert not errors
    assert [(x.line, x.code) for x in findings] == [(50, "MCJ101")]  # (only the arms that skip the sync)
    # Plain helpers: `idle` is followed, `idle_logged` (a loop) and `idle_skips` are kept as calls.
    assert asked[D.PLAIN_HELPERS] == [
        (37, SYNC_FORWARD), (39, SYNC_FORWARD),
        (44, SYNC_FORWARD), (46, "(idle_logged(·))"),
        (51, SYNC_FORWARD), (53, "(idle_skips(·))")]
    # Any callee: asked only where plain helpers left the arms apart; follows the host work.
    assert asked[D.ANY_CALLEE] == [
        (44, SYNC_FORWARD), (46, SYNC_FORWARD),
        (51, SYNC_FORWARD), (53, "(forward(·))")]


def test_no_second_inliner():
    for name in ("same_through_callees", "_deep_work", "_inlined", "_inline_tok", "_inline_body", "_plain_body"):
        assert not hasattr(D.Divergence, name), name
