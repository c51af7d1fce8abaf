"""Every XGBoost / LightGBM objective imports to a Forest whose output is the model's own margin.

The margin is what the library's plain prediction applies its link to:

* XGBoost: ``inplace_predict(predict_type="margin")`` / ``predict(output_margin=True)``. The stored
  ``learner_model_param.base_score`` is mapped to the margin intercept by the objective's
  ``ProbToMargin``: logit for ``binary:logistic`` / ``reg:logistic``, log for ``count:poisson``,
  ``reg:gamma``, ``reg:tweedie``, ``survival:cox``, ``survival:aft``, identity for everything else
  (``binary:hinge`` and ``binary:logitraw`` included; multi-class and multi-target models store one
  intercept per output, already in margin space).
* LightGBM: ``predict(raw_score=True)`` (the initial score is folded into the first trees), except for
  ``boosting="rf"``: ``raw_score=True`` returns the SUM over trees while the plain prediction applies
  the link to the sum divided by the number of iterations, so the margin is ``raw_score / n_iter``
  (divided by iterations, not by the total number of trees, for multi-class models).

``Forest.predict_fn`` (used by the sampling estimators) must be on the same scale as the Forest.
An objective whose link is unknown must be refused with ``UnsupportedModelError`` naming it; all
objectives below have a known link, so ``REFUSED`` is empty.
"""

import inspect
import re

import numpy as np
import pytest

import xai_plugins as xp
from xai_plugins.errors import UnsupportedModelError
from xai_plugins.forest import import_model

xgb = pytest.importorskip("xgboost")
lgb = pytest.importorskip("lightgbm")

N, P = 200, 5
REFUSED: set[str] = set()


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def _softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


LINKS = {
    "identity": lambda z: z, "sigmoid": _sigmoid, "softmax": _softmax, "exp": np.exp,
    "hinge": lambda z: (z > 0).astype(float), "argmax": lambda z: z.argmax(axis=1)[:, None].astype(float),
    "softplus": lambda z: np.log1p(np.exp(z)), "signed_square": lambda z: np.sign(z) * z * z,
}


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, P))
    lin = X[:, 0] + 0.5 * X[:, 1] - 0.3 * X[:, 2]
    t = np.exp(0.3 * lin) * rng.exponential(size=N)
    censored = rng.random(N) < 0.3
    y = {
        "reg": lin + 0.3 * rng.normal(size=N) + 3.0,
        "pos": np.exp(0.3 * lin) + 0.1,
        "count": rng.poisson(np.exp(0.3 * lin)).astype(float),
        "bin": (lin + rng.normal(size=N) > 0).astype(float),
        "prob": _sigmoid(lin),
        "multi": np.digitize(lin, [-0.5, 0.5]).astype(float),
        "rel": np.clip(np.round(lin + 1.5 + rng.normal(size=N)), 0, 3),
        "cox": np.where(censored, -t, t),
        "aft_lo": t, "aft_hi": np.where(censored, np.inf, t),
        "multitarget": np.column_stack([lin + 3.0, -lin, np.exp(0.3 * lin)]),
    }
    return X, y


def _check(model, X, margin, objective, link, prediction):
    """import_model(model) reproduces ``margin`` (and its predict_fn too), or refuses by name."""
    if objective in REFUSED:
        with pytest.raises(UnsupportedModelError, match=re.escape(objective)):
            import_model(model)
        return
    margin = np.asarray(margin, dtype=np.float64).reshape(len(X), -1)
    # the reference really is the margin: the library's own prediction is link(margin)
    np.testing.assert_allclose(LINKS[link](margin), np.asarray(prediction, dtype=float).reshape(len(X), -1),
                               rtol=1e-5, atol=1e-6)
    forest = import_model(model)
    atol = 1e-5 * max(1.0, float(np.abs(margin).max()))
    out = forest.predict(X)
    assert out.shape == margin.shape
    np.testing.assert_allclose(out, margin, rtol=1e-5, atol=atol, err_msg=f"{objective}: Forest.predict")
    np.testing.assert_allclose(np.asarray(forest.predict_fn(X), dtype=float).reshape(margin.shape), margin,
                               rtol=1e-5, atol=atol, err_msg=f"{objective}: Forest.predict_fn")
    # "raw" means the Forest output is the model's prediction (identity link); a transformed output is a margin
    if forest.task == "regression":
        assert forest.output_space == ("raw" if link == "identity" else "margin"), objective
    else:
        assert forest.output_space == "margin", objective
    return forest


# ----------------------------------------------------------------------------- XGBoost
# objective -> (label kind, link from margin to prediction, task, explicit base_score to try)
XGB = {
    "reg:squarederror": ("reg", "identity", "regression", 2.0),
    "reg:squaredlogerror": ("pos", "identity", "regression", 2.0),
    "reg:absoluteerror": ("reg", "identity", "regression", 2.0),
    "reg:pseudohubererror": ("reg", "identity", "regression", 2.0),
    "reg:quantileerror": ("reg", "identity", "regression", 2.0),
    "reg:quantileerror#multi_alpha": ("reg", "identity", "regression", 2.0),
    "reg:squarederror#multi_target": ("multitarget", "identity", "regression", 2.0),
    "reg:logistic": ("prob", "sigmoid", "regression", 0.3),
    "binary:logistic": ("bin", "sigmoid", "classification", 0.3),
    "binary:logitraw": ("bin", "identity", "classification", 0.3),
    "binary:hinge": ("bin", "hinge", "classification", 0.3),
    "multi:softprob": ("multi", "softmax", "classification", 0.5),
    "multi:softmax": ("multi", "argmax", "classification", 0.5),
    "count:poisson": ("count", "exp", "regression", 2.0),
    "reg:gamma": ("pos", "exp", "regression", 2.0),
    "reg:tweedie": ("pos", "exp", "regression", 2.0),
    "survival:cox": ("cox", "exp", "regression", 2.0),
    "survival:aft": ("aft", "exp", "regression", 2.0),
    "rank:pairwise": ("rel", "identity", "regression", 0.3),
    "rank:ndcg": ("rel", "identity", "regression", 0.3),
    "rank:map": ("bin", "identity", "regression", 0.3),
}
QID = np.repeat(np.arange(20), N // 20)


def _xgb_params(key, base_score):
    objective = key.split("#")[0]
    params = dict(objective=objective, max_depth=3, learning_rate=0.3)
    if key.endswith("#multi_alpha"):
        params["quantile_alpha"] = [0.1, 0.5, 0.9]
    elif objective == "reg:quantileerror":
        params["quantile_alpha"] = 0.5
    if objective.startswith("multi:"):
        params["num_class"] = 3
    if base_score is not None:
        params["base_score"] = base_score
    return objective, params


@pytest.mark.parametrize("base", ["default", "explicit"])
@pytest.mark.parametrize("key", list(XGB))
def test_xgboost_train(data, key, base):
    X, y = data
    kind, link, task, explicit = XGB[key]
    objective, params = _xgb_params(key, explicit if base == "explicit" else None)
    X32 = X.astype(np.float32)
    if kind == "aft":
        dtrain = xgb.DMatrix(X32)
        dtrain.set_float_info("label_lower_bound", y["aft_lo"])
        dtrain.set_float_info("label_upper_bound", y["aft_hi"])
    else:
        dtrain = xgb.DMatrix(X32, label=y[kind])
        if objective.startswith("rank:"):
            dtrain.set_group(np.bincount(QID))
    booster = xgb.train({**params, "seed": 0, "nthread": 1}, dtrain, num_boost_round=6)
    margin = booster.inplace_predict(X32, predict_type="margin")
    prediction = booster.inplace_predict(X32, predict_type="value")
    forest = _check(booster, X, margin, objective, link, prediction)
    if forest is not None:
        assert forest.task == task


@pytest.mark.parametrize("base", ["default", "explicit"])
@pytest.mark.parametrize("key", [k for k in XGB if k != "survival:aft"])  # aft needs label bounds: train only
def test_xgboost_sklearn(data, key, base):
    X, y = data
    kind, link, task, explicit = XGB[key]
    objective, params = _xgb_params(key, explicit if base == "explicit" else None)
    params.update(n_estimators=6, random_state=0, n_jobs=1)
    fit = {}
    if objective.startswith(("binary:", "multi:")):
        model = xgb.XGBClassifier(**params)
        target = y[kind].astype(int)
    elif objective.startswith("rank:"):
        model = xgb.XGBRanker(**params)
        target, fit = y[kind], {"qid": QID}
    else:
        model = xgb.XGBRegressor(**params)
        target = y[kind]
    model.fit(X, target, **fit)
    margin = model.predict(X, output_margin=True)
    booster = model.get_booster()
    prediction = booster.inplace_predict(X.astype(np.float32), predict_type="value")
    forest = _check(model, X, margin, objective, link, prediction)
    if forest is not None:
        assert forest.task == task


def test_xgboost_vector_intercepts(data):
    """Multi-class, multi-alpha and multi-target models store one intercept per output."""
    import json

    X, y = data
    for model, target in ((xgb.XGBClassifier(n_estimators=3, max_depth=2), y["multi"].astype(int)),
                          (xgb.XGBRegressor(n_estimators=3, max_depth=2, objective="reg:quantileerror",
                                            quantile_alpha=[0.1, 0.5, 0.9]), y["reg"]),
                          (xgb.XGBRegressor(n_estimators=3, max_depth=2), y["multitarget"])):
        model.set_params(n_jobs=1).fit(X, target)
        stored = json.loads(model.get_booster().save_raw(raw_format="json"))["learner"]["learner_model_param"]
        intercept = np.array([float(v) for v in stored["base_score"].strip("[]").split(",")])
        assert intercept.shape == (3,)
        np.testing.assert_allclose(np.asarray(import_model(model).base_score), intercept, rtol=1e-6)


# ----------------------------------------------------------------------------- LightGBM
# objective -> (label kind, link, task)
LGB = {
    "regression": ("reg", "identity", "regression"),
    "regression_l1": ("reg", "identity", "regression"),
    "huber": ("reg", "identity", "regression"),
    "fair": ("reg", "identity", "regression"),
    "quantile": ("reg", "identity", "regression"),
    "mape": ("pos", "identity", "regression"),
    "binary": ("bin", "sigmoid", "classification"),
    "cross_entropy": ("prob", "sigmoid", "classification"),
    "multiclass": ("multi", "softmax", "classification"),
    "multiclassova": ("multi", "sigmoid", "classification"),
    "poisson": ("count", "exp", "regression"),
    "gamma": ("pos", "exp", "regression"),
    "tweedie": ("pos", "exp", "regression"),
    "lambdarank": ("rel", "identity", "regression"),
    "regression#reg_sqrt": ("pos", "signed_square", "regression"),
}
BOOSTING = {
    "gbdt": {},
    "rf": dict(boosting="rf", bagging_freq=1, bagging_fraction=0.7),
    "dart": dict(boosting="dart"),
    "goss": dict(data_sample_strategy="goss"),
}


def _lgb_model(X, y, objective, boosting, rounds=6):
    kind = LGB[objective][0]
    params = dict(objective=objective.split("#")[0], reg_sqrt=objective.endswith("#reg_sqrt"), max_depth=3,
                  num_leaves=8, learning_rate=0.3, min_data_in_leaf=5, seed=0, num_threads=1, verbose=-1,
                  **BOOSTING[boosting])
    if objective.startswith("multiclass"):
        params["num_class"] = 3
    group = np.bincount(QID) if objective == "lambdarank" else None
    return lgb.train(params, lgb.Dataset(X, y[kind], group=group), num_boost_round=rounds)


def _lgb_margin(booster, X, boosting):
    raw = np.asarray(booster.predict(X, raw_score=True), dtype=np.float64).reshape(len(X), -1)
    if boosting == "rf":  # raw_score sums the trees; the model averages over iterations
        raw = raw / (booster.best_iteration or booster.current_iteration())
    return raw


@pytest.mark.parametrize("boosting", list(BOOSTING))
@pytest.mark.parametrize("objective", list(LGB))
def test_lightgbm(data, objective, boosting):
    X, y = data
    booster = _lgb_model(X, y, objective, boosting)
    forest = _check(booster, X, _lgb_margin(booster, X, boosting), objective.split("#")[0], LGB[objective][1],
                    booster.predict(X))
    if forest is not None:
        assert forest.task == LGB[objective][2]


@pytest.mark.parametrize("objective", ["regression", "binary", "multiclass"])
def test_lightgbm_sklearn_rf(data, objective):
    X, y = data
    kind = LGB[objective][0]
    cls = lgb.LGBMRegressor if objective == "regression" else lgb.LGBMClassifier
    model = cls(boosting_type="rf", n_estimators=6, bagging_freq=1, bagging_fraction=0.7, num_leaves=8,
                n_jobs=1, verbose=-1, random_state=0).fit(X, y[kind])
    prediction = model.predict_proba(X) if objective != "regression" else model.predict(X)
    if objective == "binary":
        prediction = prediction[:, 1]
    _check(model, X, _lgb_margin(model.booster_, X, "rf"), objective, LGB[objective][1], prediction)


@pytest.mark.parametrize("objective", ["regression", "binary", "multiclass"])
def test_lightgbm_rf_exact_matches_monte_carlo(data, objective):
    """The exact PG² (on the Forest) and the sampled one (through predict_fn) estimate the same thing."""
    X, y = data
    booster = _lgb_model(X, y, objective, "rf")
    exact = xp.pg2(booster, X[:3], S=[0, 1], sigma=0.5, method="exact")
    mc = xp.pg2(booster, X[:3], S=[0, 1], sigma=0.5, method="monte_carlo", n_samples=20000, random_state=0)
    e, m, se = (np.asarray(a, dtype=float) for a in (exact.value, mc.value, mc.stderr))
    assert e.shape == m.shape
    assert np.all(np.abs(e - m) <= 5 * se + 1e-9), (e, m, se)


def test_early_stopped_models_import_the_trees_their_predict_uses():
    """XGBoost's wrapper and LightGBM predict with the best iteration only; so must the Forest."""
    import lightgbm as lgb
    import xgboost as xgb

    import xai_plugins as xp

    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 4))
    y = X[:, 0] + 0.1 * rng.normal(size=400)
    xgb_model = xgb.XGBRegressor(n_estimators=200, learning_rate=0.9, early_stopping_rounds=3, n_jobs=1).fit(
        X[:300], y[:300], eval_set=[(X[300:], y[300:])], verbose=False)
    # LightGBM >= 4.7 takes the validation rows as eval_X / eval_y and deprecates eval_set
    new_api = "eval_X" in inspect.signature(lgb.LGBMRegressor.fit).parameters
    lgb_eval = {"eval_X": X[300:], "eval_y": y[300:]} if new_api else {"eval_set": [(X[300:], y[300:])]}
    lgb_model = lgb.LGBMRegressor(n_estimators=200, learning_rate=0.9, verbose=-1, n_jobs=1).fit(
        X[:300], y[:300], callbacks=[lgb.early_stopping(3, verbose=False)], **lgb_eval)
    for model, rounds in ((xgb_model, xgb_model.best_iteration + 1), (lgb_model, lgb_model.best_iteration_)):
        forest = xp.import_model(model)
        assert forest.n_trees == rounds < 200
        np.testing.assert_allclose(forest.predict(X)[:, 0], model.predict(X), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(forest.predict_fn(X)[:, 0], model.predict(X), rtol=1e-5, atol=1e-5)


def test_non_finite_base_margin_is_refused_by_name():
    import xgboost as xgb

    from xai_plugins.errors import UnsupportedModelError

    booster = xgb.train({"objective": "reg:tweedie", "nthread": 1},
                        xgb.DMatrix(np.array([[0.0], [1.0]] * 6), label=np.zeros(12)), 1)
    with pytest.raises(UnsupportedModelError, match="reg:tweedie.*base_score"):
        import_model(booster)
