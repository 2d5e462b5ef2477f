"""The package's layers import only downward, and no modules import each other in a circle.

Every import counts: module level, inside functions, and under ``TYPE_CHECKING``. A new top-level module or
package must be given its layer here, so the order stays a decision, not an accident (docs/architecture.md).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "mmtrack"

#: Lowest first. A module may import from its own layer and the ones before it; siblings in one layer
#: (ab, publish and benchruns) may not import each other.
LAYERS: list[set[str]] = [
    {"errors", "textsafe", "terminal", "tables", "fsutil", "forked", "schemas"},  # plain helpers, no mmtrack imports
    {"measure"},  # the engine
    {"results", "vcs"},  # records: commits, measurements, series keys
    {"asvbridge"},
    {"store"},
    {"analysis"},
    {"ab"}, {"publish"}, {"benchruns"},  # features over the store and the analysis, side by side
    {"commands"},
    {"cli", "cli_options", "cli_progress", "cli_events", "cli_results", "cli_alerts", "__main__"},
]
SIBLINGS = {"ab", "publish", "benchruns"}


def module_names() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def imports_of(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """Every mmtrack module ``name`` imports, resolved to the deepest module that exists."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module != "__future__":
            base = package[: len(package) - node.level + 1] if node.level else []
            prefix = ".".join(base + ([node.module] if node.module else []))
            targets = [f"{prefix}.{a.name}" for a in node.names] + [prefix]
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            # The root package only re-exports public names; importing its version string reaches nothing.
            if target and target != name and target != "mmtrack":
                found.add(target)
    return found


def graph() -> dict[str, set[str]]:
    known = module_names()
    return {name: imports_of(name, path, known) for name, path in known.items()}


def layer_of(module: str) -> int:
    top = module.split(".")[1] if "." in module else ""
    for i, layer in enumerate(LAYERS):
        if top in layer:
            return i
    raise AssertionError(f"{module}: its top-level name {top!r} has no layer in tests/test_layers.py; give it one")


def test_every_module_has_a_layer():
    for module in graph():
        if module != "mmtrack":
            layer_of(module)


def test_no_module_imports_from_a_layer_above_its_own_or_from_a_sibling():
    wrong = []
    for module, targets in graph().items():
        if module == "mmtrack":
            continue
        for target in targets:
            mine, theirs = layer_of(module), layer_of(target)
            sibling = module.split(".")[1] in SIBLINGS and target.split(".")[1] in SIBLINGS
            if theirs > mine or (sibling and module.split(".")[1] != target.split(".")[1]):
                wrong.append(f"{module} -> {target}")
    assert not wrong, "imports that reach upward or sideways:\n" + "\n".join(sorted(wrong))


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
