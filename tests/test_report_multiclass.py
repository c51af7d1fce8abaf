"""Multi-class models: every class summarised, the most frequent class explained by default,
``positive_class`` picks the detailed pages' class, captions say what they measure."""

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.ensemble import RandomForestClassifier
from sklearn.metrics import recall_score

from xai_plugins.report import audit
from xai_plugins.report import describe
from xai_plugins.report.context import make_context

SMALL = dict(max_rows=6, max_shap_rows=40, mc_pairs=0, n_local=1, explainers=["shap", "pg2"],
             sections=["explanations", "faithfulness"], progress=False)


def _model(n_classes, weights, n=600):
    X, y = make_classification(n_samples=n, n_features=6, n_informative=5, n_redundant=0, n_classes=n_classes,
                               n_clusters_per_class=1, weights=weights, random_state=0)
    y = y + 3                                       # labels 3, 4, ...: not positions
    model = RandomForestClassifier(n_estimators=8, max_depth=4, bootstrap=False, random_state=0)
    return model.fit(X[:400], y[:400]), X[:400], y[:400], X[400:], y[400:]


@pytest.fixture(scope="module")
def four():
    return _model(4, [0.15, 0.5, 0.3, 0.05])


def test_default_class_is_the_most_frequent(four):
    model, X_train, y_train, X_test, y_test = four
    values, counts = np.unique(y_test, return_counts=True)
    most = values[np.argmax(counts)]
    assert most != model.classes_[-1]
    a = audit(model, X_test, y_test, X_train=X_train, y_train=y_train, **SMALL)
    assert a.parameters["positive_class"] == most
    assert f"class {most}" in a.sections["model"].data["card"]["explained output"]
    assert f"by default the most frequent test class" in a.sections["summary"].data["classes"]
    per_class = a.sections["model"].data["per class"]
    assert sorted(per_class.index) == sorted(str(c) for c in model.classes_)
    recalls = recall_score(y_test, model.predict(X_test), labels=model.classes_, average=None, zero_division=0)
    for c, r in zip(model.classes_, recalls):
        assert per_class.loc[str(c), "recall"] == pytest.approx(r)
        assert per_class.loc[str(c), "test rows"] == int(np.sum(y_test == c))
    captions = " ".join(t.caption for s in a.sections.values() for t in s.tables)
    assert "metrics for class" not in captions and "every class" in captions
    shap = a.sections["explanations"].data["SHAP per class"]
    assert list(shap.columns) == [str(c) for c in model.classes_]
    np.testing.assert_allclose(shap[str(most)], a.methods["shap"].importance.to_numpy())


def test_positive_class_picks_the_detailed_pages(four):
    model, X_train, y_train, X_test, y_test = four
    a = audit(model, X_test, y_test, X_train=X_train, y_train=y_train, positive_class=6, **SMALL)
    assert a.parameters["positive_class"] == 6
    assert a.sections["model"].data["card"]["explained output"] == "the predicted probability of class 6"
    ctx = make_context(model, X_test, positive_class=6)
    np.testing.assert_allclose(ctx.score(X_test), model.predict_proba(X_test)[:, 3])
    with pytest.raises(ValueError, match="not one of the model's classes"):
        audit(model, X_test, y_test, positive_class=9, **SMALL)


def test_many_classes_show_the_most_frequent_and_say_so():
    model, X_train, y_train, X_test, y_test = _model(12, None, n=1500)
    table, note = describe.per_class(make_context(model, X_test, y_test), most=10)
    assert note == "the 10 most frequent of 12 classes" and len(table) == 10
    counts = np.sort(np.unique(y_test, return_counts=True)[1])[::-1]
    np.testing.assert_array_equal(table["test rows"].to_numpy(), counts[:10])
