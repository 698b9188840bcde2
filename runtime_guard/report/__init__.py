"""The guard's report: one data model for divergence, missing/exited/died processes and hangs.

`model` holds the data; renderers (text, html) and the JSON schema live beside it.
"""

from runtime_guard.report.model import (
    Dispatch,
    Frame,
    Location,
    ProcessReport,
    Report,
    StackSnapshot,
    Thread,
)

__all__ = ["Dispatch", "Frame", "Location", "ProcessReport", "Report", "StackSnapshot", "Thread"]
