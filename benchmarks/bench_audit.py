"""Audit report timings: the two demo audits of ``xai-audit`` (no arguments) and a 1,000-row test set
with a 100-tree depth-6 random forest, each with every section, HTML and PDF.

Prints the wall time per audit (computation, rendering) and the section timings recorded in the
report's appendix. The per-row methods adapt their row count to ``time_budget`` (20 s by default),
so the explained-row count is printed too.

Run: python benchmarks/bench_audit.py [--out DIR]
"""

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.datasets import make_classification
from sklearn.ensemble import RandomForestClassifier

from xai_plugins.cli import demo_models
from xai_plugins.report import audit


def synthetic_case():
    """(name, title, model, X_test, y_test, X_train, y_train): 1,000 test rows, 12 features."""
    X, y = make_classification(n_samples=2000, n_features=12, n_informative=6, random_state=0)
    X = pd.DataFrame(X, columns=[f"f{i}" for i in range(12)])
    model = RandomForestClassifier(n_estimators=100, max_depth=6, bootstrap=False, random_state=0)
    model.fit(X[:1000], y[:1000])
    return "synthetic_1000_rows", "Synthetic, 1,000 test rows", model, X[1000:], y[1000:], X[:1000], y[:1000]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="folder for the reports (default: a temporary folder)")
    args = ap.parse_args()
    out = Path(args.out or tempfile.mkdtemp())
    total = 0.0
    for name, title, model, X_test, y_test, X_train, y_train in demo_models() + [synthetic_case()]:
        t0 = time.perf_counter()
        result = audit(model, X_test, y_test, X_train=X_train, y_train=y_train, title=title, progress=False)
        t1 = time.perf_counter()
        result.to_html(out / f"{name}.html")
        result.to_pdf(out / f"{name}.pdf")
        t2 = time.perf_counter()
        if name.startswith("demo"):
            total += t2 - t0
        timings = result.sections["reproducibility"].data["timings"]
        print(f"{name}: {len(X_test)} test rows, {result.parameters['explained rows']} explained rows; "
              f"audit {t1 - t0:.1f} s + HTML/PDF {t2 - t1:.1f} s = {t2 - t0:.1f} s")
        print("   " + "; ".join(f"{k} {v:.2f} s" for k, v in timings.items() if v >= 0.05))
    print(f"both demo audits: {total:.1f} s (target <= 60 s; xai-audit also writes JSON)  reports in {out}")


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
