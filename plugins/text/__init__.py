"""Built-in plugin: ``text-classification`` (BERT-family sequence classifiers).

This module is what discovery imports, so it only declares the task: no
torch, no transformers.  The runtime lives in
``trainlab.plugins.text.task`` and is imported when a run starts.
"""

from __future__ import annotations

from trainlab import InputSpec, Param, Preset, TaskSpec, hookimpl

TASK_ID = "text-classification"

# Names offered in the window's model list; any folder or model name that
# `trainlab models` shows works too (open choices).
SUGGESTED_MODELS = (
    "tiny-bert",
    "bert-base-chinese",
    "bert-base-uncased",
    "bert-base-multilingual-cased",
    "hfl/chinese-roberta-wwm-ext",
)

PARAMS = (
    Param(
        "model",
        "choice",
        "tiny-bert",
        "tiny-bert (built in, trained from scratch), a folder holding a transformers model, "
        "or a model name found offline (see `trainlab models`).",
        choices=SUGGESTED_MODELS,
        open_choices=True,
        title="Model",
        group="model",
    ),
    Param("text_column", "str", "text", "Column (CSV/TSV header or JSONL key) holding the text.", title="Text column", group="data"),
    Param("label_column", "str", "label", "Column holding the label (a class name or an integer).", title="Label column", group="data"),
    Param(
        "text_pair_column",
        "str",
        "",
        "Optional second text column (sentence pairs, e.g. question and answer); empty for single texts.",
        title="Second text column",
        group="data",
        advanced=True,
    ),
    Param(
        "max_length",
        "int",
        128,
        "Tokens per text, special tokens included; longer texts are truncated (the summary says how many).",
        minimum=8,
        maximum=8192,
        title="Max length",
        group="model",
    ),
    Param(
        "val_fraction",
        "float",
        0.2,
        "Share of each label held out for validation when the data has no val file.",
        minimum=0.01,
        maximum=0.9,
        title="Validation fraction",
        group="data",
    ),
    Param(
        "length_grouping",
        "bool",
        True,
        "Batch texts of similar length together (far less padding, same results); batches are shuffled.",
        title="Group by length",
        group="training",
        advanced=True,
    ),
)

# Fine-tuning a pretrained model: the BERT paper's recipe (small learning
# rate, linear warmup then decay, weight decay 0.01).
DEFAULTS = {"lr": 2e-5, "weight_decay": 0.01, "warmup_ratio": 0.1, "schedule": "linear", "batch_size": 32, "epochs": 3}

PRESETS = (
    Preset(
        "tiny-bert",
        title="Tiny BERT (from scratch)",
        description=(
            "A 2-layer BERT (hidden 128) with a shipped English + Chinese vocabulary, randomly initialised: "
            "for demos, tests and machines without pretrained models. Trained from scratch, it needs a far "
            "larger learning rate than fine-tuning."
        ),
        overrides={"lr": 1e-3, "warmup_ratio": 0.1, "epochs": 5},
    ),
)

TEXT_CLASSIFICATION = TaskSpec(
    id=TASK_ID,
    title="Text classification",
    factory="trainlab.plugins.text.task:TextClassificationTask",
    description=(
        "Fine-tune a BERT-family model (or train the built-in tiny-bert) to sort texts into classes. "
        "Chinese, English and mixed text; sentence pairs supported."
    ),
    params=PARAMS,
    defaults=DEFAULTS,
    presets=PRESETS,
    data_kind="either",
    data_help=(
        "A .csv, .tsv or .jsonl file with columns text and label (UTF-8), or a folder with "
        "train.*, val.* and optionally test.* files."
    ),
    sample_data="samples/text",
    # files of texts predict reads (as TEXT_FILE_SUFFIXES in task.py)
    input=InputSpec(kind="text", suffixes=(".txt", ".csv", ".tsv", ".jsonl"), title="a text"),
    model_formats=("transformers",),
)


@hookimpl
def trainlab_api_version() -> str:
    return "2.0"


@hookimpl
def trainlab_tasks() -> list[TaskSpec]:
    return [TEXT_CLASSIFICATION]
