"""Correct multi-process tests pass, really running as N cooperating JAX processes."""

import pytest
from plugin_helpers import gone, make_module, run, traces

CORRECT = '''
@pytest.fixture(scope="module")
def module_value():
    return 10.0


def test_plain_before(module_value):
    assert module_value == 10.0  # an ordinary test in the same module, run in the parent


@pytest.mark.mcjax(processes=2)
def test_sum_two(mcjax_process_index, mcjax_process_count, module_value):
    x, rep = global_array([mcjax_process_index + 1.0])
    total = float(jax.jit(jnp.sum, out_shardings=rep)(x))  # every process contributes its row
    record("two", total=total, fixture=module_value)
    assert total == 3.0 and mcjax_process_count == 2


@pytest.mark.mcjax(processes=4)
def test_sum_four(mcjax_process_index, mcjax_process_count):
    x, rep = global_array([mcjax_process_index + 1.0])
    total = float(jax.jit(jnp.sum, out_shardings=rep)(x))
    record("four", total=total)
    assert total == 10.0 and mcjax_process_count == 4


def test_plain_after(module_value):
    assert module_value == 10.0
'''


@pytest.mark.timeout(240)
def test_correct_tests_pass_in_2_and_4_processes(inner: pytest.Pytester) -> None:
    make_module(inner, "test_correct", CORRECT)
    inner.makepyfile(test_zz_other="def test_other_module():\n    assert True\n")
    result = run(inner)
    result.assert_outcomes(passed=5)

    two, four = traces(inner, "two"), traces(inner, "four")
    assert [t["index"] for t in two] == [0, 1] and [t["index"] for t in four] == [0, 1, 2, 3]
    for group, n, total in ((two, 2, 3.0), (four, 4, 10.0)):
        assert {t["count"] for t in group} == {n}
        assert {t["total"] for t in group} == {total}  # the collective saw every process's row
        assert len({t["pid"] for t in group}) == n  # N distinct OS processes...
        assert len({t["coordinator"] for t in group}) == 1  # ...sharing one coordinator
        assert all(gone(t["pid"]) for t in group)  # and none left behind
    assert two[0]["coordinator"] != four[0]["coordinator"]
    assert {t["fixture"] for t in two} == {10.0}
