"""Every public object (``test_public_api.PUBLIC_API``) has a numpydoc docstring whose ``Examples``
run: one doctest case per object, outputs compared with ELLIPSIS and NORMALIZE_WHITESPACE.

The examples use tiny models so that each runs in about a second; the package's own warnings are
errors here as everywhere in the suite, so an example must not raise one unless it catches it.
"""

import doctest
import importlib
import inspect
import re

import pytest
from test_public_api import PUBLIC_API

CASES = [(module_name, name) for module_name, names in PUBLIC_API.items() for name in names]
IDS = [f"{module_name}.{name}" for module_name, name in CASES]
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
#: numpydoc's parameter line: one name or several separated by commas, then " : type" or nothing
PARAMETER = re.compile(r"^(\*{0,2}\w+(?:, \*{0,2}\w+)*)(?: : .*)?$")


def _public(module_name: str, name: str):
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:          # an optional extra that is not installed
        pytest.skip(f"{module_name} cannot be imported: {exc}")
    return getattr(module, name)


def _sections(doc: str) -> dict:
    """numpydoc sections of a cleaned docstring: title -> the lines under its underline."""
    lines = doc.splitlines()
    sections, title = {}, None
    for i, line in enumerate(lines):
        underline = lines[i + 1] if i + 1 < len(lines) else ""
        if line.strip() and line == line.lstrip() and set(underline) == {"-"} and len(underline) == len(line):
            title = line
            sections[title] = []
        elif title is not None and set(line) != {"-"}:
            sections[title].append(line)
    return sections


def _documented(lines: list) -> set:
    """Parameter names of a ``Parameters`` section (unindented ``name : type`` lines)."""
    names = set()
    for line in lines:
        match = PARAMETER.match(line) if line and not line[0].isspace() else None
        if match:
            names.update(n.lstrip("*") for n in match.group(1).split(", "))
    return names


def _parameters(obj) -> list:
    """Names of the parameters a function or a class's constructor takes (none for exceptions and warnings)."""
    if inspect.isclass(obj) and issubclass(obj, BaseException):
        return []
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return []
    return [p for p in signature.parameters if p not in ("self", "cls")]


@pytest.mark.parametrize(("module_name", "name"), CASES, ids=IDS)
def test_docstring_has_numpydoc_sections(module_name, name):
    obj = _public(module_name, name)
    doc = inspect.getdoc(obj) or ""
    sections = _sections(doc)
    assert doc.splitlines() and doc.splitlines()[0].strip(), "no one-line summary"
    assert any(line.strip().startswith(">>>") for line in sections.get("Examples", [])), "no Examples section"
    wanted = _parameters(obj)
    if wanted:
        assert "Parameters" in sections, "no Parameters section"
        missing = set(wanted) - _documented(sections["Parameters"])
        assert not missing, f"parameters not documented: {sorted(missing)}"


@pytest.mark.parametrize(("module_name", "name"), CASES, ids=IDS)
def test_docstring_examples_run(module_name, name):
    obj = _public(module_name, name)
    tests = doctest.DocTestFinder(recurse=False).find(obj, f"{module_name}.{name}", globs={})
    assert any(t.examples for t in tests), "no doctest examples"
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    report = []
    for test in tests:
        runner.run(test, out=report.append)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, "".join(report)
