"""Stacks of live processes for post-mortem reports: py-spy, faulthandler fallback, merging."""

from runtime_guard.stacks.collect import Target, collect_stacks
from runtime_guard.stacks.fallback import install_fallback_dumper, request_fallback_dump

__all__ = ["Target", "collect_stacks", "install_fallback_dumper", "request_fallback_dump"]
