"""`ProjectIndex._direct` skips a symbolic value carrying none of `_DIRECT_KEYS` (most of them):
a key it reads but the list lacks would silently drop that fact everywhere (it happened once
with "tr"). Read the keys from its source so the list cannot fall behind."""

from __future__ import annotations

import inspect
import re

from mcjax_lint.analysis import index


def test_every_key_direct_reads_is_in_the_skip_list():
    src = inspect.getsource(index.ProjectIndex._direct)
    read = set(re.findall(r'sym(?:\.get\(|\[)"(\w+)"', src)) | set(re.findall(r'srcs\("(\w+)"', src))
    for loop in re.findall(r"for key in \(([^)]*)\)", src):  # (keys read in a loop over names)
        read |= set(re.findall(r'"(\w+)"', loop))
    assert {"pd", "callable", "tr"} <= read  # (the pattern still finds what it must)
    # "statics" and "hl" are read only when "callable" is present (a direct key itself).
    assert read - {"statics", "hl"} <= index._DIRECT_KEYS, read - index._DIRECT_KEYS
