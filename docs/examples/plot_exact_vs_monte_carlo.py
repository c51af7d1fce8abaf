"""
Exact PG² against Monte Carlo estimates
=======================================

The usual way to measure how much a prediction moves under noise is to sample: perturb the row many
times, call ``predict`` and average the squared gaps. The estimate carries a standard error that
shrinks only as 1/√n, so every reported number comes with a sampling error a reviewer has to
reason about. On tree ensembles ``xai_plugins`` computes the same expectation **exactly**, in
closed form over pairs of leaves. This example shows Monte Carlo estimates converging to the exact
value as the sample count grows, and what each costs.
"""

# %%
# Model and rows
# --------------
import matplotlib.pyplot as plt
import numpy as np
import xgboost
from sklearn.datasets import load_diabetes

import xai_plugins as xp

X, y = load_diabetes(return_X_y=True, as_frame=True)
model = xgboost.XGBRegressor(n_estimators=60, max_depth=4, learning_rate=0.1, random_state=0, n_jobs=1).fit(X, y)
rows = X.iloc[[0, 1, 2]]
S = ["bmi", "s5", "bp"]
SIGMA = 0.3

exact = xp.pg2(model, rows, S, sigma=SIGMA, background=X)
print("exact PG²:", exact.value.round(3), f"({exact.pair_terms} leaf-pair terms, {exact.seconds * 1e3:.2f} ms)")

# %%
# Monte Carlo with growing sample counts
# --------------------------------------
# ``method="monte_carlo"`` perturbs each row ``n_samples`` times through the model's own predictor
# and returns the mean squared gap with its standard error. ``random_state`` seeds each row's own
# stream, so the estimates are reproducible.
counts = [30, 100, 300, 1_000, 3_000, 10_000, 30_000]
estimates = [xp.pg2(model, rows, S, sigma=SIGMA, background=X, method="monte_carlo", n_samples=n, random_state=0)
             for n in counts]
values = np.array([e.value for e in estimates])            # (counts, rows)
stderr = np.array([e.stderr for e in estimates])
seconds = np.array([e.seconds for e in estimates])
for n, v, s in zip(counts, values, stderr):
    print(f"n = {n:>6}: " + "  ".join(f"{a:8.2f} ± {b:6.2f}" for a, b in zip(v, s)))

# %%
# Each panel is one row: the Monte Carlo estimates with ±2 standard errors, converging to the exact
# value (the horizontal line).
fig, axes = plt.subplots(1, len(rows), figsize=(12, 3.6), sharex=True)
for i, ax in enumerate(axes):
    ax.errorbar(counts, values[:, i], yerr=2 * stderr[:, i], fmt="o", capsize=3, color="#1f77b4",
                label="Monte Carlo ± 2 se")
    ax.axhline(exact.value[i], color="#d62728", lw=1.5, label="exact")
    ax.set_xscale("log")
    ax.set_xlabel("Monte Carlo samples per row")
    ax.set_title(f"row {rows.index[i]}: PG²({', '.join(S)})", fontsize=10)
axes[0].set_ylabel("PG² (disease progression²)")
axes[0].legend(fontsize=8)
fig.tight_layout()

# %%
# Error and cost
# --------------
# The relative error of the estimates falls as 1/√n (left); the cost of Monte Carlo grows linearly
# with n, while the exact value costs one fixed amount (right). ``method="auto"`` picks the cheaper of
# the exact sum and a Monte Carlo estimate with a target relative standard error, and says why.
relative = np.abs(values - exact.value) / exact.value
fig, (ax_err, ax_time) = plt.subplots(1, 2, figsize=(10, 3.8))
for i in range(len(rows)):
    ax_err.loglog(counts, relative[:, i], "o-", ms=3, label=f"row {rows.index[i]}")
reference = relative[0].mean() * np.sqrt(counts[0] / np.array(counts))
ax_err.loglog(counts, reference, "k:", label="∝ 1/√n")
ax_err.set_xlabel("Monte Carlo samples per row")
ax_err.set_ylabel("|estimate − exact| / exact")
ax_err.legend(fontsize=8)
ax_err.set_title("Monte Carlo error")

exact_seconds = min(xp.pg2(model, rows, S, sigma=SIGMA, background=X).seconds for _ in range(5))
ax_time.loglog(counts, seconds * 1e3, "o-", label="Monte Carlo (through predict)")
ax_time.axhline(exact_seconds * 1e3, color="#d62728", label="exact (closed form)")
ax_time.set_xlabel("Monte Carlo samples per row")
ax_time.set_ylabel(f"wall time for {len(rows)} rows (ms)")
ax_time.legend(fontsize=8)
ax_time.set_title("Cost")
fig.tight_layout()

auto = xp.pg2(model, rows, S, sigma=SIGMA, background=X, method="auto", rtol=0.01)
print(auto.method, "-", auto.reason)

# %%
# Over many rows and feature sets
# -------------------------------
# On 100 rows and every feature perturbed, the standardised errors (estimate − exact) / se of a
# 2,000-sample Monte Carlo run should look like draws from a standard normal distribution: the exact
# values are the targets the estimator is unbiased for.
many = X.iloc[:100]
full = xp.pg2(model, many, list(X.columns), sigma=SIGMA, background=X)
mc = xp.pg2(model, many, list(X.columns), sigma=SIGMA, background=X, method="monte_carlo", n_samples=2_000,
            random_state=0)
z = (mc.value - full.value) / mc.stderr
print(f"mean z {z.mean():.2f}, sd z {z.std():.2f}, share |z| < 2: {np.mean(np.abs(z) < 2):.0%}")
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.hist(z, bins=20, density=True, color="#1f77b4", alpha=0.7, label="(Monte Carlo − exact) / se")
grid = np.linspace(-4, 4, 200)
ax.plot(grid, np.exp(-grid ** 2 / 2) / np.sqrt(2 * np.pi), "k", lw=1, label="standard normal")
ax.set_xlabel("standardised error")
ax.legend(fontsize=8)
ax.set_title("100 rows, every feature perturbed, 2,000 samples")
fig.tight_layout()
