"""Parameter values with their levels: what the form edits, with the contract's precedence.

engine defaults < task defaults < preset < remembered < explicit; the values
shown are what a run of ``RunRequest(params=explicit, remembered=remembered)``
resolves to.
"""

from __future__ import annotations

import pytest

from trainlab.api.errors import UsageError
from trainlab.viewmodel.param_values import ENGINE, EXPLICIT, PRESET, REMEMBERED, TASK, ParamValues


@pytest.fixture
def spec(toy_plugin):
    from trainlab.pluginhost.host import registry

    return registry().task("toy-classification").spec


def test_each_value_says_where_it_comes_from(spec):
    values = ParamValues(spec)
    assert values.level("weight_decay") == ENGINE and values.value("weight_decay") == 0.01
    assert values.level("lr") == TASK and values.value("lr") == 0.01  # the toy task's default
    assert values.level("hidden") == TASK  # the task's own parameter, at its default
    values.update({"model": "wide-mlp"}, REMEMBERED)
    assert values.level("hidden") == PRESET and values.value("hidden") == 64
    values.set("epochs", "5", REMEMBERED)
    values.set("epochs", "7")
    assert values.level("epochs") == EXPLICIT and values.value("epochs") == 7  # typed once, from the text


def test_the_shown_values_are_what_the_run_resolves(spec, toy_csv, tmp_path):
    from trainlab.engine.plan import RunRequest, plan_run

    values = ParamValues(spec)
    # remembered from last time: the wide preset, its lr changed, and 4 epochs
    values.update({"model": "wide-mlp", "lr": "0.02", "epochs": "4"}, REMEMBERED)
    values.set("epochs", "1")  # the user's edit wins over what was remembered
    assert values.value("lr") == 0.02 and values.value("hidden") == 64 and values.value("epochs") == 1
    request = RunRequest(task=spec.id, data=str(toy_csv), params=values.explicit(), remembered=values.remembered(),
                         out=str(tmp_path / "run"))
    plan = plan_run(request)
    assert plan.params == values.resolved()
    assert (plan.params["lr"], plan.params["hidden"], plan.params["epochs"]) == (0.02, 64, 1)


def test_choosing_a_preset_shows_its_values(spec):
    """Choosing the model is an edit made after the others: the preset's values show."""
    values = ParamValues(spec)
    values.set("lr", "0.01")
    values.set("hidden", "32", REMEMBERED)
    changed = values.set("model", "wide-mlp")
    assert {"model", "hidden", "lr"} <= changed
    assert values.value("lr") == 0.005 and values.value("hidden") == 64
    assert values.level("lr") == PRESET and "lr" not in values.explicit() and "hidden" not in values.remembered()
    values.set("lr", "0.003")  # and later edits win over the preset
    assert values.value("lr") == 0.003
    assert values.to_remember() == {"model": "wide-mlp", "lr": "0.003"}  # the preset's own values are not kept


def test_what_is_remembered_is_what_differs_from_the_levels_below(spec):
    values = ParamValues(spec)
    values.set("epochs", "2")  # the task's default, typed again
    values.set("log_interval", "0")
    assert values.to_remember() == {"log_interval": "0"}
    values.reset()
    assert values.to_remember() == {} and values.explicit() == {} and values.level("lr") == TASK


def test_an_invalid_value_is_kept_as_typed_and_named(spec):
    values = ParamValues(spec)
    values.set("epochs", "zero")
    assert values.invalid() == {"epochs": "zero"} and values.text("epochs") == "zero"
    with pytest.raises(UsageError, match="epochs"):
        values.resolved()
    values.set("epochs", "3")
    assert values.invalid() == {} and values.resolved()["epochs"] == 3
    changed, unknown = values.update({"nope": "1", "hidden": "8"})
    assert unknown == ["nope"] and changed == {"hidden"}
    with pytest.raises(KeyError):
        values.set("nope", "1")
