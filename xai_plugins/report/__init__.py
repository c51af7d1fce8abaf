"""Audit report of a tree model's explanations: HTML and PDF.

>>> from xai_plugins.report import audit
>>> a = audit(model, X_test, y_test, X_train=X_train, y_train=y_train, sigma=[0.1, 0.3, 1.0])
>>> a.sections["faithfulness"].data["pgi2"]          # inspect any result
>>> a.to_html("reports/model.html"); a.to_pdf("reports/model.pdf")
"""

# the documented API is __all__; the other names stay importable from here
from .audit import Audit, audit
from .diff import AuditDiff, Change, diff_audits
from .explainers import EXPLAINERS, MethodResult  # noqa: F401
from .history import AuditHistory, audit_history
from .options import OPTIONAL_SECTIONS, AuditOptions  # noqa: F401
from .section import Section, Table, register  # noqa: F401
from .sections import COMPUTE_ORDER, RENDER_ORDER  # noqa: F401

__all__ = ["audit", "Audit", "AuditOptions", "diff_audits", "AuditDiff", "Change", "audit_history", "AuditHistory"]
