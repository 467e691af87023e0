"""Chat templates and the loss mask, token by token, for each template format and two tokenizers."""

from __future__ import annotations

import pytest

from trainlab import UsageError
from trainlab_plugins.textgen import templates

CHAT = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Hi there"},
    {"role": "assistant", "content": "Hello friend"},
    {"role": "user", "content": "Name a fruit"},
    {"role": "assistant", "content": "An apple"},
]

# A Qwen3-style template written for the tests: an assistant turn's thinking
# block is rendered only for the answer after the last user turn, so earlier
# turns render differently once a later turn exists.
THINKING_TEMPLATE = (
    "{% set ns = namespace(last_user=0) %}{% for m in messages %}{% if m['role'] == 'user' %}{% set ns.last_user = loop.index0 %}{% endif %}{% endfor %}"
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
    "{% if m['role'] == 'assistant' and '</think>' in m['content'] %}"
    "{% if loop.index0 > ns.last_user %}{{ m['content'] }}{% else %}{{ m['content'].split('</think>')[-1].lstrip() }}{% endif %}"
    "{% else %}{{ m['content'] }}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _tokenizer(folder):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(folder))


def _runs(encoded):
    """The trained stretches as (start, end) token spans."""
    runs, start = [], None
    for i, on in enumerate([*encoded.trained, False]):
        if on and start is None:
            start = i
        elif not on and start is not None:
            runs.append((start, i))
            start = None
    return runs


@pytest.fixture(params=["qwen", "llama"])
def folder(request, qwen_folder, llama_folder):
    return qwen_folder if request.param == "qwen" else llama_folder


@pytest.mark.parametrize("name", list(templates.NAMED_TEMPLATES))
def test_every_assistant_turn_and_its_end_of_turn_token_are_trained_and_nothing_else(folder, name):
    tok = _tokenizer(folder)
    fmt = templates.setup_tokenizer(tok, name, "test")
    enc = templates.encode_chat(tok, CHAT, fmt, 512)
    runs = _runs(enc)
    assert len(runs) == 2
    for (start, end), answer in zip(runs, ["Hello friend", "An apple"]):
        ids = enc.ids[start:end]
        assert ids[-1] in fmt.stop_ids, "the end-of-turn token is inside the mask"
        assert ids[-1] == (tok.convert_tokens_to_ids(templates.NAMED_TEMPLATES[name].end_of_turn) if templates.NAMED_TEMPLATES[name].end_of_turn else tok.eos_token_id)
        assert tok.decode(ids[:-1]).strip() == answer
        assert not enc.trained[start - 1] and (end == len(enc) or not enc.trained[end])
    # everything outside the two runs is the prompt
    outside = [i for i, on in enumerate(enc.trained) if not on]
    assert "Hi there" in tok.decode([enc.ids[i] for i in outside]) and "Hello friend" not in tok.decode([enc.ids[i] for i in outside])


def test_a_template_that_renders_earlier_turns_differently(qwen_folder):
    tok = _tokenizer(qwen_folder)
    tok.chat_template = THINKING_TEMPLATE
    tok.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>"]})
    fmt = templates.setup_tokenizer(tok, "auto", "test")
    chat = [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "<think>greet back</think>Hello"},
        {"role": "user", "content": "Fruit?"},
        {"role": "assistant", "content": "<think>pick one</think>Apple"},
    ]
    enc = templates.encode_chat(tok, chat, fmt, 512)
    runs = _runs(enc)
    assert [tok.decode(enc.ids[s:e]) for s, e in runs] == ["Hello<|im_end|>", "<think>pick one</think>Apple<|im_end|>"]


def test_a_model_folders_own_template_is_used_and_a_base_model_without_one_is_told_to_name_one(llama_folder):
    tok = _tokenizer(llama_folder)
    with pytest.raises(UsageError, match=r"no chat template.*template=chatml\|qwen\|llama3"):
        templates.setup_tokenizer(tok, "auto", "tiny-llama")
    tok.chat_template = templates.LLAMA3
    tok.add_special_tokens({"additional_special_tokens": ["<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]})
    fmt = templates.setup_tokenizer(tok, "auto", "tiny-llama")
    assert fmt.name == "model" and tok.convert_tokens_to_ids("<|eot_id|>") in fmt.stop_ids


def test_the_pad_token_hides_no_real_token(qwen_folder, llama_folder):
    for folder in (qwen_folder, llama_folder):
        tok = _tokenizer(folder)
        fmt = templates.setup_tokenizer(tok, "chatml", "test")
        assert tok.pad_token == templates.PAD_TOKEN
        assert tok.pad_token_id not in fmt.stop_ids and tok.pad_token_id != tok.eos_token_id


def test_a_pad_token_the_vocabulary_reserves_is_used_rather_than_a_new_one(llama_folder):
    tok = _tokenizer(llama_folder)
    tok.add_special_tokens({"additional_special_tokens": ["<|finetune_right_pad_id|>"]})
    size = len(tok)
    templates.setup_tokenizer(tok, "mistral", "test")  # a template that adds no markers
    assert tok.pad_token == "<|finetune_right_pad_id|>" and len(tok) == size


def test_long_chats_drop_whole_early_turns_never_the_last_answer(qwen_folder):
    tok = _tokenizer(qwen_folder)
    fmt = templates.setup_tokenizer(tok, "chatml", "test")
    long_chat = [CHAT[0]]
    for i in range(6):
        long_chat += [{"role": "user", "content": f"question number {i} " * 3}, {"role": "assistant", "content": f"answer {i}"}]
    whole = templates.encode_chat(tok, long_chat, fmt, 10_000)
    limit = len(whole) - 10
    enc = templates.encode_chat(tok, long_chat, fmt, limit)
    assert len(enc) <= limit and enc.dropped_turns == 1
    text = tok.decode(enc.ids)
    assert text.startswith("<|im_start|>system\nBe brief.") and "question number 0" not in text and "answer 5<|im_end|>" in text
    assert tok.decode([t for t, on in zip(enc.ids, enc.trained) if on]).endswith("answer 5<|im_end|>")
    assert templates.encode_chat(tok, long_chat, fmt, 8) is None


def test_train_on_prompt_trains_every_token(qwen_folder):
    tok = _tokenizer(qwen_folder)
    fmt = templates.setup_tokenizer(tok, "chatml", "test")
    enc = templates.encode_chat(tok, CHAT, fmt, 512, train_on_prompt=True)
    assert all(enc.trained)
