"""Parameter precedence and validation; events as JSON lines."""

import dataclasses
import math

import pytest

from trainlab.api.descriptors import Param, Preset, TaskSpec
from trainlab.api.errors import UsageError
from trainlab.api.events import EvalResult, Finished, SystemSample, TrainStep, event_from_json
from trainlab.runfolder.tail import read_events
from trainlab.api.params import ENGINE_PARAMS, parse_assignments, resolve

SPEC = TaskSpec(
    id="demo-task",
    title="Demo",
    factory="x:y",
    params=(Param("model", "choice", "small", choices=("small", "big"), open_choices=True), Param("width", "int", 8, minimum=1)),
    defaults={"lr": 0.1, "epochs": 5},
    presets=(Preset("big", overrides={"width": 64, "lr": 0.01}),),
)


def test_precedence_engine_task_preset_remembered_explicit():
    assert resolve(SPEC)["lr"] == 0.1 and resolve(SPEC)["batch_size"] == 32
    assert resolve(SPEC, explicit={"model": "big"})["width"] == 64
    assert resolve(SPEC, explicit={"model": "big"})["lr"] == 0.01
    remembered = {"model": "big", "lr": "0.5"}
    assert resolve(SPEC, remembered=remembered)["lr"] == 0.5  # remembered beats the preset
    assert resolve(SPEC, remembered=remembered, explicit={"lr": "0.2"})["lr"] == 0.2
    assert resolve(SPEC, explicit={"model": "/some/folder"})["model"] == "/some/folder"  # open choice


def test_values_are_typed_and_checked():
    values = resolve(SPEC, explicit={"epochs": "7", "class_weighting": "yes", "lr": "3e-4"})
    assert values["epochs"] == 7 and values["class_weighting"] is True and values["lr"] == 3e-4
    for bad, reason in [({"epochs": "0"}, "below the minimum"), ({"lr": "nan"}, "finite"), ({"precision": "fp8"}, "not one of"),
                        ({"class_weighting": "maybe"}, "true or false"), ({"width": "1.5"}, "integer")]:
        with pytest.raises(UsageError, match=reason):
            resolve(SPEC, explicit=bad)


def test_stored_parameters_lacking_one_take_the_value_runs_made_before_it_had():
    spec = dataclasses.replace(SPEC, params=(*SPEC.params, Param("head", "str", "new", before="old")), defaults={**SPEC.defaults, "min_steps": 500})
    stored = dict(resolve(spec, explicit={"lr": "0.3"}))
    assert stored["head"] == "new" and stored["min_steps"] == 500  # a new run: today's defaults
    assert resolve(spec, recorded=stored)["head"] == "new" and resolve(spec, recorded=stored)["lr"] == 0.3
    del stored["head"], stored["min_steps"]  # a run stored before either parameter existed
    older = resolve(spec, explicit={"device": "cpu"}, recorded=stored)
    assert older["head"] == "old" and older["min_steps"] == 0 and older["lr"] == 0.3 and older["device"] == "cpu"
    assert resolve(spec, explicit={"head": "mine"}, recorded=stored)["head"] == "mine"  # explicit still wins
    assert resolve(spec)["head"] == "new"  # nothing recorded: a new run
    assert Param("head", "str", "new", before="old").to_json()["before"] == "old" and "before" not in Param("x", "int", 1).to_json()
    assert Param("n", "int", 1, minimum=1, before=0).validate_declaration() == ["parameter 'n': bad value for runs made before it: n: 0 is below the minimum 1"]


def test_parse_assignments():
    assert parse_assignments(["a=1", "b-c=x=y"]) == {"a": "1", "b_c": "x=y"}
    with pytest.raises(UsageError, match="key=value"):
        parse_assignments(["novalue"])


def test_descriptor_validation_names_the_problem():
    bad = TaskSpec(id="ok-id", title="T", factory="m:f", defaults={"nope": 1}, presets=(Preset("p", overrides={"epochs": -1}),))
    problems = bad.validate(ENGINE_PARAMS)
    assert any("unknown parameter 'nope'" in p for p in problems)
    assert any("preset 'p'" in p and "minimum" in p for p in problems)
    assert SPEC.validate(ENGINE_PARAMS) == []


def test_events_round_trip_as_json_lines(tmp_path):
    events = [
        TrainStep(step=3, epoch=1, loss=0.5, lr=1e-3, steps=3, samples_per_second=100.0),
        EvalResult(step=3, epoch=1, accuracy=0.9, macro_f1=0.8, loss=float("nan")),
        SystemSample(gpus=({"index": 0, "name": "GPU", "utilization": 50},), cpu_percent=12.5),
        Finished(status="completed", metrics={"accuracy": 0.9}),
    ]
    for event in events:
        line = event.to_json()
        assert "\n" not in line and "NaN" not in line
        back = event_from_json(line)
        assert type(back) is type(event)
    assert math.isnan(event_from_json(events[1].to_json()).loss)
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(e.to_json() + "\n" for e in events) + '{"event": "train", "ste')  # truncated last line
    assert [type(e) for e in read_events(path)] == [type(e) for e in events]
    with pytest.raises(dataclasses.FrozenInstanceError):
        events[0].loss = 1.0


def test_the_engine_reads_its_parameters_typed_from_resolve():
    from trainlab.api.params import EngineParams

    assert [f.name for f in dataclasses.fields(EngineParams)] == [p.name for p in ENGINE_PARAMS]  # one field per parameter
    values = resolve(SPEC, explicit={"epochs": "7", "class_weighting": "yes", "lr": "3e-4", "checkpoint_every_minutes": "2"})
    engine = values.engine
    assert (engine.epochs, engine.class_weighting, engine.lr, engine.checkpoint_every_minutes) == (7, True, 3e-4, 2.0)
    assert type(engine.epochs) is int and type(engine.lr) is float and type(engine.checkpoint_every_minutes) is float
    assert engine.batch_size == values["batch_size"] == 32 and engine.monitor == values["monitor"]


@pytest.mark.parametrize("name, bad", [("epochs", "three"), ("batch_size", "1.5"), ("lr", "fast"), ("class_weighting", "maybe"),
                                       ("seed", True), ("log_interval", [1])])
def test_resolve_rejects_a_bad_type_naming_the_parameter(name, bad):
    with pytest.raises(UsageError, match=f"bad value for parameter {name}:"):
        resolve(SPEC, explicit={name: bad})


def test_the_resolved_parameters_are_frozen_and_a_task_still_gets_a_mapping():
    import copy
    import json
    import pickle
    from collections.abc import Mapping

    from trainlab.api.params import EngineParams

    values = resolve(SPEC, explicit={"epochs": "2"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        values.engine.epochs = 3
    for change in (lambda: values.__setitem__("epochs", 3), lambda: values.update(epochs=3), lambda: values.pop("epochs"),
                   lambda: values.setdefault("new", 1), lambda: values.__delitem__("lr")):
        with pytest.raises(TypeError, match="read-only"):
            change()
    assert values["epochs"] == 2 and values.engine.epochs == 2
    assert isinstance(values, Mapping) and json.loads(json.dumps(values))["epochs"] == 2  # run.json stores it as it is
    again = pickle.loads(pickle.dumps(values))
    assert again == values and again.engine == values.engine and copy.deepcopy(values).engine.epochs == 2
    mutable = dict(values)  # a copy to change, as a task's own params are
    mutable["epochs"] = 4
    assert values["epochs"] == 2
    fields = {f.name: getattr(values.engine, f.name) for f in dataclasses.fields(EngineParams)}
    with pytest.raises(TypeError, match="engine parameter epochs: expected int"):
        EngineParams(**{**fields, "epochs": "2"})
    with pytest.raises(TypeError, match="engine parameter class_weighting: expected bool"):
        EngineParams(**{**fields, "class_weighting": 1})
    with pytest.raises(TypeError, match="resolved without the engine's"):
        _ = resolve(dataclasses.replace(SPEC, defaults={}), ()).engine  # a task's own parameters alone
