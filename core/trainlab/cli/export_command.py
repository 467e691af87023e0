"""``trainlab export RUN_DIR|MODEL_DIR --format gguf [--quant f16|q8_0]``: a text-generation model for llama.cpp and Ollama."""

from __future__ import annotations

from trainlab.cli.common import ArgumentParser, Output
from trainlab.engine.outcome import EXIT_OK

FORMATS = ("gguf",)


def add_export_parser(add) -> ArgumentParser:
    p = add("export", "write a text-generation run's model as model.gguf with an Ollama Modelfile (the gguf extra)")
    p.add_argument("path", metavar="RUN_DIR|MODEL_DIR", help="a text-generation run directory, or a folder holding a transformers causal LM")
    p.add_argument("--format", required=True, choices=FORMATS, help="gguf: one file llama.cpp and Ollama run")
    p.add_argument("--quant", default="f16", choices=("f16", "q8_0"), help="weights as float16 (default) or 8-bit blocks (q8_0, about half the size)")
    p.add_argument("--system", default="", metavar="TEXT", help="the Modelfile's SYSTEM prompt")
    p.add_argument("--out", metavar="DIR", help="where model.gguf and Modelfile go (default: the run directory, or the model folder)")
    return p


def cmd_export(args, out: Output) -> int:
    from trainlab.models.gguf.export import (
        export_gguf,  # loads NumPy: only for this command
    )

    result = export_gguf(args.path, quant=args.quant, out_dir=args.out, system=args.system, log=out.note)
    for warning in result.warnings:
        out.note(f"trainlab: warning: {warning}")
    quantized = f", {result.quantized} tensors in q8_0" if result.quant == "q8_0" else ""
    out.say(
        f"wrote {result.gguf} ({result.architecture}, {result.quant}{quantized}, {result.bytes / 1e6:.1f} MB, "
        f"{result.vocab_size} tokens) and {result.modelfile}"
    )
    out.say(f"run it: ollama create NAME -f {result.modelfile}  or  llama-cli -m {result.gguf} -cnv")
    out.result(result.to_json())
    return EXIT_OK
