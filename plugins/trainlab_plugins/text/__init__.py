"""Built-in plugin: the text tasks on BERT-family models.

``text-classification`` (a class per text), ``text-regression`` (a number
per text) and ``text-multilabel`` (any number of labels per text).  This
module is what discovery imports, so it only declares the tasks: no torch,
no transformers.  The runtimes live in ``trainlab_plugins.text.task``,
``.regression`` and ``.multilabel`` (sharing ``.base``), imported when a run
starts.
"""

from __future__ import annotations

import dataclasses

from trainlab import (
    FINETUNE_PARAM,
    GRADIENT_CHECKPOINTING_PARAM,
    LORA_PARAMS,
    InputSpec,
    Param,
    Preset,
    TaskSpec,
    hookimpl,
)

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
    dataclasses.replace(FINETUNE_PARAM, default="auto", choices=("auto", "full", "head", "lora", "qlora")),
    GRADIENT_CHECKPOINTING_PARAM,
    *LORA_PARAMS,
    Param(
        "lora_target_modules",
        "str",
        "auto",
        "Layers that get LoRA adapters, comma-separated (auto: the attention projections of BERT-family "
        "encoders; attention and MLP projections of Qwen/Llama/Mistral decoders).",
        title="LoRA targets",
        group="model",
        advanced=True,
    ),
    Param(
        "merged_model",
        "choice",
        "auto",
        "LoRA runs: keep the merged model in model/ (always), only the adapters in adapter/ with the base model's "
        "path and fingerprint (never), or merged up to 4 GB of base weights (auto).",
        choices=("auto", "always", "never"),
        title="Merged model",
        group="output",
        advanced=True,
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
    factory="trainlab_plugins.text.task:TextClassificationTask",
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
    # files of texts predict reads (as TEXT_FILE_SUFFIXES in base.py)
    input=InputSpec(kind="text", suffixes=(".txt", ".csv", ".tsv", ".jsonl"), title="a text"),
    model_formats=("transformers",),
)


# -- text-regression and text-multilabel ---------------------------------------
# The same models, columns and batching as text-classification; only the label
# column's meaning, the validation split and (multi-label) the decision differ.


def _changed(params: tuple[Param, ...], **changes: dict) -> tuple[Param, ...]:
    return tuple(dataclasses.replace(p, **changes[p.name]) if p.name in changes else p for p in params)


TEXT_INPUT = TEXT_CLASSIFICATION.input
TEXT_MODEL_FORMATS = TEXT_CLASSIFICATION.model_formats

HEAD_LR_PARAM = Param(
    "head_lr",
    "str",
    "auto",
    "Learning rate of the new output layer: auto (1e-3 on a pretrained model, whose encoder learns at lr; "
    "lr from scratch), same (lr for every weight), or a number.",
    title="Head learning rate",
    group="training",
    advanced=True,
    # runs made before the parameter existed trained every weight at lr, and
    # their checkpoints hold one optimizer group for it: resumed, they keep it
    before="same",
)

REGRESSION_PARAMS = (
    *_changed(
        PARAMS,
        label_column={"help": "Column holding the number to predict (any finite number: a rating, a score, a price)."},
        val_fraction={"help": "Share of the rows held out for validation when the data has no val file, spread over the target's range."},
    ),
    HEAD_LR_PARAM,
    Param(
        "dropout",
        "str",
        "auto",
        "Dropout of every layer while training: auto (none on a pretrained model, the model's own from scratch), "
        "model (the model's own), or a rate (0 to below 1).",
        title="Dropout",
        group="training",
        advanced=True,
        # runs made before the parameter existed trained with the model's own
        before="model",
    ),
)

# Defaults for a pretrained encoder under a new head (the regression and
# multi-label families; tiny-bert's preset sets its own):
# - head_lr=auto (HEAD_LR_PARAM): the new output layer learns at 1e-3 while the
#   encoder keeps the fine-tuning rate; at 2e-5 for both, the head barely
#   moves in three epochs;
# - min_steps=500: three epochs of a small data set are a hundred-odd steps,
#   too few for a new head; the run takes more epochs on small data, the same
#   epochs on large;
# - lr 5e-5: the encoder's rate, the upper end of BERT's fine-tuning range:
#   a new head's signal reaches the encoder in fewer steps.
PRETRAINED_HEAD_DEFAULTS = {**DEFAULTS, "lr": 5e-5, "min_steps": 500}
# Multi-label adds, on top:
# - threshold=auto: each label's threshold chosen on the validation split for
#   its F1; with rare labels no fixed 0.5 suits every label (a label on 5 %
#   of the texts rarely gets a probability above 0.5 early in training);
# - class_weighting on: BCE's pos_weight, negatives per positive of each
#   label, so a rare label's few positives are not drowned by its negatives
#   (without it "no label anywhere" is a low loss).
MULTILABEL_DEFAULTS = {**PRETRAINED_HEAD_DEFAULTS, "threshold": "auto", "class_weighting": True}
# Regression changes two of them (and dropout=auto, in REGRESSION_PARAMS,
# trains a pretrained encoder without dropout); chosen on the regression
# bench of docs/results/text-classification.md, where each did better:
# - head_lr=same: what head_lr=auto is for does not arise.  Multi-label's new
#   layer must carry each label's probability across its threshold; a
#   regression output starts at about 0, the training mean on the
#   standardised scale, already the mean predictor, and at 1e-3 the
#   one-output layer is quick to fit the training targets' noise;
# - length_grouping off: batches drawn at random, not of texts of one
#   length; a batch of like texts is a narrower sample of the targets.  It
#   costs padding: more time a step on texts of mixed lengths.
REGRESSION_DEFAULTS = {**PRETRAINED_HEAD_DEFAULTS, "head_lr": "same", "length_grouping": False}
# tiny-bert from scratch: its own rate and epochs, every weight at one rate
SCRATCH_OVERRIDES = {"min_steps": 0}

MULTILABEL_PARAMS = (
    *_changed(
        PARAMS,
        label_column={
            "default": "labels",
            "help": "Column holding a text's labels: names joined by label_separator in CSV/TSV, a list in JSONL; may be empty.",
        },
        val_fraction={"help": "Share of the rows held out for validation when the data has no val file, stratified by each text's rarest label."},
    ),
    Param(
        "label_separator",
        "str",
        ";",
        "In CSV/TSV files, the character that joins a text's labels (sports;weather).",
        title="Label separator",
        group="data",
    ),
    Param(
        "threshold",
        "str",
        "0.5",
        "A label is predicted when its probability reaches this; auto: each label's own threshold, "
        "chosen on the validation split for its best F1 and recorded with the model.",
        title="Decision threshold",
        group="task",
    ),
    HEAD_LR_PARAM,
)

TEXT_REGRESSION = TaskSpec(
    id="text-regression",
    title="Text regression",
    factory="trainlab_plugins.text.regression:TextRegressionTask",
    description=(
        "Fine-tune a BERT-family model (or train the built-in tiny-bert) to predict a number for each text: "
        "a rating, a score, a reading level. Chinese, English and mixed text; sentence pairs supported."
    ),
    params=REGRESSION_PARAMS,
    defaults=REGRESSION_DEFAULTS,
    # from scratch, a regression head needs more epochs than a classifier;
    # tiny-bert keeps text classification's length-grouped batches
    presets=(dataclasses.replace(PRESETS[0], overrides={**PRESETS[0].overrides, **SCRATCH_OVERRIDES, "epochs": 8, "length_grouping": True}),),
    data_kind="either",
    data_help=(
        "A .csv, .tsv or .jsonl file with columns text and label (a number; UTF-8), or a folder with "
        "train.*, val.* and optionally test.* files."
    ),
    sample_data="samples/text-regression",
    family="regression",
    input=dataclasses.replace(TEXT_INPUT, title="a text to score"),
    model_formats=TEXT_MODEL_FORMATS,
)

TEXT_MULTILABEL = TaskSpec(
    id="text-multilabel",
    title="Text multi-label classification",
    factory="trainlab_plugins.text.multilabel:TextMultiLabelTask",
    description=(
        "Fine-tune a BERT-family model (or train the built-in tiny-bert) to tag each text with any number of "
        "labels (or none). Chinese, English and mixed text; sentence pairs supported."
    ),
    params=MULTILABEL_PARAMS,
    defaults=MULTILABEL_DEFAULTS,
    # from scratch, per-label outputs leave "no label anywhere" only after
    # some hundred optimizer steps: smaller batches give them sooner
    presets=(dataclasses.replace(PRESETS[0], overrides={**PRESETS[0].overrides, **SCRATCH_OVERRIDES, "batch_size": 16}),),
    data_kind="either",
    data_help=(
        "A .csv, .tsv or .jsonl file with columns text and labels (joined by ; in CSV/TSV, a list in JSONL; "
        "UTF-8), or a folder with train.*, val.* and optionally test.* files."
    ),
    sample_data="samples/text-multilabel",
    family="multilabel",
    input=dataclasses.replace(TEXT_INPUT, title="a text to tag"),
    model_formats=TEXT_MODEL_FORMATS,
)


@hookimpl
def trainlab_api_version() -> str:
    return "2.0"


@hookimpl
def trainlab_tasks() -> list[TaskSpec]:
    return [TEXT_CLASSIFICATION, TEXT_REGRESSION, TEXT_MULTILABEL]
