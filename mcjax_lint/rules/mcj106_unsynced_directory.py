"""MCJ106 directory-created-on-some-processes."""

from __future__ import annotations

import libcst as cst

from mcjax_lint import knowledge as K
from mcjax_lint.analysis import kinds, local_uses
from mcjax_lint.analysis.taint import Sink
from mcjax_lint.model import Step
from mcjax_lint.rules.base import Rule, describe_source, process_sources, related_source

_PATH_TYPES = ("Path", "PosixPath", "GPath")


class DirectoryCreatedOnSomeProcesses(Rule):
    CODE = "MCJ106"
    NAME = "directory-created-on-some-processes"
    SEVERITY = "error"
    SUMMARY = ("A directory created only under a process-dependent condition is written into by every "
               "process with no barrier in between; or files exchanged through a path each process "
               "names for itself.")
    FAMILY = "process-dependent control flow"

    # ------------------------------------------------ an exchange at a self-drawn path
    def reports_sink(self, sink: Sink) -> bool:
        return sink.place in (kinds.EXCHANGE_PATH, kinds.PART_PATH)

    def visit_Call(self, node: cst.Call) -> None:
        """A file read on some processes only after a barrier, at a path named from the clock or
        unseeded randomness on each process (`kinds.EXCHANGE_PATH`): what the others wrote
        before the barrier lies under the names they drew, not under this process's."""
        sinks = self.sinks(node)
        parts = [k for k in sinks if k.place == kinds.PART_PATH]
        if parts:
            self._part_written(node, parts[0])
        sinks = [k for k in sinks if k.place == kinds.EXCHANGE_PATH]
        fn = self._function_of(node) if sinks else None
        if fn is None:
            return
        barrier = self._collective_near(fn, node, after=False)
        if barrier is None:
            return
        s = sinks[0].src
        text = self._code(node.func)
        self.report(node, (
            f"`{text}()` runs on some processes only, after the barrier at line {self.line(barrier)}, and reads "
            f"a path named from {describe_source(s, self.line(node))}, which each process drew for itself: the "
            f"files the other processes wrote before the barrier lie under the names they drew, so this one "
            f"does not find them and fails while the others wait at their next collective; draw the name on "
            f"one process and broadcast it (`broadcast_one_to_all`)"),
            related=(related_source(s, "name drawn on each process"),
                     (f"barrier: `{self._code(barrier.func)}()`", *self.where(barrier))),
            chain=[*self.source_steps(s), self.step(barrier, f"barrier: `{self._code(barrier.func)}()`"),
                   Step(self.line(node), f"read on some processes: `{text}()`", False,
                        "the files read here are taken to be ones the other processes wrote before the barrier")])

    def _part_written(self, node: cst.Call, sink: Sink) -> None:
        """This process's part (a path holding its index) written under a name it drew for
        itself (`kinds.PART_PATH`), with collective work after it in the function: the parts are
        written to be taken together after the barrier, and lie under as many names."""
        fn = self._function_of(node)
        after = self._collective_near(fn, node, after=True) if fn is not None else None
        if after is None:
            return
        fa = self.ctx.fa
        lo, hi = fa.pos(fn)[0], fa.pos(fn)[2]
        if any(k.place == kinds.EXCHANGE_PATH and lo <= fa.pos(k.node)[0] <= hi and fa.pos(k.node)[:2] > fa.pos(after)[:2]
               for k in fa.sinks):
            return  # (the read after the barrier is reported: `visit_Call`, one finding for the exchange)
        s = sink.src
        positional = [a.value for a in node.args if a.keyword is None and not a.star]
        info = fa.calls.get(node)
        for k, v in info.args if info is not None else ():
            if isinstance(k, int) and k < len(positional) and isinstance(positional[k], cst.Name) \
                    and s in v.pd | v.pdc and local_uses.read_after(fn, positional[k].value, fa.pos(node)[2], fa.line):
                return  # (the process reads back the path it wrote: its own file, whatever its name)
        text = self._code(node.func)
        barrier = self._code(after.func)
        self.report(node, (
            f"`{text}()` writes this process's part at a path named from {describe_source(s, self.line(node))}, "
            f"which each process drew for itself, before the collective `{barrier}()` at line {self.line(after)}: "
            f"the parts meant to lie side by side lie under as many names as there are processes, so whatever "
            f"takes them together finds one process's part (or none); draw the name on one process and "
            f"broadcast it (`broadcast_one_to_all`)"),
            related=(related_source(s, "name drawn on each process"),
                     (f"collective after the write: `{barrier}()`", *self.where(after))),
            chain=[*self.source_steps(s),
                   Step(self.line(node), f"this process's part written at it: `{text}()`", False,
                        "parts named by the process index are taken to be meant to lie together"),
                   self.step(after, f"collective after the write: `{barrier}()`")])

    def _function_of(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        """The innermost function whose lines hold `node` (statements only are walked: rare,
        only where a sink is)."""
        fa = self.ctx.fa
        line = fa.pos(node)[0]
        found = None
        todo: list = [fa.module]
        while todo:
            n = todo.pop()
            if isinstance(n, cst.FunctionDef):
                p = fa.pos(n)
                if not p[0] <= line <= p[2]:
                    continue
                found = n
            _push_statement_parts(n, todo)
        return found

    def _collective_near(self, fn: cst.FunctionDef, node: cst.Call, after: bool) -> cst.Call | None:
        """The collective call in `fn` nearest `node` by position: the first that starts after it
        (`after`), else the last that starts before it."""
        fa = self.ctx.fa
        lo, hi, at = fa.pos(fn)[0], fa.pos(fn)[2], fa.pos(node)[:2]
        best = None
        for call, info in fa.calls.items():
            if not info.collective or not isinstance(call, cst.Call):
                continue
            p = fa.pos(call)
            if not lo <= p[0] <= hi or (p[:2] <= at if after else p[:2] >= at):
                continue
            if best is None or (p[:2] < best[0] if after else p[:2] > best[0]):
                best = (p[:2], call)
        return best[1] if best is not None else None

    def visit_If(self, st: cst.If) -> None:
        cond = self.ctx.fa.conds.get(st)
        srcs = process_sources(cond) if cond is not None else []
        if not srcs:
            return
        made = {self._code(p): c for c, p in self._created(st.body)}
        if st.orelse is not None:
            for _, p in self._created(st.orelse):
                made.pop(self._code(p), None)  # created on the other side too
        if not made:
            return
        body = self._block_of(st)
        if body is not None:
            self._writes_after(st, made, body[body.index(st) + 1:], srcs[0])

    def _block_of(self, st: cst.If):
        """The statements of the block `st` is in (a map built once per file, when first asked)."""
        blocks = getattr(self, "_blocks", None)
        if blocks is None:
            blocks = {}
            # Statements only: a block is never inside an expression, so the walk need not
            # visit them (a full `module.visit` cost ~5x more on large files).
            todo: list = [self.ctx.fa.module]
            while todo:
                node = todo.pop()
                if isinstance(node, (cst.IndentedBlock, cst.Module)):
                    for x in node.body:
                        blocks[id(x)] = node.body
                    todo.extend(node.body)
                    continue
                _push_statement_parts(node, todo)
            self._blocks = blocks
        return blocks.get(id(st))

    def _writes_after(self, branch: cst.If, made: dict, rest, s) -> None:
        """The first write into one of `made` (path text -> creating call) by the statements
        after `branch`, before any collective work (a barrier orders the two)."""
        for call in self._calls(rest):
            info = self.ctx.fa.calls.get(call)
            if info is not None and info.collective:
                return
            target = self._written(call)
            if target is None:
                continue
            for text, create in made.items():
                if self._mentions(target, text):
                    code = self._code
                    self.report(branch, (
                        f"`{code(create)}` runs only on some processes (a condition on "
                        f"{describe_source(s, self.line(branch))}), and every process writes into `{text}` at line "
                        f"{self.line(call)} with no barrier "
                        f"in between: the others can write before the directory exists, fail there and leave "
                        f"this process waiting at its next collective"),
                        related=(related_source(s), (f"written by every process: `{code(call.func)}()`",
                                                     *self.where(call))),
                        chain=[*self.source_steps(s), self.step(branch, "`if` on it"),
                               self.step(create, f"creates `{text}`"),
                               self.step(call, f"every process writes into it: `{code(call.func)}()`")])
                    return

    # ---------------------------------------------------------------- reading the code
    def _code(self, node: cst.CSTNode) -> str:
        return self.ctx.fa.module.code_for_node(node).strip()

    def _created(self, block):
        """(call, path expression) of each directory creation in `block`."""
        for call in self._calls([block]):
            q = self.ctx.fa.qualify(call.func)
            if q in K.DIRECTORY_CREATORS and len(call.args) > K.DIRECTORY_CREATORS[q]:
                yield call, call.args[K.DIRECTORY_CREATORS[q]].value
            elif isinstance(call.func, cst.Attribute) and call.func.attr.value == "mkdir":  # a path's
                yield call, self._path_of(call.func.value)

    def _path_of(self, e: cst.BaseExpression) -> cst.BaseExpression:
        """`Path(p)` -> p: the path a path object names."""
        if isinstance(e, cst.Call) and e.args and (self.ctx.fa.qualify(e.func) or "").endswith(_PATH_TYPES):
            return e.args[0].value
        return e

    def _written(self, call: cst.Call) -> cst.BaseExpression | None:
        """The path a call writes to, None if it writes no file."""
        q = self.ctx.fa.qualify(call.func)
        if q in K.FILE_WRITERS:
            pos = K.FILE_WRITERS[q]
            return call.args[pos].value if len(call.args) > pos and call.args[pos].keyword is None else None
        if q in ("open", "io.open", "tensorflow.io.gfile.GFile") and len(call.args) > 1:
            mode = call.args[1].value
            if isinstance(mode, cst.SimpleString) and any(m in mode.evaluated_value for m in "wax"):
                return call.args[0].value
            return None
        if isinstance(call.func, cst.Attribute) and call.func.attr.value in ("write_text", "write_bytes"):
            return self._path_of(call.func.value)
        return None

    def _mentions(self, e: cst.CSTNode, text: str) -> bool:
        """Whether the expression `text` is `e` or a part of it (`os.path.join(d, name)`, `d / n`)."""
        if self._code(e) == text:
            return True
        return any(self._mentions(c, text) for c in e.children if isinstance(c, cst.BaseExpression)
                   or isinstance(c, (cst.Arg, cst.FormattedStringExpression)))

    def _calls(self, nodes):
        """The calls in `nodes`, in the order they run, not entering functions, classes, or
        branches on process-dependent conditions (code that runs on some processes only)."""
        out: list[cst.Call] = []
        fa = self.ctx.fa

        class _Walk(cst.CSTVisitor):
            def visit_FunctionDef(self, node):
                return False

            def visit_ClassDef(self, node):
                return False

            def visit_Lambda(self, node):
                return False

            def visit_If(self, node):
                c = fa.conds.get(node)
                return not (c is not None and process_sources(c))

            def leave_Call(self, node):
                out.append(node)

        for n in nodes:
            n.visit(_Walk())
        return out


def _push_statement_parts(n: cst.CSTNode, todo: list) -> None:
    """Push the parts of `n` that hold statements (a body, an `else`, handlers, a `finally`,
    match cases): the walks here visit statements only, never expressions."""
    for part in ("body", "orelse", "handlers", "finalbody", "cases"):
        v = getattr(n, part, None)
        if isinstance(v, cst.CSTNode):
            todo.append(v)
        elif isinstance(v, (list, tuple)):
            todo.extend(v)
