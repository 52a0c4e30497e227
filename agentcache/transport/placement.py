"""Where the relocated volatile lines go, so that canonicalization never makes a request the server refuses.

``relocate_volatile`` moves the system prompt's volatile lines into a message appended at the end. Some chat
templates refuse that message: Mistral's raise "roles must alternate" on a user message after a user message, and
llama-server answers 400 where the agent's own request was accepted. With the model folder known, the canonical
request is rendered with the server's own template before it is sent; a refused one gets the lines folded into
the last user message instead, and if the template refuses that too (or refuses a canonical body for any other
reason), the agent's request goes out as written, with the reason. The lines are folded as well when the template
takes the appended message but renders it ahead of the message before it: DeepSeek's templates gather every
system message at the top of the prompt, where lines that change every turn break the whole prefix. Without a
model folder nothing can be checked, so the lines are folded at once when a user message comes right before them:
no message is added, so no template can object to the order of roles.
"""

from __future__ import annotations

from typing import Any

from agentcache.canon.rules import fold_relocated, message_text
from agentcache.errors import AgentCacheError
from agentcache.servers import ServerPrompt


def accepted_placement(
    prompt: ServerPrompt | None, sent: dict[str, Any], original: dict[str, Any]
) -> tuple[dict[str, Any], str | None]:
    """``(body to send, why the original is sent instead or None)`` for a canonical body ``sent``. With the
    server's prompt known, any canonical body its template refuses is replaced, not only a relocated one: the
    agent's request is what the server would have taken."""
    appended = _appended_index(sent, original)
    folded = None if appended is None else fold_relocated(sent, appended)
    if prompt is None:
        return folded or sent, None
    text, refused = _render(prompt, sent)
    if refused is None and not _hoisted(text, sent, appended):
        return sent, None
    if folded is not None and _render(prompt, folded)[1] is None:
        return folded, None
    if appended is not None:  # after a tool result there is no user message to fold into: a user message, in place
        as_user = _as_user(sent, appended)
        text, why = _render(prompt, as_user)
        if why is None and not _hoisted(text, as_user, appended):
            return as_user, None
    if refused is None:
        return sent, None  # rendered ahead of the history, but nothing else is taken
    return original, f"the chat template refuses the canonical request ({refused})"


def relocated_path(sent: dict[str, Any], original: dict[str, Any] | None) -> str | None:
    """JSON path of the message holding the relocated volatile lines: the one appended, or the last user message
    they were folded into; None when nothing was relocated."""
    index = _appended_index(sent, original or {})
    if index is not None:
        return f"$.messages[{index}]"
    after, before = sent.get("messages"), (original or {}).get("messages")
    if not isinstance(after, list) or not isinstance(before, list) or len(after) != len(before):
        return None
    for index in range(len(after) - 1, -1, -1):
        if after[index] != before[index] and isinstance(after[index], dict) and after[index].get("role") == "user":
            return f"$.messages[{index}]"
    return None


def _appended_index(sent: dict[str, Any], original: dict[str, Any]) -> int | None:
    """Index of the message canonicalization appended (before a final assistant prefill, if any)."""
    after, before = sent.get("messages"), original.get("messages")
    if not isinstance(after, list) or not isinstance(before, list) or len(after) <= len(before):
        return None
    last = after[-1]
    return len(after) - 2 if isinstance(last, dict) and last.get("role") == "assistant" else len(after) - 1


def _hoisted(text: str, body: dict[str, Any], index: int | None) -> bool:
    """Whether ``text``, the body's prompt, shows the appended message at ``index`` ahead of the message before
    it."""
    if index is None:
        return False
    messages = body["messages"]
    mine, before = _content(messages[index]), _content(messages[index - 1])
    if not mine or not before or mine not in text or before not in text:
        return False
    return text.find(mine) < text.rfind(before)


def _as_user(body: dict[str, Any], index: int) -> dict[str, Any]:
    messages = body["messages"]
    return {**body, "messages": [*messages[:index], {**messages[index], "role": "user"}, *messages[index + 1 :]]}


def _content(message: Any) -> str:
    return message_text(message.get("content")).strip() if isinstance(message, dict) else ""


def _render(prompt: ServerPrompt, body: dict[str, Any]) -> tuple[str, str | None]:
    """``(the body's prompt, None)``, or ``("", why the template refuses it)``: one rendering answers both."""
    try:
        return prompt.text(body), None
    except AgentCacheError as exc:
        return "", str(exc)
