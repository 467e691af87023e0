"""A LoRA run's outputs: ``adapter/`` (a PEFT folder) and ``model/`` (the merged model, or adapters only).

``adapter/`` loads with ``peft.PeftModel.from_pretrained`` onto the base
folder its ``adapter_config.json`` names, loaded with the run's config
saved beside the adapters (labels, head, pad token); ``model/`` is a
plain transformers folder with the adapters merged in.  Past
``MERGED_LIMIT_BYTES`` of base weights (a merged 7B model is about 14 GB a
run) ``merged_model=auto`` keeps the adapters only: ``model/`` then holds the
tokenizer, the config and ``trainlab.json`` with the base model's path and
fingerprint, which ``models.load_trained`` checks before it applies the
adapters.  Both folders are written beside their place and swapped in
(``atomic_write_folder``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from trainlab import add_checksum, atomic_write_folder, model_fingerprint
from trainlab_plugins.text import models
from trainlab_plugins.text.finetune import check_adapters_trained

MERGED_LIMIT_BYTES = 4 << 30  # about a 1B model in fp32, a 2B one in bf16


def keeps_merged(policy: str, base_bytes: int) -> bool:
    if policy == "always":
        return True
    if policy == "never":
        return False
    return base_bytes <= MERGED_LIMIT_BYTES


def save_lora_outputs(
    model: Any, tokenizer: Any, out_dir: Path, info: dict[str, Any], source: models.ModelSource, policy: str, log: Callable[[str], None]
) -> None:
    """Write ``out_dir.parent/adapter`` and ``out_dir`` for a trained PeftModel (merged in place after)."""
    check_adapters_trained(model)  # before the run can be called completed
    out_dir = Path(out_dir)
    adapter_dir = out_dir.parent / models.ADAPTER_DIR
    base_fingerprint = model_fingerprint(source.path)
    info = {**info, "finetune": "lora", "base_model": str(source.path), "base_fingerprint": base_fingerprint}

    def write_adapters(tmp: Path) -> None:
        model.save_pretrained(str(tmp))
        for weights in tmp.glob("*.safetensors"):
            add_checksum(weights)
        # base_model_name_or_path: the folder the adapters go onto, for PEFT's own loaders
        config_path = tmp / "adapter_config.json"
        config = json.loads(config_path.read_text(encoding="utf-8"))
        config["base_model_name_or_path"] = str(source.path)
        config_path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        tokenizer.save_pretrained(str(tmp))  # AutoPeftModel users need the (padded) tokenizer too
        # the run's labels, head and pad token: the base folder's own config has none of them
        models.unwrap(model).base_model.model.config.save_pretrained(str(tmp))
        (tmp / models.RUN_INFO_FILE).write_text(json.dumps(info, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")

    atomic_write_folder(adapter_dir, write_adapters)
    base_bytes = models.weights_bytes(source)
    merged = model.merge_and_unload()
    if keeps_merged(policy, base_bytes):
        models.save_model_folder(merged, tokenizer, out_dir, {**info, "adapters_only": False})
        return
    log(
        f"keeping the adapters only ({adapter_dir}): the merged model would be {base_bytes / 1e9:.1f} GB; "
        f"model/ names the base model {source.path} (set merged_model=always to keep it merged)"
    )
    saved_limit = tokenizer.model_max_length

    def write_adapters_only(tmp: Path) -> None:
        merged.config.save_pretrained(str(tmp))
        tokenizer.model_max_length = int(info.get("max_length") or saved_limit)
        tokenizer.save_pretrained(str(tmp))
        (tmp / models.RUN_INFO_FILE).write_text(json.dumps({**info, "adapters_only": True}, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")

    try:
        atomic_write_folder(out_dir, write_adapters_only)
    finally:
        tokenizer.model_max_length = saved_limit
