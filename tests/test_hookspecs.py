"""The hookspec module is the plugin API reference: check it stays one."""

import inspect

import trainlab
from trainlab import hookspecs


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
