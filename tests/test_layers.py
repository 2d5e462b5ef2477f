"""The package's layers import only downward, and no modules import each other in a circle.

Every import counts: module level, inside functions, and under ``TYPE_CHECKING``; ``from mmtrack import X`` counts as
an import of the module the root package's lazy table loads ``X`` from; a literal ``import_module("mmtrack...")`` is
refused (it would hide an edge from this test), and so is any import of ``scripts`` (the harnesses sit above the
package, never below it). A new top-level module or package must be given its layer here, so the order stays a
decision, not an accident (docs/architecture.md). Within the commands layer, a verb never imports another verb,
directly or through a helper of that layer. The checker runs on small synthetic trees too, to show that it catches
each kind of wrong import.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "mmtrack"

#: Lowest first. A module may import from its own layer and the ones before it; siblings in one layer
#: (ab, publish and benchruns) may not import each other.
LAYERS: list[set[str]] = [
    # plain helpers and the words results are told in (Direction, MetricFormat, MetricKey): no mmtrack imports
    {"errors", "textsafe", "terminal", "tables", "fsutil", "forked", "schemas", "vocabulary"},
    {"measure"},  # the engine
    {"results", "vcs"},  # records: commits, measurements, series keys
    {"asvbridge"},
    {"store"},
    {"analysis"},
    {"ab"}, {"publish"}, {"benchruns"},  # features over the store and the analysis, side by side
    {"commands"},
    {"cli", "cli_errors", "cli_options", "cli_progress", "cli_events", "cli_results", "cli_alerts", "__main__"},
]
SIBLINGS = {"ab", "publish", "benchruns"}


def module_names(package: Path = PACKAGE) -> dict[str, Path]:
    out = {}
    for path in package.rglob("*.py"):
        parts = path.relative_to(package.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def lazy_table(package: Path = PACKAGE) -> dict[str, str]:
    """The root package's ``_LAZY``: public name -> the module it loads it from (absolute)."""
    root = package.name
    for node in ast.parse((package / "__init__.py").read_text()).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "_LAZY" for t in node.targets):
            table = ast.literal_eval(node.value)
            return {name: root + module if module.startswith(".") else module for name, module in table.items()}
    return {}


def type_checking_names(package: Path = PACKAGE) -> dict[str, str]:
    """The names ``mmtrack/__init__.py`` imports under ``if TYPE_CHECKING:`` -> their module (absolute)."""
    out = {}
    for node in ast.parse((package / "__init__.py").read_text()).body:
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for imp in ast.walk(node):
                if isinstance(imp, ast.ImportFrom):
                    out.update({a.asname or a.name: f"{package.name}.{imp.module}" for a in imp.names})
    return out


def _literal_import_module(node: ast.AST) -> str | None:
    """The string a call ``import_module("...")`` / ``importlib.import_module("...")`` names, if literal."""
    if not isinstance(node, ast.Call) or not node.args or not isinstance(node.args[0], ast.Constant):
        return None
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    return node.args[0].value if called == "import_module" and isinstance(node.args[0].value, str) else None


def imports_of(name: str, path: Path, known: dict[str, Path], lazy: dict[str, str],
               refused: list[str] | None = None) -> set[str]:
    """Every module of the package ``name`` imports, resolved to the deepest module that exists; names taken from the
    root package resolve through its lazy table. ``refused`` collects what no module may do at all."""
    root = name.split(".")[0]
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    refused = refused if refused is not None else []
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module != "__future__":
            base = package[: len(package) - node.level + 1] if node.level else []
            prefix = ".".join(base + ([node.module] if node.module else []))
            if prefix == root:  # from mmtrack import X: the module X is loaded from
                targets = [lazy.get(a.name, f"{root}.{a.name}") for a in node.names]
            else:
                targets = [f"{prefix}.{a.name}" for a in node.names] + [prefix]
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif (literal := _literal_import_module(node)) is not None:
            if literal.split(".")[0] == root:
                refused.append(f"{name}: import_module({literal!r}) hides an import from this test; import it")
            targets = [literal]
        else:
            continue
        for target in targets:
            if target.split(".")[0] == "scripts":
                refused.append(f"{name} imports {target}: the package never imports the harnesses in scripts/")
            while target and target not in known:
                target = target.rpartition(".")[0]
            # The root package's own attributes (its version string) reach nothing.
            if target and target != name and target != root:
                found.add(target)
    return found


def graph(package: Path = PACKAGE, refused: list[str] | None = None) -> dict[str, set[str]]:
    known = module_names(package)
    lazy = lazy_table(package)
    return {name: imports_of(name, path, known, lazy, refused) for name, path in known.items()}


def layer_of(module: str, layers: list[set[str]] = LAYERS) -> int:
    top = module.split(".")[1] if "." in module else ""
    for i, layer in enumerate(layers):
        if top in layer:
            return i
    raise AssertionError(f"{module}: its top-level name {top!r} has no layer in tests/test_layers.py; give it one")


def wrong_imports(package: Path = PACKAGE, layers: list[set[str]] = LAYERS) -> list[str]:
    """Imports that reach upward or sideways, and what no module may do (literal import_module, scripts)."""
    refused: list[str] = []
    wrong = []
    for module, targets in graph(package, refused).items():
        if module == package.name:
            continue
        for target in targets:
            mine, theirs = layer_of(module, layers), layer_of(target, layers)
            sibling = module.split(".")[1] in SIBLINGS and target.split(".")[1] in SIBLINGS
            if theirs > mine or (sibling and module.split(".")[1] != target.split(".")[1]):
                wrong.append(f"{module} -> {target}")
    return sorted(wrong) + refused


def test_every_module_has_a_layer():
    for module in graph():
        if module != "mmtrack":
            layer_of(module)


def test_no_module_imports_from_a_layer_above_its_own_or_from_a_sibling():
    wrong = wrong_imports()
    assert not wrong, "imports that reach upward or sideways:\n" + "\n".join(wrong)


def strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm: the groups of modules that import each other, directly or around a circle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return groups


def test_no_import_circles_even_through_function_level_imports():
    circles = strongly_connected(graph())
    assert not circles, "import circles:\n" + "\n".join(", ".join(c) for c in circles)


def test_the_checker_sees_a_circle_and_a_backward_import():
    """The checks above can fail: a planted circle and an upward edge are found."""
    assert strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert layer_of("mmtrack.commands.run") > layer_of("mmtrack.ab.interleave") > layer_of("mmtrack.store.db")
    edges = graph()  # relative, function-level and TYPE_CHECKING imports all resolve to modules
    assert "mmtrack.asvbridge.asvrun" in edges["mmtrack.ab.interleave"]
    assert "mmtrack.store.ingest" in edges["mmtrack.commands.run"]  # imported inside a function
    assert "mmtrack.measure.concurrent" in edges["mmtrack.asvbridge.declare"]  # under TYPE_CHECKING too


def test_no_layer_above_the_engine_imports_it_for_a_word():
    """Direction, MetricFormat, MetricKey and default_direction come from mmtrack/vocabulary.py outside the engine."""
    words = {"Direction", "MetricFormat", "MetricKey", "default_direction"}
    found = []
    for name, path in module_names().items():
        if name.startswith("mmtrack.measure") or name == "mmtrack":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("measure.metrics"):
                found += [f"{name}: {a.name}" for a in node.names if a.name in words]
    assert not found, found


# -- verbs over one context: a verb never calls another verb ----------------------------------------------------------


def verb_modules(package: Path = PACKAGE, edges: dict[str, set[str]] | None = None) -> set[str]:
    """The verbs: the modules of ``commands/`` that ``cli.py``, where every command is declared, imports to bind them;
    the other modules of ``commands/`` (``reporting``, ``run_summary``, ``bench_events``, ...) are helpers."""
    edges = graph(package) if edges is None else edges
    return {t for t in edges.get(f"{package.name}.cli", ()) if t.startswith(f"{package.name}.commands.")}


def verbs_calling_verbs(package: Path = PACKAGE) -> list[str]:
    """Each way a verb reaches another verb: directly, or through the helper modules of ``commands/`` (shared
    orchestration belongs in the layer that owns it: analysis, ab, publish, store)."""
    edges = graph(package)
    verbs, commands = verb_modules(package, edges), f"{package.name}.commands."
    wrong = []
    for verb in sorted(verbs):
        seen, todo = {verb}, [[verb]]
        while todo:
            path = todo.pop()
            for target in sorted(edges.get(path[-1], ())):
                if not target.startswith(commands) or target in seen:
                    continue
                seen.add(target)
                if target in verbs:
                    wrong.append(" -> ".join([*path, target]))
                else:
                    todo.append([*path, target])
    return wrong


def test_no_verb_imports_another_verb():
    verbs = verb_modules()
    assert {"mmtrack.commands.update", "mmtrack.commands.detect", "mmtrack.commands.bisect_alert"} <= verbs
    assert not verbs & {"mmtrack.commands.reporting", "mmtrack.commands.run_summary"}  # helpers, not verbs
    wrong = verbs_calling_verbs()
    assert not wrong, "verbs that call verbs (move the shared steps below the verbs):\n" + "\n".join(wrong)


# -- the checker on small synthetic trees: each planted import is caught --------------------------------------------

TREE = {
    "__init__.py": '_LAZY = {"bench": ".commands.bench", "Direction": ".measure.words"}\n',
    "errors.py": "",
    "measure/__init__.py": "",
    "measure/words.py": "",
    "store/__init__.py": "",
    "store/db.py": "from ..measure import words\n",
    "commands/__init__.py": "",
    "commands/bench.py": "from ..store import db\n",
}
PLANTED = {
    "a root-package import": ("store/reads.py", "from mmtrack import bench\n",
                              "mmtrack.store.reads -> mmtrack.commands.bench"),
    "a relative root import": ("store/rel.py", "from .. import bench\n", "mmtrack.store.rel -> mmtrack.commands.bench"),
    "import_module": ("measure/load.py", "import importlib\nimportlib.import_module('mmtrack.store.db')\n",
                      "mmtrack.measure.load: import_module('mmtrack.store.db') hides an import"),
    "a helper importing upward": ("errors.py", "from .store import db\n", "mmtrack.errors -> mmtrack.store.db"),
    "mmtrack importing scripts": ("store/harness.py", "from scripts import eval_gate\n",
                                  "mmtrack.store.harness imports scripts.eval_gate: the package never imports"),
}
SMALL_LAYERS = [{"errors"}, {"measure"}, {"store"}, {"commands"}]


def _tree(root: Path, extra: dict[str, str]) -> Path:
    package = root / "mmtrack"
    for rel, text in {**TREE, **extra}.items():
        (package / rel).parent.mkdir(parents=True, exist_ok=True)
        (package / rel).write_text(text)
    return package


def test_a_clean_synthetic_tree_passes(tmp_path):
    assert wrong_imports(_tree(tmp_path, {}), SMALL_LAYERS) == []
    assert wrong_imports(_tree(tmp_path, {"store/ok.py": "from mmtrack import Direction\n"}), SMALL_LAYERS) == []


@pytest.mark.parametrize("kind", list(PLANTED))
def test_the_checker_catches_a_planted_import(tmp_path, kind):
    rel, text, says = PLANTED[kind]
    wrong = wrong_imports(_tree(tmp_path, {rel: text}), SMALL_LAYERS)
    assert any(line.startswith(says) for line in wrong), wrong


VERB_TREE = {
    "cli.py": "def detect():\n    from .commands.detect import run\n\n\n"
              "def update():\n    from .commands import update\n",
    "commands/reporting.py": "",
    "commands/detect.py": "from .reporting import silent\n",
    "commands/update.py": "from .reporting import silent\nfrom ..store import db\n",
}
PLANTED_VERB_CALLS = {
    "a verb importing a verb": ("commands/update.py", "from .detect import run\n",
                                "mmtrack.commands.update -> mmtrack.commands.detect"),
    "through a helper": ("commands/reporting.py", "from . import detect\n",
                         "mmtrack.commands.update -> mmtrack.commands.reporting -> mmtrack.commands.detect"),
}


def test_verbs_sharing_a_helper_and_the_store_pass(tmp_path):
    package = _tree(tmp_path, VERB_TREE)
    assert verb_modules(package) == {"mmtrack.commands.detect", "mmtrack.commands.update"}
    assert verbs_calling_verbs(package) == []


@pytest.mark.parametrize("kind", list(PLANTED_VERB_CALLS))
def test_the_checker_catches_a_planted_verb_call(tmp_path, kind):
    rel, text, says = PLANTED_VERB_CALLS[kind]
    wrong = verbs_calling_verbs(_tree(tmp_path, {**VERB_TREE, rel: text}))
    assert says in wrong, wrong


# -- the root package's public names -------------------------------------------------------------------------------


def test_the_typing_block_and_the_lazy_table_name_the_same_modules():
    """``mmtrack/__init__.py`` lists each public name twice (for type checkers, and for the lazy loader): the two
    agree, ``__all__`` is the table, and each name is defined where the table says."""
    import mmtrack

    lazy, typed = lazy_table(), type_checking_names()
    differ = {n: (lazy.get(n), typed.get(n)) for n in set(lazy) | set(typed) if lazy.get(n) != typed.get(n)}
    assert not differ, differ
    assert sorted(mmtrack.__all__) == sorted(lazy)
    for name, module in lazy.items():
        value = vars(importlib.import_module(module)).get(name)
        assert value is not None and getattr(value, "__module__", module) == module, f"{module} does not define {name}"
