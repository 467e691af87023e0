"""How much of a text model trains: every weight, the head only, or LoRA adapters plus the head.

The head (the classification layer transformers builds for the labels) is
always trained and always saved: with LoRA it goes into PEFT's
``modules_to_save``, under the model's real name for it, checked to exist,
because a head left out reloads with random weights and nothing says so
(huggingface/peft#577, #876).  Per architecture: which projections get
adapters, and what the head is called.

Gradient checkpointing is non-reentrant (the reentrant kind gives frozen
inputs no gradient path); with PEFT the embeddings' output is made to
require grad, so adapters behind a checkpointed block still get gradients.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Callable

import torch

from trainlab import RunFailed, UsageError, check_quantized_training, resolve_finetune, size_class

ENCODER_TARGETS = ("query", "key", "value")
DECODER_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")

# model_type -> (projections that get adapters, the head's attribute names)
ARCHITECTURES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "bert": (ENCODER_TARGETS, ("classifier",)),
    "roberta": (ENCODER_TARGETS, ("classifier",)),
    "xlm-roberta": (ENCODER_TARGETS, ("classifier",)),
    "camembert": (ENCODER_TARGETS, ("classifier",)),
    "electra": (ENCODER_TARGETS, ("classifier",)),
    "ernie": (ENCODER_TARGETS, ("classifier",)),
    "distilbert": (("q_lin", "k_lin", "v_lin"), ("pre_classifier", "classifier")),
    "qwen2": (DECODER_TARGETS, ("score",)),
    "qwen3": (DECODER_TARGETS, ("score",)),
    "llama": (DECODER_TARGETS, ("score",)),
    "mistral": (DECODER_TARGETS, ("score",)),
    "gemma": (DECODER_TARGETS, ("score",)),
    "phi3": (("qkv_proj", "o_proj", "gate_up_proj", "down_proj"), ("score",)),
}
DECODER_TYPES = {"qwen2", "qwen3", "llama", "mistral", "gemma", "phi3"}


@dataclass(frozen=True)
class FinetunePlan:
    """What a run trains, resolved from the parameters and the model's size."""

    mode: str  # full, head, lora, qlora
    gradient_checkpointing: bool
    lora_rank: int
    lora_alpha: int
    lora_dropout: float
    target_modules: tuple[str, ...]
    head: tuple[str, ...]
    n_params: int
    size_class: str

    def to_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "gradient_checkpointing": self.gradient_checkpointing,
            "size_class": self.size_class,
            "parameters": self.n_params,
            **(
                {"lora_rank": self.lora_rank, "lora_alpha": self.lora_alpha, "lora_dropout": self.lora_dropout, "target_modules": list(self.target_modules)}
                if self.mode in ("lora", "qlora")
                else {}
            ),
            "head": list(self.head),
        }


def count_parameters(config: Any) -> int:
    """Parameters of the sequence classifier ``config`` describes, counted on the meta device (no memory)."""
    from transformers import AutoModelForSequenceClassification

    with torch.device("meta"):
        model = AutoModelForSequenceClassification.from_config(config)
    return sum(p.numel() for p in model.parameters())


def plan_finetune(params: dict[str, Any], config: Any, *, preset: bool, device: Any, memory_tight: Callable[[int, str], bool]) -> FinetunePlan:
    """Resolve ``finetune``, the LoRA settings and ``gradient_checkpointing`` for ``config``'s model.

    ``memory_tight(n_params, mode)`` says whether the weights, gradients
    and optimizer states alone would fill most of the device (``auto``
    checkpointing turns on then).  UsageError for what cannot run here.
    """
    model_type = str(getattr(config, "model_type", ""))
    n_params = count_parameters(config)
    cls = size_class(n_params)
    cuda = getattr(device, "type", str(device)) == "cuda"
    requested = str(params.get("finetune") or "full")
    mode = "full" if preset and requested == "auto" else resolve_finetune(requested, n_params, cuda=cuda)
    if preset and mode in ("lora", "qlora", "head"):
        raise UsageError(
            f"finetune={mode} adapts a pretrained model, but tiny-bert is trained from scratch (random weights); "
            "use finetune=full, or --model with a pretrained folder"
        )
    if mode == "qlora":
        check_quantized_training("finetune=qlora (4-bit base weights)", device)
    targets_default, heads = ARCHITECTURES.get(model_type, ((), ("classifier", "score")))
    named = [t.strip() for t in str(params.get("lora_target_modules") or "auto").split(",") if t.strip()]
    targets = tuple(targets_default) if named in ([], ["auto"]) else tuple(named)
    if mode in ("lora", "qlora") and not targets:
        raise UsageError(
            f"finetune={mode}: no default LoRA target modules for model type {model_type!r}; "
            "name them with --set lora_target_modules=NAME,NAME (the Linear layers' names)"
        )
    rank = int(params.get("lora_rank") or 0) or cls.lora_rank
    alpha = int(params.get("lora_alpha") or 0) or 2 * rank
    checkpointing = str(params.get("gradient_checkpointing") or "auto")
    if checkpointing == "auto":
        on = cls.gradient_checkpointing or memory_tight(n_params, mode)
    else:
        on = checkpointing == "on"
    return FinetunePlan(
        mode=mode,
        gradient_checkpointing=on,
        lora_rank=rank,
        lora_alpha=alpha,
        lora_dropout=float(params.get("lora_dropout", 0.05)),
        target_modules=targets,
        head=heads,
        n_params=n_params,
        size_class=cls.name,
    )


def head_names(model: Any, plan: FinetunePlan) -> list[str]:
    """The head's attribute names on ``model``; UsageError when the architecture has none of them."""
    children = dict(model.named_children())
    found = [name for name in plan.head if name in children]
    if not found:
        raise UsageError(
            f"cannot find the classification head of this {type(model).__name__} (looked for {', '.join(plan.head)}; "
            f"it has {', '.join(children)}): without it the head would not be trained and saved"
        )
    return found


def saved_modules(model: Any, heads: list[str]) -> list[str]:
    """The head and every other layer that started with new (random) weights: trained and saved in full."""
    extra = [name for name in getattr(model, "trainlab_new_modules", []) if name.split(".", 1)[0] not in heads]
    return [*heads, *extra]


def apply_finetune(model: Any, plan: FinetunePlan, log: Callable[[str], None]) -> Any:
    """``model`` set up to train what ``plan`` says (a PeftModel for LoRA)."""
    heads = head_names(model, plan)
    if plan.gradient_checkpointing:
        non_reentrant = {"use_reentrant": False}
        if hasattr(model, "activation_checkpointing_enable"):  # transformers 5's name
            model.activation_checkpointing_enable(activation_checkpointing_kwargs=non_reentrant)
        else:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=non_reentrant)
        model.config.use_cache = False
    if plan.mode == "head":
        for name, param in model.named_parameters():
            param.requires_grad = name.split(".", 1)[0] in heads
    elif plan.mode in ("lora", "qlora"):
        from peft import LoraConfig, get_peft_model

        if plan.mode == "qlora":
            from peft import prepare_model_for_kbit_training

            model = prepare_model_for_kbit_training(
                model,
                use_gradient_checkpointing=plan.gradient_checkpointing,
                gradient_checkpointing_kwargs={"use_reentrant": False},
            )
        config = LoraConfig(
            task_type="SEQ_CLS",
            r=plan.lora_rank,
            lora_alpha=plan.lora_alpha,
            lora_dropout=plan.lora_dropout,
            target_modules=list(plan.target_modules),
            modules_to_save=saved_modules(model, heads),
        )
        try:
            with warnings.catch_warnings():
                # peft asks transformers' deprecated is_gradient_checkpointing (a FutureWarning per run)
                warnings.simplefilter("ignore", FutureWarning)
                model = get_peft_model(model, config)
        except ValueError as exc:  # target modules not found in the model
            raise UsageError(f"finetune={plan.mode}: {' '.join(str(exc).split())}") from None
        if plan.gradient_checkpointing:
            model.enable_input_require_grads()
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    total = sum(p.numel() for p in model.parameters())
    what = {"full": "every weight", "head": f"the head ({', '.join(heads)})"}.get(plan.mode, f"LoRA rank {plan.lora_rank} adapters and the head")
    log(
        f"fine-tuning: {what}, {trainable:,} of {total:,} parameters trainable ({trainable / max(total, 1):.2%})"
        + ("; gradient checkpointing on" if plan.gradient_checkpointing else "")
    )
    return model


def is_peft(model: Any) -> bool:
    return hasattr(model, "peft_config") and hasattr(model, "merge_and_unload")


def check_adapters_trained(model: Any) -> None:
    """RunFailed when every ``lora_B`` is still zero: PEFT starts them at zero, so the adapters did nothing."""
    moved = [float(p.detach().abs().max()) for name, p in model.named_parameters() if "lora_B" in name]
    if not moved:
        raise RunFailed("finetune=lora: the model has no LoRA adapters (lora_B weights) to save")
    if max(moved) == 0.0:
        raise RunFailed(
            "finetune=lora: the adapters did not train (every lora_B weight is still zero); "
            "check that the learning rate (--lr) is above 0 and that the run had training steps"
        )
