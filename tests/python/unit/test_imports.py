"""The helper's imports run one way: no module imports, directly or through others, one that imports it back
(TYPE_CHECKING imports included), and the packages keep their layers: the engine at the bottom imports none of
the layers built on it."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3] / "native-host" / "lanefetch"

# package -> packages it may never import (the engine is the bottom; stream/cache/lanes sit on it; the host,
# proxy, CLI and composition root on top)
FORBIDDEN = {
    "engine": {"stream", "cache", "lanes", "prefetch", "proxy", "bridge", "service", "cli", "doctor", "protocol"},
    "stream": {"cache", "lanes", "prefetch", "proxy", "bridge", "service", "cli"},
    "cache": {"lanes", "prefetch", "proxy", "bridge", "service", "cli"},
    "lanes": {"cache", "prefetch", "proxy", "bridge", "service"},
    # prefetch sits on the engine (the Fetcher protocol) and keeps its records through the cache's store
    "prefetch": {"lanes", "proxy", "bridge", "service", "cli", "doctor"},
}


def _modules() -> dict[str, Path]:
    out = {}
    for p in ROOT.rglob("*.py"):
        parts = p.relative_to(ROOT.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = p
    return out


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    graph: dict[str, set[str]] = defaultdict(set)
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    module = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    module = node.module or ""
                targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in mods else module for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            graph[name].update(t for t in targets if t in mods and t != name)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle() -> None:
    graph = _graph()
    assert len(graph) > 50, "the walk found too few modules to mean anything"
    assert _cycles(graph) == []


def test_a_cycle_is_found() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_layers() -> None:
    wrong = []
    for src, targets in _graph().items():
        layer = src.split(".")[1] if src.count(".") >= 1 else ""
        for t in targets:
            top = t.split(".")[1] if t.count(".") >= 1 else ""
            if top in FORBIDDEN.get(layer, set()):
                wrong.append(f"{src} -> {t}")
    assert wrong == []
