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
no message is added, so no template can object to the order of roles. The lines of a session's earlier turns stay
where they were sent (:mod:`agentcache.transport.sticky`); a body they make that the template refuses goes without
them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentcache.canon.rules import fold_relocated, message_text
from agentcache.errors import AgentCacheError
from agentcache.servers import ServerPrompt
from agentcache.transport.sticky import RelocationMemory, appended_index


@dataclass(frozen=True)
class Placement:
    """What goes out for a canonical body, and where its relocated volatile lines are."""

    body: dict[str, Any]
    relocated: int | None = None
    """Index of the message holding this turn's relocated lines; None when none were relocated."""
    folded: bool = False
    """The lines were folded into the agent's own message at ``relocated``."""
    refused: str | None = None
    """Why the agent's request goes out as written (then ``body`` is that request)."""

    @property
    def relocated_path(self) -> str | None:
        """JSON path of the message holding the relocated lines."""
        return None if self.relocated is None else f"$.messages[{self.relocated}]"


def place_volatile(
    prompt: ServerPrompt | None,
    memory: RelocationMemory | None,
    session: str,
    canonical: dict[str, Any],
    original: dict[str, Any],
) -> Placement:
    """The placement of ``canonical``, the canonical form of the agent's ``original``: with ``memory``, the
    session's earlier relocated lines stay where they were sent (:mod:`agentcache.transport.sticky`) unless the
    template refuses the body they make, and the placement is remembered for the session's next turn."""
    index = appended_index(canonical, original)
    if memory is None:
        return accepted_placement(prompt, canonical, index, original)
    recalled = memory.recall(session, canonical, index)
    placement = accepted_placement(prompt, recalled.body, recalled.index, original)
    if placement.refused is not None and recalled.edits:  # the history as sent before is refused now: start anew
        recalled = memory.recall(session, canonical, index, keep=False)
        placement = accepted_placement(prompt, recalled.body, recalled.index, original)
    if placement.refused is None:
        memory.remember(recalled, placement.relocated, placement.folded, placement.body)
    return placement


def accepted_placement(
    prompt: ServerPrompt | None, sent: dict[str, Any], index: int | None, original: dict[str, Any]
) -> Placement:
    """The placement of ``sent``, whose relocated message (if any) is at ``index``. With the server's prompt known,
    any canonical body its template refuses is replaced, not only a relocated one: the agent's request is what the
    server would have taken."""
    folded = None if index is None else fold_relocated(sent, index)
    as_folded = Placement(folded, None if index is None else index - 1, True) if folded is not None else None
    if prompt is None:
        return as_folded or Placement(sent, index)
    text, refused = _render(prompt, sent)
    if refused is None and not _hoisted(text, sent, index):
        return Placement(sent, index)
    if as_folded is not None and _render(prompt, as_folded.body)[1] is None:
        return as_folded
    if index is not None:  # after a tool result there is no user message to fold into: a user message, in place
        as_user = _as_user(sent, index)
        text, why = _render(prompt, as_user)
        if why is None and not _hoisted(text, as_user, index):
            return Placement(as_user, index)
    if refused is None:
        return Placement(sent, index)  # rendered ahead of the history, but nothing else is taken
    return Placement(original, refused=f"the chat template refuses the canonical request ({refused})")


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
