"""Paper reproductions: one module per paper, each defining ``TABLES`` (see :mod:`.base`).

``benchmarks/reproduce.py`` discovers the modules, runs the tables and writes the side-by-side
report; ``_data`` holds the dataset loaders shared by the modules.
"""
