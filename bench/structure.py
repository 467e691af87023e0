"""The shape of the code: what a new contributor meets before reading a line.

Read from the source alone (no import), for the tree at ``--root`` (default:
this checkout), in either package layout (the folders mapped onto
``trainlab.*`` by ``package-dir``, or the ordinary packages ``core/trainlab``,
``desktop/trainlab_desktop``, ``plugins/trainlab_plugins``):

* ``core_root_modules``: modules loose in the core package's root folder
  (``__init__`` and ``__main__`` not counted);
* ``function_level_imports``: import statements of TrainLab's own modules
  inside a function body (where no checker that reads module level sees them);
* ``links`` / ``function_only_links``: module-to-module imports, and those
  that exist only inside functions;
* ``cycles``: strongly connected groups of modules over all imports, each
  listed;
* ``modules_over_600_lines``.

    python bench/structure.py [--root DIR] [--quick] [--json]

To compare two revisions, lay one out with ``git worktree add /tmp/old REV``
and pass ``--root /tmp/old``.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from pairs import bench_parser, emit, speaker

ROOT = Path(__file__).resolve().parents[1]
OWN = ("trainlab", "trainlab_desktop", "trainlab_plugins", "trainlab_resources")


def layout(root: Path) -> dict[Path, str]:
    """Folder -> the import name of the package it holds."""
    if (root / "core" / "trainlab" / "__init__.py").is_file():
        return {root / "core" / "trainlab": "trainlab", root / "desktop" / "trainlab_desktop": "trainlab_desktop",
                root / "plugins" / "trainlab_plugins": "trainlab_plugins",
                root / "resources" / "trainlab_resources": "trainlab_resources"}
    return {root / "core": "trainlab", root / "desktop": "trainlab" + ".desktop", root / "plugins": "trainlab" + ".plugins",
            root / "resources": "trainlab" + ".resources"}  # the old names, spelt so no rename of module paths touches them


def modules(root: Path) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for folder, package in layout(root).items():
        for path in folder.rglob("*.py"):
            if "templates" in path.parts:
                continue
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join([package, *parts])] = path
    return found


def imports(name: str, path: Path, known: dict[str, Path]):
    """(target module, inside a function?) for each import of an own module in ``path``."""
    def resolve(dotted: str) -> str | None:
        while dotted and dotted not in known:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    is_package = path.name == "__init__.py"

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            inside = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            targets: list[str] = []
            if isinstance(child, ast.Import):
                targets = [alias.name for alias in child.names]
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = name if is_package else name.rpartition(".")[0]
                    for _ in range(child.level - 1):
                        base = base.rpartition(".")[0]
                    module = base + ("." + child.module if child.module else "")
                else:
                    module = child.module or ""
                targets = [f"{module}.{alias.name}" for alias in child.names]
            own = [t for t in targets if t.split(".")[0] in OWN]
            if own:
                yield child, [resolve(t) for t in own], inside
            yield from visit(child, inside)

    yield from visit(ast.parse(path.read_text(encoding="utf-8")), False)


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return sorted(found)


def measure(root: Path) -> dict:
    known = modules(root)
    core_folder = next(folder for folder, package in layout(root).items() if package == "trainlab")
    loose = [p for p in core_folder.glob("*.py") if p.stem not in ("__init__", "__main__")]
    edges: dict[str, set[str]] = {}
    kinds: dict[tuple[str, str], set[bool]] = {}
    function_level = 0
    for name, path in known.items():
        for _node, targets, inside in imports(name, path, known):
            function_level += inside
            for target in targets:
                if target and target != name:
                    edges.setdefault(name, set()).add(target)
                    kinds.setdefault((name, target), set()).add(inside)
    big = {str(p.relative_to(root)): n for p in known.values() if (n := len(p.read_text(encoding="utf-8").splitlines())) > 600}
    found = cycles(edges)
    return {
        "core_root_modules": len(loose),
        "function_level_imports": function_level,
        "links": len(kinds),
        "function_only_links": sum(1 for k in kinds.values() if k == {True}),
        "cycles": len(found),
        "cycle_groups": found,
        "modules_over_600_lines": dict(sorted(big.items())),
    }


def main() -> int:
    parser = bench_parser(__doc__, "the same reading (it takes seconds)")
    parser.add_argument("--root", type=Path, default=ROOT)
    args = parser.parse_args()
    say = speaker(args)
    figures = measure(args.root.resolve())
    for key, value in figures.items():
        say(f"  {key:24s} {value}")
    return emit("structure", args, figures)


if __name__ == "__main__":
    sys.exit(main())
