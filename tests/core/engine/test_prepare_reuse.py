"""A task prepared once (the window's data check) is handed to the run that follows.

The text task must not tokenise its data a second time when nothing that
affects preparation changed; when something did, the run prepares again.
"""

import torch
from safetensors.torch import load_file

from helpers import sample_head
from trainlab.engine.execute import execute
from trainlab.engine.plan import RunRequest, plan_run
from trainlab.engine.prepare import prepare_task
from trainlab.api.events import Log
from trainlab.runfolder.tail import read_events
from trainlab.runfolder.index import RunDir

TEXT_PARAMS = {"epochs": "1", "device": "cpu", "batch_size": "16"}


def test_a_text_run_takes_over_the_data_checks_preparation(tmp_path, encode_calls):
    data = sample_head(tmp_path)
    heard = []
    prepared = prepare_task("text-classification", str(data), TEXT_PARAMS, log=heard.append)
    assert len(encode_calls) == 2  # train and val, once
    assert heard[0].message.startswith("train: 48 texts")  # the data summary, as the task said it

    # training-only parameters may change between the check and Start
    request = RunRequest(task="text-classification", data=str(data), params={**TEXT_PARAMS, "lr": "0.002", "batch_size": "8"},
                         out=str(tmp_path / "run"))
    plan = plan_run(request, prepared=prepared)
    assert plan.reused_preparation and plan.task is prepared.task
    assert plan.steps_per_epoch == 6  # 48 rows in batches of 8: counted with the run's batch size
    outcome = execute(plan)
    assert outcome.status == "completed", outcome.error
    assert len(encode_calls) == 2  # not tokenised again
    said = [e.message for e in read_events(RunDir(outcome.run_dir).metrics_jsonl) if isinstance(e, Log)]
    assert [e.message for e in heard] == said[: len(heard)]  # the check's lines are in the run's metrics.jsonl

    # a preparation serves one run: the next one prepares its own
    again = plan_run(RunRequest(task="text-classification", data=str(data), params=TEXT_PARAMS, out=str(tmp_path / "run2")),
                     prepared=prepared)
    assert not again.reused_preparation and len(encode_calls) == 4


def test_a_changed_task_parameter_prepares_again(tmp_path, encode_calls):
    data = sample_head(tmp_path)
    prepared = prepare_task("text-classification", str(data), TEXT_PARAMS)
    assert len(encode_calls) == 2
    heard = []
    request = RunRequest(task="text-classification", data=str(data), params={**TEXT_PARAMS, "max_length": "32"},
                         out=str(tmp_path / "run"))
    plan = plan_run(request, prepared=prepared, log=heard.append)
    assert not plan.reused_preparation and plan.task is not prepared.task
    assert len(encode_calls) == 4
    assert plan.task.max_length == 32
    assert any(e.level == "debug" and "max_length" in e.message for e in heard)


def test_changed_files_or_another_seed_prepare_again(toy_plugin, toy_csv, tmp_path):
    prepared = prepare_task("toy-classification", str(toy_csv), {"epochs": "1"})
    request = RunRequest(task="toy-classification", data=str(toy_csv), params={"epochs": "1", "seed": "7"}, out=str(tmp_path / "a"))
    assert not plan_run(request, prepared=prepared).reused_preparation  # the seed decides the split

    prepared = prepare_task("toy-classification", str(toy_csv), {"epochs": "1"})
    with open(toy_csv, "a", encoding="utf-8") as handle:
        handle.write("0.1,0.2,0.3,0.4,class_0\n")
    request = RunRequest(task="toy-classification", data=str(toy_csv), params={"epochs": "1"}, out=str(tmp_path / "b"))
    plan = plan_run(request, prepared=prepared)
    assert not plan.reused_preparation and len(plan.task.data["train"]) + len(plan.task.data["val"]) == 241


def test_a_run_on_a_handed_over_preparation_trains_exactly_like_one_that_prepared_itself(toy_plugin, toy_csv, tmp_path):
    params = {"epochs": "2", "final_weights": "last"}
    itself = execute(plan_run(RunRequest(task="toy-classification", data=str(toy_csv), params=params, out=str(tmp_path / "a"))))
    prepared = prepare_task("toy-classification", str(toy_csv), params)
    torch.manual_seed(12345)  # whatever happens between the check and Start
    torch.randn(100)
    plan = plan_run(RunRequest(task="toy-classification", data=str(toy_csv), params=params, out=str(tmp_path / "b")), prepared=prepared)
    assert plan.reused_preparation
    handed = execute(plan)
    assert handed.status == itself.status == "completed"
    a = load_file(str(RunDir(itself.run_dir).last_checkpoint))
    b = load_file(str(RunDir(handed.run_dir).last_checkpoint))
    for key in (k for k in a if k.startswith("model.")):
        assert torch.equal(a[key], b[key]), key
