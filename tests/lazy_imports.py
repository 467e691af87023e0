"""Which imports of TrainLab's own modules sit inside functions, and why each one must.

An import at module level is what every checker reads and what a reader
expects. One inside a function hides a dependency, so it stays only where
moving it up would cost a measured start-up: it would load a module on one of
the start-up paths below that is not loaded there today, or it would make a
module import a heavy package (torch, Qt, numpy, ...) at import time that it
does not import today. ``tests/lazy_imports.txt`` lists every such import
with its reason; ``tests/project/test_lazy_imports.py`` recomputes the reasons and
fails on an import that is not listed, or listed with a reason that no longer
holds.

    python tests/lazy_imports.py            # the table as it should read
    python tests/lazy_imports.py --write    # write it to tests/lazy_imports.txt
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LISTING = Path(__file__).with_name("lazy_imports.txt")
SOURCES = {"core": "trainlab", "desktop": "trainlab_desktop", "plugins": "trainlab_plugins", "resources": "trainlab_resources"}
OWN = tuple(SOURCES.values())

# Packages whose import costs a start-up something a user waits for.
HEAVY = ("torch", "torchvision", "transformers", "peft", "accelerate", "numpy", "PIL", "optuna", "torchmetrics",
         "PySide6", "pyqtgraph", "onnx", "onnxruntime")

# The start-up paths whose modules are measured: a script that runs the path
# and prints the names in sys.modules at the moment the user sees it done.
_DUMP = "import json, sys; print('MODULES ' + json.dumps(sorted(sys.modules)), flush=True)"
PATHS = {
    "import trainlab": f"import trainlab\n{_DUMP}",
    "trainlab --help": (
        "import atexit, runpy, sys\n"
        f"atexit.register(lambda: exec({_DUMP!r}))\n"
        "sys.argv = ['trainlab', '--help']\n"
        "runpy.run_module('trainlab', run_name='__main__')\n"
    ),
    "trainlab plugins": (
        "import atexit, runpy, sys\n"
        f"atexit.register(lambda: exec({_DUMP!r}))\n"
        "sys.argv = ['trainlab', 'plugins', '--json']\n"
        "runpy.run_module('trainlab', run_name='__main__')\n"
    ),
    "the window's first paint": (
        "import os\n"
        "from trainlab_desktop import app\n"
        "from PySide6.QtCore import QEvent, QObject\n"
        "from PySide6.QtWidgets import QMainWindow\n"
        "class FirstPaint(QObject):\n"
        "    def eventFilter(self, watched, event):\n"
        "        if event.type() == QEvent.Type.Paint and isinstance(watched, QMainWindow):\n"
        f"            {_DUMP}\n"
        "            os._exit(0)\n"
        "        return False\n"
        "make_application = app.make_application\n"
        "def watched(*args, **kwargs):\n"
        "    made = make_application(*args, **kwargs)\n"
        "    made[0].installEventFilter(FirstPaint(made[0]))\n"
        "    return made\n"
        "app.make_application = watched\n"
        "app.run_app()\n"
    ),
    # every pytest session on a machine with TrainLab loads the plugin kit's
    # pytest plugin (the pytest11 entry point)
    "a pytest session (the kit's pytest plugin)": f"import trainlab.testing.pytest_plugin\n{_DUMP}",
    # set up: plugins found, every page built (its ``ready`` signal); the engine
    # is imported after this, in the background, once a data check passed
    "the window ready": (
        "import os\n"
        "from trainlab_desktop import app\n"
        "def shown(window):\n"
        f"    window.ready.connect(lambda: (exec({_DUMP!r}), os._exit(0)))\n"
        "app.after_show.append(shown)\n"
        "app.run_app()\n"
    ),
}


@dataclass(frozen=True)
class LazyImport:
    module: str  # the importing module
    target: str  # the own module it imports
    line: int
    function: str


def module_files() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for folder, package in SOURCES.items():
        base = ROOT / folder / package
        for path in sorted(base.rglob("*.py")):
            if "templates" in path.relative_to(base).parts or "__pycache__" in path.parts:
                continue
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def _resolve(dotted: str, known: dict[str, Path]) -> str | None:
    while dotted and dotted not in known:
        dotted = dotted.rpartition(".")[0]
    return dotted or None


def _targets(node: ast.AST, module: str, is_package: bool) -> list[str]:
    """The dotted names an import statement asks for (``from a import b`` -> ``a.b``)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        if node.level:
            base = module if is_package else module.rpartition(".")[0]
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            source = base + ("." + node.module if node.module else "")
        else:
            source = node.module or ""
        return [f"{source}.{alias.name}" for alias in node.names]
    return []


def _is_type_checking(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
    )


@lru_cache(maxsize=1)
def scan() -> tuple[dict[str, set[str]], dict[str, set[str]], tuple[LazyImport, ...]]:
    """(own modules each module imports at module level, third-party roots each imports at module level,
    every function-level import of an own module)."""
    known = module_files()
    top_own: dict[str, set[str]] = {}
    top_third: dict[str, set[str]] = {}
    lazy: list[LazyImport] = []
    for module, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        is_package = path.name == "__init__.py"
        own: set[str] = set()
        third: set[str] = set()

        def visit(node: ast.AST, function: str | None) -> None:
            for child in ast.iter_child_nodes(node):
                if _is_type_checking(child):
                    continue  # never runs
                inner = function
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                    inner = getattr(child, "name", "<lambda>") if function is None else f"{function}.{getattr(child, 'name', '<lambda>')}"
                if isinstance(child, (ast.Import, ast.ImportFrom)):
                    for dotted in _targets(child, module, is_package):
                        root = dotted.split(".")[0]
                        if root in OWN:
                            target = _resolve(dotted, known)
                            if target is None or target == module:
                                continue
                            if function is None:
                                own.add(target)
                            else:
                                lazy.append(LazyImport(module, target, child.lineno, function))
                        elif function is None and root and root != "__future__":
                            third.add(root)
                visit(child, inner)

        visit(tree, None)
        # a submodule import also runs its packages' __init__
        for target in list(own):
            parent = target.rpartition(".")[0]
            while parent:
                if parent in known:
                    own.add(parent)
                parent = parent.rpartition(".")[0]
        top_own[module] = own
        top_third[module] = third
    unique = {(i.module, i.target): i for i in lazy}  # one entry per pair: the first such import
    return top_own, top_third, tuple(sorted(unique.values(), key=lambda i: (i.module, i.target)))


def closure(module: str) -> tuple[set[str], set[str]]:
    """Own modules and third-party roots that importing ``module`` loads (module-level imports, transitively)."""
    top_own, top_third, _ = scan()
    seen: set[str] = set()
    parts = module.split(".")
    todo = [".".join(parts[:i]) for i in range(1, len(parts) + 1)]  # its packages run first
    third: set[str] = set()
    while todo:
        current = todo.pop()
        if current in seen or current not in top_own:
            continue
        seen.add(current)
        third |= top_third[current]
        todo.extend(top_own[current])
    return seen, third


@lru_cache(maxsize=1)
def startup_modules() -> dict[str, frozenset[str]]:
    """The own modules loaded by each start-up path, as measured in a fresh process."""
    env = dict(os.environ, QT_QPA_PLATFORM=os.environ.get("QT_QPA_PLATFORM", "offscreen"))
    env.setdefault("TRAINLAB_HOME", str(ROOT / ".trainlab-home"))
    measured = {}
    for name, script in PATHS.items():
        proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
        lines = [line for line in proc.stdout.splitlines() if line.startswith("MODULES ")]
        if not lines:
            raise RuntimeError(f"start-up path {name!r} printed no modules ({proc.returncode}): {proc.stderr[-2000:]}")
        modules = json.loads(lines[-1][len("MODULES "):])
        measured[name] = frozenset(m for m in modules if m.split(".")[0] in OWN)
    return measured


# The module the window imports on a worker thread while its shell is on
# screen (window_setup.import_for_setup): a window module that imports one of
# its modules inside a function does so on the GUI thread only once the
# worker has loaded it, never waiting for it.
BACKGROUND = "trainlab_desktop.pages"


def reason(item: LazyImport) -> str | None:
    """Why ``item`` must stay inside its function, or None when it could move to module level."""
    own_m, third_m = closure(item.module)
    own_t, third_t = closure(item.target)
    paths = [name for name, loaded in startup_modules().items() if item.module in loaded and not own_t <= loaded]
    if paths:
        return "start-up: " + "; ".join(paths)
    if item.module.startswith("trainlab_desktop.") and item.target in closure(BACKGROUND)[0] and item.module not in closure(BACKGROUND)[0]:
        return f"the window loads it on a worker thread ({BACKGROUND}, window_setup.import_for_setup)"
    heavy = sorted(p for p in third_t - third_m if p in HEAVY)
    if heavy:
        return "heavy: " + ", ".join(heavy)
    return None


def table() -> tuple[list[str], list[LazyImport]]:
    """(the listing's lines, the imports with no reason: to move to module level)."""
    lines, movable = [], []
    for item in scan()[2]:
        why = reason(item)
        if why is None:
            movable.append(item)
        else:
            lines.append(f"{item.module} -> {item.target}  # {why}")
    return lines, movable


HEADER = """\
# Imports of TrainLab's own modules inside functions, each with the start-up
# cost that keeps it there (tests/lazy_imports.py says how it is measured;
# tests/project/test_lazy_imports.py checks this list). One line per importing module
# and imported module:  importer -> imported  # reason
"""


def main() -> int:
    lines, movable = table()
    text = HEADER + "\n".join(lines) + "\n"
    if "--write" in sys.argv:
        LISTING.write_text(text, encoding="utf-8")
    else:
        print(text, end="")
    for item in movable:
        print(f"movable: {item.module}:{item.line} ({item.function}) -> {item.target}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
