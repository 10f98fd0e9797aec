"""The walls between the package's layers, read from the source (see STYLE.md, "The layout to grow into").

Every ``import`` / ``from ... import`` statement of every ``.py`` file of the package is collected from
its syntax tree: those inside functions and ``TYPE_CHECKING`` blocks too, relative imports resolved,
``from package import submodule`` counted as importing the submodule, and the top-level lazy names
(``from countdown_study import compute_score``) as importing their home module. Each rule of ``RULES``
is one test case; a failure lists every offending ``file:line: statement``. The import graph of
module-level imports must be acyclic, and the torch-free layers must import with torch unavailable.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
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
    module_level: bool
    """Runs when the importer is imported: not inside a function or a ``TYPE_CHECKING`` block."""

    def __str__(self) -> str:
        where = f"{self.path.relative_to(ROOT)}:{self.line}"
        return f"{where}: {self.statement}  (-> {self.target})"


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _statements(tree: ast.AST) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement with whether it runs at import time (class bodies do, functions don't)."""
    stack: list[tuple[ast.AST, bool]] = [(tree, True)]
    while stack:
        node, module_level = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, module_level
        inner = module_level and not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend((child, False) for child in node.body)
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
        for node, module_level in _statements(ast.parse(source, filename=str(path))):
            statement = ast.unparse(node)
            for target in _targets(node, name, path.name == "__init__.py"):
                imports.append(Import(name, path, node.lineno, statement, target, module_level))
    return sorted(imports, key=lambda i: (str(i.path), i.line, i.target))


IMPORTS = _read_imports()


# ---------------------------------------------------------------------------------------------------
# The rules
# ---------------------------------------------------------------------------------------------------


def _under(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _layers(*names: str) -> tuple[str, ...]:
    return tuple(f"{PACKAGE}.{n}" for n in names)


@dataclass(frozen=True)
class Rule:
    """Modules under ``scope`` (minus ``exempt``) import nothing in ``forbid``; when ``only`` is set,
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
    exempt: tuple[str, ...] = ()

    def applies_to(self, module: str) -> bool:
        return _under(module, self.scope) and not _under(module, self.exempt)

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


MODEL = ("torch", "transformers", "tokenizers")
RULES = [
    Rule(
        "countdown",
        "countdown is pure ground truth: no torch, no other layer",
        scope=_layers("countdown"),
        forbid=MODEL,
        internal_only=_layers("countdown", "paths", "seeding"),
    ),
    Rule(
        "samplers",
        "samplers see tasks, features and observations only",
        scope=_layers("samplers"),
        forbid=(
            "torch",
            "transformers",
            *_layers("policy", "rollout", "training", "objectives", "evaluation", "study", "runs"),
        ),
    ),
    Rule(
        "objectives",
        "objectives are functions of tensors",
        scope=_layers("objectives"),
        only=(STDLIB, "torch", "numpy", *_layers("objectives")),
    ),
    Rule(
        "policy",
        "policy sits below rollout and training",
        scope=_layers("policy"),
        forbid=_layers(
            "rollout", "objectives", "samplers", "training", "evaluation", "runs", "study", "reporting"
        ),
    ),
    Rule(
        "rollout",
        "rollout sits below objectives and training",
        scope=_layers("rollout"),
        forbid=_layers("objectives", "samplers", "training", "evaluation", "runs", "study", "reporting"),
    ),
    Rule(
        "evaluation",
        "evaluation sits below training and study",
        scope=_layers("evaluation"),
        forbid=_layers("training", "study", "samplers", "objectives", "reporting"),
    ),
    Rule(
        "runs",
        "runs sits below every model layer",
        scope=_layers("runs"),
        forbid=_layers(
            "policy", "rollout", "objectives", "samplers", "training", "evaluation", "study", "reporting"
        ),
    ),
    Rule(
        "training",
        "training sits below study and reporting",
        scope=_layers("training"),
        forbid=_layers("study", "reporting"),
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
        "no-cli",
        "the library never imports the command line",
        scope=(PACKAGE,),
        forbid=_layers("cli"),
        exempt=_layers("cli", "__main__"),
    ),
    Rule(
        "no-notebooks",
        "nothing imports notebooks",
        scope=(PACKAGE,),
        forbid=("notebooks", "import_ipynb", "importnb"),
    ),
]
RULE = {r.key: r for r in RULES}


@pytest.mark.parametrize("rule", RULES, ids=[r.key for r in RULES])
def test_wall(rule):
    checked = [i for i in IMPORTS if rule.applies_to(i.importer)]
    assert checked or any(rule.applies_to(m) for m in MODULES), f"no module is under {rule.scope}"
    offending = [str(i) for i in checked if rule.breaks(i.target)]
    assert not offending, f"{rule.name}: {len(offending)} offending imports\n" + "\n".join(offending)


def test_the_command_line_may_import_itself():
    assert not RULE["no-cli"].applies_to("countdown_study.cli.train")
    assert not RULE["no-cli"].applies_to("countdown_study.__main__")


def test_imports_in_functions_and_type_checking_blocks_are_not_module_level():
    source = """
import os
from typing import TYPE_CHECKING
if TYPE_CHECKING:
    import torch
else:
    import json
class Holder:
    import math
def load():
    import datasets
"""
    seen = {alias.name: level for node, level in _statements(ast.parse(source)) for alias in node.names}
    assert seen == {
        "os": True,
        "TYPE_CHECKING": True,
        "torch": False,
        "json": True,
        "math": True,
        "datasets": False,
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
        RULE["no-cli"],
        "countdown_study.training.loop",
        ["countdown_study.clinic"],
        ["countdown_study.cli.train"],
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


def test_no_import_cycle():
    graph: dict[str, set[str]] = {name: set() for name in MODULES}
    lines: dict[tuple[str, str], str] = {}
    for i in IMPORTS:
        if i.module_level and i.target in MODULES and i.target != i.importer:
            graph[i.importer].add(i.target)
            lines.setdefault((i.importer, i.target), str(i))
    cycles = find_cycles(graph)
    report = [
        " -> ".join(cycle) + "\n" + "\n".join(f"    {lines[edge]}" for edge in pairwise(cycle))
        for cycle in cycles
    ]
    assert not cycles, "module-level import cycles:\n" + "\n".join(report)


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
