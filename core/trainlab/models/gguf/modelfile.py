"""An Ollama ``Modelfile`` for an exported GGUF: the prompt format, the stop tokens, the system prompt.

Ollama writes prompts with Go templates, not Jinja; the chat templates of
the families TrainLab trains with (ChatML/Qwen, Llama 3, Gemma, Phi-3,
Mistral) are written here in its template language, rendering a
conversation to the same text the Jinja template does (system messages
included: Ollama passes them in ``.Messages``, the Modelfile's ``SYSTEM``
first when a chat has none).  A template of another family is not
translated: the Modelfile then has no ``TEMPLATE`` and Ollama takes the
template from the GGUF's embedded one when it recognises it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

CHATML = (
    "{{- range .Messages }}<|im_start|>{{ .Role }}\n"
    "{{ .Content }}<|im_end|>\n"
    "{{ end }}<|im_start|>assistant\n"
)
LLAMA3 = (
    "{{- range .Messages }}<|start_header_id|>{{ .Role }}<|end_header_id|>\n\n"
    "{{ .Content }}<|eot_id|>"
    "{{- end }}<|start_header_id|>assistant<|end_header_id|>\n\n"
)
PHI3 = (
    "{{- range .Messages }}<|{{ .Role }}|>\n"
    "{{ .Content }}<|end|>\n"
    "{{ end }}<|assistant|>\n"
)
# Gemma and Mistral have no system turn: the system prompt opens the first user turn.
GEMMA = (
    '{{- $system := "" }}'
    "{{- range .Messages }}"
    '{{- if eq .Role "system" }}{{ $system = .Content }}'
    '{{- else }}<start_of_turn>{{ if eq .Role "assistant" }}model{{ else }}user{{ end }}\n'
    '{{ if $system }}{{ $system }}\n\n{{ $system = "" }}{{ end }}{{ .Content }}<end_of_turn>\n'
    "{{ end }}"
    "{{- end }}<start_of_turn>model\n"
)
MISTRAL = (
    '{{- $system := "" }}'
    "{{- range .Messages }}"
    '{{- if eq .Role "system" }}{{ $system = .Content }}'
    '{{- else if eq .Role "user" }}[INST] {{ if $system }}{{ $system }}\n\n{{ $system = "" }}{{ end }}{{ .Content }}[/INST]'
    "{{- else }}{{ .Content }}EOS_TOKEN"
    "{{- end }}"
    "{{- end }}"
)


@dataclass(frozen=True)
class TemplateFamily:
    name: str
    markers: tuple[str, ...]  # all of them in a Jinja template: this family
    ollama: str


FAMILIES = (
    TemplateFamily("chatml", ("<|im_start|>", "<|im_end|>"), CHATML),
    TemplateFamily("llama3", ("<|start_header_id|>", "<|eot_id|>"), LLAMA3),
    TemplateFamily("gemma", ("<start_of_turn>", "<end_of_turn>"), GEMMA),
    TemplateFamily("phi3", ("<|assistant|>", "<|end|>"), PHI3),
    TemplateFamily("mistral", ("[INST]", "[/INST]"), MISTRAL),
)

# A default system prompt a ChatML template writes when a chat has none (Qwen's "You are a helpful assistant.")
_DEFAULT_SYSTEM = re.compile(r"<\|im_start\|>system(?:\n|\\n)([^<>{}'\"\\]+)<\|im_end\|>")


def template_family(chat_template: str) -> TemplateFamily | None:
    for family in FAMILIES:
        if all(marker in chat_template for marker in family.markers):
            return family
    return None


def default_system(chat_template: str) -> str:
    match = _DEFAULT_SYSTEM.search(chat_template)
    return match.group(1).strip() if match else ""


def _quoted(text: str) -> str:
    # Ollama reads """...""" to the next """; a parameter value in double quotes
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render_modelfile(
    gguf_name: str,
    chat_template: str,
    stop_tokens: Sequence[str],
    *,
    eos_token: str = "",
    system: str = "",
    context_length: int = 0,
) -> tuple[str, str]:
    """The Modelfile's text, and the template family it was written for ("" when its TEMPLATE is left to Ollama)."""
    family = template_family(chat_template)
    lines = ["# Written by TrainLab: ollama create NAME -f Modelfile", f"FROM ./{gguf_name}"]
    if family is not None:
        body = family.ollama.replace("EOS_TOKEN", eos_token)
        if '"""' in body:  # cannot be quoted: leave it to the GGUF's template
            family = None
        else:
            lines.append(f'TEMPLATE """{body}"""')
    if family is None:
        lines.append("# TEMPLATE: the chat template is not one translated here; Ollama uses the GGUF's own when it knows it")
    for token in dict.fromkeys(t for t in stop_tokens if t):
        lines.append(f"PARAMETER stop {_quoted(token)}")
    if context_length:
        lines.append(f"PARAMETER num_ctx {int(context_length)}")
    system = system or default_system(chat_template)
    if system and '"""' not in system:
        lines.append(f'SYSTEM """{system}"""')
    return "\n".join(lines) + "\n", family.name if family else ""
