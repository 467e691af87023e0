"""sharding=fsdp: the FSDP2 strategy over two gloo ranks on the CPU, against DDP, and its checkpoints."""

from __future__ import annotations

import os

import pytest
from helpers import run_two_ranks
from trainlab.api.errors import UsageError
from trainlab.api.params import ENGINE_PARAMS, resolve
from trainlab.engine.strategy import sharding_problem

# FSDP2 and DDP over the same global batches: the same sums reduced in
# another order (reduce-scatter against all-reduce), so float32 rounding of
# about 1e-7 a step; 1e-5 leaves room over a few Adam steps with clipping.
SAME_CURVE_REL_TOL = 1e-5
STEPS, SAVED_AT = 6, 3


def _decoder(seed: int):
    """A tiny decoder-shaped model: embedding, a list of residual blocks, an output head."""
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self, width):
            super().__init__()
            self.norm = nn.LayerNorm(width)
            self.up, self.down = nn.Linear(width, 2 * width), nn.Linear(2 * width, width)

        def forward(self, x):
            return x + self.down(torch.relu(self.up(self.norm(x))))

    class Decoder(nn.Module):
        def __init__(self, vocab=13, width=8, layers=3):
            super().__init__()
            self.embed = nn.Embedding(vocab, width)
            self.layers = nn.ModuleList(Block(width) for _ in range(layers))
            self.head = nn.Linear(width, vocab, bias=False)

        def forward(self, tokens):
            x = self.embed(tokens)
            for block in self.layers:
                x = block(x)
            return self.head(x)

    torch.manual_seed(seed)
    return Decoder()


def _train(strategy, model, data, steps, *, start=0, optimizer=None, restore=None):
    """``steps`` optimizer steps of ``model`` through ``strategy`` on this rank's share of ``data``; the group's losses."""
    import torch
    import torch.distributed as dist
    from torch import nn

    train_model = strategy.setup_model(model)
    if optimizer is None:
        optimizer = strategy.make_optimizer(lambda: torch.optim.AdamW(model.parameters(), lr=0.05, weight_decay=0.01))
    scaler = torch.amp.GradScaler("cpu", enabled=False)
    if restore is not None:
        tensors, plain = strategy.read_checkpoint(restore, model)
        strategy.load_weights(model, tensors, plain)
        strategy.restore_training_state(model, tensors, plain, optimizer=optimizer, scheduler=None, scaler=scaler)
    tokens, targets = data
    losses = []
    for step in range(start, start + steps):
        mine = [i for i in range(step * 8, step * 8 + 8)][strategy.rank :: 2]
        strategy.begin_step(train_model)
        logits = train_model(tokens[mine])
        loss = nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets[mine].reshape(-1))
        strategy.backward(loss, scaler, True)
        assert strategy.step_out_of_memory(True, lambda: None) == []
        strategy.clip_gradients(list(model.parameters()), 0.5)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        group_loss = loss.detach().clone()
        dist.all_reduce(group_loss)
        losses.append(float(group_loss) / 2)
    return train_model, optimizer, losses


def _rank(rank: int, port: int, folder: str, queue) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS="1")
    import torch
    import torch.distributed as dist
    from safetensors import safe_open
    from torch.distributed.fsdp import FSDPModule
    from trainlab.engine.distributed import RankGroup
    from trainlab.engine.strategy import DataParallel, FullySharded

    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=2)
    group = RankGroup(rank, 2, rank, 2, "gloo", "cpu")
    generator = torch.Generator().manual_seed(1)
    data = (torch.randint(0, 13, (64, 5), generator=generator), torch.randint(0, 13, (64, 5), generator=generator))
    results: dict = {}

    _, _, results["ddp"] = _train(DataParallel(group), _decoder(0), data, STEPS)

    sharded = FullySharded(group)
    model, optimizer, first = _train(sharded, _decoder(0), data, SAVED_AT)
    results["blocks"] = sharded.blocks
    results["sharded"] = all(type(p).__name__ == "DTensor" for p in model.parameters())
    path = os.path.join(folder, "last.safetensors")
    sharded.save_checkpoint(path, model, {"kind": "last"}, optimizer=optimizer)
    # an evaluation with the weights gathered: the ranks run different numbers of forwards, no collective among them
    evaluated = sharded.evaluation_model(model)
    with torch.inference_mode():
        for _ in range(1 + rank):
            evaluated(data[0][:4])
    results["evaluated plain"] = all(type(p).__name__ == "Parameter" for p in evaluated.parameters())
    [p.detach().numpy() for p in evaluated.parameters()]  # a task may read the weights as NumPy arrays
    _, _, rest = _train_continue(sharded, model, optimizer, data)
    results["fsdp"] = first + rest
    final = sharded.final_model(model)
    results["final plain"] = not isinstance(final, FSDPModule) and all(type(p).__name__ == "Parameter" for p in final.parameters())
    with torch.no_grad():
        results["final logits"] = final(data[0][:2]).sum().item()

    resumed = FullySharded(group)
    _, _, results["resumed"] = _train(resumed, _decoder(7), data, STEPS - SAVED_AT, start=SAVED_AT, restore=path)

    if rank == 0:
        with safe_open(path, framework="pt") as handle:
            results["keys"] = sorted(handle.keys())
    results["files"] = sorted(os.listdir(folder))
    # leave together: a rank tearing the group down while its peer's last
    # asynchronous gloo work is in flight aborts at interpreter exit (SIGABRT)
    dist.barrier()
    dist.destroy_process_group()
    queue.put((rank, results))


def _train_continue(strategy, model, optimizer, data):
    """The steps after the checkpoint, on the model already sharded."""
    strategy.setup_model = lambda m: m  # already sharded: the same model and optimizer go on
    return _train(strategy, model, data, STEPS - SAVED_AT, start=SAVED_AT, optimizer=optimizer)


def test_fsdp_on_two_ranks_follows_ddp_and_resumes_from_its_safetensors_checkpoint_exactly(tmp_path):
    import torch
    from safetensors.torch import load_file

    got = run_two_ranks(_rank, str(tmp_path))
    for rank in (0, 1):
        mine = got[rank]
        assert mine["blocks"] == 3 and mine["sharded"]  # each block sharded on its own, then the root
        assert mine["fsdp"] == pytest.approx(mine["ddp"], rel=SAME_CURVE_REL_TOL), (mine["fsdp"], mine["ddp"])
        assert mine["fsdp"][-1] < mine["fsdp"][0]  # it learns
        # resumed from the checkpoint into other initial weights: the same steps, bit for bit
        assert mine["resumed"] == mine["fsdp"][SAVED_AT:]
        assert mine["final plain"] and mine["evaluated plain"]
        assert mine["files"] == ["last.safetensors"]  # rank 0 wrote one file; no pickled metadata beside it
    assert got[0]["final logits"] == got[1]["final logits"]  # every rank holds the whole trained model
    # the engine's checkpoint format: whole tensors under the model's own names, the optimizer numbered
    tensors = load_file(str(tmp_path / "last.safetensors"))
    plain_model = _decoder(0)
    assert {k[len("model.") :] for k in tensors if k.startswith("model.")} == set(plain_model.state_dict())
    assert tensors["model.layers.0.up.weight"].shape == (16, 8)
    assert {k.split(".")[2] for k in tensors if k.startswith("optim.")} == {"step", "exp_avg", "exp_avg_sq"}
    from trainlab.engine.checkpoint import join_optimizer_state, read_checkpoint

    full, plain = read_checkpoint(tmp_path / "last.safetensors")
    plain_model.load_state_dict({k[len("model.") :]: v for k, v in full.items() if k.startswith("model.")})  # a one-process run reads it
    optimizer = torch.optim.AdamW(plain_model.parameters(), lr=0.05)
    optimizer.load_state_dict(join_optimizer_state(full, plain["optimizer"]))
    assert float(optimizer.state_dict()["state"][0]["step"]) == SAVED_AT


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"world_size": 1}, "--nproc-per-node"),
        ({"finetune": "qlora"}, "finetune=qlora"),
        ({"precision": "fp16", "cuda": True}, "precision fp16"),
        ({"micro_batch_size": "4"}, "micro_batch_size"),
    ],
)
def test_sharding_fsdp_refuses_what_cannot_work_naming_the_option(settings, named):
    base = {"sharding": "fsdp", "world_size": 2, "finetune": "full", "precision": "bf16", "cuda": True, "micro_batch_size": "0"}
    assert sharding_problem(**base) == ""
    problem = sharding_problem(**{**base, **settings})
    assert "sharding=fsdp" in problem and named in problem
    assert sharding_problem(**{**base, **settings, "sharding": "none"}) == ""


def test_the_sharding_parameter_is_validated():
    from trainlab.api.descriptors import TaskSpec

    spec = TaskSpec(id="demo-task", title="Demo", factory="x:y")
    params = resolve(spec, ENGINE_PARAMS, explicit={"sharding": "fsdp", "fsdp_offload": "true"})
    assert (params.engine.sharding, params.engine.fsdp_offload) == ("fsdp", True)
    assert resolve(spec, ENGINE_PARAMS).engine.sharding == "none"
    with pytest.raises(UsageError, match="sharding"):
        resolve(spec, ENGINE_PARAMS, explicit={"sharding": "zero3"})


def test_the_memory_estimate_splits_weights_gradients_and_optimizer_state_under_fsdp():
    from trainlab.engine.memory import MemoryEstimate, sharded_static, static_bytes

    model = _decoder(0)
    whole = static_bytes(model)
    half = sharded_static(whole, model, 2)
    block = sum(p.numel() * 4 for p in model.layers[0].parameters())
    own = sum(p.numel() * 4 for p in (*model.embed.parameters(), *model.head.parameters()))  # outside the blocks: gathered all step
    assert half.gradients == -(-whole.gradients // 2) and half.optimizer == -(-whole.optimizer // 2)
    assert half.weights == -(-whole.weights // 2) + own + 2 * block  # the block computing and the next one, gathered
    offloaded = sharded_static(whole, model, 2, offload=True)
    assert (offloaded.weights, offloaded.gradients, offloaded.optimizer) == (own + 2 * block, 0, 0)
    estimate = MemoryEstimate("cuda:0", "gpu", 24 << 30, half.weights, half.gradients, half.optimizer, 0, 0, 1, 8, 0.0, 0.0, 1, 1, shards=2)
    assert "per process (weights, gradients and optimizer state split 2 ways)" in estimate.summary_line()
