"""The engine's parameters and how a run's parameter values are resolved.

Precedence, lowest first (CONTRACT.md "Parameters"): engine defaults, task
defaults, the chosen model preset's overrides, values remembered by the
window, explicit ``--set``/flags.

``resolve`` returns ``RunParams``: every value of the run (what a task
receives, a read-only ``Mapping``) and, as ``.engine``, the engine's own
parameters as a frozen, typed ``EngineParams``, which is what the engine
reads (attributes, no string keys, no conversions).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Mapping, Sequence

from trainlab.api.descriptors import AS_DEFAULT, Param, TaskSpec
from trainlab.api.errors import UsageError, did_you_mean
from trainlab.api.finetune import FINETUNE_PARAM

ENGINE_PARAMS: tuple[Param, ...] = (
    Param("epochs", "int", 3, "Passes over the training data.", minimum=1, maximum=100_000, group="training"),
    Param("batch_size", "int", 32, "Examples per optimizer step (before accumulation).", minimum=1, maximum=65_536, group="training"),
    Param("lr", "float", 1e-3, "Peak learning rate.", minimum=0.0, maximum=10.0, group="training"),
    Param("weight_decay", "float", 0.01, "AdamW weight decay (not applied to biases and norms).", minimum=0.0, maximum=1.0, group="training"),
    Param("optimizer", "choice", "adamw", "Optimizer.", choices=("adamw", "sgd", "adamw8bit"), group="training", advanced=True),
    Param("schedule", "choice", "linear", "Learning-rate schedule after warmup.", choices=("linear", "cosine", "constant"), group="training"),
    Param("warmup_ratio", "float", 0.06, "Fraction of the steps spent warming the learning rate up.", minimum=0.0, maximum=0.5, group="training", advanced=True),
    Param(
        "micro_batch_size",
        "str",
        "0",
        "Examples per forward/backward pass: 0 (the whole batch), N, or auto (the largest that fits the memory "
        "estimate with headroom); batch_size stays the effective batch, reached by gradient accumulation.",
        group="hardware",
        advanced=True,
    ),
    Param(
        "min_steps",
        "int",
        0,
        "At least this many optimizer steps: on data too small for them in `epochs` epochs, the run takes as many "
        "more epochs as they need (0: epochs alone decide).",
        minimum=0,
        maximum=10**9,
        group="training",
        advanced=True,
        before=0,  # a task's default may ask for more; runs made before it took their epochs only
    ),
    Param("grad_accum", "int", 1, "Micro-batches accumulated per optimizer step.", minimum=1, maximum=1024, group="training", advanced=True),
    Param("clip_grad_norm", "float", 1.0, "Clip the gradient norm to this value (0: off).", minimum=0.0, maximum=1e6, group="training", advanced=True),
    Param("early_stopping_patience", "int", 0, "Stop after this many evaluations without improvement (0: off).", minimum=0, maximum=10_000, group="training"),
    Param("class_weighting", "bool", False, "Weight the loss by inverse class frequency (imbalanced data).", group="training"),
    Param("device", "choice", "auto", "auto (cuda, then mps, then cpu), cpu, cuda or cuda:N.", choices=("auto", "cpu", "cuda"), open_choices=True, group="hardware"),
    Param("precision", "choice", "auto", "auto: bf16 on GPUs of compute capability 8.0+, else fp16; on a CPU bf16 where it computes bfloat16 natively (AVX512-BF16, AMX), else fp32.", choices=("auto", "fp32", "bf16", "fp16"), group="hardware"),
    Param(
        "sharding",
        "choice",
        "none",
        "Over several processes: none (every process holds the whole model, DDP) or fsdp (weights, gradients and "
        "optimizer state split across the processes, FSDP2: a full fine-tune past one GPU's memory).",
        choices=("none", "fsdp"),
        group="hardware",
        advanced=True,
    ),
    Param("fsdp_offload", "bool", False, "With sharding=fsdp: keep the weight shards, gradients and optimizer state in CPU memory (slower; less GPU memory).", group="hardware", advanced=True),
    Param("seed", "int", 42, "Seed for every random generator.", minimum=0, maximum=2**31 - 1, group="training"),
    Param("checkpoint_every_steps", "int", 0, "Also checkpoint every N optimizer steps (0: at epoch ends only).", minimum=0, maximum=10**9, group="output", advanced=True),
    Param("checkpoint_every_minutes", "float", 10.0, "Also checkpoint when this many minutes passed since the last checkpoint (0: off), so a long epoch is never all-or-nothing.", minimum=0.0, maximum=100_000.0, group="output", advanced=True),
    Param("keep_checkpoints", "choice", "last+best", "Which checkpoints to keep.", choices=("last+best", "last", "best", "none"), group="output", advanced=True),
    Param("final_weights", "choice", "best", "Weights of the exported model.", choices=("best", "last"), group="output", advanced=True),
    Param("monitor", "choice", "accuracy", "Validation metric for the best checkpoint and early stopping (the task's metrics, or loss).", choices=("accuracy", "macro_f1", "loss"), group="training", advanced=True),
    Param("telemetry_every", "float", 5.0, "Seconds between system/GPU samples written to metrics.jsonl (0: off; else at least 0.5).", minimum=0.0, maximum=3600.0, group="output", advanced=True),
    Param("log_interval", "float", 0.25, "Seconds between loss read-backs from the device (no sync per step).", minimum=0.0, maximum=3600.0, group="output", advanced=True),
    Param(
        "report_to",
        "choice",
        "none",
        "Also write every logged value to tensorboard (event files in the run's tensorboard/ folder), mlflow (a local "
        "MLflow store: MLFLOW_TRACKING_URI, else mlruns/ in TrainLab's data folder), or both, comma-separated; each is an extra.",
        choices=("none", "tensorboard", "mlflow", "tensorboard,mlflow"),
        open_choices=True,
        group="output",
        advanced=True,
    ),
    Param("log_model", "bool", False, "With report_to naming mlflow: also store the model folder in the MLflow run, as an artifact.", group="output", advanced=True),
)

FLAG_SHORTHANDS = {
    "epochs": "epochs",
    "batch_size": "batch_size",
    "lr": "lr",
    "device": "device",
    "precision": "precision",
    "seed": "seed",
    "model": "model",
}


_PYTHON_TYPES = {"int": int, "float": float, "bool": bool, "choice": str, "str": str}


@dataclasses.dataclass(frozen=True)
class EngineParams:
    """The engine's parameters of one run, typed (one field per ``ENGINE_PARAMS`` entry).

    Built by ``resolve`` from values it has already checked; constructing one
    by hand checks each field's type and names the first wrong one.
    """

    epochs: int
    batch_size: int
    lr: float
    weight_decay: float
    optimizer: str
    schedule: str
    warmup_ratio: float
    micro_batch_size: str
    min_steps: int
    grad_accum: int
    clip_grad_norm: float
    early_stopping_patience: int
    class_weighting: bool
    device: str
    precision: str
    sharding: str
    fsdp_offload: bool
    seed: int
    checkpoint_every_steps: int
    checkpoint_every_minutes: float
    keep_checkpoints: str
    final_weights: str
    monitor: str
    telemetry_every: float
    log_interval: float
    report_to: str
    log_model: bool

    def __post_init__(self) -> None:
        kinds = {p.name: p.type for p in ENGINE_PARAMS}
        for f in dataclasses.fields(self):
            value, wanted = getattr(self, f.name), _PYTHON_TYPES[kinds[f.name]]
            if not isinstance(value, wanted) or (wanted is not bool and isinstance(value, bool)):
                raise TypeError(f"engine parameter {f.name}: expected {wanted.__name__}, got {value!r}")

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> "EngineParams":
        return cls(**{f.name: values[f.name] for f in dataclasses.fields(cls)})

    @property
    def keeps_best(self) -> bool:
        """Whether the run writes a best checkpoint (for the final weights or to keep it)."""
        return self.final_weights == "best" or self.keep_checkpoints in ("best", "last+best")


class RunParams(dict):
    """A run's resolved parameter values: a read-only mapping (what tasks and callbacks read,
    what run.json stores) with ``engine``, the engine's parameters typed.

    A ``dict`` underneath so that it writes to JSON as it is; every method that
    would change it raises, since ``engine`` is built from the values once.
    """

    __slots__ = ("_engine",)

    def __init__(self, values: Mapping[str, Any], engine: EngineParams | None = None):
        super().__init__(values)
        self._engine = engine

    @property
    def engine(self) -> EngineParams:
        if self._engine is None:
            raise TypeError("these parameters were resolved without the engine's (resolve with ENGINE_PARAMS)")
        return self._engine

    def _read_only(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("a run's resolved parameters are read-only: resolve again with the new values")

    __setitem__ = __delitem__ = __ior__ = _read_only  # type: ignore[assignment]
    clear = pop = popitem = setdefault = update = _read_only  # type: ignore[assignment]

    def __copy__(self) -> "RunParams":
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> "RunParams":
        return self  # read-only, and every value a plain immutable one

    def __reduce__(self) -> Any:
        return (RunParams, (dict(self), self._engine))

    def __repr__(self) -> str:
        return f"RunParams({dict.__repr__(self)})"


def engine_params(params: Mapping[str, Any]) -> EngineParams:
    """The typed engine parameters of ``params`` as ``resolve`` returned them."""
    if isinstance(params, RunParams):
        return params.engine
    raise TypeError(f"the engine reads resolved parameters (trainlab.api.params.resolve), not a {type(params).__name__}")


def full_schema(spec: TaskSpec, engine_params: Sequence[Param] = ENGINE_PARAMS) -> dict[str, Param]:
    """The engine's parameters and the task's own; ``monitor`` offers the
    task's declared metrics and ``loss``, defaulting to the task's monitor."""
    schema = {p.name: p for p in engine_params}
    if "monitor" in schema:
        schema["monitor"] = dataclasses.replace(
            schema["monitor"], choices=spec.monitor_choices(), default=spec.default_monitor()
        )
    schema.update({p.name: p for p in spec.params})
    # engine-wide, but each task declares the values it supports by declaring
    # it itself; a task that does not supports full fine-tuning only
    schema.setdefault(FINETUNE_PARAM.name, FINETUNE_PARAM)
    return schema


def preset_for(spec: TaskSpec, model: Any):
    for preset in spec.presets:
        if preset.name == model:
            return preset
    return None


def unknown_name_hint(key: str, schema: Iterable[str], task_id: str) -> str:
    """What follows "unknown parameter KEY": the close names, or where the task's parameters are listed (not all of them)."""
    return did_you_mean(key, schema) or f"; `trainlab tasks {task_id}` lists its parameters"


def resolve(
    spec: TaskSpec,
    engine_params: Sequence[Param] = ENGINE_PARAMS,
    remembered: Mapping[str, Any] | None = None,
    explicit: Mapping[str, Any] | None = None,
    *,
    recorded: Mapping[str, Any] | None = None,
) -> RunParams:
    """The parameter values of a run, validated and typed.

    ``recorded``: the parameters stored in a run's ``run.json`` (a run
    resumed, evaluated or predicted with), between ``remembered`` and
    ``explicit``; a parameter they lack takes its ``Param.before``, the value
    runs made before it existed behaved as having, rather than today's
    default.  Raises UsageError naming the first unknown key or bad value.
    With the engine's parameters in the schema, ``.engine`` holds them as
    ``EngineParams``.
    """
    schema = full_schema(spec, engine_params)
    remembered = dict(remembered or {})
    explicit = dict(explicit or {})
    stored = dict(recorded or {})
    for source in (remembered, stored, explicit):
        for key in source:
            if key not in schema:
                raise UsageError(f"unknown parameter {key!r} for task {spec.id}{unknown_name_hint(key, schema, spec.id)}")
    values: dict[str, Any] = {name: p.default for name, p in schema.items()}
    values.update(spec.defaults)
    # The model decides the preset, so look at the highest-precedence value.
    model = explicit.get("model", stored.get("model", remembered.get("model", values.get("model"))))
    preset = preset_for(spec, model)
    if preset is not None:
        values.update(preset.overrides)
    values.update({k: v for k, v in remembered.items() if k not in explicit})
    if recorded is not None:
        values.update({name: p.before for name, p in schema.items() if name not in stored and p.before is not AS_DEFAULT})
        values.update(stored)
    values.update(explicit)
    typed = {}
    for name, value in values.items():
        try:
            typed[name] = schema[name].coerce(value)
        except ValueError as exc:
            raise UsageError(f"bad value for parameter {exc}") from None
    names = [f.name for f in dataclasses.fields(EngineParams)]
    engine = EngineParams.from_values(typed) if all(name in typed for name in names) else None
    return RunParams(typed, engine)


def parse_assignments(items: Iterable[str]) -> dict[str, str]:
    """``["a=1", "b=x"]`` -> ``{"a": "1", "b": "x"}``; UsageError names a bad item."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key:
            raise UsageError(f"--set {item!r}: expected key=value")
        out[key] = value
    return out


def task_json(spec: TaskSpec, engine_params: Sequence[Param] = ()) -> dict[str, Any]:
    """A task as ``trainlab tasks --json`` lists it: its descriptor, every parameter of its schema, its defaults."""
    schema = full_schema(spec, engine_params)
    return {
        "id": spec.id,
        "title": spec.title,
        "description": spec.description,
        "family": spec.family,
        "data_kind": spec.data_kind,
        "data_help": spec.data_help,
        "input": spec.input.to_json(),
        "model_formats": list(spec.model_formats),
        "metrics": [m.to_json() for m in spec.metric_specs()],
        "monitor": spec.default_monitor(),
        "details": [d.to_json() for d in spec.detail_specs()],  # declared: kinds, titles, columns; no data
        "parameters": [p.to_json() for p in schema.values()],
        "defaults": resolve(spec, engine_params, {}, {}),
        "presets": [p.to_json() for p in spec.presets],
    }
