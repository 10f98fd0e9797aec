"""The walls between the package's layers, read from the source.

The layers and their order are the list in the package docstring (``countdown_study/__init__.py``, lowest
first): ``LAYERS`` is read from there, so the order is written once, every module of the package belongs
to one of them, and the README lists the same order. Every ``import`` / ``from ... import`` statement of
every ``.py`` file of the package is collected from its syntax tree: those inside functions and
``TYPE_CHECKING`` blocks too, relative imports resolved, ``from package import submodule`` counted as
importing the submodule, and the top-level lazy names (``from countdown_study import compute_score``) as
importing their home module. Each layer imports only the layers before it (one ``order-<layer>`` case
each), and ``WALLS`` are the narrower walls of some layers (no torch in the ground truth, no model in the
samplers, ...); a failure lists every offending ``file:line: statement``. The import graph must be
acyclic, counting the imports that run when a module is imported and those in ``TYPE_CHECKING`` blocks;
and the torch-free layers must import with torch unavailable.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import pytest

import countdown_study

PACKAGE = "countdown_study"
PACKAGE_DIR = Path(countdown_study.__file__).resolve().parent
ROOT = PACKAGE_DIR.parent
STDLIB = "<stdlib>"
"""Stands for every standard-library module in ``Rule.only``."""


# ---------------------------------------------------------------------------------------------------
# Reading the imports
# ---------------------------------------------------------------------------------------------------


def module_name(path: Path) -> str:
    """Dotted name of a package file (``countdown_study/a/__init__.py`` -> ``countdown_study.a``)."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


FILES = sorted(PACKAGE_DIR.rglob("*.py"))
MODULES = {module_name(path): path for path in FILES}
"""Every module of the package by dotted name."""


@dataclass(frozen=True)
class Import:
    """One imported module of one statement."""

    importer: str
    """Dotted name of the importing module."""
    path: Path
    """Its file."""
    line: int
    """Line of the statement."""
    statement: str
    """The statement, as source."""
    target: str
    """The imported module, absolute (a package module when the name is one)."""
    when: str
    """When the statement runs (``WHEN``)."""

    def __str__(self) -> str:
        where = f"{self.path.relative_to(ROOT)}:{self.line}"
        return f"{where}: {self.statement}  (-> {self.target})"


WHEN = ("import", "type_checking", "call")
"""When an import statement runs: as its module is imported (module level and class bodies), only for a
type checker (an ``if TYPE_CHECKING:`` block at module level), or when a function is called."""


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _statements(tree: ast.AST) -> Iterator[tuple[ast.Import | ast.ImportFrom, str]]:
    """Every import statement with when it runs (``WHEN``)."""
    stack: list[tuple[ast.AST, str]] = [(tree, "import")]
    while stack:
        node, when = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, when
        inner = "call" if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) else when
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend((child, "type_checking" if inner == "import" else inner) for child in node.body)
            stack.extend((child, inner) for child in node.orelse)
            continue
        stack.extend((child, inner) for child in ast.iter_child_nodes(node))


def _targets(node: ast.Import | ast.ImportFrom, importer: str, is_package: bool) -> list[str]:
    """The absolute module names a statement imports."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        package = importer.split(".") if is_package else importer.split(".")[:-1]
        anchor = package[: len(package) - node.level + 1]
        base = ".".join([*anchor, *([node.module] if node.module else [])])
    targets = []
    for alias in node.names:
        submodule = f"{base}.{alias.name}"
        if submodule in MODULES:
            targets.append(submodule)
        elif base == PACKAGE and alias.name in countdown_study._LAZY:
            targets.append(countdown_study._LAZY[alias.name])
        else:
            targets.append(base)
    return list(dict.fromkeys(targets))


def _read_imports() -> list[Import]:
    imports = []
    for name, path in MODULES.items():
        source = path.read_text(encoding="utf-8")
        for node, when in _statements(ast.parse(source, filename=str(path))):
            statement = ast.unparse(node)
            for target in _targets(node, name, path.name == "__init__.py"):
                imports.append(Import(name, path, node.lineno, statement, target, when))
    return sorted(imports, key=lambda i: (str(i.path), i.line, i.target))


IMPORTS = _read_imports()


# ---------------------------------------------------------------------------------------------------
# The layers, from the package docstring
# ---------------------------------------------------------------------------------------------------


def documented_layers(doc: str) -> tuple[tuple[str, ...], ...]:
    """The layers a docstring lists, lowest first: per ``* `` bullet of the paragraph after the one that
    opens with ``Layers``, the ````name````s before the bullet's first colon."""
    paragraphs = doc.split("\n\n")
    opening = next(i for i, p in enumerate(paragraphs) if p.startswith("Layers"))
    bullets = [line for line in paragraphs[opening + 1].splitlines() if line.startswith("* ")]
    return tuple(tuple(re.findall(r"``([\w.]+)``", bullet.split(":", 1)[0])) for bullet in bullets)


def readme_layers(text: str) -> tuple[tuple[str, ...], ...]:
    """The layers the README's sentence ``Layers, lowest first ...: `a`, `b`; `c`; ... .`` lists: groups
    split by ``;``, each group's ```name```s."""
    found = re.search(r"Layers, lowest first[^:]*:(.*?)\.(?:\s|$)", text, re.S)
    assert found, "the README has no sentence 'Layers, lowest first ...: ...'"
    return tuple(tuple(re.findall(r"`([\w.]+)`", group)) for group in found.group(1).split(";"))


LAYERS = documented_layers(ast.get_docstring(ast.parse((PACKAGE_DIR / "__init__.py").read_text())))
"""The package's layers, lowest first; the names of one entry share a layer."""


def test_documented_layers_are_read_bullet_by_bullet():
    doc = (
        "Intro.\n\nLayers, lowest first:\n\n"
        "* ``a``, ``b``: the base (``c`` is no layer)\n  and ``d``;\n"
        "* ``e``: the top.\n\nEnd."
    )
    assert documented_layers(doc) == (("a", "b"), ("e",))
    readme = "Layers, lowest first, each importing only those before it: `a`, `b`; `e`. Then `f`."
    assert readme_layers(readme) == (("a", "b"), ("e",))


def test_every_module_is_in_one_layer():
    tops = {name.split(".")[1] for name in MODULES if name != PACKAGE}
    listed = [name for layer in LAYERS for name in layer]
    assert len(listed) == len(set(listed)), f"a name is listed twice: {listed}"
    assert sorted(tops - set(listed)) == [], "modules in no layer of the package docstring"
    assert sorted(set(listed) - tops) == [], "layers of the package docstring that are not in the package"


def test_the_readme_lists_the_same_layers():
    assert readme_layers((ROOT / "README.md").read_text(encoding="utf-8")) == LAYERS


# ---------------------------------------------------------------------------------------------------
# The rules
# ---------------------------------------------------------------------------------------------------


def _under(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _layers(*names: str) -> tuple[str, ...]:
    return tuple(f"{PACKAGE}.{n}" for n in names)


@dataclass(frozen=True)
class Rule:
    """Modules under ``scope`` import nothing in ``forbid``; when ``only`` is set,
    nothing outside it; when ``internal_only`` is set, nothing of the package outside it. The package
    root itself (``from countdown_study import __version__``) imports nothing at import time and is
    always allowed."""

    key: str
    """Short id of the test case."""
    name: str
    scope: tuple[str, ...]
    forbid: tuple[str, ...] = ()
    only: tuple[str, ...] | None = None
    internal_only: tuple[str, ...] | None = None

    def applies_to(self, module: str) -> bool:
        return _under(module, self.scope)

    def breaks(self, target: str) -> bool:
        if target == PACKAGE:
            return False
        if _under(target, self.forbid):
            return True
        top = target.split(".")[0]
        if self.only is not None and not (
            _under(target, self.only) or (STDLIB in self.only and top in sys.stdlib_module_names)
        ):
            return True
        return self.internal_only is not None and top == PACKAGE and not _under(target, self.internal_only)


def _order_rules(layers: tuple[tuple[str, ...], ...]) -> list[Rule]:
    """One rule per layer below the top: it imports nothing of the layers after it."""
    rules = []
    for index, names in enumerate(layers[:-1]):
        above = [name for later in layers[index + 1 :] for name in later]
        name = f"{', '.join(names)}: imports none of the layers after it ({', '.join(above)})"
        rules.append(Rule(f"order-{names[0]}", name, scope=_layers(*names), forbid=_layers(*above)))
    return rules


MODEL = ("torch", "transformers", "tokenizers")
WALLS = [
    Rule(
        "countdown",
        "countdown is pure ground truth: no torch, nothing of the package but paths and seeding",
        scope=_layers("countdown"),
        forbid=MODEL,
        internal_only=_layers("countdown", "paths", "seeding"),
    ),
    Rule(
        "samplers",
        "samplers see tasks, features and observations only: no model, no run store",
        scope=_layers("samplers"),
        forbid=(*MODEL, *_layers("policy", "rollout", "evaluation", "objectives", "runs")),
    ),
    Rule(
        "objectives",
        "objectives are functions of tensors",
        scope=_layers("objectives"),
        only=(STDLIB, "torch", "numpy", *_layers("objectives")),
    ),
    Rule(
        "reporting",
        "reporting needs no torch and no model layer",
        scope=_layers("reporting"),
        forbid=MODEL,
        internal_only=_layers(
            "reporting", "paths", "seeding", "runs.files", "runs.provenance", "countdown", "evaluation.passk"
        ),
    ),
    Rule(
        "no-notebooks",
        "nothing imports notebooks",
        scope=(PACKAGE,),
        forbid=("notebooks", "import_ipynb", "importnb"),
    ),
]
"""The walls narrower than the order."""
RULES = [*_order_rules(LAYERS), *WALLS]
RULE = {r.key: r for r in RULES}


@pytest.mark.parametrize("rule", RULES, ids=[r.key for r in RULES])
def test_wall(rule):
    checked = [i for i in IMPORTS if rule.applies_to(i.importer)]
    assert checked or any(rule.applies_to(m) for m in MODULES), f"no module is under {rule.scope}"
    offending = [str(i) for i in checked if rule.breaks(i.target)]
    assert not offending, f"{rule.name}: {len(offending)} offending imports\n" + "\n".join(offending)


def test_every_layer_but_the_top_has_an_order_rule():
    keys = [r.key for r in RULES if r.key.startswith("order-")]
    assert keys == [f"order-{names[0]}" for names in LAYERS[:-1]]


def test_the_command_line_may_import_itself():
    for importer in ("countdown_study.cli.train", "countdown_study.__main__"):
        assert [r.key for r in RULES if r.applies_to(importer) and r.breaks("countdown_study.cli.run")] == []


def test_when_each_import_runs():
    source = """
import os
from typing import TYPE_CHECKING
if TYPE_CHECKING:
    import torch
    def typed():
        import numpy
else:
    import json
class Holder:
    import math
def load():
    import datasets
    if TYPE_CHECKING:
        import pandas
"""
    seen = {alias.name: when for node, when in _statements(ast.parse(source)) for alias in node.names}
    assert seen == {
        "os": "import",
        "TYPE_CHECKING": "import",
        "torch": "type_checking",
        "numpy": "call",
        "json": "import",
        "math": "import",
        "datasets": "call",
        "pandas": "call",
    }


# (rule, an importer, targets it may import, targets it may not)
RULE_CHECKS = [
    (
        RULE["countdown"],
        "countdown_study.countdown.load",
        ["numpy", "datasets", "countdown_study.paths"],
        ["torch", "transformers.models", "countdown_study.policy", "countdown_study.samplers.base"],
    ),
    (
        RULE["samplers"],
        "countdown_study.samplers.base",
        ["countdown_study.countdown.features", "pandas"],
        ["countdown_study.policy.model", "countdown_study.runs.store", "torch"],
    ),
    (
        RULE["objectives"],
        "countdown_study.objectives.rloo",
        ["math", "__future__", "torch.nn.functional", "numpy"],
        ["pandas", "countdown_study.countdown", "countdown_study.seeding"],
    ),
    (
        RULE["reporting"],
        "countdown_study.reporting.plots",
        ["seaborn", "countdown_study.runs.provenance"],
        ["torch", "countdown_study.runs.store", "countdown_study.study", "countdown_study.training.loop"],
    ),
    (
        RULE["order-runs"],
        "countdown_study.runs.store",
        ["countdown_study.checksums", "countdown_study.countdown.task", "pandas"],
        ["countdown_study.policy.model", "countdown_study.evaluation.run", "countdown_study.training.loop"],
    ),
    (
        RULE["order-evaluation"],
        "countdown_study.evaluation.evaluate",
        ["countdown_study.rollout.engine", "countdown_study.runs.store", "countdown_study.policy"],
        ["countdown_study.training.loop", "countdown_study.samplers.base", "countdown_study.objectives.rloo"],
    ),
    (
        RULE["order-training"],
        "countdown_study.training.loop",
        ["countdown_study.clinic", "countdown_study.evaluation.evaluate", "countdown_study.samplers"],
        ["countdown_study.cli.train", "countdown_study.study.grid", "countdown_study.reporting.outputs"],
    ),
    (
        RULE["order-study"],
        "countdown_study.study.grid",
        ["countdown_study.training.loop", "countdown_study.reporting.plots"],
        ["countdown_study.cli.run", "countdown_study.__main__"],
    ),
]


@pytest.mark.parametrize(
    ("rule", "importer", "allowed", "forbidden"), RULE_CHECKS, ids=[c[0].key for c in RULE_CHECKS]
)
def test_rules_catch_what_they_forbid(rule, importer, allowed, forbidden):
    assert rule.applies_to(importer)
    assert [t for t in allowed if rule.breaks(t)] == []
    assert [t for t in forbidden if not rule.breaks(t)] == []


@pytest.mark.parametrize(
    ("statement", "importer", "is_package", "targets"),
    [
        (
            "from .base import Batch",
            "countdown_study.samplers.staged",
            False,
            ["countdown_study.samplers.base"],
        ),
        ("from . import base", "countdown_study.samplers", True, ["countdown_study.samplers.base"]),
        (
            "from ..runs import files, store",
            "countdown_study.training.loop",
            False,
            ["countdown_study.runs.files", "countdown_study.runs.store"],
        ),
        ("from .. import paths", "countdown_study.runs", True, ["countdown_study.paths"]),
        (
            "from countdown_study import compute_score, __version__",
            "countdown_study.runs.store",
            False,
            ["countdown_study.countdown", "countdown_study"],
        ),
        ("import torch.nn.functional as F", "countdown_study.rollout.native", False, ["torch.nn.functional"]),
    ],
)
def test_import_targets_are_resolved(statement, importer, is_package, targets):
    assert _targets(ast.parse(statement).body[0], importer, is_package) == targets


# ---------------------------------------------------------------------------------------------------
# No import cycle
# ---------------------------------------------------------------------------------------------------


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (first node repeated at the end) per strongly connected component that has one."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []

    def connect(node: str) -> None:  # Tarjan's algorithm; the graph has ~100 nodes
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in graph[node]:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)

    cycles = []
    for component in components:  # walk inside the component until a node repeats
        members, path = set(component), [component[0]]
        while path.count(path[-1]) < 2:
            path.append(min(graph[path[-1]] & members))
        cycles.append(path[path.index(path[-1]) :])
    return cycles


def test_find_cycles_reports_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert find_cycles(graph) == [["a", "b", "c", "a"], ["e", "e"]]
    assert find_cycles({"a": {"b"}, "b": set()}) == []


CYCLE_EDGES = ("import", "type_checking")
"""The imports a cycle may not go through (``WHEN``): those that run when a module is imported, and those a
type checker follows; one through a ``TYPE_CHECKING`` block is a cycle between the modules all the same."""


def import_graph(imports: Iterable[Import], modules: Iterable[str]) -> dict[str, set[str]]:
    """Module -> the package modules it imports through ``CYCLE_EDGES``."""
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for i in imports:
        if i.when in CYCLE_EDGES and i.target in graph and i.target != i.importer:
            graph[i.importer].add(i.target)
    return graph


def test_a_cycle_through_a_type_checking_block_counts():
    def imports(*edges: tuple[str, str, str]) -> list[Import]:
        return [Import(a, ROOT / f"{a}.py", 1, f"import {b}", b, when) for a, b, when in edges]

    typed = imports(("a", "b", "import"), ("b", "a", "type_checking"))
    called = imports(("a", "b", "import"), ("b", "a", "call"))
    assert find_cycles(import_graph(typed, ["a", "b"])) == [["a", "b", "a"]]
    assert find_cycles(import_graph(called, ["a", "b"])) == []


def test_no_import_cycle():
    graph = import_graph(IMPORTS, MODULES)
    lines: dict[tuple[str, str], str] = {}
    for i in IMPORTS:
        if i.when in CYCLE_EDGES:
            lines.setdefault((i.importer, i.target), f"{i}  [{i.when}]")
    cycles = find_cycles(graph)
    report = [
        " -> ".join(cycle) + "\n" + "\n".join(f"    {lines[edge]}" for edge in pairwise(cycle))
        for cycle in cycles
    ]
    assert not cycles, "import cycles (at import or in TYPE_CHECKING blocks):\n" + "\n".join(report)


# ---------------------------------------------------------------------------------------------------
# The torch-free layers import without torch
# ---------------------------------------------------------------------------------------------------

TORCH_FREE = [
    f"{PACKAGE}.countdown",
    f"{PACKAGE}.evaluation.passk",
    f"{PACKAGE}.reporting.plots",
    f"{PACKAGE}.samplers",
]


BLOCK_MODEL_LIBRARIES = """
import sys

class Blocked:
    \"\"\"Makes torch, transformers and tokenizers unimportable. (Not ``sys.modules['torch'] = None``:
    scipy, under seaborn, reads a ``torch`` entry of ``sys.modules`` as a loaded module.)\"\"\"

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in ("torch", "transformers", "tokenizers"):
            raise ImportError(f"{name} is blocked by the test")

sys.meta_path.insert(0, Blocked())
"""


@pytest.mark.parametrize("module", TORCH_FREE)
def test_imports_without_torch(module):
    code = BLOCK_MODEL_LIBRARIES + f"import {module}\nassert 'torch' not in sys.modules\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, f"importing {module} with torch unavailable failed:\n{done.stderr}"
