"""Sphinx configuration of the xai_plugins documentation (``make docs``: warnings are errors)."""

import os
import sys
from pathlib import Path

import xai_plugins

os.environ.setdefault("MPLBACKEND", "Agg")
sys.path.insert(0, str(Path(__file__).parent))

project = "xai_plugins"
author = "the xai_plugins developers"
copyright = "2026, the xai_plugins developers"
version = release = xai_plugins.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "sphinx_copybutton",
    "myst_parser",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "examples/README.txt", "examples/*.py", "**.ipynb_checkpoints"]
root_doc = "index"

# every cross-reference to the package's own objects must resolve
nitpicky = True
nitpick_ignore_regex = [
    # types named in numpydoc parameter lists and in signatures that live in other libraries
    (r"py:.*", r"(numpy|np|pandas|pd|scipy|sklearn|shap|interpret|dask|pyspark|matplotlib|plotly|xgboost|lightgbm"
               r"|catboost|mlflow|distributed|typing|collections|pathlib|os)(\..*)?"),
    (r"py:class", r"(array-like|array_like|optional|callable|default|of|shape|or|None|int|float|str|bool|dict|list"
                  r"|tuple|sequence|Sequence|Mapping|Any|Callable|Iterable|Path|ndarray|DataFrame|Series)"),
]

autosummary_generate = True
templates_path = ["_templates"]
autodoc_default_options = {"members": True, "show-inheritance": False}
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_xref_param_type = False
numpydoc_class_members_toctree = False

myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 3

sphinx_gallery_conf = {
    "examples_dirs": "examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"plot_",
    "within_subsection_order": "FileNameSortKey",
    "download_all_examples": False,
    "remove_config_comments": True,
    "abort_on_example_error": True,
    "show_memory": False,
    "reference_url": {"xai_plugins": None},
    "doc_module": ("xai_plugins",),
    "backreferences_dir": "api/generated/backreferences",
}

html_theme = "pydata_sphinx_theme"
html_title = f"xai_plugins {release}"
html_static_path = ["_static"]
html_css_files = ["custom.css"]
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "navbar_align": "left",
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_sidebars = {"index": [], "changelog": [], "getting_started": []}
html_show_sourcelink = False


def _public_bases(app, name, obj, options, bases):
    """Base classes shown under a class: private ones (an implementation detail: a private name, or a module that
    exports nothing) left out."""
    import importlib

    def public(b) -> bool:
        if any(part.startswith("_") for part in getattr(b, "__qualname__", "").split(".")):
            return False
        module = b.__module__
        if module.split(".")[-1].startswith("_"):
            return False
        return not module.startswith("xai_plugins") or b.__name__ in getattr(importlib.import_module(module),
                                                                             "__all__", [b.__name__])

    bases[:] = [b for b in bases if public(b)]


def setup(app):
    app.connect("autodoc-process-bases", _public_bases)
