"""``trainlab chat RUN_DIR|MODEL_DIR``: talk to a causal language model in the terminal.

The model is loaded through its task's predictor (``trainlab.engine.chat``,
which the window's chat shares), from a plain transformers folder (a text-generation run's
``model/``, or any chat model folder): its tokenizer's chat template renders
the conversation, the answer streams as it is generated, and the
conversation goes on turn after turn (``/reset`` starts again, ``/exit`` or
an empty line or end of input ends it).  ``--compare RUN_DIR|MODEL_DIR``
gives every prompt to a second model too (the base model, another run):
both answers, one after the other, each labelled with its run or folder;
the models are held at once when ``trainlab.engine.chat`` finds memory for
both, else each is loaded only while it answers.  Greedy by default; ``--temperature``
(or ``--set temperature=..``) samples.  A run's ``trainlab.json`` names the tokens an answer stops at (the
end-of-turn token as well as EOS).

torch and transformers are imported inside the command: the CLI's start-up
loads neither.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from trainlab.api.errors import UsageError
from trainlab.cli.common import Output
from trainlab.engine.outcome import EXIT_OK


def add_chat_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model_dir", metavar="RUN_DIR|MODEL_DIR", help="a text-generation run folder, or a transformers chat model folder")
    p.add_argument(
        "--compare",
        metavar="RUN_DIR|MODEL_DIR",
        default="",
        help="a second model (the base model, another run) that answers each prompt too, after the first, labelled",
    )
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
    from trainlab.engine.chat import chat_source

    return chat_source(given).folder


def cmd_chat(args: argparse.Namespace, out: Output) -> int:
    from transformers.utils import logging as hf_logging

    from trainlab.engine.chat import ChatSettings, chat_source, compare_plan, load_chat_model, resolve_chat_device

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    apply_sets(args)
    if args.max_new_tokens < 1:
        raise UsageError("--max-new-tokens must be at least 1")
    sources = [chat_source(args.model_dir)]
    if args.compare:
        sources.append(chat_source(args.compare, template_from=sources[0]))
    device = resolve_chat_device(args.device)
    settings = ChatSettings(system=args.system, temperature=args.temperature, top_p=args.top_p, max_new_tokens=args.max_new_tokens)
    labels = _labels(sources)
    together = True
    if len(sources) == 2:
        plan = compare_plan(sources[0], sources[1], device)
        together = plan.together
        out.note(f"comparing {labels[0]} ({sources[0].describe()}) with {labels[1]} ({sources[1].describe()}): {plan.line()}")
    loaded = [load_chat_model(s, args.device) for s in sources] if together else []
    histories: list[list[dict[str, str]]] = [[] for _ in sources]
    interactive = sys.stdin.isatty()
    what = " and ".join(s.describe() for s in sources)
    out.note(f"chatting with {what} on {device} (/reset starts again, /exit or an empty line ends)")
    turns = 0
    while True:
        if interactive:
            print("you> ", end="", flush=True)
        line = sys.stdin.readline()
        if not line or not line.strip() or line.strip() == "/exit":
            break
        if line.strip() == "/reset":
            histories = [[] for _ in sources]
            continue
        for i, source in enumerate(sources):
            model = loaded[i] if together else load_chat_model(source, args.device)
            histories[i].append({"role": "user", "content": line.strip()})
            print("assistant> " if len(sources) == 1 else f"{labels[i]}> ", end="", flush=True)
            answer = []
            try:
                for piece in model.stream(settings.messages(histories[i]), settings):
                    answer.append(piece)
                    print(piece, end="", flush=True)
            finally:
                if not together:
                    model.close()
            print(flush=True)
            histories[i].append({"role": "assistant", "content": "".join(answer).strip()})
        turns += 1
    result: dict[str, Any] = {"model_dir": str(sources[0].folder), "turns": turns}
    if len(sources) == 2:
        result.update(compare_dir=str(sources[1].folder), together=together)
    out.result(result)
    return EXIT_OK


def _labels(sources: list[Any]) -> list[str]:
    labels = [s.label for s in sources]
    if len(labels) == 2 and labels[0] == labels[1]:
        labels = [f"{labels[0]} (1)", f"{labels[1]} (2)"]
    return labels
