"""MCJ305 collective-result-discarded."""

from __future__ import annotations

import libcst as cst

from mcjax_lint import knowledge as K
from mcjax_lint.analysis import evidence
from mcjax_lint.analysis.values import BOTTOM
from mcjax_lint.model import Step
from mcjax_lint.rules.base import Rule


# What a helper that exchanges host data between processes does (a functional collective, or a
# global array built from each process's data): a compute step (a jitted forward) is no exchange.
_EXCHANGES = tuple(K.COLLECTIVE_CALLS[q] for q in sorted(K.SANITIZERS | K.GLOBAL_ARRAY_CONSTRUCTORS) if q in K.COLLECTIVE_CALLS)


class CollectiveResultDiscarded(Rule):
    CODE = "MCJ305"
    NAME = "collective-result-discarded"
    SEVERITY = "error"
    SUMMARY = ("The result of a functional cross-process reduction (`process_allgather`, `broadcast_one_to_all`, "
               "`psum`, a helper returning one) is discarded while its input is used afterwards as if reduced.")
    FAMILY = "process-dependent shapes and pytrees"

    def visit_Call(self, call: cst.Call) -> None:
        fa = self.ctx.fa
        if call not in fa.discarded:
            return
        info = fa.calls[call]
        functional = self._functional(call, info)
        if functional is None:
            return
        # (each argument a variable, with its value at the call: `info.args` in argument order)
        values = [v for _, v in info.args] if len(info.args) == len(call.args) else [BOTTOM] * len(call.args)
        given = [(a.value.value, v) for a, v in zip(call.args, values) if isinstance(a.value, cst.Name) and not a.star]
        used = next(((n, v) for n, v in given if fa.read_after(call, n)), None)
        if used is None:
            return  # (a value never read again: a barrier-like call, nothing lost)
        used, value = used
        differs = self._differs(call, value)
        if differs is None:
            return  # (a constant: the same on every process, its reduction is what each one has)
        certain, what = functional
        # (a functional collective returns its result whatever its inputs: certain)
        chain = [self.step(call, f"collective work: {what}") if certain else self.work_step(call, info.collective)]
        if not certain:
            chain.append(Step(self.line(call), f"{what} returns the global array it computes", False,
                              "a helper's result may be other than the reduction of its argument"))
        if not differs:
            chain.append(Step(self.line(call), f"`{used}` differs between processes", False,
                              "an argument not known to differ between processes may be the same "
                              "everywhere (gathered as a barrier: nothing lost)"))
        self.report(call, (
            f"the result of {what} is discarded, and `{used}` is used afterwards: a functional collective "
            f"changes nothing in place, so each process goes on with its own local `{used}` instead of the "
            f"reduced value; assign the result (`{used} = ...`)"), chain=chain)

    def _differs(self, call: cst.Call, value) -> bool | None:
        """Whether the argument whose value at `call` is `value` differs between processes, so
        that dropping its reduction loses something: True when it is known to (process-dependent
        data, or any value inside a traced function, one block per device: `lax.psum(total,
        "data")`); None when it is a constant (`marker = np.full((1,), 7)`: every process already
        holds the reduction's input); False when nothing says (a parameter's value: a guess)."""
        if (self.ctx.fa.qualify(call.func) or "").startswith("jax.lax."):
            return True
        if value.pd or value.pdc:
            return True
        return None if value.const else False

    def _functional(self, call: cst.Call, info) -> tuple[bool, str] | None:
        """(certain, description) when `call` returns what it computes across processes: a known
        functional collective (certain), or a project function each of whose candidates exchanges
        data between processes (`_EXCHANGES`) and returns a global array or a collective's result,
        not host data (a guess: `float(step(x))` of a warm-up, a jitted forward's loss are
        dropped on purpose); None otherwise."""
        fa = self.ctx.fa
        q = fa.qualify(call.func)
        if q in K.SANITIZERS:
            return True, K.COLLECTIVE_CALLS.get(q, f"`{q}()`")
        index = fa.index
        cands: list[str] = []
        if info.name in index.functions:
            cands = [info.name]
        elif evidence.BY_NAME_NOTE in info.collective and isinstance(call.func, cst.Attribute):
            cands = index.methods_by_name.get(call.func.attr.value, [])
        if not cands:
            return None
        rets = [index.returns.get(c) for c in cands]
        if all(r is not None and (r.glob or r.sanitized) and not r.host for r in rets) \
                and all(any(d in (index.collective.get(c) or "") for d in _EXCHANGES) for c in cands):
            return False, f"`{fa.code(call.func).strip()}()`"
        return None
