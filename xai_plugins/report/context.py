"""What every audit section needs to know about the models and the data, checked once.

:class:`AuditContext` holds the audited models by role (:attr:`AuditContext.models`: the "champion", the model
the report audits, and any other model of the same features, e.g. a "challenger" to compare it with, each an
:class:`AuditedModel`; :attr:`AuditContext.model` and :attr:`AuditContext.forest` are the champion's), the test
(and optional training) data as DataFrames with the model's feature names, the task, the one scalar output every
method explains, the protected attributes, the random streams and the row samples used by the per-row sections.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import warnings
import zlib
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .._validation import check_target
from ..errors import FeatureMismatchError, InputError
from ..forest import Forest, import_model
from ..forest.layout import category_frame

__all__: list = []

#: the roles of the models an audit holds: the audited model, and a model compared with it
CHAMPION, CHALLENGER = "champion", "challenger"


@dataclass(frozen=True)
class AuditedModel:
    """One model of an audit: its ``role`` (:data:`CHAMPION`, :data:`CHALLENGER`...), the fitted ``model`` and its
    imported :class:`~xai_plugins.forest.Forest`."""

    role: str
    model: object
    forest: Forest


@dataclass
class AuditContext:
    """Validated inputs of one audit.

    ``output`` is the column of the Forest output every method explains: the regression output,
    the probability of ``positive_class`` (random forests), or its margin (boosted classifiers);
    ``output_label`` says which in words. ``background`` (the training data when given, else the
    test data) fixes the noise scale: σ is in units of each feature's standard deviation there.
    """

    model: object
    forest: Forest
    X_test: pd.DataFrame
    y_test: np.ndarray | None
    X_train: pd.DataFrame | None
    y_train: np.ndarray | None
    feature_names: list
    task: str
    output: int
    output_label: str
    positive_class: object
    random_state: int | None
    #: protected attributes of the test / training rows (index-aligned with X_test / X_train), whether
    #: or not they are model features; None when no ``protected`` column was named
    protected: pd.DataFrame | None = None
    protected_train: pd.DataFrame | None = None
    #: the model's classes (classification), in the order of its outputs
    classes: list = field(default_factory=list)
    #: the facts and rows of test data held by a row engine (:class:`.runners.EngineRows`); None in memory
    cluster: object = None
    root_seed: np.random.SeedSequence = None
    #: progress bars of the long in-memory PG² calls (``AuditOptions.progress``; off with ``xai-audit --quiet``
    #: and on a cluster, where the scheduler shows its own)
    progress: bool = True
    #: ρ of the categorical features (``AuditOptions.rho``): the probability that a perturbed categorical
    #: feature is redrawn from the background's category frequencies; None: the default of each σ
    rho: float | None = None
    #: the run-time plan (:class:`~.plan.AuditPlan`) the audit made before building the sections; None until then
    plan: object = None
    #: whether the two-valued numeric features are perturbed by the binary flip law (:meth:`noise`)
    binary_flip: bool = True
    #: every model of the audit by role, the champion (:attr:`model`, :attr:`forest`) first (:meth:`add_model`)
    models: dict = field(default_factory=dict)
    #: the champion's parity certificate (:class:`~xai_plugins.forest.parity.ParityCertificate`: its Forest against
    #: the model's own runtime), made before anything is explained; None until then
    parity: object = None

    def __post_init__(self):
        if self.root_seed is None:
            self.root_seed = np.random.SeedSequence(self.random_state)
        self.models = {CHAMPION: AuditedModel(CHAMPION, self.model, self.forest),
                       **{role: m for role, m in self.models.items() if role != CHAMPION}}

    def add_model(self, role: str, model) -> AuditedModel:
        """Import ``model`` and hold it under ``role`` (e.g. :data:`CHALLENGER`) beside the champion. Raises
        :class:`~xai_plugins.errors.InputError` for the champion's role, a role already held, or a model of
        another task, and :class:`~xai_plugins.errors.FeatureMismatchError` for a model of other features."""
        if role in self.models:
            raise InputError(f"the audit already holds a {role} model")
        forest = import_model(model)
        if forest.task != self.forest.task:
            raise InputError(f"the {role} model is a {forest.task} model; the champion a {self.forest.task} model")
        names = None if forest.feature_names is None else [str(n) for n in forest.feature_names]
        if forest.n_features != self.n_features or names not in (None, [str(n) for n in self.feature_names]):
            raise FeatureMismatchError(f"the {role} model's {forest.n_features} features {names or ''} differ from "
                                       f"the champion's {self.feature_names}")
        read_apart = [name for j, name in enumerate(self.feature_names)
                      if bool(forest.categorical[j]) != bool(self.categorical[j])
                      or (self.categorical[j] and _labels(forest, j) != _labels(self.forest, j))]
        if read_apart:
            raise FeatureMismatchError(f"the {role} model reads the column(s) {read_apart} otherwise than the champion "
                                       "(categories against numbers, or other category labels): the two models must "
                                       "read every input column alike to be compared on the same perturbations")
        if (model_classes(model, forest) or []) != self.classes:
            raise InputError(f"the {role} model's classes {model_classes(model, forest)} differ from the champion's "
                             f"{self.classes}")
        explained_output(forest, self.classes, self.positive_class)
        self.models[role] = AuditedModel(role, model, forest)
        return self.models[role]

    def view(self, role: str) -> "AuditContext":
        """This context with the model held under ``role`` (:meth:`add_model`) in the champion's place: the same
        data, classes, explained class, seeds and noise; that model's explained output and its label."""
        held = self.models[role]
        output, label = explained_output(held.forest, self.classes, self.positive_class)
        return dataclasses.replace(self, model=held.model, forest=held.forest, output=output, output_label=label,
                                   models={}, parity=None)

    def seed(self, stream: str) -> np.random.SeedSequence:
        """The seed of one named random stream (a section's name, or "rows"): derived from
        ``random_state`` and the name only, so one section's draws never shift another's."""
        return derive_seed(self.root_seed, stream)

    def rng(self, stream: str) -> np.random.Generator:
        """A fresh generator of the named stream (see :meth:`seed`)."""
        return np.random.default_rng(self.seed(stream))

    def seed_int(self, stream: str) -> int:
        """The named stream as one int, for APIs that take an integer ``random_state``."""
        return int(self.seed(stream).generate_state(1, np.uint32)[0])

    @property
    def background(self) -> np.ndarray:
        """Rows whose per-feature standard deviation is the unit of σ."""
        return (self.X_train if self.X_train is not None else self.X_test).to_numpy(dtype=float)

    @property
    def categorical(self) -> np.ndarray:
        """Boolean mask of the categorical features (set-membership splits; their values are category codes)."""
        return self.forest.categorical

    @property
    def categorical_names(self) -> list:
        """The names of the categorical features, in model order."""
        return [n for n, c in zip(self.feature_names, self.categorical) if c]

    def categories(self, j: int) -> list:
        """The category labels of categorical feature ``j`` by code (the training labels of a pandas
        category or text column; the codes themselves as text when the model knows no labels)."""
        labels = self.forest.category_labels
        known = None if labels is None else labels[j]
        if known is None:
            return [str(c) for c in range(int(self.forest.n_categories[j]))]
        return [str(c) for c in known]

    @functools.cached_property
    def binary_features(self) -> np.ndarray:
        """Boolean mask of the numeric features whose background holds exactly two values and whose test
        values are among them (0/1 indicators, one-hot columns, a standardised two-valued column), where
        Gaussian noise produces values the data never has (a categorical feature is never one: its
        perturbation is the categorical law)."""
        bg, test = self.background, self.X_test.to_numpy(dtype=float)
        out = np.zeros(self.n_features, dtype=bool)
        for j in np.flatnonzero(~self.categorical):
            values = np.unique(bg[~np.isnan(bg[:, j]), j])
            seen = test[~np.isnan(test[:, j]), j]
            out[j] = values.size == 2 and bool(np.isin(seen, values).all())
        return out

    @property
    def flipped_features(self) -> np.ndarray:
        """Boolean mask of the features perturbed by the binary flip law: :attr:`binary_features` when
        :attr:`binary_flip` (the default), none otherwise."""
        return self.binary_features & self.binary_flip

    def sigma_vector(self, sigma: float, binary_sigma: float | None = None):
        """The noise level of every feature, in background standard deviations: ``sigma``, except
        ``binary_sigma`` on the two-valued columns when it is given (a scalar when every feature has the
        same σ). A flipped feature's σ sets its flip probability ρ = 2Φ(−1/(2σ))."""
        if binary_sigma is None or not self.binary_features.any():
            return float(sigma)
        return np.where(self.binary_features, float(binary_sigma), float(sigma))

    def noise(self, sigma: float, binary_sigma: float | None = None) -> dict:
        """The perturbation keywords of ``pg2`` / ``pgi2`` / ``greedy_pg2_ranking`` / ``make_perturbation`` at
        noise level ``sigma``: σ per numeric feature (:meth:`sigma_vector`) in background standard
        deviations, and for the categorical features ρ (:attr:`rho`, else the default of that σ) with the
        background's category frequencies. The two-valued features (:attr:`flipped_features`) take the flip
        law of :func:`~xai_plugins.prediction_gap.binary_perturbation` instead of Gaussian noise: x'_j keeps
        x_j with probability 1 − ρ_j, else is one of the two values with its background frequency, ρ_j =
        2Φ(−1/(2σ_j)) of that feature's σ (exact PG² and Monte Carlo alike read this one perturbation)."""
        sigmas = self.sigma_vector(sigma, binary_sigma)
        flipped = self.flipped_features
        if not flipped.any():
            return {"sigma": sigmas, "background": self.background, "rho": self.rho}
        from ..prediction_gap import binary_perturbation

        rho = None if self.rho is None else np.where(self.categorical, float(self.rho), np.nan)
        return {"sigma": sigmas, "perturbation": binary_perturbation(self.forest, self.background, sigmas, rho=rho,
                                                                     features=np.flatnonzero(flipped).tolist())}

    def perturbation(self, sigma: float, binary_sigma: float | None = None):
        """The :class:`~xai_plugins.perturbation.Perturbation` of :meth:`noise`, its categorical laws worked
        out here and the background rows left out: small to ship to an engine's workers; made once per σ."""
        key = (float(sigma), binary_sigma)
        if key not in self._perturbations:
            self._perturbations[key] = self._perturbation(sigma, binary_sigma)
        return self._perturbations[key]

    @functools.cached_property
    def _perturbations(self) -> dict:
        """{(σ, binary σ): Perturbation} of :meth:`perturbation` (not a field: a view of the context has its own)."""
        return {}

    def _perturbation(self, sigma: float, binary_sigma: float | None):
        from ..perturbation import make_perturbation

        noise = make_perturbation(self.n_features, **self.noise(sigma, binary_sigma),
                                  names=self.forest.feature_names, missing=self.forest.missing_value)
        for j in np.flatnonzero(self.categorical):
            noise.category_law(int(j), int(self.forest.n_categories[j]))
        shipped = copy.copy(noise)          # shares the laws just worked out
        shipped.background = None
        return shipped

    def rho_at(self, sigma: float) -> float:
        """The ρ of the categorical features at noise level ``sigma``: :attr:`rho`, else its default
        (:func:`~.options.default_rho`)."""
        from .options import default_rho

        return float(self.rho) if self.rho is not None else default_rho(sigma)

    @property
    def n_features(self) -> int:
        """Number of features d."""
        return len(self.feature_names)

    def model_input(self, X) -> object:
        """``X`` (category codes in the categorical features) in the form the model's own ``predict``
        takes: a DataFrame when it knows feature names, its categorical columns as pandas categories of the
        training labels (what a Pipeline's encoders and a LightGBM model on category columns read)."""
        return self.scorer().native_input(X)

    def scorer(self, predictor=None) -> "Scorer":
        """:meth:`score` as a standalone callable; ``predictor`` replaces the Forest's (e.g. one
        holding the model strongly, which can be sent to dask workers)."""
        columns = self.X_test.columns if getattr(self.model, "feature_names_in_", None) is not None else None
        return Scorer(self.forest.predict_fn if predictor is None else predictor, self.output, columns,
                      self.forest.category_labels)

    def portable_scorer(self) -> "Scorer":
        """:meth:`scorer` holding the fitted model strongly, so that it can be pickled and sent to the
        workers of an engine (the Forest's own predictor holds the model weakly); the same values."""
        from ..engines.base import held_predictor

        return self.scorer(held_predictor(self.forest))

    def score(self, X) -> np.ndarray:
        """The explained output (see class docstring) of the rows ``X``, shape (n,)."""
        return self.scorer()(X)

    def row_label(self, i: int) -> str:
        """How the report names test row ``i``: its position among the test rows (1-based, so
        "row 3 of 171" for the third of 171 test rows) and, separately, its label in the DataFrame's index."""
        return f"{i + 1} of {len(self.X_test)} (index {self.X_test.index[i]})"

    @property
    def complete_rows(self) -> np.ndarray:
        """Positions of the test rows without missing values (PG² cannot perturb a missing value)."""
        return np.flatnonzero(~self.X_test.isna().any(axis=1).to_numpy())

    def sample_rows(self, n: int) -> np.ndarray:
        """Sorted positions of ``min(n, n_complete)`` complete test rows, the first ones of one seeded
        permutation, so a smaller sample is always a subset of a larger one."""
        complete = self.complete_rows
        order = self.rng("rows").permutation(len(complete))
        return np.sort(complete[order[:n]])


def detached(forest: Forest) -> Forest:
    """A copy of ``forest`` without its model predictor (which holds the model weakly and cannot be
    pickled): what a block function needs of the trees, sendable to an engine's workers."""
    plain = copy.copy(forest)
    object.__setattr__(plain, "predict_fn", None)
    return plain


def derive_seed(root: np.random.SeedSequence, stream: str) -> np.random.SeedSequence:
    """The child of ``root`` for the named ``stream`` (keyed on a CRC-32 of the name, which unlike
    ``hash`` is the same in every process)."""
    return np.random.SeedSequence(root.entropy, spawn_key=(zlib.crc32(stream.encode("utf-8")),))


class Scorer:
    """The explained output of rows: ``predictor(model_input(X))[:, output]`` as float, shape (n,).
    ``columns``: the column names the model was fitted with (None: it takes arrays); ``labels``: per feature,
    the category labels by code of a labelled categorical feature, else None (the Forest's ``category_labels``)."""

    def __init__(self, predictor, output: int, columns=None, labels=None):
        self.predictor, self.output, self.columns, self.labels = predictor, output, columns, labels

    def model_input(self, X) -> object:
        """``X`` as float rows (category codes) in the form the Forest's predictor takes (a DataFrame when
        the model knows feature names)."""
        if self.columns is not None:
            return pd.DataFrame(np.asarray(X, dtype=float), columns=self.columns)
        return np.asarray(X, dtype=float)

    def native_input(self, X) -> object:
        """:meth:`model_input` with each categorical feature's codes replaced by a pandas category of its
        labels (a missing value or an unseen code: missing), the form the model's own ``predict`` takes."""
        rows = self.model_input(X)
        if self.labels is None or all(known is None for known in self.labels):
            return rows
        values = np.asarray(X, dtype=float)
        frame = category_frame(values, list(range(values.shape[1])) if self.columns is None else list(self.columns),
                               self.labels)
        return frame if self.columns is not None else frame.to_numpy()

    def __call__(self, X) -> np.ndarray:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            out = self.predictor(self.model_input(X))
        return np.asarray(out, dtype=float).reshape(len(X), -1)[:, self.output]


def _frame(forest, X, label: str, protected=()) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """``X`` as a DataFrame in the model's feature order (aligned by column name), index kept, and
    its ``protected`` columns (None when there are none); protected columns that are not model
    features are dropped from the features."""
    extra = []
    if protected:
        if not isinstance(X, pd.DataFrame):
            raise InputError(f"protected attributes {list(protected)} are column names: pass {label} as a DataFrame")
        missing = [c for c in protected if c not in X.columns]
        if missing:
            raise InputError(f"protected column(s) {missing} not in {label} (columns: {list(map(str, X.columns))})")
        features = set(map(str, forest.feature_names or ()))
        extra = [c for c in protected if str(c) not in features]
    groups = X[list(protected)].copy() if protected else None
    arr, names = forest.rows(X.drop(columns=extra) if extra else X, what=label, allow_nan=True, incomplete_ok=True)
    return pd.DataFrame(arr, columns=names, index=getattr(X, "index", None)), groups


def _check_observed(frame: pd.DataFrame, label: str, complete: bool = False) -> None:
    """:class:`InputError` for a feature column with no value at all (every entry NaN): the noise scale
    (in standard deviations of the background, X_train or X_test) and the explained rows (complete
    test rows: the perturbation methods need every feature's value) do not exist. With ``complete``,
    also when no row is complete."""
    observed = frame.notna().to_numpy()
    empty = [str(c) for c, seen in zip(frame.columns, observed.any(axis=0)) if not seen]
    if empty and len(frame):
        raise InputError(f"{label} column(s) {empty[:20]} are entirely missing (NaN): the audit needs observed "
                         "values of every feature (σ is in units of their standard deviations, and the explained "
                         "rows are complete rows); impute the column as the model's training pipeline does")
    if complete and len(frame) and not observed.all(axis=1).any():
        raise InputError(f"{label} has no complete row (every row has a NaN): the audit explains complete rows, as "
                         "the perturbation methods need every feature's value; impute the missing values first")


def model_classes(model, forest) -> list | None:
    """The class labels of a classifier, in the order of its outputs (``classes_``, else 0, 1, ...),
    or None for a regressor: what :func:`~xai_plugins._validation.check_target` checks targets against
    (in :func:`make_context` and in the CLI alike)."""
    if forest.task != "classification":
        return None
    return list(getattr(model, "classes_", range(max(forest.n_outputs, 2))))


def make_context(model, X_test, y_test=None, *, X_train=None, y_train=None, positive_class=None,
                 random_state=None, protected=(), cluster=None, root_seed=None,
                 progress=True, rho=None, binary_flip=True) -> AuditContext:
    """Import the model and check the data against it (numeric; DataFrame columns aligned by name).

    ``protected``: column names of ``X_test`` (and ``X_train`` when it has them) held apart as
    :attr:`AuditContext.protected`; those that are not model features are not passed to the model.
    ``positive_class`` defaults to the last class of a binary classifier and to the most frequent
    test class (else the last) of a multi-class one. Categorical features (text or pandas category
    columns, read as the model's category codes) are kept as codes; ``rho`` is their ρ (see
    :attr:`AuditContext.rho`); ``binary_flip``: perturb the two-valued features by the flip law
    (:attr:`AuditContext.binary_flip`).

    Raises :class:`~xai_plugins.UnsupportedModelError` for a model the importers refuse and
    ``ValueError`` for data that does not fit the model.
    """
    forest = import_model(model)
    if forest.predict_fn is None:
        raise InputError("the imported model carries no predictor; pass the fitted model itself")
    protected = tuple(protected or ())
    X_test_f, groups = _frame(forest, X_test, "X_test", protected)
    names = list(X_test_f.columns)
    train_protected = tuple(c for c in protected if isinstance(X_train, pd.DataFrame) and c in X_train.columns)
    X_train_f, groups_train = (None, None) if X_train is None else _frame(forest, X_train, "X_train",
                                                                          train_protected)
    if X_train_f is not None and list(X_train_f.columns) != names:
        raise FeatureMismatchError(f"X_train columns {list(X_train_f.columns)} differ from X_test's {names}")
    _check_observed(X_test_f, "X_test", complete=cluster is None)
    if X_train_f is not None:
        _check_observed(X_train_f, "X_train")
    classes = model_classes(model, forest)
    if y_test is not None:
        y_test = check_target(y_test, classes, n_rows=len(X_test_f), what="y_test")
    if y_train is not None:
        y_train = check_target(y_train, classes, n_rows=0 if X_train_f is None else len(X_train_f), what="y_train")
    if classes is not None and positive_class is None:
        positive_class = _default_class(classes, y_test)
    output, label = explained_output(forest, classes, positive_class)
    return AuditContext(model, forest, X_test_f, y_test, X_train_f, y_train, names, forest.task, output, label,
                        positive_class, random_state, groups, groups_train, classes or [], cluster, root_seed, progress,
                        rho, binary_flip=bool(binary_flip))


def _labels(forest: Forest, j: int) -> list:
    """The category labels of categorical feature ``j`` of ``forest`` by code, as text."""
    labels = None if forest.category_labels is None else forest.category_labels[j]
    return [] if labels is None else [str(v) for v in labels]


def explained_output(forest: Forest, classes: list | None, positive_class) -> tuple[int, str]:
    """The output column of ``forest`` every method explains and its label in words: the regression output, or
    for a classifier of ``classes`` the probability (random forests) or margin (boosted models) of
    ``positive_class``. Raises :class:`InputError` for a class the model does not have, and for any class but the
    last of a binary boosted model (its single margin is the log-odds of the last class)."""
    if not classes:
        return 0, "the regression output"
    if forest.n_outputs == 1 and positive_class != classes[-1]:
        raise InputError(f"the single margin of a binary boosted model is the log-odds of class {classes[-1]!r}; "
                         f"positive_class must be {classes[-1]!r}")
    if positive_class not in classes:
        raise InputError(f"positive_class {positive_class!r} is not one of the model's classes {classes}")
    output = 0 if forest.n_outputs == 1 else classes.index(positive_class)
    if forest.output_space == "probability":
        return output, f"the predicted probability of class {positive_class}"
    return output, f"the margin (log-odds) of class {positive_class}"


def _default_class(classes: list, y) -> object:
    """The last class of a binary model; the most frequent test class (ties: the later class; no
    target: the last class) of a multi-class one."""
    if len(classes) <= 2 or y is None:
        return classes[-1]
    counts = [int(np.sum(np.asarray(y) == c)) for c in classes]
    return classes[len(counts) - 1 - int(np.argmax(counts[::-1]))]
