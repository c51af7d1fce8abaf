"""Audit report of a tree model's explanations: HTML and PDF.

>>> from xai_plugins.report import audit
>>> a = audit(model, X_test, y_test, X_train=X_train, y_train=y_train, sigma=[0.1, 0.3, 1.0])
>>> a.sections["faithfulness"].data["pgi2"]          # inspect any result
>>> a.to_html("reports/model.html"); a.to_pdf("reports/model.pdf")
"""

from .audit import Audit, audit
from .explainers import EXPLAINERS, MethodResult
from .options import OPTIONAL_SECTIONS, AuditOptions
from .section import Section, Table
from .sections import COMPUTE_ORDER, RENDER_ORDER, register

__all__ = ["audit", "Audit", "AuditOptions", "Section", "Table", "MethodResult", "EXPLAINERS", "OPTIONAL_SECTIONS",
           "COMPUTE_ORDER", "RENDER_ORDER", "register"]
