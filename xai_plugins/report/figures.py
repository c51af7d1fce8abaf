"""Matplotlib figures of the audit, each returned as a self-contained ``data:`` URI.

Every function draws one figure from plain arrays (no explainer objects) or from a callable
that draws on a given Axes, and returns a :class:`Figure`: caption plus embedded PNG. The HTML
report is then one file with no external resource, and weasyprint needs no network to render it.
Figures are drawn on standalone Agg canvases, never through pyplot's global state, so importing
the report leaves the user's matplotlib backend alone (only shap's waterfall, which draws through
pyplot, gets a pyplot figure that is closed at once).
"""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass

import matplotlib
import numpy as np
from matplotlib import transforms
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure as MplFigure
from matplotlib.ticker import MaxNLocator

__all__: list[str] = []      # internal module: the public names are in the API reference

#: a compact, print-friendly style shared by every audit figure
STYLE = {"font.size": 8, "axes.titlesize": 9, "axes.labelsize": 8, "xtick.labelsize": 7, "ytick.labelsize": 7,
         "legend.fontsize": 7, "axes.spines.top": False, "axes.spines.right": False}
#: resolution of the embedded PNG figures
DPI = 150
METHOD_COLOURS = {"SHAP": "#1f77b4", "PG² greedy": "#d62728", "local MDI": "#2ca02c", "AcME": "#9467bd",
                  "DT-Sampler": "#8c564b", "MCR": "#e377c2", "random": "#7f7f7f"}


@dataclass
class Figure:
    """One embedded figure: ``caption`` (plain text, escaped by the template), ``uri``
    (``data:image/png;base64,...``) and ``scale``, the display size relative to the drawn size (1: the
    report shows the figure at its drawn size, so every figure has the same type size)."""

    caption: str
    uri: str
    scale: float = 1.0

    @property
    def width_in(self) -> float:
        """Display width in inches: PNG width (read from its header) / :data:`DPI` × ``scale``."""
        header = base64.b64decode(self.uri.split(",", 1)[1][:32])
        return round(int.from_bytes(header[16:20], "big") / DPI * self.scale, 2)

    def to_dict(self) -> dict:
        """The caption and the URI's size (the image itself stays out of JSON exports)."""
        return {"caption": self.caption, "bytes": len(self.uri)}


def to_data_uri(fig) -> str:
    """Serialise a matplotlib figure as a base64 PNG data URI (:data:`DPI` dots per inch) and close it.

    PNG rather than SVG: weasyprint lays out a PNG several times faster than an SVG whose text is
    drawn as glyph paths, and the report stays readable in print at this resolution."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight")
    if getattr(fig, "number", None) is not None:   # a pyplot figure (shap's waterfall): release it
        import matplotlib.pyplot as plt

        plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def new_figure(width: float, height: float, nrows: int = 1, ncols: int = 1):
    """A standalone figure (Agg canvas, not registered with pyplot) and its (nrows, ncols) axes;
    call inside ``matplotlib.rc_context(STYLE)``."""
    fig = MplFigure(figsize=(width, height))
    FigureCanvasAgg(fig)
    return fig, fig.subplots(nrows, ncols, squeeze=False)


def _figure(width: float, height: float, ncols: int = 1):
    fig, axes = new_figure(width, height, 1, ncols)
    return fig, axes[0]


def drawn(caption: str, draw, width: float = 6.0, height: float = 3.5, scale: float = 1.0) -> Figure:
    """A figure made by ``draw(ax)`` (e.g. an explainer's own ``plot(ax=...)`` method) on a
    ``width`` × ``height`` inch canvas (which the drawing function may resize), shown at ``scale``."""
    with matplotlib.rc_context(STYLE):
        fig, (ax,) = _figure(width, height)
        draw(ax)
        fig.tight_layout()
        return Figure(caption, to_data_uri(fig), scale)


def pyplot_drawn(caption: str, draw, width: float = 6.0, height: float = 3.5, scale: float = 1.0) -> Figure:
    """A figure made by ``draw(ax)`` on pyplot's current figure, for plotting functions that draw
    through pyplot (shap's waterfall, colour bars); the figure is closed once embedded."""
    import matplotlib.pyplot as plt

    with matplotlib.rc_context(STYLE):
        fig = plt.figure(figsize=(width, height))
        try:
            draw(fig.add_subplot())
            fig = plt.gcf()
            fig.tight_layout()
            return Figure(caption, to_data_uri(fig), scale)
        finally:
            plt.close(fig)


#: the x-axis label of each method's global importance
IMPORTANCE_UNITS = {"SHAP": "mean |SHAP value|", "PG² greedy": "mean PG² gain", "local MDI": "mean impurity decrease",
                    "AcME": "mean standardised effect", "DT-Sampler": "emergence probability",
                    "MCR": "model reliance"}


def legend_outside(ax, rename=None, title=None, below=False):
    """Move ``ax``'s legend outside the plotting area (right of it, or ``below`` it) so it covers no
    data, with labels renamed by ``rename`` ({old: new}); set ``title`` when given. Returns ``ax``.

    Below the axes, the legend starts a fixed distance under the tick labels and the x label, measured in
    points (not a share of the axes' height, which puts it over the x label of a short axes)."""
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        labels = [(rename or {}).get(label, label) for label in labels]
        where = dict(loc="upper left", bbox_to_anchor=(1.01, 1.0))
        if below:
            if ax.get_legend() is not None:
                ax.get_legend().remove()
            fig = ax.figure
            renderer = fig.canvas.get_renderer()
            depth = (ax.get_window_extent(renderer).y0 - ax.get_tightbbox(renderer).y0) * 72 / fig.dpi
            where = dict(loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=len(handles),
                         bbox_transform=transforms.offset_copy(ax.transAxes, fig=fig, y=-(depth + 4), units="points"))
        ax.legend(handles, labels, frameon=False, **where)
    if title is not None:
        ax.set_title(title)
    return ax


def importance_bars(caption: str, importances: dict, top: int = 12) -> Figure:
    """One horizontal bar chart per method of its global importances (``{method: pandas.Series}``),
    each showing its ``top`` features, largest on top, the x axis labelled with the importance's unit."""
    methods = list(importances)
    ncols = min(3, len(methods))
    nrows = int(np.ceil(len(methods) / ncols))
    n_bars = min(top, max(len(s) for s in importances.values()))
    with matplotlib.rc_context(STYLE):
        fig, axes = new_figure(2.4 * ncols, (0.16 * n_bars + 0.95) * nrows, nrows, ncols)
        for ax, method in zip(axes.flat, methods):
            series = importances[method].sort_values(ascending=False).head(top)[::-1]
            ax.barh(np.arange(len(series)), series.to_numpy(), color=METHOD_COLOURS.get(method, "#444444"))
            ax.set_yticks(np.arange(len(series)), [_short(n) for n in series.index])
            ax.set_title(method)
            ax.set_xlabel(IMPORTANCE_UNITS.get(method, "importance"))
            ax.tick_params(axis="y", length=0)
        for ax in list(axes.flat)[len(methods):]:
            ax.axis("off")
        fig.tight_layout()
        return Figure(caption, to_data_uri(fig))


def pgi2_by_sigma(caption: str, table, sigmas) -> Figure:
    """Mean PGI² per method against σ (log scale), with ± one standard error of the mean over rows."""
    with matplotlib.rc_context(STYLE):
        fig, (ax,) = _figure(6.0, 2.8)
        methods = list(dict.fromkeys(table["method"]))
        offsets = np.linspace(-0.12, 0.12, len(methods))
        for offset, method in zip(offsets, methods):
            rows = table[table["method"] == method].set_index("sigma").loc[list(sigmas)]
            mean = rows["mean"].to_numpy()
            se = rows["sd"].to_numpy() / np.sqrt(rows["rows"].to_numpy())
            base = method.replace(" (global)", "").replace(" (reference)", "")
            colour = "black" if "(reference)" in method else METHOD_COLOURS.get(base)
            ax.errorbar(np.arange(len(sigmas)) + offset, mean, yerr=[np.minimum(se, mean * 0.999), se], marker="o",
                        ms=3, capsize=2, lw=1, label=method, color=colour,
                        ls="--" if method == "random" or "(" in method else "-")
        ax.set_xticks(np.arange(len(sigmas)), [f"σ = {s:g}" for s in sigmas])
        if (table["mean"] > 0).all():
            ax.set_yscale("log")
        ax.set_ylabel("mean PGI² (± s.e.)")
        ax.legend(frameon=False, loc="center left", bbox_to_anchor=(1.01, 0.5))
        fig.tight_layout()
        return Figure(caption, to_data_uri(fig))


def convergence(caption: str, frame, equal_time) -> Figure:
    """Relative Monte Carlo error |MC − exact| / exact against the number of samples, one line per
    (row, S) pair, with the 1/√n rate and the error reached in the exact method's time (stars)."""
    with matplotlib.rc_context(STYLE):
        fig, (ax,) = _figure(5.5, 3.0)
        for _, group in frame.groupby("pair"):
            size = int(group["|S|"].iloc[0])
            label = f"test row {int(group['row'].iloc[0]) + 1}, {size} feature{'s' if size > 1 else ''} perturbed"
            if not (group["relative_error"] > 0).any():
                label += " (error 0: off the log scale)"
            ax.plot(group["n_samples"], group["relative_error"], marker="o", ms=2.5, lw=0.8, alpha=0.8, label=label)
        n = np.array(sorted(frame["n_samples"].unique()), dtype=float)
        ref = frame["relative_error"].median() * np.sqrt(np.median(n)) / np.sqrt(n)
        ax.plot(n, ref, "k--", lw=1, label="∝ 1/√n")
        if equal_time is not None and len(equal_time):
            ax.scatter(equal_time["n_samples"], np.maximum(equal_time["relative_error"], 1e-6), marker="*", s=50,
                       color="k", zorder=3, label="MC in the exact method's time")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("Monte Carlo samples")
        ax.set_ylabel("|MC − exact| / exact")
        legend_outside(ax)
        fig.tight_layout()
        return Figure(caption, to_data_uri(fig))


def heatmaps(caption: str, matrices: dict, vmin: float = -1.0) -> Figure:
    """Side-by-side annotated method × method heatmaps (``{title: DataFrame}``)."""
    n = len(matrices)
    size = max(len(m) for m in matrices.values())
    with matplotlib.rc_context(STYLE):
        fig, axes = _figure(min(3.1 * n, 7.0), 0.32 * size + 1.6, ncols=n)
        for ax, (title, matrix) in zip(axes, matrices.items()):
            values = matrix.to_numpy(dtype=float)
            ax.imshow(values, cmap="RdBu", vmin=vmin if "τ" in title else 0.0, vmax=1.0)
            labels = [_short(m, 14) for m in matrix.index]
            ax.set_xticks(np.arange(len(labels)), labels, rotation=45, ha="right")
            ax.set_yticks(np.arange(len(labels)), labels)
            for i in range(len(labels)):
                for j in range(len(labels)):
                    if np.isfinite(values[i, j]):
                        low = vmin if "τ" in title else 0.0
                        shade = abs(values[i, j] - (low + 1.0) / 2) / ((1.0 - low) / 2)   # 0 centre, 1 extremes
                        ax.text(j, i, f"{values[i, j]:.2f}", ha="center", va="center", fontsize=6,
                                color="white" if shade > 0.5 else "black")
            ax.set_title(title)
            ax.spines[:].set_visible(False)
        fig.tight_layout()
        return Figure(caption, to_data_uri(fig))


def _short(name, width: int = 22) -> str:
    name = str(name)
    return name if len(name) <= width else name[:width - 1] + "…"


def reliability_diagram(caption: str, table, label: str) -> Figure:
    """Reliability diagram: observed frequency against mean predicted probability per bin (``table`` of
    :func:`~.calibration.reliability_table`), marker area by test rows, with the diagonal of perfect
    calibration; ``label`` names the probability on the x axis."""
    with matplotlib.rc_context(STYLE):
        fig, (ax,) = _figure(3.6, 3.2)
        ax.plot([0, 1], [0, 1], color="#7f7f7f", ls="--", lw=0.8, label="perfect calibration")
        rows = table["test rows"].to_numpy(dtype=float)
        ax.plot(table["mean predicted probability"], table["observed frequency"], color="#1f4e79", lw=1)
        ax.scatter(table["mean predicted probability"], table["observed frequency"], s=12 + 120 * rows / rows.max(),
                   color="#1f4e79", zorder=3, label="bin (area: test rows)")
        ax.set_xlim(-0.02, 1.02)
        ax.set_ylim(-0.02, 1.02)
        ax.set_aspect("equal")
        ax.set_xlabel(f"mean {label}")
        ax.set_ylabel("observed frequency")
        legend_outside(ax, below=True)
        fig.tight_layout()
        return Figure(caption, to_data_uri(fig))


def drift_bars(caption: str, psi, labels, limits: dict, top: int = 15) -> Figure:
    """Horizontal bars of the PSI of the ``top`` features with the largest (``psi``: pandas Series, largest first),
    coloured by their drift label (``labels``: Series of "none" / "moderate" / "unconfirmed" / "major"), with the
    warn and fail limits (``limits``: {line label: value}) as vertical lines."""
    colours = {"none": "#9db4c8", "moderate": "#b26a00", "unconfirmed": "#d9a441", "major": "#8a1c1c"}
    shown = psi.head(top)[::-1]
    with matplotlib.rc_context(STYLE):
        fig, (ax,) = _figure(6.0, 0.17 * len(shown) + 1.3)
        kinds = np.array([labels[n] for n in shown.index])
        for name in colours:
            at = np.flatnonzero(kinds == name)
            if len(at):
                ax.barh(at, shown.to_numpy()[at], color=colours[name], label=f"drift: {name}")
        ax.set_yticks(np.arange(len(shown)), [_short(n) for n in shown.index])
        ax.tick_params(axis="y", length=0)
        for (text, value), style in zip(limits.items(), ("--", "-")):
            ax.axvline(value, color="k", ls=style, lw=0.8, label=text)
        ax.set_xlabel("population stability index (PSI, dimensionless)")
        legend_outside(ax)
        fig.tight_layout()
        return Figure(caption, to_data_uri(fig))


def small_multiples(caption: str, panels, draw, audits: int, ncols: int = 4, legend: bool = False) -> Figure:
    """One figure of small multiples: ``draw(ax, panel)`` for each of ``panels``, ``ncols`` panels to a row (the
    width of a page), each with the positions 1 to ``audits`` (integers) on its x axis; ``legend``: one legend below
    the panels, of every line labelled in any of them (each label once: a label keeps its colour across panels)."""
    nrows = -(-len(panels) // ncols)
    with matplotlib.rc_context(STYLE):
        fig, axes = new_figure(1.75 * ncols, 1.3 * nrows, nrows, ncols)
        for ax, panel in zip(axes.flat, panels):
            draw(ax, panel)
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.set_xlim(0.5, audits + 0.5)
        for ax in list(axes.flat)[len(panels):]:
            ax.set_visible(False)
        fig.tight_layout()
        if legend:
            labelled = {label: handle for ax in axes.flat for handle, label in zip(*ax.get_legend_handles_labels())}
            fig.legend(list(labelled.values()), list(labelled), loc="upper center", bbox_to_anchor=(0.5, 0.0),
                       ncol=min(len(labelled), 5), frameon=False)
        return Figure(caption, to_data_uri(fig))
