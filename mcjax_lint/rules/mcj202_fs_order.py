"""MCJ202 filesystem-order."""

from __future__ import annotations

from mcjax_lint.rules.origin import OriginRule


class FilesystemOrder(OriginRule):
    CODE = "MCJ202"
    KIND = "order"
    HEAD = "directory listings come back in filesystem order, which can differ between processes and hosts"
