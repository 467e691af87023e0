"""The hookspec module is the plugin API reference: check it stays one."""

import importlib
import inspect
import re

import trainlab
from trainlab.api import hookspecs


def specs():
    return [
        (name, obj)
        for name, obj in vars(hookspecs).items()
        if callable(obj) and hasattr(obj, "trainlab_spec")
    ]


def test_there_are_hookspecs():
    names = {name for name, _ in specs()}
    assert {"trainlab_api_version", "trainlab_tasks", "trainlab_presets", "trainlab_run_callbacks"} <= names


def test_every_hookspec_has_prefix_docstring_and_annotations():
    for name, func in specs():
        assert name.startswith("trainlab_"), name
        doc = inspect.getdoc(func)
        assert doc and len(doc) > 40, f"{name} needs a real docstring"
        sig = inspect.signature(func)
        assert sig.return_annotation is not inspect.Signature.empty, f"{name} lacks a return annotation"
        for param in sig.parameters.values():
            assert param.annotation is not inspect.Parameter.empty, f"{name}({param.name}) lacks an annotation"


def test_public_api_is_importable_from_trainlab():
    for name in ("hookimpl", "TaskSpec", "Param", "Preset", "Task", "ClassificationTask", "PLUGIN_API_VERSION"):
        assert hasattr(trainlab, name), name
    assert trainlab.PLUGIN_API_VERSION[0] >= 1


def _resolves(dotted: str) -> bool:
    """Whether ``trainlab.X.Y`` names a module or an attribute that exists."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return False
        return True
    return False


def test_every_name_a_hook_docstring_gives_exists():
    """A plugin author copies these names: each must import (a docstring once named a class that did not)."""
    texts = [hookspecs.__doc__] + [inspect.getdoc(func) for _, func in specs()]
    named = sorted({m for text in texts for m in re.findall(r"\btrainlab(?:\.[A-Za-z_]\w*)+", text)})
    assert named, "the docstrings name no trainlab API at all"
    missing = [name for name in named if not _resolves(name)]
    assert missing == []


def test_no_hookspec_claims_a_calling_convention_the_host_ignores():
    """The host calls each plugin's implementation on its own, so firstresult or historic would have no effect."""
    for name, func in specs():
        opts = func.trainlab_spec
        assert not opts.get("firstresult") and not opts.get("historic"), name
