"""Model files: the artefact that was deployed, read through its library's own loader, its format told by
its content (the file's first bytes), not only by its extension.

==========================  ============================================  =========================================
format                      recognised by                                 read with
==========================  ============================================  =========================================
XGBoost JSON / UBJSON       a JSON object with ``"learner"`` / UBJSON     ``xgboost.Booster``, then ``XGBClassifier``
                            ``{`` followed by a UBJSON type marker        or ``XGBRegressor`` by its objective
LightGBM text model         ``tree`` then ``version=`` on the first lines ``lightgbm.Booster(model_file=...)``
CatBoost binary / JSON      ``CBM1`` / a JSON object with                 ``CatBoost().load_model`` (``format="cbm"``
                            ``"oblivious_trees"``                         / ``"json"``)
ONNX-ML tree ensemble       ``.onnx``, or a ModelProto's first fields     :class:`~.onnx.OnnxModel` (``onnx``;
                            (:func:`~.onnx.onnx_header`)                  onnxruntime scores it)
PMML 4.x TreeModel /        an XML document whose root is ``<PMML>``      :class:`~.pmml.PMMLModel` (standard library;
MiningModel                                                               pypmml scores it)
skops                       a zip archive holding ``schema.json``         ``skops.io.load`` with :data:`SKOPS_TRUSTED`
pickle / joblib             ``.pkl`` / ``.pickle`` / ``.joblib``          ``joblib.load``, only with ``trust_pickle``
==========================  ============================================  =========================================

skops loads only scikit-learn's own and numpy's types by default; a tree model adds the tree structures
listed in :data:`SKOPS_TRUSTED`, which hold arrays only. Any other type the file names is refused by name
(unpickling it could run code), so a skops file needs no ``--trust-pickle``.
"""

from __future__ import annotations

import json
import os
import re
import zipfile
from pathlib import Path
from typing import Any

from .._extras import require
from ..errors import InputError, UnsupportedModelError
from .onnx import OnnxModel, onnx_header
from .pmml import PMMLModel

__all__: list[str] = []      # internal module: load_model is public as xai_plugins.load_model

PICKLE_SUFFIXES = (".pkl", ".pickle", ".joblib")
#: the types a skops file of a supported scikit-learn model may hold beyond skops' defaults: the fitted trees'
#: array containers (scikit-learn's ``Tree`` and the histogram-gradient-boosting predictor and bin mapper)
SKOPS_TRUSTED = ("sklearn.tree._tree.Tree", "sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor",
                 "sklearn.ensemble._hist_gradient_boosting.binning._BinMapper")
#: the formats :func:`model_format` tells apart, in words
FORMATS = {"xgboost-json": "an XGBoost JSON model", "xgboost-ubj": "an XGBoost UBJSON model",
           "lightgbm-text": "a LightGBM text model", "catboost-cbm": "a CatBoost binary model",
           "catboost-json": "a CatBoost JSON model", "skops": "a skops file", "onnx": "an ONNX model",
           "pmml": "a PMML document", "pickle": "a pickle / joblib file"}
_UBJSON_MARKERS = b"iUIlLdDSHTFZN[{$#"


def model_format(path: str | os.PathLike) -> str:
    """The format of the model file at ``path`` (a key of :data:`FORMATS`), told by its content.

    Raises :class:`~xai_plugins.errors.InputError` for a missing file and
    :class:`~xai_plugins.errors.UnsupportedModelError` for content that is none of the formats, naming
    what it looks like."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"model file {str(path)!r} does not exist")
    with path.open("rb") as handle:
        head = handle.read(4096)
    if path.suffix.lower() in PICKLE_SUFFIXES:
        return "pickle"
    if head.startswith(b"CBM1"):
        return "catboost-cbm"
    if path.suffix.lower() == ".onnx" or onnx_header(head):
        return "onnx"
    if head.startswith(b"PK\x03\x04"):
        if _is_skops(path):
            return "skops"
        raise UnsupportedModelError(f"cannot read model file {path.name}: it is a zip archive but not a skops file "
                                    "(no schema.json inside)")
    if head[:1] == b"{" and len(head) > 1 and head[1:2] in _UBJSON_MARKERS and not head[1:2].isspace() \
            and head[1:2] != b'"':
        return "xgboost-ubj"
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
    if text.startswith("<"):
        if re.search(r"<(?:\w+:)?PMML[\s>]", text):
            return "pmml"
        raise UnsupportedModelError(f"cannot read model file {path.name}: it is XML but its root is not <PMML>")
    if re.match(r"tree\s*\n\s*version=", text):
        return "lightgbm-text"
    if text.startswith("{"):
        keys = _json_keys(path)
        if "learner" in keys:
            return "xgboost-json"
        if "oblivious_trees" in keys:
            return "catboost-json"
        raise UnsupportedModelError(f"cannot read model file {path.name}: it is JSON but not an XGBoost model (no "
                                    f"\"learner\" object) nor a CatBoost one (no \"oblivious_trees\"); found "
                                    f"{sorted(keys)[:6]}. Save the fitted model with its library's save_model")
    if head.startswith(b"\x80") or path.suffix.lower() in PICKLE_SUFFIXES:
        return "pickle"
    raise UnsupportedModelError(f"cannot read model file {path.name}: its content is none of "
                                f"{', '.join(FORMATS.values())}")


def load_model(path: str | os.PathLike, *, trust_pickle: bool = False) -> Any:
    """The fitted model saved at ``path``, read through its library's own loader, without unpickling.

    The format is told by the file's content, not only by its extension: XGBoost
    JSON / UBJSON, a LightGBM text model (``Booster.save_model``), a CatBoost ``.cbm`` or JSON model, an
    ONNX-ML tree ensemble (skl2onnx, onnxmltools), a PMML document (sklearn2pmml, JPMML), a scikit-learn
    model or Pipeline saved with skops (only scikit-learn's tree structures beyond skops' own
    trusted types), or a pickle / joblib file with ``trust_pickle``. The model is returned as its library's
    object, which every function of the package takes.

    Parameters
    ----------
    path : str or path-like
        The model file.
    trust_pickle : bool, default False
        Read a ``.pkl`` / ``.pickle`` / ``.joblib`` file (unpickling runs whatever code the file names: only
        for files whose origin you trust).

    Returns
    -------
    model
        XGBoost files: an ``XGBClassifier`` or ``XGBRegressor`` by their objective; LightGBM: a
        ``lightgbm.Booster``; CatBoost: a ``catboost.CatBoost``; ONNX: an ``OnnxModel`` (scored by
        onnxruntime); PMML: a ``PMMLModel`` (scored by pypmml); skops and pickles: the saved object.

    Raises
    ------
    InputError
        A missing file, a pickle without ``trust_pickle``, a damaged file of a known format.
    UnsupportedModelError
        Content of no supported format, or a skops file holding a type that is not trusted (named).
    MissingExtraError
        The library that reads the format is not installed (named with its extra).

    Examples
    --------
    >>> import tempfile, os
    >>> import numpy as np
    >>> import lightgbm
    >>> import xai_plugins as xp
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 3)); y = X[:, 0] + rng.normal(size=200)
    >>> booster = lightgbm.train({"verbose": -1}, lightgbm.Dataset(X, y), num_boost_round=5)
    >>> path = os.path.join(tempfile.mkdtemp(), "model.txt")
    >>> _ = booster.save_model(path)
    >>> model = xp.load_model(path)
    >>> type(model).__name__
    'Booster'
    >>> bool(np.allclose(xp.import_model(model).predict(X)[:, 0], booster.predict(X), rtol=0, atol=1e-12))
    True
    """
    path = Path(path)
    fmt = model_format(path)
    if fmt == "pickle":
        if not trust_pickle:
            raise InputError(f"refusing to load {path.name}: unpickling a file can run arbitrary code. Pass "
                             "--trust-pickle (trust_pickle=True) only if you trust where it came from, or save the "
                             "model in its library's own format (XGBoost JSON, LightGBM model.txt, CatBoost .cbm) "
                             "or with skops")
        joblib = require("joblib", "report", "reading a pickled model")
        try:
            return joblib.load(path)
        except Exception as exc:  # noqa: BLE001 - any unpickling failure is a user error here
            raise InputError(f"cannot read model file {path.name}: it is not a readable pickled / joblib model, "
                             f"the file is damaged or not a pickle ({type(exc).__name__}: {exc}); save the fitted "
                             "model again with joblib.dump(model, path), or in its library's own format") from exc
    reader = {"xgboost-json": _xgboost, "xgboost-ubj": _xgboost, "lightgbm-text": _lightgbm,
              "catboost-cbm": _catboost, "catboost-json": _catboost, "skops": _skops, "onnx": _onnx,
              "pmml": _pmml}[fmt]
    try:
        return reader(path, fmt)
    except (InputError, UnsupportedModelError):
        raise
    except Exception as exc:  # noqa: BLE001 - each library raises its own error types for damaged files
        raise InputError(f"cannot read model file {path.name} as {FORMATS[fmt]}: {native_message(exc)}") from exc


def _xgboost(path: Path, fmt: str):
    xgboost = require("xgboost", "xgboost", f"reading {FORMATS[fmt]}")
    booster = xgboost.Booster(model_file=str(path))
    objective = json.loads(booster.save_config())["learner"]["objective"]["name"]
    model = (xgboost.XGBClassifier if objective.startswith(("binary:", "multi:")) else xgboost.XGBRegressor)()
    model.load_model(str(path))
    return model


def _lightgbm(path: Path, fmt: str):
    lightgbm = require("lightgbm", "lightgbm", f"reading {FORMATS[fmt]}")
    return lightgbm.Booster(model_file=str(path))


def _catboost(path: Path, fmt: str):
    catboost = require("catboost", "catboost", f"reading {FORMATS[fmt]}")
    return catboost.CatBoost().load_model(str(path), format="cbm" if fmt == "catboost-cbm" else "json")


def _skops(path: Path, fmt: str):
    sio = require("skops.io", "skops", f"reading {FORMATS[fmt]}")
    untrusted = sio.get_untrusted_types(file=str(path))
    refused = sorted(set(untrusted) - set(SKOPS_TRUSTED))
    if refused:
        raise UnsupportedModelError(f"cannot read model file {path.name}: it holds types this package does not "
                                    f"trust: {refused}; a skops file "
                                    "of a supported scikit-learn tree model or Pipeline holds only scikit-learn's, "
                                    "numpy's and the tree structures' types")
    return sio.load(str(path), trusted=list(untrusted))


def _onnx(path: Path, fmt: str):
    return OnnxModel.load(path)


def _pmml(path: Path, fmt: str):
    return PMMLModel.load(path)         # the standard library's XML parser; pypmml only evaluates it


def _is_skops(path: Path) -> bool:
    try:
        with zipfile.ZipFile(path) as archive:
            return "schema.json" in archive.namelist()
    except zipfile.BadZipFile:
        return False


def _json_keys(path: Path) -> set:
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UnsupportedModelError(f"cannot read model file {path.name}: it starts like JSON but is not valid JSON "
                                    f"({exc})") from exc
    return set(payload) if isinstance(payload, dict) else set()


def native_message(exc: Exception) -> str:
    """The message of a native library's exception without its C++ stack trace."""
    text = str(exc).split("Stack trace:")[0].strip()
    return re.sub(r"^\[[0-9:]+\] \S+: ", "", text)
