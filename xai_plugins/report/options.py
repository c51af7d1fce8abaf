"""Every parameter of an audit, with its default written once.

:class:`AuditOptions` is what :func:`~xai_plugins.report.audit` builds from its keyword arguments and
what ``xai-audit`` builds from its flags (the CLI derives its flags, types, choices and defaults from
the fields' metadata, see :func:`cli_fields`). Each field carries a readable ``label`` (with its
unit) that the report's parameter table shows, so the reader never sees a Python argument name.
"""

from __future__ import annotations

import argparse
import dataclasses
import numbers
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import InputError, InputTypeError, OutputPathError
from . import explainers as registry
from .criteria import THRESHOLDS
from .criteria import limits as verdict_limits
from .explainers import EXPLAINERS

__all__: list = []

#: the archival PDF variants (xai_plugins.report.render.PDF_VARIANTS; render needs weasyprint, not imported here)
PDF_VARIANTS = ("pdf/a-3b", "pdf/a-3u")


def optional_sections() -> tuple:
    """The sections a user may skip with ``sections=`` / ``--sections`` (those registered ``optional``), in compute
    order; the others are cheap and always built."""
    from .section import REGISTRY, compute_order

    return tuple(name for name in compute_order() if REGISTRY[name].optional)


def default_sections() -> tuple:
    """The optional sections computed when ``sections`` is not given (those registered ``default``; "regulatory"
    joins them with ``strict=True``)."""
    from .section import REGISTRY

    return tuple(name for name in optional_sections() if REGISTRY[name].default)


class _OptionalSections:
    """The optional sections' names as argparse ``choices``, read from the section registry when asked."""

    def __iter__(self):
        return iter(optional_sections())

    def __contains__(self, name) -> bool:
        return name in optional_sections()


def __getattr__(name: str) -> tuple:
    """``OPTIONAL_SECTIONS`` and ``DEFAULT_SECTIONS``: :func:`optional_sections` and :func:`default_sections`."""
    if name == "OPTIONAL_SECTIONS":
        return optional_sections()
    if name == "DEFAULT_SECTIONS":
        return default_sections()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def method_of_option(name: str) -> str | None:
    """The explainer an option sets alone (its name starts with the explainer's key: ``acme_quantiles``,
    ``mcr_epsilon``, ``dt_sampler_rows``...), None for the other options: the report's settings list such an
    option only when its explainer was asked for."""
    return next((key for key in registry.keys() if name.startswith(f"{key}_")), None)


def _option(default, label: str, help: str | None = None, *, factory=None, **cli):
    """A dataclass field with its report ``label`` and, when ``help`` is given, a CLI flag
    (``cli``: argparse keywords such as ``type``, ``nargs``, ``choices``)."""
    metadata = {"label": label, "help": help, "cli": cli}
    if factory is not None:
        return field(default_factory=factory, metadata=metadata)
    return field(default=default, metadata=metadata)


def _threshold(text: str) -> tuple:
    """One ``--threshold NAME=VALUE`` as (name, value); ``argparse.ArgumentTypeError`` (argparse prints its
    message as it is) naming the expected form."""
    name, sep, value = str(text).partition("=")
    try:
        return name.strip(), float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"takes NAME=VALUE with a number as VALUE; got {text!r} (the names: "
                                         f"{', '.join(THRESHOLDS)})") from None


@dataclass(frozen=True)
class AuditOptions:
    """The settings of one audit: every option of :func:`xai_plugins.report.audit` and ``xai-audit``.

    Built once and never changed: ``dataclasses.replace(options, max_rows=100)`` (or
    :meth:`replace`) gives a modified copy, validated again. Every random draw of the audit
    derives from ``random_state`` and the drawing section's name, so the same inputs and options
    give the same numbers on any machine; only ``time_budget`` (opt-in) makes the row count
    machine-dependent. ``xai-audit`` derives its flags, types, choices and defaults from these
    fields (``max_rows`` is ``--max-rows``; ``thresholds`` is ``--threshold NAME=VALUE``), and each
    field carries the readable label the report's parameter table shows.

    Parameters
    ----------
    sigma : float or sequence of float, default (0.1, 0.3, 1.0)
        Noise levels σ of the faithfulness section, in training standard deviations (positive);
        the greedy PG² ranking and the Monte Carlo comparison use the middle one.
    explainers : sequence of str, default every registered explainer
        The explanation methods to run (registered explainer keys, ``xai_plugins.report.EXPLAINERS``).
    shown_explainer : str or None, default None
        The explainer whose attributions the team will show to the people the decisions concern (one of
        ``explainers``, not the greedy PG² reference). The explanation-reliability verdict then judges the
        faithfulness and the stability across σ of that explainer alone; the others are still scored in the
        faithfulness section and compared in the agreement section. None: every explainer is judged and the
        worst decides.
    sections : sequence of str, default ("explanations", "faithfulness", "agreement", "mcr")
        The optional sections to compute; the others are cheap and always built.
    title : str, default "Model audit"
        The report's title.
    random_state : int or None, default 0
        Seed of every random draw.
    positive_class : object, default None
        Class explained in the detailed pages (default: the last class of a binary model, the
        most frequent test class of a multi-class model).
    max_rows : int, default 50
        Most test rows given the per-row methods.
    max_shap_rows : int, default 200
        Most test rows of TreeSHAP's global importance (and of the in-memory sample of an audit
        on Dask or Spark).
    time_budget : float or None, default None
        Opt-in: seconds for the per-row PG² work, fewer rows when it would take longer (makes the
        row count depend on the machine's speed).
    max_minutes : float or None, default None
        Opt-in: wall-clock minutes the whole audit (before rendering) may take on this machine. One
        explained row's greedy ranking and PGI² are timed before any section runs; the plan's
        estimates are scaled by the measured speed, and the plan keeps within the cap as it keeps
        within ``cost_target`` (Monte Carlo for the dearest PGI² sets with a stated error, then
        fewer rows, never fewer than the verdict needs). Makes the report machine-dependent.
    cost_target : float, default 25.0
        Estimated seconds of one core the run-time plan keeps the whole audit (every section
        before rendering: greedy ranking, faithfulness, the other explainers, figures) within
        (the exact PG² sums run on every core, so the wall time can be lower): beyond
        it, the dearest PGI² sets by seeded Monte Carlo, then fewer explained rows (never below
        what the verdict needs); an estimate from the model and data sizes, never a clock (25 is
        met by the demo audits' plans).
    binary_sigma : float or None, default None
        Noise level for 0/1 (binary) columns in training standard deviations, instead of
        ``sigma`` (default: the same σ as every other feature).
    binary_flip : bool, default True
        Perturb each numeric feature with exactly two values (a 0/1 indicator) by the flip law:
        it keeps its value with probability 1 − ρ, else takes one of the two values with its
        training frequency, ρ = 2Φ(−1/(2σ)) of its σ (``binary_sigma`` sets that σ); False:
        Gaussian noise, as every other feature.
    rho : float or None, default None
        For categorical features: the probability ρ in [0, 1] that a perturbed category is
        redrawn from the training data's category frequencies (default: 2Φ(−1/(2σ)) at each σ,
        the chance that noise of that σ added to a category code changes the category; used only
        by models with categorical features).
    n_local : int, default 2
        Rows shown with local explanations.
    top_k : int, default 5
        k of the top-k overlap.
    acme_quantiles : int, default 30
        AcME quantile grid points.
    mc_pairs : int, default 4
        (row, feature set) pairs of the exact-vs-Monte-Carlo comparison (0: none).
    mcr_permutations : int, default 5
        MCR permutations per feature.
    mcr_epsilon : float, default 0.0
        Tolerance of the MCR Rashomon set: share of training rows (classifiers) or MSE
        (regressors) by which swapped trees may differ (0: identical predictions).
    mcr_fit_forest : bool, default False
        For a model RF-MCR does not support (boosting, bootstrap forests), fit a bootstrap-free
        random forest on the training data and report its MCR ranges.
    dt_sampler_rows : int, default 60
        Rows DT-Sampler fits its small trees on.
    dt_sampler_features : int, default 8
        Features DT-Sampler may split on.
    dt_sampler_samples : int, default 20
        Trees DT-Sampler samples.
    model_card : str, pathlib.Path, dict or None, default None
        Model card (JSON or YAML file, or a dict): name, version, owner, intended use, data
        provenance.
    approval : str, pathlib.Path, dict or None, default None
        The reviewer's approval (YAML or JSON file, or a dict: decision, conditions, date, approver,
        role), filling the governance block (``xai-audit --approval``).
    protected : sequence of str, default ()
        Protected attribute columns of the data (need not be model features).
    run_id : str or None, default None
        Your identifier of this run, printed on the report.
    thresholds : dict or None, default None
        ``{name: value}``: verdict thresholds to set (the names, defaults and rationales are listed
        in the report's verdict section; None: none changed).
    strict : bool, default False
        Exit ``xai-audit`` with status 1 when a section or a method failed to compute (it does
        not read the model-fitness and explanation-reliability verdicts).
    command_line : str or None, default None
        The command line, recorded in the appendix (set by ``xai-audit``).
    provenance : dict or None, default None
        Provenance of the inputs (e.g. ``{"model file": "model.json (sha256 ...)"}``, set by
        ``xai-audit`` and the MLflow evaluator), listed in the reproducibility appendix.
    progress : bool, default True
        Show progress bars.
    heartbeat : float or None, default None
        Without progress bars, one status line on stderr every ``heartbeat`` seconds of a long
        audit (the section running, the time spent and the plan's estimate); ``xai-audit --quiet``
        sets 60.
    pdf_variant : str or None, default "pdf/a-3b"
        The archival variant of the PDF report ("pdf/a-3b" or "pdf/a-3u": PDF/A-3 with the audit's JSON
        and the model card embedded, sRGB output intent, XMP metadata, tags); None (``--pdf-variant
        none``): a plain PDF.
    unverified : bool, default False
        Explain the model even when its parity certificate fails (its Forest does not reproduce the scores
        of the model's own runtime on the test rows and beside every split threshold): the report then says on
        every page that its numbers are unverified. By default such a model is refused
        (:class:`~xai_plugins.errors.ParityError`).

    Attributes
    ----------
    sigma_ref : float
        The middle noise level: the greedy PG² ranking and the Monte Carlo comparison use it.
    limits : dict
        Every verdict threshold's value: the defaults with ``thresholds`` applied.
    machine_dependent : bool
        Whether the report's numbers may depend on the machine's speed (only with
        ``time_budget`` or ``max_minutes``).

    Raises
    ------
    InputError
        A value out of range (σ <= 0, ``max_rows`` < 1, ρ outside [0, 1], unknown explainers,
        sections or thresholds...).
    InputTypeError
        A value of the wrong type (non-numeric σ, a non-integer ``random_state``, a model card
        that is neither a path nor a dict).

    See Also
    --------
    xai_plugins.report.audit : Takes them as ``options=`` or as keyword arguments.

    Examples
    --------
    >>> from xai_plugins.report import AuditOptions
    >>> options = AuditOptions(sigma=[0.3, 1.0, 0.1], max_rows=20)
    >>> options.sigma, options.sigma_ref, options.machine_dependent
    ((0.3, 1.0, 0.1), 0.3, False)
    >>> options.replace(time_budget=60.0).machine_dependent
    True
    >>> AuditOptions(sigma=0)
    Traceback (most recent call last):
    ...
    xai_plugins.errors.InputError: sigma must hold positive noise levels; got 0
    """

    sigma: tuple = _option((0.1, 0.3, 1.0), "noise levels σ (training standard deviations)",
                           "noise levels in training standard deviations", type=float, nargs="+")
    explainers: tuple = _option(EXPLAINERS, "explanation methods", "explainers to run",
                                nargs="+", choices=EXPLAINERS, metavar="METHOD")
    shown_explainer: str | None = _option(
        None, "explainer whose attributions are shown (judged by the verdict)",
        "the explainer whose attributions the team will show: the explanation-reliability verdict judges its "
        "faithfulness and stability alone (default: every explainer, the worst decides)", choices=EXPLAINERS,
        metavar="METHOD")
    sections: tuple = _option(None, "optional sections computed", "optional sections to compute",
                              factory=default_sections, nargs="+", choices=_OptionalSections(), metavar="SECTION")
    title: str = _option("Model audit", "report title")
    random_state: int | None = _option(0, "random seed", "seed of every random draw", type=int)
    positive_class: object = _option(
        None, "class explained in the detailed pages",
        "class explained in the detailed pages (default: the last class of a binary model, the most frequent "
        "test class of a multi-class model)")
    max_rows: int = _option(50, "test rows given the per-row methods (at most)",
                            "most test rows given the per-row methods", type=int)
    max_shap_rows: int = _option(200, "test rows of TreeSHAP's global importance (at most)",
                                 "most test rows of TreeSHAP's global importance", type=int)
    time_budget: float | None = _option(
        None, "time budget for the per-row PG² work (s)",
        "opt-in: seconds for the per-row PG² work, fewer rows when it would take longer (makes the row count "
        "depend on the machine's speed; default: none)", type=float)
    max_minutes: float | None = _option(
        None, "wall-clock cap of the whole audit (minutes)",
        "opt-in: minutes the whole audit (before rendering) may take on this machine: one explained row's PG² work "
        "is timed, the plan's estimates are scaled by how fast this machine is, and the plan keeps within the cap (the "
        "dearest PGI² sets by seeded Monte Carlo with a stated error, then fewer explained rows, never fewer than the "
        "verdict needs); makes the report machine-dependent, as it then says (default: none)", type=float)
    cost_target: float = _option(
        25.0, "run-time plan: target for the whole audit's estimate (s)",
        "estimated seconds the run-time plan keeps the whole audit (every section before rendering: greedy ranking, "
        "faithfulness, the other explainers, figures) within: beyond it, the dearest PGI² sets by seeded Monte "
        "Carlo, then fewer explained rows (never below what the verdict needs); an estimate from the model and data "
        "sizes, never a clock (default: 25, which the demo audits' plans meet)", type=float)
    binary_sigma: float | None = _option(
        None, "noise level of 0/1 columns (training standard deviations)",
        "noise level for 0/1 (binary) columns in training standard deviations, instead of --sigma "
        "(default: the same σ as every other feature)", type=float)
    binary_flip: bool = _option(
        True, "two-valued (0/1) features perturbed by the flip law",
        "perturb each numeric feature with exactly two values (a 0/1 indicator) by the flip law: it keeps its value "
        "with probability 1 − ρ, else takes one of the two values with its training frequency, ρ = 2Φ(−1/(2σ)) of "
        "its σ (--binary-sigma sets that σ); --no-binary-flip: Gaussian noise, as every other feature (default: "
        "flip)")
    rho: float | None = _option(
        None, "categorical features' redraw probability ρ (default 2Φ(−1/(2σ)) per σ)",
        "for categorical features: the probability ρ that a perturbed category is redrawn from the training "
        "data's category frequencies (default: 2Φ(−1/(2σ)) at each σ, the chance that noise of that σ added to a "
        "category code changes the category; used only by models with categorical features)", type=float)
    n_local: int = _option(2, "rows shown with local explanations", "rows shown with local explanations", type=int)
    top_k: int = _option(5, "k of the top-k overlap", "k of the top-k overlap", type=int)
    acme_quantiles: int = _option(30, "AcME quantile grid points", "AcME quantile grid points", type=int)
    mc_pairs: int = _option(4, "Monte Carlo comparison (row, feature set) pairs",
                            "(row, feature set) pairs of the exact-vs-Monte-Carlo comparison", type=int)
    mcr_permutations: int = _option(5, "MCR permutations per feature", "MCR permutations per feature", type=int)
    mcr_epsilon: float = _option(
        0.0, "MCR Rashomon tolerance ε",
        "tolerance of the MCR Rashomon set: share of training rows (classifiers) or MSE (regressors) by which "
        "swapped trees may differ (default 0: identical predictions)", type=float)
    mcr_fit_forest: bool = _option(
        False, "fit a Rashomon forest for MCR when the model is not one",
        "for a model RF-MCR does not support (boosting, bootstrap forests), fit a bootstrap-free random forest "
        "on --train and report its MCR ranges")
    dt_sampler_rows: int = _option(60, "DT-Sampler rows", "rows DT-Sampler fits its small trees on", type=int)
    dt_sampler_features: int = _option(8, "DT-Sampler features", "features DT-Sampler may split on", type=int)
    dt_sampler_samples: int = _option(20, "DT-Sampler sampled trees", "trees DT-Sampler samples", type=int)
    model_card: object = _option(
        None, "model card", "model card (JSON or YAML file): name, version, owner, intended use, data provenance")
    approval: object = _option(None, "reviewer's approval")
    protected: tuple = _option((), "protected attributes",
                               "protected attribute columns of the data (need not be model features)",
                               nargs="+", metavar="COL")
    run_id: str | None = _option(None, "run id", "your identifier of this run, printed on the report")
    thresholds: dict = _option(
        None, "verdict thresholds set (others: defaults)",
        "set a verdict threshold, NAME=VALUE (repeat the flag for several; the names, defaults and rationales are "
        "listed in the report's verdict section; default: none changed)", type=_threshold, action="append",
        metavar="NAME=VALUE")
    strict: bool = _option(False, "strict (a failed computation fails the run; the verdicts do not)",
                           "exit with status 1 when a section or a method failed to compute (it does not read the "
                           "model-fitness and explanation-reliability verdicts)")
    command_line: str | None = _option(None, "command line")
    provenance: dict | None = _option(None, "provenance")
    progress: bool = _option(True, "progress bars")
    heartbeat: float | None = _option(None, "seconds between status lines without progress bars")
    pdf_variant: str | None = _option(
        "pdf/a-3b", "PDF variant (none: plain PDF)",
        "archival variant of the PDF report: PDF/A-3 with the audit's JSON and the model card embedded; none: a "
        "plain PDF (default: pdf/a-3b)", type=lambda text: None if text.lower() == "none" else text,
        choices=(*PDF_VARIANTS, None), metavar="{pdf/a-3b,pdf/a-3u,none}")
    unverified: bool = _option(
        False, "explain a model whose parity certificate failed",
        "explain the model even when its imported trees do not reproduce its runtime's scores (the parity "
        "certificate fails): every number is then labelled unverified (default: refuse)")

    def __post_init__(self):
        set_ = lambda name, value: object.__setattr__(self, name, value)  # noqa: E731 - frozen dataclass
        sigma = (self.sigma,) if np.ndim(self.sigma) == 0 else tuple(self.sigma)
        if any(isinstance(s, (bool, np.bool_)) for s in sigma):
            raise InputTypeError(f"sigma must hold numbers (noise levels), not booleans; got {self.sigma!r}")
        try:
            sigma = tuple(float(s) for s in sigma)
        except (TypeError, ValueError) as exc:
            raise InputTypeError(f"sigma must hold numbers; got {self.sigma!r}") from exc
        if not sigma or not all(s > 0 for s in sigma) or not all(s < float("inf") for s in sigma):
            raise InputError(f"sigma must hold positive noise levels; got {self.sigma!r}")
        set_("sigma", sigma)
        set_("explainers", _choices(self.explainers, registry.keys(), "explainers"))
        if self.shown_explainer is not None:
            shown = self.shown_explainer
            if shown not in self.explainers or registry.get(shown).reference:
                raise InputError(f"shown_explainer must be one of the explainers run (not the greedy PG² reference): "
                                 f"{[k for k in self.explainers if not registry.get(k).reference]}; got {shown!r}")
        sections = _choices(self.sections, optional_sections(), "sections")
        if self.strict and sections == default_sections():          # a strict audit maps itself to the regulations
            sections = (*sections, "regulatory")
        set_("sections", sections)
        set_("protected", _choices(self.protected, None, "protected"))
        set_("thresholds", _thresholds(self.thresholds))
        for name in ("max_rows", "max_shap_rows", "acme_quantiles", "mcr_permutations", "dt_sampler_rows",
                     "dt_sampler_features", "dt_sampler_samples", "top_k"):
            _positive_int(self, name)
        for name in ("n_local", "mc_pairs"):
            _positive_int(self, name, minimum=0)
        for name in ("time_budget", "binary_sigma", "cost_target", "max_minutes", "heartbeat"):
            value = getattr(self, name)
            if value is not None and not (isinstance(value, numbers.Real) and 0 < value < float("inf")):
                raise InputError(f"{name} must be a positive number or None; got {value!r}")
        if self.rho is not None and not (isinstance(self.rho, numbers.Real) and 0 <= self.rho <= 1):
            raise InputError(f"rho is a probability: a number in [0, 1] or None (the default of each σ); got "
                             f"{self.rho!r}")
        if self.random_state is not None and not isinstance(self.random_state, numbers.Integral):
            raise InputTypeError(f"random_state must be an int or None; got {self.random_state!r}")
        if self.pdf_variant is not None and self.pdf_variant not in PDF_VARIANTS:
            raise InputError(f"pdf_variant must be one of {list(PDF_VARIANTS)} or None (a plain PDF); got "
                             f"{self.pdf_variant!r}")
        if self.model_card is not None and not isinstance(self.model_card, (str, Path, dict)):
            raise InputTypeError(f"model_card must be a path or a dict; got {type(self.model_card).__name__}")
        if self.approval is not None and not isinstance(self.approval, (str, Path, dict)):
            raise InputTypeError(f"approval must be a path or a dict; got {type(self.approval).__name__}")

    def replace(self, **changes) -> "AuditOptions":
        """A copy with ``changes`` applied (validated again)."""
        return dataclasses.replace(self, **changes)

    @property
    def sigma_ref(self) -> float:
        """The middle noise level: the greedy PG² ranking and the Monte Carlo comparison use it."""
        return sorted(self.sigma)[len(self.sigma) // 2]

    @property
    def limits(self) -> dict:
        """Every verdict threshold's value: the defaults with ``thresholds`` applied (see
        ``xai_plugins.report.criteria.limits``)."""
        return verdict_limits(self.thresholds)

    @property
    def machine_dependent(self) -> bool:
        """Whether the report's numbers may depend on the machine's speed (only with ``time_budget``)."""
        return self.time_budget is not None or self.max_minutes is not None

    def describe(self, cli: bool = False) -> dict:
        """The settings for the report's appendix: readable label → value, with the CLI flag
        (``cli``) or the Python argument in parentheses so the reader can change it; the settings of an
        explainer that was not asked for (``method_of_option``) are left out."""
        out = {}
        for f in dataclasses.fields(self):
            method = method_of_option(f.name)
            if f.name in ("command_line", "provenance", "progress", "heartbeat", "title", "model_card", "approval") or \
                    (method is not None and method not in self.explainers):
                continue
            handle = flag(f.name) if cli else f"{f.name}="
            out[f"{f.metadata['label']} ({handle})"] = self._readable(f.name)
        return out

    def _readable(self, name: str):
        """The value of option ``name`` as the report shows it (method and section names in words)."""
        from .section import title

        value = getattr(self, name)
        if name == "explainers":
            return ", ".join(registry.get(k).label for k in value)
        if name == "shown_explainer":
            return "none named: every explainer is judged" if value is None else registry.get(value).label
        if name == "sections":
            return ", ".join(title(k) for k in value)
        if name == "thresholds":
            return ", ".join(f"{k}={v:g}" for k, v in value.items()) or "none changed (defaults)"
        if name == "rho" and value is None:
            return "default 2Φ(−1/(2σ)): " + ", ".join(f"{default_rho(s):.3g} at σ = {s:g}" for s in self.sigma)
        if value is None:
            return "default" if name == "positive_class" else "none"
        return value


def default_rho(sigma: float) -> float:
    """The default ρ of the categorical features at noise level σ (Gaussian, in standard deviations):
    2Φ(−1/(2σ)), the chance that noise of that σ added to a category code changes the category (the
    default of :func:`xai_plugins.perturbation.make_perturbation`)."""
    from scipy import special

    return float(2.0 * special.ndtr(-0.5 / sigma))


#: options whose flag is not their name (a repeatable flag names one item)
FLAGS = {"thresholds": "--threshold"}

def flag(name: str) -> str:
    """The ``xai-audit`` flag of option ``name``."""
    return FLAGS.get(name, "--" + name.replace("_", "-"))


def _thresholds(value) -> dict:
    """``thresholds`` as {name: float}: from a mapping or (name, value) pairs; checked against the verdict's
    thresholds (:func:`~xai_plugins.report.criteria.limits`)."""
    if value is None:
        return {}
    if isinstance(value, dict):
        pairs = list(value.items())
    elif isinstance(value, (list, tuple)) and all(isinstance(p, (list, tuple)) and len(p) == 2 for p in value):
        pairs = list(value)
    else:
        raise InputTypeError(f"thresholds must be a dict {{name: value}}; got {value!r}")
    given = dict(pairs)
    verdict_limits(given)
    return {k: float(v) for k, v in given.items()}


def cli_fields() -> list:
    """The :class:`AuditOptions` fields ``xai-audit`` exposes as flags (those with a ``help``)."""
    return [f for f in dataclasses.fields(AuditOptions) if f.metadata.get("help")]


def _choices(values, allowed, name) -> tuple:
    if values is None:
        return tuple(allowed or ())
    values = (values,) if isinstance(values, str) else tuple(values)
    if allowed is not None:
        unknown = [v for v in values if v not in allowed]
        if unknown:
            raise InputError(f"unknown {name} {unknown}; choose from {list(allowed)}")
    elif not all(isinstance(v, str) for v in values):
        raise InputTypeError(f"{name} must be column names; got {values!r}")
    return tuple(dict.fromkeys(values))


def _positive_int(options, name: str, minimum: int = 1) -> None:
    value = getattr(options, name)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise InputError(f"{name} must be an integer ≥ {minimum}; got {value!r}")


def check_output_paths(paths) -> None:
    """Raise :class:`~xai_plugins.errors.OutputPathError` unless every file in ``paths`` can be
    written: its folder exists or can be created, and the file is not a folder and can be opened
    for writing. Called before any computation; it tries for real (permission bits say nothing to
    root, nor about /proc or a read-only mount) and leaves nothing behind: folders and files it
    had to create for the test are removed, existing files are opened for appending and untouched."""
    created: list = []
    try:
        for path in map(Path, paths):
            _check_folder(path.parent, created)
            _check_file(path)
    finally:
        for folder in reversed(created):
            try:
                folder.rmdir()
            except OSError:
                pass


def _check_folder(folder: Path, created: list) -> None:
    """Create the missing folders down to ``folder`` (recorded in ``created``) or raise."""
    missing = [p for p in [folder, *folder.parents] if not p.is_dir()][::-1]
    for part in missing:
        if part.exists():
            raise OutputPathError(f"cannot create the output folder {str(folder)!r}: {str(part)!r} is a file, not "
                                  "a writable folder; choose another output path")
        try:
            part.mkdir()
        except OSError as exc:
            raise OutputPathError(f"cannot create the output folder {str(folder)!r}: {str(part)!r} cannot be "
                                  f"created ({exc.strerror or exc}), it is not a writable folder; choose another "
                                  "output path") from exc
        created.append(part)


def _check_file(path: Path) -> None:
    """Open ``path`` for writing without changing it (a new file is removed again), or raise."""
    if path.is_dir():
        raise OutputPathError(f"cannot write {str(path)!r}: it is a folder; choose another output path")
    existed = path.exists()
    try:
        with open(path, "ab"):
            pass
    except OSError as exc:
        raise OutputPathError(f"cannot write {str(path)!r} ({exc.strerror or exc}); choose another output "
                              "path") from exc
    if not existed:
        os.unlink(path)
