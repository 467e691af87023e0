"""``trainlab chat RUN_DIR|MODEL_DIR``: talk to a causal language model in the terminal.

The model is a plain transformers folder (a text-generation run's
``model/``, or any chat model folder): its tokenizer's chat template renders
the conversation, the answer streams as it is generated, and the
conversation goes on turn after turn (``/reset`` starts again, ``/exit`` or
an empty line or end of input ends it).  Greedy by default; ``--temperature``
(or ``--set temperature=..``) samples.  A run's ``trainlab.json`` names the tokens an answer stops at (the
end-of-turn token as well as EOS).

torch and transformers are imported inside the command: the CLI's start-up
loads neither.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from pathlib import Path
from typing import Any

from trainlab.api.errors import UsageError
from trainlab.cli.common import Output
from trainlab.engine.outcome import EXIT_OK

RUN_INFO = "trainlab.json"


def add_chat_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model_dir", metavar="RUN_DIR|MODEL_DIR", help="a text-generation run folder, or a transformers chat model folder")
    p.add_argument("--system", default="", help="a system prompt for the conversation")
    p.add_argument("--max-new-tokens", dest="max_new_tokens", type=int, default=512, help="longest answer, in tokens")
    p.add_argument("--temperature", type=float, default=0.0, help="sampling temperature (0: greedy)")
    p.add_argument("--top-p", dest="top_p", type=float, default=1.0, help="nucleus sampling share, with --temperature above 0")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE", help="temperature, top_p or max_new_tokens, as the options")


SETTABLE = {"temperature": float, "top_p": float, "max_new_tokens": int}


def apply_sets(args: argparse.Namespace) -> None:
    """``--set temperature=0.7`` and the like, as their options; UsageError naming anything else."""
    for item in getattr(args, "sets", None) or []:
        key, sep, value = str(item).partition("=")
        key = key.strip()
        if not sep or key not in SETTABLE:
            raise UsageError(f"--set {item}: chat takes {', '.join(f'{k}=VALUE' for k in SETTABLE)}")
        try:
            setattr(args, key, SETTABLE[key](value))
        except ValueError:
            raise UsageError(f"--set {item}: {value!r} is not a number") from None


def model_folder(given: str) -> Path:
    """The model folder ``given`` names: a run's ``model/``, or the folder itself."""
    path = Path(given).expanduser()
    for candidate in (path / "model", path):
        if (candidate / "config.json").is_file():
            info = _run_info(candidate)
            if info.get("adapters_only"):
                raise UsageError(f"{candidate} holds LoRA adapters only (no merged model); load {candidate.parent / 'adapter'} with PEFT")
            return candidate
    raise UsageError(f"{path}: neither a run folder with model/ nor a model folder (no config.json)")


def _run_info(folder: Path) -> dict[str, Any]:
    try:
        data = json.loads((folder / RUN_INFO).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def cmd_chat(args: argparse.Namespace, out: Output) -> int:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, TextIteratorStreamer
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    apply_sets(args)
    folder = model_folder(args.model_dir)
    if args.max_new_tokens < 1:
        raise UsageError("--max-new-tokens must be at least 1")
    device = torch.device(("cuda" if torch.cuda.is_available() else "cpu") if args.device == "auto" else args.device)
    tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    if not getattr(tokenizer, "chat_template", None):
        raise UsageError(f"the tokenizer in {folder} has no chat template; chat needs a chat model (train one with text-generation)")
    model = AutoModelForCausalLM.from_pretrained(str(folder), local_files_only=True).to(device).eval()
    stops = list(_run_info(folder).get("stop_token_ids") or [])
    configured = model.generation_config.eos_token_id
    for token in configured if isinstance(configured, list) else [configured]:
        if token is not None and token not in stops:
            stops.append(token)
    if tokenizer.eos_token_id is not None and tokenizer.eos_token_id not in stops:
        stops.append(tokenizer.eos_token_id)
    sampling = {"do_sample": True, "temperature": args.temperature, "top_p": args.top_p} if args.temperature > 0 else {"do_sample": False}
    history: list[dict[str, str]] = [{"role": "system", "content": args.system}] if args.system else []
    interactive = sys.stdin.isatty()
    out.note(f"chatting with {folder} on {device} (/reset starts again, /exit or an empty line ends)")
    turns = 0
    while True:
        if interactive:
            print("you> ", end="", flush=True)
        line = sys.stdin.readline()
        if not line or not line.strip() or line.strip() == "/exit":
            break
        if line.strip() == "/reset":
            history = history[:1] if args.system else []
            continue
        history.append({"role": "user", "content": line.strip()})
        ids = tokenizer.apply_chat_template(history, add_generation_prompt=True, return_tensors="pt", return_dict=True)
        streamer = TextIteratorStreamer(tokenizer, skip_prompt=True, skip_special_tokens=True)
        kwargs = dict(
            input_ids=ids["input_ids"].to(device),
            attention_mask=ids["attention_mask"].to(device),
            max_new_tokens=args.max_new_tokens,
            eos_token_id=stops,
            pad_token_id=tokenizer.pad_token_id if tokenizer.pad_token_id is not None else stops[0],
            streamer=streamer,
            **sampling,
        )
        worker = threading.Thread(target=_generate, args=(model, kwargs), daemon=True)
        worker.start()
        print("assistant> ", end="", flush=True)
        answer = []
        for piece in streamer:
            answer.append(piece)
            print(piece, end="", flush=True)
        worker.join()
        print(flush=True)
        history.append({"role": "assistant", "content": "".join(answer).strip()})
        turns += 1
    out.result({"model_dir": str(folder), "turns": turns})
    return EXIT_OK


def _generate(model: Any, kwargs: dict[str, Any]) -> None:
    import torch

    with torch.no_grad():
        model.generate(**kwargs)
