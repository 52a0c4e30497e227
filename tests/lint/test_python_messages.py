"""System messages as a sequence and as classes: the order of system messages made one per item of a set is part of
the system prompt (AC103 at each message's construction), and a class whose ``role`` defaults to a system role
makes system messages, whatever its name says (learned from its body and its bases', in this module or another).

Fixtures as in tests/lint/marked.py: ``# expect: CODE`` marks each finding's line; a fixture without marks must
produce nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentcache.lint import lint_paths
from tests.lint.marked import fixture_tests, write_package

POSITIVE = {
    "system_messages_made_per_item_of_a_set": """
        def send(client, docs, found):
            msgs = [{"role": "system", "content": c} for c in set(docs)]  # expect: AC103
            client.create(messages=msgs)
            notes = []
            for c in set(found):
                notes.append({"role": "system", "content": c})  # expect: AC103
            client.create(messages=notes)
    """,
    "a_loop_that_extends_adds_or_yields_system_messages": """
        from langchain_core.messages import SystemMessage

        def context(chunks, rules):
            messages = []
            for chunk in set(chunks):
                messages.extend([SystemMessage(content=chunk)])  # expect: AC103
            for rule in frozenset(rules):
                messages += [("system", rule)]  # expect: AC103
            return messages

        def stream(chunks):
            for chunk in set(chunks):
                yield {"role": "developer", "content": chunk}  # expect: AC103

        def bound(chunks):
            messages = []
            for chunk in set(chunks):
                message = SystemMessage(content=f"Context: {chunk}")  # expect: AC103
                messages.append(message)
            return messages
    """,
    "a_class_whose_role_defaults_to_system": """
        from dataclasses import dataclass, field
        from uuid import uuid4
        from pydantic import BaseModel, Field

        class Note(BaseModel):
            content: str
            role: str = "system"

        @dataclass
        class Rule:
            content: str
            role: str = field(default="developer")

        class Hint(BaseModel):
            role: str = Field(default="system")
            content: str

        class Framed:
            def __init__(self, content, role="system"):
                self.content = content
                self.role = role

        class Retrieved(Note):
            pass

        def send(client, chunks):
            client.create(messages=[Note(content=str(uuid4()))])  # expect: AC101
            client.create(messages=[Rule(f"run {uuid4()}"), Hint(content=f"{uuid4()}")])  # expect: AC101 AC101
            client.create(messages=[Framed(str(uuid4()))])  # expect: AC101
            client.create(messages=[Retrieved(content=c) for c in set(chunks)])  # expect: AC103
    """,
    "a_role_default_set_in_init_or_named": """
        import time

        class Instruction:
            def __init__(self, text):
                self.role = "system"
                self.text = text

        class Preamble(Message):
            def __init__(self, content):
                super().__init__(role=Role.SYSTEM, content=content)

        def send(client):
            client.create(messages=[Instruction(f"Now {time.time()}")])  # expect: AC101
            client.create(messages=[Preamble(f"{time.time()}")])  # expect: AC101
    """,
}

NEGATIVE = {
    "system_messages_in_a_defined_order": """
        def send(client, docs, allowed, ordered):
            found = set(docs)
            msgs = [{"role": "system", "content": c} for c in sorted(found)]
            msgs += [{"role": "system", "content": c} for c in list(docs)]
            msgs += [m for m in ordered if m in allowed]
            for c in sorted(found):
                msgs.append({"role": "system", "content": c})
            client.create(messages=msgs)
    """,
    "user_messages_made_per_item_of_a_set": """
        def send(client, docs):
            found = set(docs)
            msgs = [{"role": "user", "content": c} for c in found]
            for c in found:
                msgs.append({"role": "assistant", "content": c})
            client.create(messages=msgs)
    """,
    "one_system_message_per_request": """
        def send(client, docs):
            for c in set(docs):
                client.create(messages=[{"role": "system", "content": c}])
    """,
    "the_same_system_message_once_per_item": """
        from langchain_core.messages import HumanMessage, SystemMessage

        RULES = "Answer briefly."

        def send(client, docs):
            messages = []
            rules = SystemMessage(content=RULES)
            for c in set(docs):
                messages.append({"role": "system", "content": RULES})
                messages += [rules, HumanMessage(content=c)]
            client.create(messages=messages)
    """,
    "classes_whose_role_is_not_a_system_role": """
        from uuid import uuid4
        from pydantic import BaseModel

        class Note(BaseModel):
            content: str
            role: str = "user"

        class Plain(BaseModel):
            content: str
            role: str

        class SystemMessage(BaseModel):
            content: str
            role: str = "user"

        class Framed:
            def __init__(self, content, role):
                self.content = content
                self.role = role

        def send(client, who, chunks):
            client.create(messages=[Note(content=str(uuid4())), Plain(content=str(uuid4()), role=who)])
            client.create(messages=[SystemMessage(content=f"{uuid4()}"), Framed(f"{uuid4()}", who)])
            client.create(messages=[Note(content=c) for c in set(chunks)])
    """,
}


test_finds_what_each_fixture_marks, test_stays_quiet_where_nothing_reaches_a_sink = fixture_tests(POSITIVE, NEGATIVE)


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_message_class_of_another_module_is_known_by_its_role(tmp_path: Path, jobs: int) -> None:
    """llamabot's shape: retrieved chunks put in a set, one ``RetrievedMessage`` each, whose role defaults to
    ``"system"`` in another module, as a subclass of a base that sets no role; a subclass of it in the bot's module
    inherits the default. The bot's module is walked first: it is checked again once the classes are learned."""
    write_package(
        tmp_path / "bot",
        a_query="from .messages import RetrievedMessage\n\n"
        "class Chunk(RetrievedMessage):\n"
        "    pass\n\n"
        "def compose(self, query):\n"
        "    found = set().union(self.docstore.retrieve(query))\n"
        "    messages = [self.system_prompt]\n"
        "    messages.extend([RetrievedMessage(content=chunk) for chunk in found])\n"
        "    return messages + [Chunk(content=chunk) for chunk in set(query)]\n",
        messages="from pydantic import BaseModel\n\n"
        "class BaseMessage(BaseModel):\n"
        "    role: str\n"
        "    content: str\n\n"
        "class RetrievedMessage(BaseMessage):\n"
        "    role: str = 'system'\n\n"
        "class HumanMessage(BaseMessage):\n"
        "    role: str = 'user'\n",
    )
    findings = lint_paths([tmp_path], jobs=jobs).findings
    assert [(Path(f.path).name, f.line, f.code) for f in findings] == [
        ("a_query.py", 9, "AC103"),
        ("a_query.py", 10, "AC103"),
    ]
