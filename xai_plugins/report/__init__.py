"""Audit report of a tree model's explanations: HTML and PDF.

>>> from xai_plugins.report import audit
>>> a = audit(model, X_test, y_test, X_train=X_train, y_train=y_train, sigma=[0.1, 0.3, 1.0])
>>> a.sections["faithfulness"].data["pgi2"]          # inspect any result
>>> a.to_html("reports/model.html"); a.to_pdf("reports/model.pdf")
"""

from .audit import OPTIONAL_SECTIONS, SECTION_TITLES, SECTIONS, Audit, Section, Table, audit
from .explainers import EXPLAINERS, MethodResult

__all__ = ["audit", "Audit", "Section", "Table", "MethodResult", "EXPLAINERS", "SECTIONS", "OPTIONAL_SECTIONS",
           "SECTION_TITLES"]
