"""[tool.mcjax.pytest] in pyproject.toml gives @pytest.mark.mcjax its defaults; a mark's own
arguments win; an unknown key is one clear line, as in the linter's [tool.mcjax] table."""

import pytest
from plugin_helpers import make_module, run, traces

BARE_MARK = '''
@pytest.mark.mcjax
def test_project_defaults(mcjax_process_count):
    from runtime_guard.guard import current

    x, rep = global_array([1.0] * jax.local_device_count())
    total = float(jax.jit(jnp.sum, out_shardings=rep)(x))
    record("bare", total=total, mode=current().settings.mode, devices=jax.local_device_count())


@pytest.mark.mcjax(processes=2)
def test_mark_wins(mcjax_process_count):
    record("marked")
'''


@pytest.mark.timeout(300)
def test_pytest_table_sets_the_marks_defaults(inner: pytest.Pytester) -> None:
    inner.makefile(".toml", pyproject="[tool.mcjax.pytest]\nprocesses = 3\nmode = 'fast'\ndevices-per-process = 2\n")
    make_module(inner, "test_cfg", BARE_MARK)
    result = run(inner)
    result.assert_outcomes(passed=2)
    seen = traces(inner, "bare")
    assert [t["index"] for t in seen] == [0, 1, 2] and {t["total"] for t in seen} == {6.0}
    assert {t["mode"] for t in seen} == {"fast"} and {t["devices"] for t in seen} == {2}
    assert [t["count"] for t in traces(inner, "marked")] == [2, 2]


@pytest.mark.timeout(120)
def test_unknown_key_in_the_pytest_table_is_one_line(inner: pytest.Pytester) -> None:
    inner.makefile(".toml", pyproject="[tool.mcjax.pytest]\nprocs = 3\n")
    make_module(inner, "test_cfg", BARE_MARK)
    result = run(inner)
    assert result.ret != 0
    assert "unknown key 'procs' in [tool.mcjax.pytest] (did you mean 'processes'?)" in result.stderr.str() + result.stdout.str()
