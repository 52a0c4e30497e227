"""ChatTemplate renders a template the way transformers' ``apply_chat_template`` (SGLang, vLLM) does.

The expected texts are worked out by hand from the Jinja rules transformers sets (``trim_blocks``,
``lstrip_blocks``, ``loopcontrols``, its own ``tojson``, an immutable sandbox) so that each test fails if one of
those settings were left out.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentcache.errors import TokenizerError
from agentcache.servers import ChatTemplate

CHAT = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Hi"},
    {"role": "assistant", "content": "Hello"},
    {"role": "user", "content": "Bye"},
]


def test_trim_blocks_and_lstrip_blocks() -> None:
    source = "{% for m in messages %}\n    {% if m.role == 'user' %}\n[{{ m.content }}]\n    {% endif %}\n{% endfor %}"
    # Without the two settings every indented tag line would leave "    " and a newline behind.
    assert ChatTemplate(source).render(CHAT) == "[Hi]\n[Bye]\n"


def test_no_html_autoescaping() -> None:
    assert ChatTemplate("{{ messages[0].content }}").render([{"role": "user", "content": "<a & 'b'>"}]) == "<a & 'b'>"


def test_tojson_keeps_non_ascii_and_python_separators() -> None:
    tools = [{"name": "météo", "html": "<b>&</b>", "n": [1, 2.5], "o": {"k": None, "東京": True}}]
    rendered = ChatTemplate("{{ tools | tojson }}").render(CHAT, tools)
    # Jinja's own tojson would write \u00e9 and \u003c and drop the spaces after "," and ":".
    assert rendered == '[{"name": "météo", "html": "<b>&</b>", "n": [1, 2.5], "o": {"k": null, "東京": true}}]'


def test_tojson_arguments() -> None:
    value = {"b": 1, "a": [2]}
    template = ChatTemplate(
        "{{ tools[0] | tojson(indent=2) }}|{{ tools[0] | tojson(separators=(',', ':')) }}"
        "|{{ tools[0] | tojson(sort_keys=true) }}|{{ tools[0] | tojson(ensure_ascii=true) }}"
    )
    tools = [{**value, "é": 0}]
    assert template.render(CHAT, tools) == (
        '{\n  "b": 1,\n  "a": [\n    2\n  ],\n  "é": 0\n}'
        '|{"b":1,"a":[2],"é":0}'
        '|{"a": [2], "b": 1, "é": 0}'
        '|{"b": 1, "a": [2], "\\u00e9": 0}'
    )


def test_loopcontrols_extension() -> None:
    source = "{% for m in messages %}{% if m.role == 'assistant' %}{% break %}{% endif %}{{ m.content }};{% endfor %}"
    assert ChatTemplate(source).render(CHAT) == "Be brief.;Hi;"
    source = "{% for m in messages %}{% if m.role != 'user' %}{% continue %}{% endif %}{{ m.content }};{% endfor %}"
    assert ChatTemplate(source).render(CHAT) == "Hi;Bye;"


def test_generation_prompt_tools_and_extra_variables() -> None:
    source = (
        "{{ tools is none }}|{{ add_generation_prompt }}|{{ enable_thinking | default('unset') }}"
        "{% if add_generation_prompt %}<gen>{% endif %}"
    )
    template = ChatTemplate(source)
    assert template.render(CHAT) == "True|True|unset<gen>"
    assert template.render(CHAT, [{"name": "f"}], add_generation_prompt=False, enable_thinking=False) == (
        "False|False|False"
    )


def test_an_empty_tools_list_stays_a_list() -> None:
    """transformers hands ``tools=[]`` to the template as it is (only None means "no tools"), and templates such
    as Llama 3.1's test ``tools is not none``; vLLM passes ``[]`` for a request with ``"tools": []``."""
    assert ChatTemplate("{{ tools is none }}").render(CHAT, []) == "False"


def test_strftime_now_is_available() -> None:
    rendered = ChatTemplate("{{ strftime_now('%Y') }}").render(CHAT)
    assert len(rendered) == 4 and rendered.isdigit()


def test_raise_exception_raises_tokenizer_error() -> None:
    source = "{% if messages[0].role != 'user' %}{{ raise_exception('Conversations must start with user') }}{% endif %}"
    template = ChatTemplate(source)
    with pytest.raises(TokenizerError, match="Conversations must start with user"):
        template.render(CHAT)
    assert template.render(CHAT[1:]) == ""


def test_a_broken_template_source_raises_tokenizer_error() -> None:
    with pytest.raises(TokenizerError, match=r"my-model: not a valid Jinja template"):
        ChatTemplate("{% for m in messages %}{{ m.content }}", name="my-model")


def test_a_template_failing_at_render_time_raises_tokenizer_error() -> None:
    with pytest.raises(TokenizerError, match="failed on this request"):
        ChatTemplate("{{ messages[0].content + 1 }}").render(CHAT)


def test_the_sandbox_is_immutable_like_transformers() -> None:
    messages = [dict(m) for m in CHAT]
    with pytest.raises(TokenizerError):
        ChatTemplate("{{ messages.append({'role': 'user'}) }}").render(messages)
    assert messages == CHAT


def test_generation_blocks_render_their_body() -> None:
    """transformers registers a ``{% generation %}`` tag (it marks assistant tokens for training masks) and renders
    its body unchanged; llama.cpp's Jinja treats it as a no-op. Templates that use it are served fine by SGLang,
    vLLM and llama-server, so the client must render them too."""
    source = (
        "{% for m in messages %}{% if m.role == 'assistant' %}{% generation %}<a>{{ m.content }}</a>"
        "{% endgeneration %}{% else %}{{ m.content }}{% endif %}{% endfor %}"
    )
    assert ChatTemplate(source).render(CHAT[1:3]) == "Hi<a>Hello</a>"


def write_model(folder: Path, config: dict[str, Any] | None = None, jinja: str | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    if config is not None:
        (folder / "tokenizer_config.json").write_text(json.dumps(config))
    if jinja is not None:
        (folder / "chat_template.jinja").write_text(jinja)
    return folder


def test_from_pretrained_reads_the_config_template_and_special_tokens(tmp_path: Path) -> None:
    config = {
        "chat_template": "{{ bos_token }}{% for m in messages %}{{ m.content }}{{ eos_token }}{% endfor %}",
        "bos_token": {"content": "<s>", "lstrip": False, "normalized": False, "rstrip": False, "single_word": False},
        "eos_token": "</s>",
        "add_bos_token": True,  # ends in _token but is a flag, not a token
    }
    template = ChatTemplate.from_pretrained(write_model(tmp_path / "m", config))
    assert template.special_tokens == {"bos_token": "<s>", "eos_token": "</s>"}
    assert template.render(CHAT[1:3]) == "<s>Hi</s>Hello</s>"
    assert template.name == str(tmp_path / "m")


def test_a_null_special_token_is_left_undefined(tmp_path: Path) -> None:
    config = {"chat_template": "[{{ bos_token is defined }}]{{ eos_token }}", "bos_token": None, "eos_token": "E"}
    assert ChatTemplate.from_pretrained(write_model(tmp_path, config)).render(CHAT) == "[False]E"


def test_chat_template_jinja_takes_precedence(tmp_path: Path) -> None:
    config = {"chat_template": "from config", "eos_token": "</s>"}
    folder = write_model(tmp_path, config, jinja="from file{{ eos_token }}")
    assert ChatTemplate.from_pretrained(folder).render(CHAT) == "from file</s>"


def test_chat_template_jinja_alone_is_enough(tmp_path: Path) -> None:
    assert ChatTemplate.from_pretrained(write_model(tmp_path, jinja="only {{ messages | length }}")).render(CHAT) == (
        "only 4"
    )


def test_named_templates_use_default(tmp_path: Path) -> None:
    config = {"chat_template": [{"name": "tool_use", "template": "tools"}, {"name": "default", "template": "plain"}]}
    assert ChatTemplate.from_pretrained(write_model(tmp_path, config)).render(CHAT) == "plain"


@pytest.mark.parametrize(
    "config",
    [None, {"eos_token": "</s>"}, {"chat_template": [{"name": "tool_use", "template": "tools"}]}],
    ids=["no-config", "no-template", "no-default"],
)
def test_a_missing_template_names_the_folder(tmp_path: Path, config: dict[str, Any] | None) -> None:
    folder = write_model(tmp_path / "some-model", config)
    with pytest.raises(TokenizerError, match="no chat template found") as info:
        ChatTemplate.from_pretrained(folder)
    assert str(folder) in str(info.value)


def test_an_unreadable_config_raises_tokenizer_error(tmp_path: Path) -> None:
    (tmp_path / "tokenizer_config.json").write_text("{not json")
    with pytest.raises(TokenizerError, match=r"tokenizer_config\.json: cannot read it as JSON"):
        ChatTemplate.from_pretrained(tmp_path)


def test_the_test_models_template_gives_chatml(model_dir: Path) -> None:
    template = ChatTemplate.from_pretrained(model_dir)
    assert template.special_tokens["eos_token"] == "<|im_end|>"
    assert template.render(CHAT) == (
        "<|im_start|>system\nBe brief.<|im_end|>\n"
        "<|im_start|>user\nHi<|im_end|>\n"
        "<|im_start|>assistant\nHello<|im_end|>\n"
        "<|im_start|>user\nBye<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    assert template.render(CHAT[1:2], add_generation_prompt=False) == "<|im_start|>user\nHi<|im_end|>\n"
    tools = [{"type": "function", "function": {"name": "now", "description": "Time in 東京"}}]
    with_tools = template.render(CHAT[:2], tools)
    assert with_tools.startswith("<|im_start|>system\nBe brief.\n\n# Tools\n" + json.dumps(tools, ensure_ascii=False))
    assert with_tools.endswith("<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")
