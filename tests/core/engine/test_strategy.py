"""The strategy the loop calls: one process through the same loop, and DDP over two gloo ranks."""

from __future__ import annotations

import copy
import os

from helpers import (
    assert_same_weights,
    checkpoint_weights,
    run_toy_classification,
    run_two_ranks,
)
from trainlab.api.callbacks import CallbackList, RunControl, RunState
from trainlab.engine.loop import Trainer
from trainlab.engine.plan import RunRequest, plan_run
from trainlab.engine.strategy import SingleProcess, for_run

TOY = {"epochs": "2", "batch_size": "16", "device": "cpu", "seed": "3", "grad_accum": "2"}


def test_a_run_in_one_process_is_the_single_process_strategy_through_the_same_loop(toy_plugin, toy_csv, tmp_path):
    """The loop driven with a SingleProcess strategy given by hand ends with the weights of an
    ordinary run (which picks its strategy itself), bit for bit."""
    assert isinstance(for_run(), SingleProcess)  # no torchrun group in this process
    ordinary = run_toy_classification(toy_csv, tmp_path, "ordinary", **TOY)
    assert ordinary.status == "completed"

    plan = plan_run(RunRequest(task="toy-classification", data=str(toy_csv), params=dict(TOY), out=str(tmp_path / "by-hand")))
    plan.run_dir.path.mkdir(parents=True)
    events: list = []
    state = RunState(task_id=plan.task_id, params=plan.params, run_dir=plan.run_dir.path, control=RunControl(), emit_to=events.append)
    plan.ctx.run_dir = plan.run_dir.path
    plan.random_state.restore()  # as a run does: the generators as preparation left them
    model = plan.task.prepare_model(plan.task.build_model(plan.ctx), plan.ctx)
    strategy = SingleProcess()
    trainer = Trainer(plan.task, model, plan.ctx, state, CallbackList([]), position=plan.position.copy(),
                      segments=list(plan.segments), total_steps=plan.total_steps, strategy=strategy)  # fmt: skip
    assert trainer.train_model is model and trainer.control is state.control  # nothing wrapped, no agreed view
    trainer.fit()
    trainer.close()
    assert trainer.position.step == plan.total_steps and trainer.position.epoch == 3
    assert_same_weights(checkpoint_weights(tmp_path / "by-hand"), checkpoint_weights(tmp_path / "ordinary"))


def _rank(rank: int, port: int, folder: str, queue) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS="1")
    import torch
    import torch.distributed as dist
    from torch import nn
    from trainlab.engine.distributed import AgreedControl, RankGroup
    from trainlab.engine.strategy import DataParallel

    dist.init_process_group("gloo", rank=rank, world_size=2)
    strategy = DataParallel(RankGroup(rank, 2, rank, 2, "gloo", "cpu"))
    torch.manual_seed(0)  # the same weights and data on both ranks
    model = nn.Linear(4, 3)
    plain = copy.deepcopy(model)  # the whole group's batch in one process, for the expected gradient
    x, y = torch.randn(9, 4), torch.randint(0, 3, (9,))
    train_model = strategy.setup_model(model)
    scaler = torch.amp.GradScaler("cpu", enabled=False)
    results: dict = {"main": strategy.is_main, "agreed view": isinstance(strategy.control_view(RunControl()), AgreedControl)}
    # three global batches of 3, 5 and 1 examples: the ranks hold 2+1, 3+2 and 1+0 (a repeat weighted 0)
    mine = strategy.train_batches([[0, 1, 2], [3, 4, 5, 6, 7], [8]])
    results["batches"] = mine
    errors = []
    for index, batch in enumerate(mine):
        share, counted = strategy.step_share((index, index + 1), len(batch))
        strategy.begin_step(train_model)
        with strategy.no_sync(train_model, True):
            loss = nn.functional.cross_entropy(train_model(x[batch]), y[batch])
            strategy.backward(loss * share, scaler, True)
        results[f"out of memory {index}"] = strategy.step_out_of_memory(True, lambda: None)
        whole = [[0, 1, 2], [3, 4, 5, 6, 7], [8]][index]
        plain.zero_grad()
        nn.functional.cross_entropy(plain(x[whole]), y[whole]).backward()
        errors.append(max(float((a.grad - b.grad).abs().max()) for a, b in zip(model.parameters(), plain.parameters())))
        results[f"counted {index}"] = counted
        model.zero_grad(set_to_none=True)
    results["largest gradient error"] = max(errors)
    # rank 1 runs out of memory before its synchronising backward: both ranks learn it, after the same all-reduce
    strategy.begin_step(train_model)
    if rank == 0:
        loss = nn.functional.cross_entropy(train_model(x[:3]), y[:3])
        strategy.backward(loss, scaler, True)
        results["out of memory, told"] = strategy.step_out_of_memory(True, lambda: None)
    else:
        stand_in = lambda: nn.functional.cross_entropy(train_model(x[:2]), y[:2])
        results["out of memory, told"] = strategy.step_out_of_memory(False, stand_in)
    meta = strategy.checkpoint_meta("last")
    results["rank states"] = len(meta["rank_rng"])
    results["best meta"] = strategy.checkpoint_meta("best")
    strategy.save_checkpoint(os.path.join(folder, f"written-by-{rank}.safetensors"), model, {"kind": "test"}, full=False)
    results["written"] = sorted(os.listdir(folder))  # after the barrier: rank 0's, and no other
    dist.destroy_process_group()
    queue.put((rank, results))


def test_the_ddp_strategy_weights_uneven_shares_into_the_group_mean_and_agrees_on_out_of_memory(tmp_path):
    got = run_two_ranks(_rank, str(tmp_path))
    assert got[0]["main"] is True and got[1]["main"] is False
    assert got[0]["agreed view"] and got[1]["agreed view"]
    assert got[0]["batches"] == [[0, 2], [3, 5, 7], [8]] and got[1]["batches"] == [[1], [4, 6], [8]]
    for rank in (0, 1):
        # each rank's gradient is that of the whole global batch's mean loss, shares and padding included
        assert got[rank]["largest gradient error"] < 1e-6, got[rank]["largest gradient error"]
        assert [got[rank][f"counted {i}"] for i in range(3)] == [3, 5, 1]
        assert [got[rank][f"out of memory {i}"] for i in range(3)] == [[], [], []]
        assert got[rank]["out of memory, told"] == [1]
        assert got[rank]["rank states"] == 2 and got[rank]["best meta"] == {}
        assert got[rank]["written"] == ["written-by-0.safetensors"]
