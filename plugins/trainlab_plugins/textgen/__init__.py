"""Built-in plugin: ``text-generation``, instruction and chat fine-tuning (SFT) of local decoder LLMs.

Any folder that transformers loads as a causal LM (Qwen2/2.5/3, Llama 3.x,
Mistral, Gemma, Phi-3/4) learns to answer as the data does: Alpaca,
chat-messages, ShareGPT, prompt/response or plain-text files
(``textgen.data``), rendered with the model's chat template or a named one,
the loss on the assistant's turns only (``textgen.templates``).  The family
is this plugin's own, ``text-generation``: it returns its own metric
accumulator (``textgen.metrics``) and predictions (``GeneratedText``).

This module is what discovery imports: it declares the task only (no torch,
no transformers); the runtime is ``trainlab_plugins.textgen.task``.
"""

from __future__ import annotations

import dataclasses

from trainlab import (
    FINETUNE_PARAM,
    GRADIENT_CHECKPOINTING_PARAM,
    LORA_PARAMS,
    Column,
    ExampleRows,
    InputSpec,
    Metric,
    OutputSpec,
    Param,
    Preset,
    TaskSpec,
    hookimpl,
)

TASK_ID = "text-generation"
FAMILY = "text-generation"
TEMPLATES = ("auto", "chatml", "llama3", "qwen", "mistral", "gemma", "phi")

TINY_CHAT = "tiny-chat"
SUGGESTED_MODELS = (TINY_CHAT,)

PARAMS = (
    Param(
        "model",
        "choice",
        TINY_CHAT,
        "tiny-chat (built in, trained from scratch: for the sample and tests), a folder holding a transformers causal "
        "language model (Qwen, Llama, Mistral, Gemma, Phi) with its tokenizer, or a model name found offline (see `trainlab models`).",
        choices=SUGGESTED_MODELS,
        open_choices=True,
        title="Model",
        group="model",
    ),
    Param(
        "template",
        "choice",
        "auto",
        "Chat template: auto uses the model folder's own; a base model without one takes a named one "
        "(chatml, llama3, qwen, mistral, gemma, phi), whose turn markers are added to its tokenizer.",
        choices=TEMPLATES,
        title="Chat template",
        group="data",
    ),
    Param(
        "max_length",
        "int",
        1024,
        "Tokens per example; longer chats drop whole early turns (never the last answer), longer plain texts are cut into pieces.",
        minimum=16,
        maximum=131072,
        title="Max length",
        group="model",
    ),
    Param(
        "train_on_prompt",
        "bool",
        False,
        "Train on the whole conversation (system and user turns too), not only on the assistant's answers.",
        title="Train on prompts",
        group="training",
        advanced=True,
    ),
    Param(
        "packing",
        "bool",
        False,
        "Put several examples in one row of max_length tokens (no attention across them): far less padding.",
        title="Packing",
        group="training",
    ),
    Param("prompt_column", "str", "prompt", "CSV/TSV column (or JSON key) holding the prompt.", title="Prompt column", group="data", advanced=True),
    Param("response_column", "str", "response", "CSV/TSV column (or JSON key) holding the answer.", title="Response column", group="data", advanced=True),
    Param("text_column", "str", "text", "Column (or JSON key) holding a plain text, for continued pre-training.", title="Text column", group="data", advanced=True),
    Param(
        "val_fraction",
        "float",
        0.1,
        "Share of the examples held out for validation when the data has no val file.",
        minimum=0.01,
        maximum=0.9,
        title="Validation fraction",
        group="data",
    ),
    dataclasses.replace(
        FINETUNE_PARAM,
        default="auto",
        choices=("auto", "full", "lora", "qlora"),
        help="What training changes: full (every weight), lora (small adapters on the attention and MLP projections), "
        "qlora (LoRA on 4-bit base weights; CUDA and the trainlab[qlora] extra), auto (by the model's size: full up to 0.6B "
        "parameters and for tiny-chat, lora up to 3.5B, qlora above where it can run).",
    ),
    GRADIENT_CHECKPOINTING_PARAM,
    *LORA_PARAMS,
    Param(
        "lora_target_modules",
        "str",
        "auto",
        "Layers that get LoRA adapters, comma-separated (auto: the attention and MLP projections).",
        title="LoRA targets",
        group="model",
        advanced=True,
    ),
    Param(
        "eval_generations",
        "int",
        16,
        "At each evaluation, answer up to this many held-out prompts greedily and score them "
        "(exact match, ROUGE-L, chrF, share that stop by themselves); 0 turns it off.",
        minimum=0,
        maximum=10000,
        title="Generations per evaluation",
        group="task",
    ),
    Param("max_new_tokens", "int", 256, "Longest answer generated (evaluation, predict, chat).", minimum=1, maximum=32768, title="Max new tokens", group="task"),
    Param("temperature", "float", 0.0, "Sampling temperature for predict and chat; 0 is greedy.", minimum=0.0, maximum=5.0, title="Temperature", group="task", advanced=True),
    Param("top_p", "float", 1.0, "Nucleus sampling share (with temperature above 0).", minimum=0.01, maximum=1.0, title="Top-p", group="task", advanced=True),
    Param(
        "loss_chunk",
        "int",
        1024,
        "Trained tokens whose logits are computed at a time: the loss never holds the whole batch x length x vocabulary logits.",
        minimum=16,
        maximum=1 << 20,
        title="Loss chunk",
        group="training",
        advanced=True,
    ),
)

METRICS = (
    Metric("perplexity", "Perplexity", False, "number", "exp(eval loss per trained token): how surprised the model is by the answers."),
    Metric("token_accuracy", "Token accuracy", True, "percent", "Share of trained tokens the model predicts exactly (greedy, teacher-forced)."),
    Metric("exact_match", "Exact match", True, "percent", "Share of generated answers equal to the expected answer (whitespace trimmed)."),
    Metric("rouge_l", "ROUGE-L", True, "score", "Longest-common-subsequence F-measure of generated vs expected answer (torchmetrics)."),
    Metric("chrf", "chrF", True, "score", "Character n-gram F-score of generated vs expected answer (torchmetrics), 0..1."),
    Metric("stopped", "Stops by itself", True, "percent", "Share of generated answers that end with the end-of-turn token before max_new_tokens."),
)

DETAILS = (
    ExampleRows(
        name="generations",
        title="Generated answers",
        help="Held-out prompts answered greedily, the worst (lowest chrF) first.",
        columns=(
            Column("prompt", "Prompt"),
            Column("expected", "Expected"),
            Column("generated", "Generated"),
            Column("chrf", "chrF", kind="number", display="score"),
            Column("stopped", "Stopped", kind="text"),
        ),
        worst="chrf",
        higher_is_worse=False,
        input_column="prompt",
        truth_column="expected",
    ),
)

# LoRA on a pretrained LLM: QLoRA-paper-like settings (lr 2e-4, no weight
# decay, short warmup, cosine); a few epochs over an instruction set.
DEFAULTS = {"lr": 2e-4, "weight_decay": 0.0, "warmup_ratio": 0.03, "schedule": "cosine", "batch_size": 8, "epochs": 3}

PRESETS = (
    Preset(
        TINY_CHAT,
        title="Tiny chat model (from scratch)",
        description=(
            "A 2-layer decoder (hidden 96) with a tokenizer trained on the bundled sample's English and Chinese, "
            "randomly initialised: for demos, tests and machines without a pretrained model. Trained from scratch, "
            "it needs a far larger learning rate and more epochs than fine-tuning; at its size fp32 steps faster "
            "than bf16 on a CPU, and the sample's answers are a few tokens long."
        ),
        overrides={
            "lr": 3e-3, "warmup_ratio": 0.05, "epochs": 30, "batch_size": 16, "max_length": 128, "weight_decay": 0.01,
            "precision": "fp32", "max_new_tokens": 16, "final_weights": "last",
        },
    ),
)

TEXT_GENERATION = TaskSpec(
    id=TASK_ID,
    title="Fine-tune a language model (chat / instructions)",
    factory="trainlab_plugins.textgen.task:TextGenerationTask",
    description=(
        "Teach a local Qwen, Llama, Mistral, Gemma or Phi model to answer as your examples do: instruction or chat "
        "fine-tuning (LoRA, QLoRA or full), the loss on the assistant's answers, the end-of-turn token included so it stops."
    ),
    params=PARAMS,
    defaults=DEFAULTS,
    presets=PRESETS,
    data_kind="either",
    data_help=(
        "A .jsonl/.json file of chats (messages or ShareGPT conversations), Alpaca records (instruction, input, output) "
        "or prompt/response records; a .csv/.tsv with prompt and response columns; .txt or text records for plain text; "
        "or a folder with train.*, val.* and optionally test.* files."
    ),
    sample_data="samples/text-generation",
    family=FAMILY,
    metrics=METRICS,
    monitor="loss",
    classes=False,
    input=InputSpec(kind="text", suffixes=(".txt", ".jsonl", ".json", ".csv", ".tsv"), title="a prompt"),
    model_formats=("transformers",),
    output=OutputSpec(kind="generated-text", field="text"),
    details=DETAILS,
)


@hookimpl
def trainlab_api_version() -> str:
    return "2.1"


@hookimpl
def trainlab_tasks() -> list[TaskSpec]:
    return [TEXT_GENERATION]
