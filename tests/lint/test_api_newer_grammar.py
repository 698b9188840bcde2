"""`mcjax_lint.api.lint_paths` follows the local imports of a file in a newer grammar than the
host's (a 3.12 `type` alias under 3.11) as of any other: it parses them with the summary pass's
parser (`summary.parse`, libcst when the host's refuses), so the helper module's facts count."""

from __future__ import annotations

import textwrap

from mcjax_lint.api import lint_paths

MAIN = textwrap.dedent('''\
    from jax.experimental import multihost_utils

    from helpers import is_main

    type Rows = list[int]


    def report(rows: Rows):
        if is_main():
            multihost_utils.process_allgather(rows)
''')
HELPERS = textwrap.dedent('''\
    import jax


    def is_main():
        return jax.process_index() == 0
''')


def test_a_312_file_s_local_import_is_followed(tmp_path):
    (tmp_path / "main.py").write_text(MAIN)
    (tmp_path / "helpers.py").write_text(HELPERS)
    findings, errors = lint_paths([tmp_path / "main.py"], observed=False)
    assert errors == []
    assert [(f.line, f.code) for f in findings if f.path.endswith("main.py")] == [(9, "MCJ101")]


def test_without_following_imports_the_helper_is_unknown(tmp_path):
    # (the finding above comes from the imported module's facts, not from main.py alone)
    (tmp_path / "main.py").write_text(MAIN)
    (tmp_path / "helpers.py").write_text(HELPERS)
    findings, errors = lint_paths([tmp_path / "main.py"], observed=False, imports=False)
    assert errors == []
    assert [f for f in findings if f.path.endswith("main.py")] == []
