"""Every Python code block of the README and of the documentation's pages runs, as written and in
order (one namespace per page), so that no example a user copies is stale. A block whose first line
is a ``# not run`` comment (it needs a cluster or a tracking store that the page names) is checked
for syntax only."""

import ast
import re
from pathlib import Path

import matplotlib
import pytest

import xai_plugins

ROOT = Path(xai_plugins.__file__).resolve().parents[1]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "docs" / "user_guide").glob("*.md")])
FENCE = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def python_blocks(page: Path) -> list[str]:
    """The page's ```python blocks, in order."""
    return FENCE.findall(page.read_text(encoding="utf-8"))


def test_pages_are_found_and_have_examples():
    if not (ROOT / "docs").is_dir():
        pytest.skip("the docs are not beside the package (installed wheel)")
    assert len(PAGES) >= 10
    assert sum(len(python_blocks(p)) for p in PAGES) >= 15


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_code_blocks_run(page, tmp_path, monkeypatch):
    if not page.is_file():
        pytest.skip("the docs are not beside the package (installed wheel)")
    blocks = python_blocks(page)
    if not blocks:
        pytest.skip("no python block")
    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)                 # examples write their reports here
    namespace: dict = {"__name__": "__doc_example__"}
    for number, block in enumerate(blocks, start=1):
        tree = ast.parse(block, filename=f"{page.name} block {number}")
        if block.lstrip().startswith("# not run"):
            continue
        exec(compile(tree, f"{page.name} block {number}", "exec"), namespace)
    import matplotlib.pyplot as plt

    plt.close("all")
