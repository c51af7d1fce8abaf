"""CatBoost categorical features: one-hot splits and per-feature CTRs imported as category
sets. Oracles: CatBoost's own ``predict(prediction_type="RawFormulaVal")`` on the raw labels (parity on
random rows, unseen categories, NaN and rows on borders), CatBoost's own hash table (its Python export),
an enumeration over the raw labels times grid cells over CatBoost's own borders (``get_borders``), and
Monte Carlo drawn here, in label space, through CatBoost's own predict."""

import itertools

import numpy as np
import pytest
from scipy import special

import xai_plugins as xp
from xai_plugins.errors import InputError, UnsupportedModelError
from xai_plugins.forest import import_model
from xai_plugins.forest.catboost import category_hash

from oracle import cell_points, gaussian, noise_mass, real_boundary

catboost = pytest.importorskip("catboost")
pd = pytest.importorskip("pandas")

QUIET = dict(verbose=0, allow_writing_files=False, thread_count=1, random_seed=0)
C_LABELS = list("abcdefgh")
D_LABELS = ["p", "q", "r"]
SIGMA = 0.4


def _frame(rng, n, unseen=False):
    """Rows with a text column c (CTR), a text column d (one-hot), an integer column e (CTR) and two
    numeric columns; ``unseen`` adds labels and integers never seen in training."""
    frame = pd.DataFrame({"a": rng.normal(size=n).round(1),
                          "c": rng.choice(C_LABELS + (["zz", "é!"] if unseen else []), n),
                          "b": rng.normal(size=n).round(1),
                          "d": rng.choice(D_LABELS + (["s"] if unseen else []), n),
                          "e": rng.integers(0, 9 if unseen else 6, n)})
    frame.loc[rng.random(n) < 0.1, "b"] = np.nan
    return frame


def _target(frame):
    return (frame.a + 2 * (frame.c == "b") - (frame.c == "e") + 1.5 * (frame.d == "p") - (frame.d == "q")
            + np.sin(frame.e) + np.nan_to_num(frame.b) * (frame.c < "d"))


@pytest.fixture(scope="module")
def train():
    frame = _frame(np.random.default_rng(0), 500)
    return frame, _target(frame)


def _fit(kind, frame, y, **extra):
    params = {**dict(iterations=20, depth=4, max_ctr_complexity=1, one_hot_max_size=3, **QUIET), **extra}
    if kind == "reg":
        return catboost.CatBoostRegressor(**params).fit(frame, y, cat_features=["c", "d", "e"])
    if kind == "bin":
        return catboost.CatBoostClassifier(**params).fit(frame, y > 0.5, cat_features=["c", "d", "e"])
    if kind == "multi":
        return catboost.CatBoostClassifier(loss_function="MultiClass", **params).fit(
            frame, np.digitize(y, [-0.5, 0.5, 1.5]), cat_features=["c", "d", "e"])
    if kind == "counter":                     # an unseen category's Counter CTR is prior / (denominator + 1)
        params.update(iterations=40, one_hot_max_size=1)
        return catboost.CatBoostRegressor(simple_ctr=["Counter:Prior=0.7/1"], **params).fit(
            frame, y, cat_features=["c", "d", "e"])
    ctrs = ["Buckets", "BinarizedTargetMeanValue", "Counter", "Borders"]
    return catboost.CatBoostClassifier(simple_ctr=ctrs, **params).fit(frame, y > 0.5, cat_features=["c", "d", "e"])


@pytest.fixture(scope="module")
def regressor(train):
    return _fit("reg", *train)


def _raw(model, frame):
    return np.asarray(model.predict(frame, prediction_type="RawFormulaVal"), dtype=np.float64).reshape(len(frame), -1)


def _for_catboost(frame):
    """The frame CatBoost reads: a missing category as the text "nan" (CatBoost refuses NaN there)."""
    return frame.assign(**{c: frame[c].astype(object).where(frame[c].notna(), "nan") for c in ("c", "d", "e")})


def test_category_hash_is_catboosts():
    """Labels of 0 .. 300 characters (every CityHash64 length branch) and integers hash as CatBoost's
    own table written into its Python export."""
    rng = np.random.default_rng(0)
    labels = ["", "nan"] + ["".join(rng.choice(list("abcXYZ019_-"), size)) for size in
                            list(range(1, 140, 3)) + [200, 300]] + [-7, 0, 12345678901]
    frame = pd.DataFrame({"c": pd.Series(labels, dtype=object), "a": np.arange(len(labels), dtype=float)})
    y = np.arange(len(labels)) % 3
    model = catboost.CatBoostRegressor(iterations=2, depth=2, **QUIET).fit(frame, y, cat_features=["c"])
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        model.save_model(f"{folder}/m.py", format="python", pool=catboost.Pool(frame, y, cat_features=["c"]))
        source = open(f"{folder}/m.py", encoding="utf-8").read()
    table = eval("{" + source.split("cat_features_hashes = {")[1].split("}")[0] + "}")
    assert len(table) == len(labels)
    for label in labels:
        assert category_hash(label) == table[str(label)], label


@pytest.mark.parametrize("kind", ["reg", "bin", "multi", "ctr_types", "counter"])
def test_predict_parity_on_unseen_categories_nan_and_borders(train, kind):
    model = _fit(kind, *train)
    forest = import_model(model)
    assert forest.n_categories is not None and list(forest.n_categories[[1, 4]]) == [8, 6]
    rng = np.random.default_rng(1)
    rows = _frame(rng, 400, unseen=True)
    rows.loc[rng.random(400) < 0.05, "a"] = np.nan
    for col, borders in model.get_borders().items():        # on a border and one float32 above it
        picked = rng.integers(0, 400, 60)
        at = np.float32(rng.choice(borders, 60))
        rows.iloc[picked, col] = np.where(np.arange(60) % 2, at, np.nextafter(at, np.float32(np.inf)))
    rows.loc[rng.random(400) < 0.05, "c"] = np.nan           # read as the text "nan", an unseen category here
    want = _raw(model, _for_catboost(rows))
    np.testing.assert_array_equal(forest.predict(rows), want)
    np.testing.assert_array_equal(forest.predict(rows[::-1].reset_index(drop=True)), want[::-1])
    objects = _for_catboost(rows).to_numpy(dtype=object)    # CatBoost reads numpy object arrays too
    np.testing.assert_array_equal(forest.predict(objects), _raw(model, objects))
    if kind not in ("reg", "counter"):                         # the class probabilities behind the margin
        margin = forest.predict(rows)
        proba = special.expit(margin[:, 0]) if kind != "multi" else special.softmax(margin, axis=1)
        want_proba = model.predict_proba(_for_catboost(rows))
        np.testing.assert_allclose(proba, want_proba if kind == "multi" else want_proba[:, 1], rtol=1e-12)


def _label_law(x, rho, q: dict):
    """The labels x'_j takes and their probabilities: x_j kept with probability 1 - rho, else a label
    drawn from q (written from the definition, apart from the package)."""
    labels = list(q)
    probs = [rho * q[c] + (1 - rho) * (c == x) for c in labels]
    if x not in q:
        labels.append(x)
        probs.append(1 - rho)
    return labels, probs


def label_grid_pg2(model, row, S, sigma, laws):
    """Σ over label combinations × grid cells (cut at CatBoost's own borders) of P (f(x') - f(x))²,
    f = CatBoost's own RawFormulaVal on the raw labels; ``laws`` {name: (rho, {label: q})}."""
    borders = model.get_borders()
    axes, probs = [], []
    for name in S:
        j = list(row.index).index(name)
        if name in laws:
            values, p = _label_law(row[name], *laws[name])
        else:
            b = np.unique([real_boundary(t, "le", True) for t in borders.get(j, [])])
            values = cell_points(b)
            edges = np.concatenate([[-np.inf], b, [np.inf]])
            p = [noise_mass(gaussian(sigma), lo - row[name], hi - row[name]) for lo, hi in zip(edges[:-1], edges[1:])]
        axes.append(values)
        probs.append(p)
    cells = list(itertools.product(*axes))
    weight = np.prod(np.array(list(itertools.product(*probs))), axis=1)
    frame = pd.DataFrame([row] * len(cells)).reset_index(drop=True)
    for k, name in enumerate(S):
        frame[name] = pd.Series([c[k] for c in cells], dtype=object if name in laws else float)
    gap = _raw(model, frame) - _raw(model, pd.DataFrame([row]))[0]
    return (weight[:, None] * gap ** 2).sum(axis=0)


def _uniform(rho):
    return {"c": (rho, {c: 1 / 8 for c in C_LABELS}), "d": (rho, {d: 1 / 3 for d in D_LABELS}),
            "e": (rho, {e: 1 / 6 for e in range(6)})}


@pytest.mark.parametrize("S", [["c"], ["d"], ["e"], ["c", "a"], ["c", "d", "e"], ["a", "c", "b", "e"]])
def test_exact_pg2_matches_label_enumeration(regressor, S):
    model = regressor
    assert list(import_model(model).n_categories) == [0, 8, 0, 3, 6]    # every training category is the model's
    rows = _frame(np.random.default_rng(2), 4, unseen=True).dropna()
    rho = float(2 * special.ndtr(-0.5 / SIGMA))     # the documented default for sigma
    got = xp.pg2(model, rows, S, sigma=SIGMA).value
    for i in range(len(rows)):
        want = label_grid_pg2(model, rows.iloc[i], S, SIGMA, _uniform(rho))[0]
        assert got[i] == pytest.approx(want, rel=1e-12, abs=1e-13)


def test_background_frequencies_and_rho_match_label_enumeration(regressor, train):
    frame, _ = train
    rho = {"c": 0.7, "d": 0.2, "e": 0.45}
    laws = {name: (rho[name], frame[name].value_counts(normalize=True).to_dict()) for name in rho}
    rows = _frame(np.random.default_rng(3), 3, unseen=True).dropna()
    got = xp.pg2(regressor, rows, ["c", "d", "e"], background=frame,
                 rho=np.array([np.nan, 0.7, np.nan, 0.2, 0.45])).value
    for i in range(len(rows)):
        assert got[i] == pytest.approx(label_grid_pg2(regressor, rows.iloc[i], ["c", "d", "e"], SIGMA, laws)[0],
                                       rel=1e-12)


def test_background_labels_the_model_never_split_on_are_drawn_as_unseen(train):
    """A depth-3 model one-hot splits on two of d's three labels, so CatBoost keeps only those two: the
    background's third label ("r", a fifth of it) is still drawn with its frequency and goes where CatBoost
    sends an unseen label (the law once dropped it and renormalised: PG² off by 10-25 %)."""
    frame, y = train
    model = catboost.CatBoostRegressor(iterations=12, depth=3, max_ctr_complexity=1, one_hot_max_size=3,
                                       border_count=6, **QUIET).fit(frame, y, cat_features=["c", "d", "e"])
    assert int(import_model(model).n_categories[3]) == 2          # the model knows two of p, q, r
    rho = {"c": 0.5, "d": 0.4, "e": 0.5}
    laws = {name: (rho[name], frame[name].value_counts(normalize=True).to_dict()) for name in rho}
    rows = _frame(np.random.default_rng(3), 3, unseen=True).dropna().reset_index(drop=True)
    for S in (["d"], ["c", "d", "e"]):
        got = xp.pg2(model, rows, S, background=frame, rho=np.array([np.nan, 0.5, np.nan, 0.4, 0.5])).value
        for i in range(len(rows)):
            assert got[i] == pytest.approx(label_grid_pg2(model, rows.iloc[i], S, SIGMA, laws)[0], rel=1e-12), (S, i)
    sampled = xp.pg2(model, rows, ["d"], background=frame, rho=np.array([np.nan, 0.5, np.nan, 0.4, 0.5]),
                     method="monte_carlo", n_samples=20_000, random_state=0)
    exact = xp.pg2(model, rows, ["d"], background=frame, rho=np.array([np.nan, 0.5, np.nan, 0.4, 0.5])).value
    assert np.all(np.abs(sampled.value - exact) <= 4 * sampled.stderr)


def test_category_law_counts_values_unknown_to_the_model_as_other():
    from xai_plugins.perturbation import make_perturbation

    background = np.array([[0.0], [1.0], [1.0], [-1.0], [7.0], [np.nan], [2.5], [1.0]])   # K = 2
    noise = make_perturbation(1, 0.3, background=background, rho=np.array([0.4]))
    rho, q = noise.category_law(0, 2)
    assert rho == 0.4 and q.tolist() == pytest.approx([1 / 7, 3 / 7, 3 / 7])    # NaN left out; -1, 7, 2.5: other
    table = noise.atom_table(0, 2, np.array([0.0, 5.0, np.nan]))
    assert table.sum(axis=1) == pytest.approx([1, 1, 1])
    assert table[1].tolist() == pytest.approx([0.4 / 7, 1.2 / 7, 1.2 / 7 + 0.6, 0.0])
    assert make_perturbation(1, 0.3).category_law(0, 4)[1].tolist() == [0.25] * 4 + [0.0]
    with pytest.raises(InputError, match="every entry is NaN"):
        make_perturbation(1, 0.3, background=np.full((3, 1), np.nan)).category_law(0, 2)


def test_exact_matches_monte_carlo_through_catboosts_own_predict(regressor, train):
    """Monte Carlo drawn here, on the raw labels, through CatBoost's predict; and the package's own
    Monte Carlo (its predictor gives CatBoost the labels read from the rows and the background)."""
    frame, _ = train
    rows = _frame(np.random.default_rng(4), 3).dropna().reset_index(drop=True)
    S = ["a", "c", "d", "e"]
    exact = xp.pg2(regressor, rows, S, sigma=SIGMA).value
    rho, n = float(2 * special.ndtr(-0.5 / SIGMA)), 20_000
    rng = np.random.default_rng(5)
    for i in range(len(rows)):
        draws = pd.DataFrame([rows.iloc[i]] * n).reset_index(drop=True).astype({"e": object})
        draws["a"] = draws["a"] + rng.normal(0, SIGMA, n)
        for name, labels in (("c", C_LABELS), ("d", D_LABELS), ("e", list(range(6)))):
            redraw = rng.random(n) < rho
            draws.loc[redraw, name] = np.asarray(labels, dtype=object)[rng.integers(0, len(labels), redraw.sum())]
        gaps = (_raw(regressor, draws)[:, 0] - _raw(regressor, rows.iloc[[i]])[0, 0]) ** 2
        assert abs(gaps.mean() - exact[i]) <= 4 * gaps.std(ddof=1) / np.sqrt(n)
    sampled = xp.pg2(regressor, rows, S, sigma=SIGMA, background=frame, method="monte_carlo", n_samples=20_000,
                     random_state=0)
    exact_bg = xp.pg2(regressor, rows, S, sigma=SIGMA, background=frame).value
    assert np.all(np.abs(sampled.value - exact_bg) <= 4 * sampled.stderr)


def test_monte_carlo_needs_the_labels_of_drawn_categories(train):
    """CatBoost keeps hashes only: a category never seen in the data given cannot be handed to its
    predict, which the error says (the labels of the rows and background given are remembered)."""
    model = _fit("reg", *train, random_strength=2.0)         # a model of its own: no labels seen yet
    rows = pd.DataFrame({"a": [0.1], "c": ["a"], "b": [0.0], "d": ["p"], "e": [1]})
    with pytest.raises(InputError, match="method='exact'"):
        xp.pg2(model, rows, ["c"], method="monte_carlo", n_samples=500, random_state=0)
    sampled = xp.pg2(model, rows, ["c"], background=train[0], method="monte_carlo", n_samples=500, random_state=0)
    assert np.isfinite(sampled.value).all()


def test_refusals_name_what_to_do(train):
    frame, y = train
    combined = catboost.CatBoostRegressor(iterations=60, depth=6, max_ctr_complexity=2, one_hot_max_size=1,
                                          **QUIET).fit(frame, y, cat_features=["c", "d", "e"])
    with pytest.raises(UnsupportedModelError, match=r"combination of features \w+ and \w+: set max_ctr_complexity=1"):
        import_model(combined)
    model = _fit("reg", frame, y)
    bad = frame.head(3).assign(c=[1.5, 2.0, 3.0]).astype({"c": object})
    with pytest.raises(InputError, match="CatBoost reads categories as text or integers"):
        xp.pg2(model, bad, ["a"])
    texts = frame.assign(t=np.where(frame.a > 0, "big red dog", "small cat"))
    text_model = catboost.CatBoostRegressor(iterations=5, depth=2, **QUIET).fit(
        texts, y, cat_features=["c", "d", "e"], text_features=["t"])
    with pytest.raises(UnsupportedModelError, match=r"text features \(t\)"):
        import_model(text_model)


def test_acme_asks_catboost_with_its_labels_not_its_hashes(regressor, train):
    """AcME (and the audit's model input) hand the model rows built from category codes: for CatBoost those
    codes are hashes, and the rows must carry the labels they stand for (a frame of hash-valued categories
    was hashed again by CatBoost: a silent wrong number)."""
    from xai_plugins.acme import AcME

    frame, _ = train
    rows = frame.iloc[:40].fillna({"b": 0.0})                # AcME refuses missing values
    explainer = AcME(regressor, rows, task="regression")
    Z, _ = import_model(regressor).rows(rows)
    got = explainer._scorer(Z)[:, 0]
    np.testing.assert_allclose(got, regressor.predict(_for_catboost(rows)), rtol=0, atol=1e-12)


@pytest.mark.parametrize("kind", ["reg", "multi", "counter"])
def test_grid_and_leaf_pairs_agree_on_catboost_models(train, kind):
    """CatBoost's symmetric trees take the grid path (csrc/pg2_grid.c) where it is cheaper: on depth-6 models
    (a regressor, a 3-class model's vector leaves, Counter CTRs), with background frequencies (labels the model
    never split on drawn as "other"), a ρ per feature, per-feature σ, NaN in a numeric feature outside S and
    unseen labels in the rows, the grid path, the leaf pairs and the cost model's choice give the same PG²,
    and the public value matches the label enumeration through CatBoost's own predict."""
    from xai_plugins import _native
    from xai_plugins.perturbation import cdf_table, make_perturbation
    from xai_plugins.prediction_gap._boundaries import split_boundaries

    frame, y = train
    model = _fit(kind, frame, y, depth=6, iterations=12)
    forest = import_model(model)
    splits = split_boundaries(forest)
    rows = _frame(np.random.default_rng(9), 6, unseen=True).reset_index(drop=True)
    X, _ = forest.rows(rows, allow_nan=True)
    X = np.ascontiguousarray(X, dtype=np.float64)
    rho = np.array([np.nan, 0.6, np.nan, 0.3, 0.45])
    sigma = np.array([0.4, 0.3, 0.7, 0.3, 0.3])
    noise = make_perturbation(forest.n_features, sigma, background=frame, names=forest.feature_names,
                              labels=forest.category_labels, rho=rho)
    for S in (["a", "c", "d", "e"], ["c", "d", "e"], ["c"], ["a", "b", "c", "d", "e"]):
        use = np.isfinite(X[:, 1]) if "b" in S else np.ones(len(X), dtype=bool)
        Xs = np.ascontiguousarray(X[use])
        mask = np.zeros((len(Xs), 1, forest.n_features), dtype=np.uint8)
        mask[:, 0, [forest.feature_names.index(name) for name in S]] = 1
        table = cdf_table(splits, Xs, noise, np.flatnonzero(mask[0, 0]))
        got = {p: _native.pg2(splits.c_forest, splits.cdf_offset, Xs, mask, table, n_jobs=1, pairs=p)[0][:, 0]
               for p in ("leaves", "grids", "auto")}
        for p in ("grids", "auto"):
            np.testing.assert_allclose(got[p], got["leaves"], rtol=1e-12, atol=1e-15, err_msg=f"{kind} {S} {p}")
    if kind == "reg":
        S = ["a", "c", "d", "e"]
        laws = {name: (r, frame[name].value_counts(normalize=True).to_dict())
                for name, r in (("c", 0.6), ("d", 0.3), ("e", 0.45))}
        public = xp.pg2(model, rows, S, sigma=SIGMA, background=frame, rho=rho).value
        for i in range(len(rows)):
            want = label_grid_pg2(model, rows.iloc[i], S, SIGMA * frame["a"].std(ddof=0), laws)[0]
            assert public[i] == pytest.approx(want, rel=1e-12), i
