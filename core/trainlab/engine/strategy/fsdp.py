"""One rank of a torchrun group whose model is sharded across the ranks (``sharding=fsdp``: FSDP2).

Each rank keeps a slice of every weight, of its gradient and of the
optimizer's state, so a full fine-tune needs about 1/world of what DDP needs
per GPU for those (the activations stay whole).  What changes against DDP
(``ddp.DataParallel``, whose batches, shares, stop and pause agreement and
evaluation merging this keeps):

* ``setup_model``: ``torch.distributed.fsdp.fully_shard`` on each transformer
  block (the model's ``_no_split_modules`` classes, as Hugging Face models
  declare them, else the largest list of like modules), then on the whole
  model; the block's weights are gathered just before its forward and
  backward and freed after.  Under ``precision=bf16`` the gathered weights
  are bfloat16 and the gradients are reduced in float32
  (``MixedPrecisionPolicy``); ``fsdp_offload=true`` keeps the shards, their
  gradients and the optimizer's state in CPU memory (``CPUOffloadPolicy``),
  the optimizer stepping there.  The optimizer is made after the sharding
  (the loop's order), over the shards.
* every forward and backward is collective (the gathers, the gradients'
  reduce-scatter): accumulation inner steps still reduce (gradients stay
  sharded, the point of sharding), and an out-of-memory cannot be waited out
  by one rank as DDP does; it fails the run, with what to change.
* clipping: the gradients are DTensors; their norm is the whole model's.
* evaluation (``evaluation_model``): the full weights gathered once into a
  plain copy of the model (made before sharding, its weights on the meta
  device otherwise), which scores this rank's share of the batches with no
  collective per batch (the ranks hold different numbers of batches); its
  weights go back to the meta device at the next step or checkpoint.  Every
  rank holds the whole weights while it evaluates, as under DDP.
* checkpoints: the full weights and optimizer state gathered to rank 0's CPU
  (``torch.distributed.checkpoint.state_dict``, ``full_state_dict``) and
  written in the engine's one safetensors file, the optimizer's state
  numbered by parameter as ``Optimizer.state_dict`` numbers it: the same file
  a one-process or DDP run writes, so a run resumes under any strategy.  On
  resume rank 0 reads it and the ranks take their shards of what it
  broadcasts (``broadcast_from_rank0``).
* ``final_model``: after training, that plain copy with the full weights on
  every rank: the final evaluation, the best weights and the export use it.
"""

from __future__ import annotations

import copy
from contextlib import nullcontext
from typing import Any

from trainlab.api.errors import RunFailed, UsageError
from trainlab.engine import distributed
from trainlab.engine.checkpoint import (
    join_optimizer_state,
    model_state,
    read_checkpoint,
    read_checkpoint_header,
    restore_training_state,
    split_optimizer_state,
    state_tensors,
    write_checkpoint,
)
from trainlab.engine.device import is_out_of_memory
from trainlab.engine.strategy.ddp import DataParallel


def sharding_problem(*, sharding: str, world_size: int, finetune: str, precision: str, cuda: bool, micro_batch_size: str) -> str:
    """Why ``sharding=fsdp`` cannot run with these settings ('' when it can)."""
    if sharding != "fsdp":
        return ""
    if world_size < 2:
        return ("sharding=fsdp splits the model across several processes, and this run is one: "
                "start it with --nproc-per-node N (or --gpus), or leave sharding=none")  # fmt: skip
    if finetune == "qlora":
        return "sharding=fsdp with finetune=qlora: the 4-bit base weights cannot be sharded; use finetune=lora or full"
    if precision == "fp16" and cuda:
        return "sharding=fsdp with precision fp16: the gradient scaler does not see the other ranks' shards; use --precision bf16 or fp32"
    if str(micro_batch_size).strip() not in ("0", ""):
        return "sharding=fsdp with micro_batch_size: every micro-batch's forward is collective and the ranks' shares may split unevenly; use grad_accum"
    return ""


def transformer_blocks(model: Any) -> list[Any]:
    """The modules each sharded on their own: the model's declared blocks (``_no_split_modules``,
    as Hugging Face models name their decoder layers) or the largest list of modules of one kind."""
    import torch

    declared: set[str] = set()
    for module in model.modules():
        declared.update(getattr(module, "_no_split_modules", None) or ())
    if declared:
        blocks = [m for m in model.modules() if type(m).__name__ in declared and m is not model]
        if blocks:
            return blocks
    best: list[Any] = []
    best_size = 0
    for module in model.modules():
        if isinstance(module, torch.nn.ModuleList) and len(module) > 1 and len({type(m) for m in module}) == 1:
            size = sum(p.numel() for p in module.parameters())
            if size > best_size:
                best, best_size = list(module), size
    return best


def _meta_copy(model: Any) -> Any:
    """A copy of ``model`` whose parameters are on the meta device (no memory); buffers are copied."""
    import torch

    memo: dict[int, Any] = {}
    for param in model.parameters():
        if id(param) not in memo:
            memo[id(param)] = torch.nn.Parameter(torch.empty_like(param, device="meta"), requires_grad=param.requires_grad)
    return copy.deepcopy(model, memo)


class FullySharded(DataParallel):
    """One rank of ``group``, the model sharded across the group's ranks (FSDP2)."""

    def __init__(self, group: distributed.RankGroup, *, precision: str = "fp32", offload: bool = False):
        super().__init__(group)
        self.precision = precision
        self.offload = offload
        self._model: Any = None
        self._shell: Any = None  # the plain copy final_model fills in
        self._filled = False  # the plain copy holds the full weights (evaluation_model)

    # -- the model -------------------------------------------------------------------
    def setup_model(self, model: Any) -> Any:
        import torch
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import (
            CPUOffloadPolicy,
            MixedPrecisionPolicy,
            OffloadPolicy,
            fully_shard,
        )

        if any(type(p).__name__ == "Params4bit" for p in model.parameters()):
            raise UsageError("sharding=fsdp: the model has 4-bit (QLoRA) weights, which fully_shard cannot shard; use finetune=lora or full")
        cuda = self.group.device.startswith("cuda")
        mesh = init_device_mesh("cuda" if cuda else "cpu", (self.world_size,))
        if self.precision == "bf16":
            mixed = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        else:
            mixed = MixedPrecisionPolicy()
        offload = CPUOffloadPolicy(pin_memory=cuda) if self.offload else OffloadPolicy()
        self._shell = _meta_copy(model)
        blocks = transformer_blocks(model)
        for block in blocks:
            fully_shard(block, mesh=mesh, mp_policy=mixed, offload_policy=offload)
        fully_shard(model, mesh=mesh, mp_policy=mixed, offload_policy=offload)
        self._model = model
        self.blocks = len(blocks)
        return model

    def final_model(self, model: Any) -> Any:
        """Every rank's plain copy of the model, holding the full trained weights (collective)."""
        if model is not self._model:
            return model
        shell = self.evaluation_model(model)
        self._shell, self._filled = None, False
        return shell

    def evaluation_model(self, model: Any) -> Any:
        """The plain copy of the model with the full weights gathered into it, on every rank
        (collective); emptied again at the next step or checkpoint."""
        from torch.distributed.checkpoint.state_dict import (
            StateDictOptions,
            get_model_state_dict,
        )

        if model is not self._model:
            return model
        if not self._filled:
            full = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True))
            device = self._device()
            self._shell.load_state_dict({k: v.to(device) for k, v in full.items()}, assign=True)
            if hasattr(self._shell, "tie_weights"):  # assign=True loaded tied weights as two tensors
                self._shell.tie_weights()
            self._filled = True
        self._shell.train(model.training)
        return self._shell

    def _device(self) -> Any:
        import torch

        return torch.device(self.group.device)

    def _empty_shell(self) -> None:
        """The plain copy's weights back to the meta device (after an evaluation)."""
        import torch

        if not self._filled:
            return
        meta: dict[int, Any] = {}
        for module in self._shell.modules():
            for name, param in list(module._parameters.items()):
                if param is not None:
                    if id(param) not in meta:
                        meta[id(param)] = torch.nn.Parameter(torch.empty_like(param, device="meta"), requires_grad=param.requires_grad)
                    module._parameters[name] = meta[id(param)]
        self._filled = False

    # -- one step --------------------------------------------------------------------
    def begin_step(self, train_model: Any) -> None:
        self._empty_shell()

    def no_sync(self, train_model: Any, last: bool) -> Any:
        return nullcontext()  # every micro-batch reduce-scatters: the gradients stay sharded

    def backward(self, loss: Any, scaler: Any, last: bool) -> None:
        scaler.scale(loss).backward()

    def clip_gradients(self, params: list[Any], max_norm: float) -> None:
        import torch

        # the norm over DTensor gradients is the whole model's (each rank's shards, reduced)
        torch.nn.utils.clip_grad_norm_(params, max_norm)

    def piece_out_of_memory(self, exc: BaseException, last: bool) -> None:
        if not is_out_of_memory(exc):
            raise exc
        # the other ranks wait in this forward's or backward's collective: no rank can redo the step alone
        raise RunFailed(
            f"rank {self.rank} ran out of memory in a sharded step (sharding=fsdp), which cannot be redone: "
            "lower --batch-size, set fsdp_offload=true, use gradient checkpointing or more GPUs"
        ) from None

    def step_out_of_memory(self, synced: bool, stand_in: Any) -> list[int]:
        return []  # every piece ran (an out-of-memory failed the run above)

    # -- checkpoints -----------------------------------------------------------------
    def save_checkpoint(self, path: Any, model: Any, meta: dict[str, Any], **training_state: Any) -> None:
        """The full state gathered to rank 0's CPU (collective); rank 0 writes the engine's checkpoint file."""
        from torch.distributed.checkpoint.state_dict import (
            StateDictOptions,
            get_model_state_dict,
            get_optimizer_state_dict,
        )

        if model is not self._model:
            super().save_checkpoint(path, model, meta, **training_state)
            return
        self._empty_shell()
        options = StateDictOptions(full_state_dict=True, cpu_offload=True)
        weights = get_model_state_dict(model, options=options)
        full = training_state.get("full", True)
        optimizer = training_state.get("optimizer")
        parts = None
        if full and optimizer is not None:
            by_name = get_optimizer_state_dict(model, optimizer, options=options)
            if self.is_main:
                parts = split_optimizer_state(_numbered(by_name))
        if self.is_main:
            tensors, aliases = state_tensors(weights)
            write_checkpoint(path, tensors, aliases, meta, optimizer_parts=parts, scheduler=training_state.get("scheduler"),
                             scaler=training_state.get("scaler"), full=full)  # fmt: skip
        self.barrier()

    def read_checkpoint(self, path: Any, model: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        if model is self._model and not self.is_main:
            return {}, read_checkpoint_header(path)  # rank 0 reads the tensors and broadcasts them
        return read_checkpoint(path)

    def load_weights(self, model: Any, tensors: dict[str, Any], plain: dict[str, Any]) -> None:
        from torch.distributed.checkpoint.state_dict import (
            StateDictOptions,
            set_model_state_dict,
        )

        if model is not self._model:
            super().load_weights(model, tensors, plain)
            return
        self._empty_shell()
        state = model_state(tensors, plain) if self.is_main else {}
        set_model_state_dict(model, state, options=StateDictOptions(full_state_dict=True, broadcast_from_rank0=True))

    def restore_training_state(self, model: Any, tensors: dict[str, Any], plain: dict[str, Any], **training_state: Any) -> None:
        from torch.distributed.checkpoint.state_dict import (
            StateDictOptions,
            set_optimizer_state_dict,
        )

        optimizer = training_state.pop("optimizer", None)
        if model is self._model and optimizer is not None and "optimizer" in plain:
            by_name: dict[str, Any] = {}
            if self.is_main:
                by_name = _named(join_optimizer_state(tensors, plain["optimizer"]), _parameter_names(model, optimizer))
            options = StateDictOptions(full_state_dict=True, broadcast_from_rank0=True)
            set_optimizer_state_dict(model, optimizer, by_name, options=options)
            optimizer = None
        restore_training_state(tensors, plain, optimizer=optimizer, **training_state)


def _numbered(by_name: dict[str, Any]) -> dict[str, Any]:
    """A full optimizer state dict keyed by parameter names (torch.distributed.checkpoint's) as
    ``Optimizer.state_dict`` numbers it: the parameters of its groups in order from 0."""
    number: dict[str, int] = {}
    groups = []
    for group in by_name["param_groups"]:
        ids = []
        for name in group["params"]:
            number.setdefault(name, len(number))
            ids.append(number[name])
        groups.append({**group, "params": ids})
    state = {number[name]: values for name, values in by_name["state"].items() if name in number}
    return {"state": state, "param_groups": groups}


def _parameter_names(model: Any, optimizer: Any) -> list[str]:
    """The names of the optimizer's parameters, in its groups' order (``Optimizer.state_dict``'s numbers)."""
    names = {id(p): name for name, p in model.named_parameters(remove_duplicate=False)}
    return [names[id(p)] for group in optimizer.param_groups for p in group["params"]]


def _named(numbered: dict[str, Any], names: list[str]) -> dict[str, Any]:
    """``_numbered`` undone: the parameters' numbers back to their names."""
    state = {names[int(i)]: values for i, values in numbered["state"].items()}
    groups = [{**group, "params": [names[int(i)] for i in group["params"]]} for group in numbered["param_groups"]]
    return {"state": state, "param_groups": groups}
