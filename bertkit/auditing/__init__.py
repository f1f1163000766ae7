"""`bertkit audit`: the training examples whose label is probably wrong, from out-of-fold
predictions and cleanlab (run.py), and the report of them (report.py)."""

from bertkit.auditing.report import Report
from bertkit.auditing.run import AuditOptions, audit

__all__ = ["AuditOptions", "Report", "audit"]
