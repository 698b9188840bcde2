"""MCJ101 and sibling `if`s on one condition (divergence.Divergence._pair_end): complementary
gates that issue the barrier once everywhere are silent; anything between them that breaks the
pairing keeps both reported."""

import textwrap

from mcjax_lint.api import lint_paths

HEAD = "import jax\nfrom jax.experimental import multihost_utils as mu\n\n"


def _mcj101_lines(tmp_path, body: str) -> list[int]:
    f = tmp_path / "m.py"
    f.write_text(HEAD + textwrap.dedent(body))
    findings, errors = lint_paths([f], observed=False)
    assert not errors
    return sorted(x.line for x in findings if x.code == "MCJ101")


def test_else_arm_and_later_if_complete_each_other(tmp_path):
    assert _mcj101_lines(tmp_path, """
        def f():
            main = jax.process_index() == 0
            if main:
                print("main")
            else:
                mu.sync_global_devices("a")
            if main:
                mu.sync_global_devices("a")
        """) == []


def test_collective_between_runs_in_another_order(tmp_path):
    assert _mcj101_lines(tmp_path, """
        def f(x):
            r = jax.process_index()
            if r != 0:
                mu.sync_global_devices("a")
            y = mu.broadcast_one_to_all(x)
            if r == 0:
                mu.sync_global_devices("a")
            return y
        """) == [7, 10]


def test_rebinding_the_condition_breaks_the_pair(tmp_path):
    assert _mcj101_lines(tmp_path, """
        def f():
            main = jax.process_index() == 0
            if not main:
                mu.sync_global_devices("a")
            main = not main
            if main:
                mu.sync_global_devices("a")
        """) == [7, 10]


def test_yield_between_is_not_followed(tmp_path):
    assert _mcj101_lines(tmp_path, """
        def first():
            main = jax.process_index() == 0
            if not main:
                mu.sync_global_devices("a")
            yield
            if main:
                mu.sync_global_devices("a")
        """) == [7, 10]


def test_mutating_the_condition_between_breaks_the_pair(tmp_path):
    assert _mcj101_lines(tmp_path, """
        import os
        def f():
            todo = os.listdir(f"/d/{jax.process_index()}")
            if todo:
                mu.sync_global_devices("a")
            todo.clear()
            if not todo:
                mu.sync_global_devices("a")
        """) == [8, 11]


def test_passing_the_condition_to_a_helper_breaks_the_pair(tmp_path):
    assert _mcj101_lines(tmp_path, """
        import os
        def f(drain):
            todo = os.listdir(f"/d/{jax.process_index()}")
            if todo:
                mu.sync_global_devices("a")
            drain(todo)
            if not todo:
                mu.sync_global_devices("a")
        """) == [8, 11]


def test_a_clock_in_the_condition_is_read_again(tmp_path):
    assert _mcj101_lines(tmp_path, """
        import time
        def f(t0):
            if time.time() - t0 > 5:
                mu.sync_global_devices("a")
            if time.time() - t0 <= 5:
                mu.sync_global_devices("a")
        """) == [7, 9]


def test_printing_the_condition_keeps_the_pair(tmp_path):
    assert _mcj101_lines(tmp_path, """
        import os
        def f():
            todo = os.listdir(f"/d/{jax.process_index()}")
            if len(todo) > jax.process_count():
                mu.sync_global_devices("a")
            print(len(todo), todo)
            if len(todo) <= jax.process_count():
                mu.sync_global_devices("a")
        """) == []
