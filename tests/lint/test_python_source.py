"""Python rules (AC1xx) on realistic agent code: LangGraph, LangChain, OpenAI and Anthropic SDK styles.

Each fixture marks the line of every finding it must produce with ``# expect: CODE``; a fixture without marks must
produce nothing. The frameworks are never imported: the linter reads source, it does not run it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from agentcache.lint import lint_paths
from tests.lint.marked import fixture_tests, lint_source, write_package

REASONS = """
    from openai import OpenAI

    class Filter:
        def __init__(self):
            self.disabled = {{"shell", "browser"}}

        def reasons(self):
            found = {{}}
            for name in self.disabled:
                found[name] = "disabled by the user"
            return found

        def send(self, tools):
{send}
            return OpenAI().chat.completions.create(model="m", messages=[], tools=annotated){expect}
"""


SLOT_SETTER = """
    import uuid
    from agent.prompts import StatePrompt

    class Messages:
        def _set(self, message, kind):
            if kind == "system":
                self.history.system_message = message{expect}
            else:
                self.history.state_message = message

        def add_state(self, task):
            self._set(StatePrompt(task=f"{{task}} (request {{uuid.uuid4()}})"), "{kind}")
"""

POSITIVE = {
    "text_the_hour_decides": """
        import random
        from datetime import datetime

        from openai import OpenAI

        client = OpenAI()

        def context():
            hour = datetime.now().hour
            if 5 <= hour < 9:
                period = "morning"
            elif hour >= 22:
                period = "night"
            else:
                period = "day"
            return {"period": period}

        def adaptations():
            lines = []
            if context()["period"] == "night":
                lines.append("It is late: be brief.")
            return "\\n".join(lines)

        def greeting():
            if random.random() < 0.5:
                return "Be cheerful."
            return "Be formal."

        def ask(question):
            system = {"role": "system", "content": "You help." + adaptations()}  # expect: AC101
            client.chat.completions.create(model="m", messages=[system, question])
            system = {"role": "system", "content": greeting()}  # expect: AC101
            return client.chat.completions.create(model="m", messages=[system, question])
    """,
    "tools_listed_while_their_listing_is_fresh": """
        import time

        from openai import OpenAI

        client = OpenAI()
        TTL = 30

        def catalog(servers, listed):
            names = []
            for server in servers:
                if server not in listed:
                    continue
                if time.monotonic() - listed[server].at >= TTL:
                    continue
                names.append(f"{server}/{listed[server].tool}")
            return "Known tools: " + ", ".join(names)

        def ask(question, servers, listed):
            system = {"role": "system", "content": "You help. " + catalog(servers, listed)}  # expect: AC101
            return client.chat.completions.create(model="m", messages=[system, question])
    """,
    "a_record_copied_with_a_dated_prompt": """
        from dataclasses import replace
        from datetime import datetime

        from openai import OpenAI

        def dated(config):
            return replace(config, system=f"You help. Now: {datetime.now()}", label="dated")

        def ask(config, question):
            copy = dated(config)
            system = {"role": "system", "content": copy.system}  # expect: AC101
            return OpenAI().chat.completions.create(model="m", messages=[system, question])
    """,
    "an_item_of_a_set_picked_by_a_shared_trait": """
        from openai import OpenAI

        NAMES = {"search", "fetch", "write", "shell"}

        def ask(question):
            first = next(n for n in NAMES if len(n) == 5)
            system = {"role": "system", "content": f"Start with {first}."}  # expect: AC103
            return OpenAI().chat.completions.create(model="m", messages=[system, question])
    """,
    "the_one_text_joined_from_a_set": """
        from openai import OpenAI

        NAMES = {"search", "fetch", "write"}

        def ask(question):
            parts = [", ".join(NAMES)]
            if len(parts) == 1:
                system = {"role": "system", "content": "Tools: " + parts[0]}  # expect: AC103
                return OpenAI().chat.completions.create(model="m", messages=[system, question])
            return None
    """,
    "a_project_function_that_lists_its_keywords": """
        from openai import OpenAI

        NAMES = {"search", "fetch", "write"}

        def render(**fields):
            return "; ".join(f"{key}: {value}" for key, value in fields.items())

        def ask(question):
            system = {"role": "system", "content": render(**{name: "on" for name in NAMES})}  # expect: AC103
            return OpenAI().chat.completions.create(model="m", messages=[system, question])
    """,
    "the_time_left_printed_deep_in_a_prompt": """
        import time

        from openai import OpenAI

        client = OpenAI()

        class Agent:
            def __init__(self, budget):
                self.deadline = time.monotonic() + budget

            def step(self, question):
                remaining = self.deadline - time.monotonic()
                return client.chat.completions.create(model="m", messages=self._messages(question, remaining))

            def _messages(self, question, remaining):
                system = {"role": "system", "content": self._system(remaining)}  # expect: AC101
                return [system, {"role": "user", "content": question}]

            def _system(self, remaining):
                return "You are a solver." + self._budget(remaining)

            def _budget(self, remaining):
                return "Budget: " + self._line(remaining)

            def _line(self, remaining):
                return f"You have {remaining:.0f} seconds left."
    """,
    "a_system_prompt_traced_and_sent": """
        from datetime import datetime

        from openai import OpenAI

        client = OpenAI()

        def turn(tracer, base, question):
            prompt = f"{base} Started at {datetime.now():%H:%M}."
            tracer.start_session(system_prompt=prompt)
            system = {"role": "system", "content": prompt}  # expect: AC101
            return client.chat.completions.create(model="m", messages=[system, {"role": "user", "content": question}])
    """,
    "a_date_in_a_graph_runs_configurable_dict": """
        import uuid
        from datetime import datetime

        from openai import OpenAI

        client = OpenAI()

        def run(graph, task):
            config = {"configurable": {"thread_id": "main", "today": datetime.now().isoformat()}}
            state = graph.invoke({"messages": [task]}, config)
            system = {"role": "system", "content": state["summary"]}  # expect: AC101
            return client.chat.completions.create(model="m", messages=[system])

        def shared(graph, task):
            session = str(uuid.uuid4())
            config = {"configurable": {"thread_id": session, "system_prompt": f"Session {session}."}}
            state = graph.invoke({"messages": [task]}, config)
            system = {"role": "system", "content": state["summary"]}  # expect: AC101
            return client.chat.completions.create(model="m", messages=[system])

        def read_back(graph, task):
            config = {"configurable": {"thread_id": str(uuid.uuid4())}}
            graph.invoke({"messages": [task]}, config)
            system = {"role": "system", "content": f"Thread {config['configurable']['thread_id']}"}  # expect: AC101
            return client.chat.completions.create(model="m", messages=[system])
    """,
    "clients_stored_as_gathered_connections_finish_listed_as_tools": """
        import asyncio

        from openai import OpenAI

        class Servers:
            def __init__(self, profiles):
                self.profiles = profiles
                self.clients = {}

            async def start_all(self):
                async def connect_one(name, profile):
                    client = Client(profile)
                    await client.connect()
                    self.clients[name] = client

                await asyncio.gather(*(connect_one(n, p) for n, p in self.profiles.items()))

            def definitions(self):
                return [tool.schema() for client in self.clients.values() for tool in client.tools]

            def ask(self, text):
                return OpenAI().chat.completions.create(
                    model="m", messages=[{"role": "user", "content": text}], tools=self.definitions()  # expect: AC102
                )
    """,
    "tasks_in_a_loop_append_tools_to_the_list_around_them": """
        import asyncio

        from anthropic import Anthropic

        async def ask(servers, text):
            listed = []

            async def fetch(server):
                tools = await server.list_tools()
                listed.extend(tools)

            tasks = []
            for server in servers:
                tasks.append(asyncio.create_task(fetch(server)))
            await asyncio.wait(tasks)
            return Anthropic().messages.create(
                model="m", max_tokens=64, messages=[{"role": "user", "content": text}], tools=listed  # expect: AC102
            )
    """,
    "two_coroutines_run_together_adding_to_one_tool_list": """
        import asyncio

        from openai import OpenAI

        class Loader:
            def __init__(self):
                self.tools = []

            async def load_builtin(self):
                self.tools.extend(await builtin_tools())

            async def load_mcp(self):
                for server in SERVERS:
                    self.tools.extend(await server.list_tools())

            async def start(self):
                await asyncio.gather(self.load_builtin(), self.load_mcp())

            def ask(self):
                return OpenAI().chat.completions.create(model="m", messages=[], tools=self.tools)  # expect: AC102
    """,
    "cards_stored_by_endpoint_as_futures_complete_joined_not_looked_up": """
        from concurrent.futures import ThreadPoolExecutor, as_completed

        from openai import OpenAI

        def ask(configs, text):
            cards = {}
            with ThreadPoolExecutor() as pool:
                futures = {pool.submit(fetch_card, config): config for config in configs}
                for future in as_completed(futures):
                    cards[futures[future].endpoint] = future.result()
            first = cards[configs[0].endpoint]
            OpenAI().chat.completions.create(model="m", messages=[{"role": "system", "content": first}])
            every = "\\n".join(cards.values())
            return OpenAI().chat.completions.create(
                model="m", messages=[{"role": "system", "content": every}]  # expect: AC101
            )
    """,
    "date_given_by_keyword_to_a_prompt_builders_method": """
        from datetime import datetime

        from openai import OpenAI

        TEMPLATE = "You are a coworker. Conversation started: {conversation_started}."

        class ChatSystemPromptBuilder:
            def build(self, conversation_started, notes=""):
                return TEMPLATE.format(conversation_started=conversation_started) + notes

        def system_text(started_at=None):
            started = (started_at or datetime.now()).strftime("%A, %B %d, %Y")
            prompt_builder = ChatSystemPromptBuilder()
            return prompt_builder.build(conversation_started=started)

        def ask(text):
            system = {"role": "system", "content": system_text()}  # expect: AC101
            return OpenAI().chat.completions.create(model="m", messages=[system, {"role": "user", "content": text}])
    """,
    "threads_and_tasks_given_one_by_one_fill_one_list_a_subclass_starts_too": """
        import asyncio

        from openai import OpenAI

        class Skills:
            def __init__(self):
                self.lines = []

            def load_local(self):
                self.lines.append(read_local())

            def load_remote(self):
                self.lines.append(read_remote())

            async def start(self):
                await asyncio.gather(asyncio.to_thread(self.load_local), asyncio.to_thread(self.load_remote))

            def ask(self):
                system = "\\n".join(self.lines)
                return OpenAI().chat.completions.create(
                    model="m", messages=[{"role": "system", "content": system}]  # expect: AC101
                )

        class Loader:
            def __init__(self, servers):
                self.servers = servers
                self.tools = []

            async def load_local(self):
                self.tools.extend(await local_tools())

            async def load_builtin(self):
                self.tools.extend(await builtin_tools())

            async def start(self):
                await asyncio.wait([asyncio.create_task(self.load_builtin()), asyncio.create_task(self.load_local())])

            def ask(self):
                return OpenAI().chat.completions.create(model="m", messages=[], tools=self.tools)  # expect: AC102

        class Fetcher:
            def __init__(self, servers):
                self.servers = servers
                self.tools = []

            async def load(self, server):
                self.tools.extend(await server.list_tools())

        class Remote(Fetcher):
            async def start(self):
                await asyncio.gather(*(self.load(server) for server in self.servers))

            def ask_remote(self):
                return OpenAI().chat.completions.create(model="m", messages=[], tools=self.tools)  # expect: AC102
    """,
    "tool_lists_read_as_futures_complete": """
        from concurrent.futures import ThreadPoolExecutor, as_completed

        from openai import OpenAI

        def ask(servers, text):
            with ThreadPoolExecutor() as pool:
                futures = [pool.submit(server.list_tools) for server in servers]
                tools = []
                for future in as_completed(futures):
                    tools.extend(future.result())  # expect: AC102
            return OpenAI().chat.completions.create(
                model="m", messages=[{"role": "user", "content": text}], tools=tools
            )
    """,
    "skills_described_by_threads_as_they_finish_in_the_system_prompt": """
        from concurrent.futures import ThreadPoolExecutor

        from openai import OpenAI

        class Skills:
            def __init__(self, paths):
                self.paths = paths
                self.lines = []

            def load(self, path):
                text = path.read_text()
                self.lines.append(text.splitlines()[0])

            def load_all(self):
                with ThreadPoolExecutor() as pool:
                    for path in self.paths:
                        pool.submit(self.load, path)

            def ask(self, t):
                system = "Skills:\\n" + "\\n".join(self.lines)
                message = {"role": "system", "content": system}  # expect: AC101
                return OpenAI().chat.completions.create(model="m", messages=[message, {"role": "user", "content": t}])
    """,
    "private_functions_something_else_may_call_keep_both_branches": """
        from datetime import date

        from langchain_core.language_models import BaseChatModel
        from openai import OpenAI

        class DatedChat(BaseChatModel):
            def _generate(self, messages, stop=None, run_manager=None, stream=False, **kwargs):
                if stream:
                    return OpenAI().chat.completions.create(model="m", messages=messages, stream=True)
                system = {"role": "system", "content": f"Today is {date.today()}."}  # expect: AC101
                return OpenAI().chat.completions.create(model="m", messages=[system, *messages])

            def _stream(self, messages, stop=None, run_manager=None, **kwargs):
                return self._generate(messages, stop, run_manager, stream=True)

        def _send(question, dated=False):
            if not dated:
                return OpenAI().chat.completions.create(model="m", messages=[{"role": "user", "content": question}])
            messages = [{"role": "system", "content": f"Today is {date.today()}."}]  # expect: AC101
            return OpenAI().chat.completions.create(model="m", messages=messages)

        def ask(question):
            return _send(question)

        class Agent:
            def _ask(me, question, dated=False):
                if not dated:
                    return OpenAI().chat.completions.create(model="m", messages=[{"role": "user", "content": question}])
                messages = [{"role": "system", "content": f"Today is {date.today()}."}]  # expect: AC101
                return OpenAI().chat.completions.create(model="m", messages=messages)

            def run(me, question):
                return me._ask(question, True)
    """,
    "tools_in_a_set_order_stored_as_a_policy_and_as_tools": """
        class Profiles:
            def __init__(self, default_tools):
                self.default_tools = default_tools

            def get_profile(self, name):
                all_tools = list(set(self.default_tools))  # expect: AC103
                return {"name": name, "allowed_tools": all_tools, "tools": all_tools}
    """,
    "fields_declared_sets_made_empty_for_each_object": """
        from dataclasses import dataclass, field

        from openai import OpenAI
        from pydantic import BaseModel, Field

        class Agent(BaseModel):
            tools: set[str] = Field(default_factory=set)

            def run(self):
                tools = [{"name": name} for name in self.tools]  # expect: AC103
                return OpenAI().chat.completions.create(model="m", messages=[], tools=tools)

        @dataclass
        class Task:
            depends_on: frozenset[str] = field(default_factory=lambda: frozenset())

        def tools_of(task: Task):
            tools = [{"name": name} for name in task.depends_on]  # expect: AC103
            return OpenAI().chat.completions.create(model="m", messages=[], tools=tools)
    """,
    "functions_run_on_a_worker_thread": """
        import asyncio
        import os
        import time
        import uuid
        from asyncio import to_thread as in_thread

        import anyio
        from datetime import date, datetime

        from anthropic import Anthropic, AsyncAnthropic

        def environment_block(cwd):
            return f"cwd: {cwd}, date: {date.today()}"

        def clock_line():
            return f"now: {time.time()}"

        async def ask(cwd, question):
            block = await asyncio.to_thread(environment_block, cwd)
            system = "You help. " + block
            return await AsyncAnthropic().messages.create(model="m", system=system, messages=question)  # expect: AC101

        async def ask_later(question):
            line = await asyncio.get_running_loop().run_in_executor(None, clock_line)
            return await AsyncAnthropic().messages.create(model="m", system=line, messages=question)  # expect: AC101

        async def ask_aliased(question):
            line = await in_thread(dated_line)
            return await AsyncAnthropic().messages.create(model="m", system=line, messages=question)  # expect: AC101

        async def ask_anyio(question):
            line = await anyio.to_thread.run_sync(process_line, "pid")
            return await AsyncAnthropic().messages.create(model="m", system=line, messages=question)  # expect: AC101

        def process_line(label):
            return f"{label}: {os.getpid()}"

        def dated_line():
            return f"today: {datetime.now()}"

        class Agent:
            def run_in_executor(self, label, unit):
                return f"{label}: {uuid.uuid4()} {unit}"

            def ask(self, question):
                line = self.run_in_executor("now", "s")
                return Anthropic().messages.create(model="m", system=line, messages=question)  # expect: AC101
    """,
    "branches_on_a_flag_its_calls_give_differently_or_that_is_handed_on": """
        import time

        def _header(dated):
            if not dated:
                return "You help."
            return f"You help. It is {time.time()}."

        def _footer(dated=False):
            if dated:
                return f"Sent at {time.time()}"
            return ""

        def request(question, fast):
            system = _header(True) if fast else _header(False)
            return [{"role": "system", "content": system}, {"role": "user", "content": question}]  # expect: AC101

        def request_later(question, run):
            return run(_footer, question)

        def request_now(question):
            return [{"role": "system", "content": _footer()}, {"role": "user", "content": question}]  # expect: AC101
    """,
    "a_message_list_measured_and_sent": """
        from datetime import date

        from .tokens import count_tokens

        def ask(client, question):
            messages = [{"role": "system", "content": f"Today is {date.today()}."}]  # expect: AC101
            messages.append({"role": "user", "content": question})
            if count_tokens(messages) > 8000:
                raise ValueError("too long")
            return client.chat.completions.create(model="m", messages=messages)
    """,
    "a_message_list_given_to_a_tool_run_and_sent": """
        from datetime import date

        def stream(client, tool_call, tools):
            search_messages = [{"role": "system", "content": f"Today is {date.today()}."}]  # expect: AC101
            run = tools.get(tool_call.name)
            run(client, messages=search_messages)
            return client.chat.completions.create(model="m", messages=search_messages)

        def kept(tool_call, tools):
            notes = [{"role": "system", "content": f"Today is {date.today()}."}]  # expect: AC101
            tools[tool_call.name](notes)
            return notes
    """,
    "a_record_made_of_a_dict_whose_field_is_the_clock": """
        import time
        from langchain_core.messages import SystemMessage
        from pydantic import BaseModel

        class Completion(BaseModel):
            created: int

        def finish():
            response = Completion.model_validate({"created": int(time.time())})
            return SystemMessage(content=f"Created {response.created}. Answer briefly.")  # expect: AC101

        def aliased(body):
            response = Completion.model_validate({"createdAt": int(time.time()), "body": body})
            return SystemMessage(content=f"Created {response.created_at}. Answer briefly.")  # expect: AC101
    """,
    "dicts_with_arguments_that_are_no_tool_call": """
        from datetime import date, datetime

        def ask(client, question, args):
            context = {"today": datetime.now().strftime("%Y-%m-%d"), "arguments": args}
            system = "You help. Today is {today}.".format(**context)
            tools = [{"name": "search", "description": f"Search ({date.today()})", "arguments": {}}]  # expect: AC102
            return client.chat.completions.create(
                model="m",
                messages=[{"role": "system", "content": system}],  # expect: AC101
                tools=tools,
            )
    """,
    "date_time_libraries_read_the_clock": """
        import arrow
        import pendulum
        from azure.ai.inference.models import SystemMessage
        from django.utils import timezone
        from zhDateTime import DateTime

        def prompts(base):
            first = SystemMessage(content=f"{base} Now: {DateTime.now():%Y-%m-%d %H:%M:%S}")  # expect: AC101
            system_prompt = f"{base} {pendulum.now('UTC').to_iso8601_string()}"  # expect: AC101
            return first, system_prompt, {"role": "system", "content": f"At {timezone.now()}"}  # expect: AC101

        def local(base):
            return {"role": "system", "content": f"{base} {timezone.localdate()} {arrow.get()}"}  # expect: AC101
    """,
    "a_branch_on_a_module_constant_another_function_rebinds": """
        from datetime import datetime
        from openai import OpenAI

        STYLE = "short"

        def configure(mode):
            global STYLE
            STYLE = mode

        def run(question):
            system = "You help."
            if STYLE != "short":
                system = f"You help. Now: {datetime.now()}"
            messages = [{"role": "system", "content": system}]  # expect: AC101
            return OpenAI().chat.completions.create(model="m", messages=messages)
    """,
    "a_branch_on_a_parameter_the_function_rebinds": """
        from datetime import datetime
        from openai import OpenAI

        def run(question, stage):
            system = "You help."
            for _ in range(3):
                if stage == "act":
                    system = f"You act. Now: {datetime.now()}"
                stage = {"plan": "review", "review": "act"}.get(stage, stage)
            messages = [{"role": "system", "content": system}]  # expect: AC101
            return OpenAI().chat.completions.create(model="m", messages=messages)

        def start(question):
            return run(question, "plan")
    """,
    "a_set_ordered_value_looked_up_by_key": """
        from openai import OpenAI

        ENABLED = {"shell", "browser", "search"}

        class Agent:
            def __init__(self):
                self.by_mode = {"full": list(ENABLED), "safe": ["search"]}

            def send(self, mode):
                names = self.by_mode.get(mode, [])
                tools = [{"type": "function", "function": {"name": n}} for n in names]  # expect: AC103
                return OpenAI().chat.completions.create(model="m", messages=[], tools=tools)
    """,
    "a_property_with_a_setter": """
        from datetime import date
        from langchain_core.messages import SystemMessage

        class Agent:
            @property
            def system_prompt(self):
                return f"You help. Today is {date.today()}."

            @system_prompt.setter
            def system_prompt(self, value):
                self._prompt = value

            def messages(self):
                return [SystemMessage(content=self.system_prompt)]  # expect: AC101
    """,
    "a_helper_named_as_making_a_system_instruction": """
        from datetime import date

        def build_system_instruction(persona):
            return f"You are {persona}. Today is {date.today()}."  # expect: AC101
    """,
    "a_branch_a_literal_argument_takes": SLOT_SETTER.format(expect="  # expect: AC101", kind="system"),
    "a_property_read_on_self": """
        from datetime import date
        from openai import OpenAI

        class Agent:
            @property
            def system_prompt(self):
                return f"You help. Today is {date.today()}."

            def run(self, task):
                messages = [{"role": "system", "content": self.system_prompt}]  # expect: AC101
                return OpenAI().chat.completions.create(model="m", messages=messages)
    """,
    "a_cached_property_read_on_an_object_of_the_module": """
        import uuid
        from functools import cached_property
        from langchain_core.messages import SystemMessage

        class Session:
            def __init__(self):
                self.marker = uuid.uuid4().hex

            @cached_property
            def label(self):
                return f"session {self.marker}"

        def messages(session: Session):
            return [SystemMessage(content=f"You serve {session.label}.")]  # expect: AC101
    """,
    "keys_of_a_dict_built_from_a_set": REASONS.format(
        send='            annotated = [{"type": "function", "function": {"name": name}} for name in self.reasons()]',
        expect="  # expect: AC103",
    ),
    "langgraph_clock_first": """
        from datetime import datetime
        from langchain_core.messages import SystemMessage

        def call_model(state, model):
            system = SystemMessage(
                content=f"Current time: {datetime.now():%H:%M}. "  # expect: AC105
                "You are a meticulous research assistant: cite every source."
            )
            return {"messages": [model.invoke([system, *state["messages"]])]}
    """,
    "openai_request_id_at_end": """
        import uuid
        from openai import OpenAI

        client = OpenAI()
        reply = client.chat.completions.create(
            model="gpt-4o",
            messages=[
                {"role": "system", "content": "You are helpful. Request: " + str(uuid.uuid4())},  # expect: AC101
                {"role": "user", "content": "hi"},
            ],
        )
    """,
    "anthropic_system_keyword": """
        import datetime as dt
        import anthropic

        client = anthropic.Anthropic()
        client.messages.create(
            model="claude-sonnet-4-5",
            system=f"Today is {dt.date.today():%B %d}.",  # expect: AC101
            messages=[{"role": "user", "content": "What should I do today?"}],
            max_tokens=512,
        )
    """,
    "helper_return_and_template_format": """
        import time
        from langchain.agents import create_agent

        TEMPLATE = \"\"\"Date: {date}
        You are an on-call assistant. Follow the runbook, never guess, and escalate anything you cannot verify.\"\"\"

        def build_prompt():
            return TEMPLATE.format(date=time.strftime("%Y-%m-%d"))

        agent = create_agent("openai:gpt-4o", tools=[], system_prompt=build_prompt())  # expect: AC105
    """,
    "sink_inside_helper_sees_the_callers_value": """
        import time
        from langgraph.prebuilt import create_react_agent

        def make_agent(model, tools, started):
            return create_react_agent(model, tools, prompt=f"You started at {started}.")  # expect: AC101

        agent = make_agent("m", [], time.time())
    """,
    "named_variable_then_sent_is_one_finding": """
        import time

        SYSTEM_PROMPT = "You answer questions about the company handbook. Generated " + time.ctime()  # expect: AC101

        def messages(question):
            return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": question}]
    """,
    "langchain_message_tuples": """
        from uuid import uuid4
        from langchain_core.prompts import ChatPromptTemplate

        prompt = ChatPromptTemplate.from_messages(
            [("system", f"Conversation {uuid4()}"), ("human", "{question}")]  # expect: AC101
        )
    """,
    "unseeded_rng_and_branches": """
        import random

        rng = random.Random()
        GREETINGS = ["Hello!", "Hi!"]

        def system_message(debug):
            if debug:
                suffix = rng.choice(GREETINGS)
            else:
                suffix = ""
            return {"role": "developer", "content": "Be brief. " + suffix}  # expect: AC101
    """,
    "set_order_into_prompt_and_tools": """
        from langchain_openai import ChatOpenAI

        CAPABILITIES = {"search the web", "read files", "run python"}
        TOOLSET = {search, read_file, run_python}

        lines = "\\n".join(f"- {capability}" for capability in CAPABILITIES)
        system_prompt = f"You can:\\n{lines}"  # expect: AC103
        llm = ChatOpenAI(model="gpt-4o").bind_tools(list(TOOLSET))  # expect: AC103
    """,
    "set_order_through_a_loop": """
        names = set()
        for tool in registry:
            names.add(tool.name)
        system_prompt = "Tools:"
        for name in names:
            system_prompt += f" {name}"  # expect: AC103
    """,
    "volatile_tools": """
        import random
        from datetime import datetime

        def tools_for(llm, catalog):
            return llm.bind_tools(random.sample(catalog, 3))  # expect: AC102

        tools = []
        tools.append({"name": "weather", "description": f"As of {datetime.utcnow():%Y-%m-%d}"})  # expect: AC102
    """,
    "unsorted_dump_of_set_ordered_data_into_the_prompt": """
        import json

        def system_prompt_for(tools):
            enabled = {tool.name for tool in tools}
            table = {name: "enabled" for name in enabled}
            return {"role": "system", "content": "Tools: " + json.dumps(table)}  # expect: AC104
    """,
    "configurable_system_role_and_framework_attributes": """
        from datetime import datetime

        class Agent:
            def system_message(self):
                text = "You are helpful."
                if self.add_datetime:
                    text += f" The current time is {datetime.now()}."
                return Message(role=self.system_message_role, content=text)  # expect: AC101

        interpreter.custom_instructions = f"Today is {datetime.now():%Y-%m-%d}."  # expect: AC101
    """,
    "tool_definitions_built_from_sets_and_ids": """
        import uuid

        def make_tools(sources):
            kinds = list(set(source.kind for source in sources))
            search = Tool(name="search", description=f"Search one of: {', '.join(kinds)}")
            handoff = FunctionTool(name=f"handoff_{uuid.uuid4().hex[:6]}", description="Hand off")
            return Agent(tools=[search, handoff])  # expect: AC102 AC103
    """,
    "attribute_set_in_init": """
        import uuid

        class Assistant:
            def __init__(self, name):
                self.name = name
                self.session = uuid.uuid4().hex

            def system(self):
                return {"role": "system", "content": f"You are {self.name}, session {self.session}."}  # expect: AC101
    """,
    "set_attribute_from_init_iterated_in_another_method": """
        class Router:
            def __init__(self, skills):
                self.skills = set(skills)

            def request(self, client):
                tools = [{"type": "function", "function": {"name": name}} for name in self.skills]  # expect: AC103
                return client.chat.completions.create(model="m", messages=[], tools=tools)
    """,
    "shuffled_examples_and_a_set_built_up_in_loops": """
        import random

        def system_prompt(examples, skills):
            random.shuffle(examples)
            text = "Examples:"
            for example in examples:
                text += "\\n" + example
            lines = []
            for skill in set(skills):
                lines.append(f"- {skill}")
            return {"role": "system", "content": text + "\\n".join(lines)}  # expect: AC101 AC103
    """,
    "field_factories_and_a_jinja_template": """
        import uuid
        from dataclasses import dataclass, field
        from datetime import datetime

        import jinja2
        from pydantic import BaseModel, Field

        SYSTEM = jinja2.Template("You are {{ name }}. Today is {{ today }}.")

        class Session(BaseModel):
            session_id: str = Field(default_factory=lambda: uuid.uuid4().hex)

            def system(self):
                return {"role": "system", "content": f"Session {self.session_id}"}  # expect: AC101

        @dataclass
        class Planner:
            started: datetime = field(default_factory=datetime.now)

            def messages(self):
                text = SYSTEM.render(name="planner", today=self.started.date())
                return [{"role": "system", "content": text}]  # expect: AC101
    """,
    "an_objects_id_printed_by_its_own_method": """
        import uuid
        from dataclasses import dataclass, field

        import jinja2

        AGENT = jinja2.Template("You are {{ agent.name }} <id>{{ agent.id }}</id>")

        @dataclass
        class Actor:
            name: str = "planner"
            id: str = field(default_factory=lambda: uuid.uuid4().hex[:8])

            def get_prompt(self):
                return AGENT.render(agent=self)

        def messages(question):
            actor = Actor()
            return [{"role": "system", "content": actor.get_prompt()}]  # expect: AC101

        def restored(stored_id, row):
            given, loaded = Actor(id=stored_id), Actor(**row)
            return [{"role": "system", "content": given.get_prompt() + loaded.get_prompt()}]
    """,
    "a_clock_a_prompt_part_calls_when_rendered": """
        import time
        from datetime import datetime

        from .architext import Columns, FunctionTool, SlashCommand, StructuredTool, SystemMessage, Texts

        WORKER = SystemMessage(f"Now: {Texts(lambda: datetime.now().strftime('%H:%M'))}")  # expect: AC101

        BOARD = SystemMessage(f"Tasks: {Columns(lambda task: task.started or time.time())}")

        COMMANDS = [SlashCommand("/time", "print the time", lambda: print(datetime.now()))]
        HELP = SystemMessage("You may type: " + ", ".join(command.name for command in COMMANDS))

        def tools():
            return [FunctionTool(lambda: datetime.now().isoformat()), StructuredTool.from_function(lambda: time.time())]

        def ask(client, question):
            return client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": question}], tools=tools()
            )
    """,
    "a_field_set_on_an_object_and_read_by_the_function_it_is_given_to": """
        import time
        from datetime import datetime

        from .config import load_config

        def system_prompt(config):
            return f"You work in {config.cwd}. Branch prefix: {config.branch_prefix}"

        def messages(path, question):
            config = load_config(path)
            config.branch_prefix = f"run_{datetime.now():%Y%m%d_%H%M%S}"
            prompt = system_prompt(config)
            return [{"role": "system", "content": prompt}, {"role": "user", "content": question}]  # expect: AC101

        def where(config):
            return f"You work in {config.cwd}."

        def quiet(path, question):  # a field the prompt does not read, ids and times, a module's object
            config = load_config(path)
            config.branch_prefix = f"run_{datetime.now():%Y%m%d_%H%M%S}"
            config.started = datetime.now()
            config.run_id = time.time()
            config.last_seen_at = time.time()
            return [{"role": "system", "content": where(config)}, {"role": "user", "content": question}]

        SETTINGS = load_config(".")

        def start():
            SETTINGS.branch_prefix = f"run_{datetime.now():%H%M%S}"

        def settings_prompt():
            return [{"role": "system", "content": f"Branch prefix: {SETTINGS.branch_prefix}"}]
    """,
    "an_output_schema_wrapped_in_a_format_class": """
        from .schemas import OAIJSONSchema, OAIResponseFormatSchema

        def request(params, schema):
            schema["required"] = list(set(schema["required"]))
            wrapped = OAIResponseFormatSchema(json_schema=OAIJSONSchema(name="answer", schema_=schema))
            params["response_format"] = wrapped.model_dump(by_alias=True)  # expect: AC103
            return params
    """,
    "values_of_the_running_process": """
        import os
        import uuid

        class Agent:
            def __init__(self, name):
                self.name = name
                self.seen = {id(self): name}

            def system(self):  # id() and hash() key memos and caches far more often than they print
                return [{"role": "system", "content": f"You are agent {id(self)}, key {hash(self.name)}"}]

            def run(self):
                return [{"role": "system", "content": f"Run {uuid.uuid7()} on {os.getpid()}"}]  # expect: AC101

            def count(self, items):
                return [{"role": "system", "content": f"{len(items)} items for {self.name}"}]
    """,
    "a_random_name_on_the_system_message": """
        import random
        import string

        def agent_name():
            return "agent_" + "".join(random.choices(string.ascii_letters, k=8))

        class Agent:
            def __init__(self, instructions, name=None):
                self.instructions = instructions
                self.name = name or agent_name()

            def messages(self, history):
                system = Message(role=AuthorRole.SYSTEM, content=self.instructions, name=self.name)  # expect: AC101
                return [system, *history]
    """,
    "times_given_to_functions_and_a_name_compared_elsewhere": """
        import time
        import uuid
        from datetime import datetime

        def other(message, system_prompt):
            return message is system_prompt

        def build(client):
            current_time = time.localtime()
            system = "Now " + time.strftime("%H:%M", current_time)
            system_prompt = f"Today {datetime.now()}"  # expect: AC101
            client.messages.create(system=system, messages=[])  # expect: AC101
            return system_prompt

        def tool_call_schema():
            return [{"type": "function", "function": {"name": "f_" + uuid.uuid4().hex}}]

        def send(client):
            return client.chat.completions.create(model="m", messages=[], tools=tool_call_schema())  # expect: AC102
    """,
    "text_rebuilt_in_a_loop_over_a_set": """
        def system(skills):
            text = "Skills:"
            for skill in set(skills):
                text = text + " " + skill
            return {"role": "system", "content": text}  # expect: AC103
    """,
    "fields_read_in_init_and_from_a_base_in_the_module": """
        import uuid
        from pydantic import BaseModel, Field

        class Session(BaseModel):
            session: str = Field(default_factory=lambda: uuid.uuid4().hex)

            def __init__(self, **data):
                super().__init__(**data)
                self.system_prompt = f"Session {self.session}"  # expect: AC101

        class Base:
            def __init__(self):
                self.run = uuid.uuid4().hex

        class Chat(Base):
            def messages(self):
                return [{"role": "system", "content": f"Run {self.run}"}]  # expect: AC101
    """,
    "template_filled_with_a_date_helper": """
        from datetime import date
        from string import Template
        from langchain_core.messages import SystemMessage

        def today():
            return date.today().isoformat()

        PROMPT = Template("Today is $day. You are a research assistant.")

        def build(model):
            return model.invoke([SystemMessage(content=PROMPT.substitute(day=today()))])  # expect: AC101
    """,
    "system_message_rebuilt_by_a_helper_named_so": """
        import time
        import uuid
        from letta_like.prompts import PromptGenerator, compile_system_message

        class Agent:
            def rebuild(self, state):
                edited = time.time()
                text = compile_system_message(system_prompt=state.system, memory_last_edit=edited)  # expect: AC101
                self.messages.update_message_by_id(state.message_ids[0], MessageUpdate(content=text))

            async def step(self, state, messages):
                messages[0].content[0].text = await PromptGenerator.compile_system_message_async(  # expect: AC101
                    state.system, session=uuid.uuid4().hex
                )

        def refresh(memory):
            return build_agent_system_prompt_for_memory(memory, f"{time.monotonic()}")  # expect: AC101

        def _get_system_message(memories):
            lines = [f"- [{memory.id or uuid.uuid4().hex[:8]}] {memory.text}" for memory in memories]
            return "You keep these memories: " + "; ".join(lines)  # expect: AC101

        def extract(model, memories, conversation):
            model.invoke([_get_system_message(memories), Message(role="user", content=conversation)])
    """,
    "a_set_built_in_set_order_then_iterated_into_tools": """
        class Skills:
            def __init__(self, skills):
                self.skills = skills
                self.active = set()

            def active_tools(self, client):
                allowed = set()
                for name in self.active:
                    allowed.update(self.skills[name].tools)
                client.create(tools=[{"name": tool} for tool in allowed])  # expect: AC103
    """,
    "tools_given_to_a_client_beside_a_reply_parser": """
        from langchain_core.output_parsers import PydanticToolsParser

        def chain(llm, tools):
            ordered = list(set(tools))
            return llm.bind(tools=ordered) | PydanticToolsParser(tools=ordered)  # expect: AC103
    """,
    "output_schemas_whose_types_take_a_sets_order": """
        import uuid
        from typing import Literal, Union
        from pydantic import BaseModel

        def classify(client, question, categories):
            labels = {category.strip().lower() for category in categories}

            class Verdict(BaseModel):
                label: Literal[tuple(labels)]

            return client.beta.chat.completions.parse(
                model="m", messages=[{"role": "user", "content": question}], response_format=Verdict  # expect: AC103
            )

        def route(llm, handlers):
            choice = Union[tuple(handler.model for handler in set(handlers))]

            class Route(BaseModel):
                target: choice

            class Decision(Route):
                reason: str

            return llm.with_structured_output(Decision)  # expect: AC103

        def extract(client, text):
            schema = {"name": f"extract_{uuid.uuid4().hex[:6]}", "schema": {"type": "object"}}
            return client.responses.parse(model="m", input=text, text_format=schema)  # expect: AC102
    """,
    "a_type_factory_named_for_tool_messages_makes_a_definition": """
        from typing import Union
        from pydantic import BaseModel

        class Agent:
            def __init__(self):
                self.enabled = set()

            def any_tool_message(self):
                options = tuple(self.registry[name] for name in self.enabled)

                class AnyTool(BaseModel):
                    tool: Union[options]

                return AnyTool

            def recover(self, llm):
                return llm.with_structured_output(self.any_tool_message())  # expect: AC103
    """,
    "a_binder_the_module_defines_is_reported_at_its_call": """
        from typing import Literal
        from pydantic import BaseModel

        class Agent:
            def set_output_format(self, output_type):
                tools = self.names_of(output_type)
                self.enabled.update(tools)

            def recover(self, kinds):
                class Pick(BaseModel):
                    kind: Literal[tuple(set(kinds))]

                self.set_output_format(Pick)  # expect: AC103
    """,
    "sorted_keys_leave_a_list_made_from_a_dicts_keys_in_their_order": """
        import json

        def system_prompt_for(tools):
            table = {tool: "on" for tool in set(tools)}
            return {"role": "system", "content": json.dumps({"names": list(table)}, sort_keys=True)}  # expect: AC103
    """,
    "a_method_a_subclass_overrides_called_with_keywords_unpacked": """
        import datetime
        from anthropic import Anthropic

        class Base:
            def _variables(self, name, **kwargs):
                variables = dict(kwargs)
                variables["now"] = datetime.datetime.now()
                return variables

            def _render(self, name, **kwargs):
                variables = self._variables(name, **kwargs)
                return self.template.format(**variables)

            def ask(self, messages, **kwargs):
                system = self._render("main", **kwargs)
                return Anthropic().messages.create(model="m", system=system, messages=messages)  # expect: AC101

        class Agent(Base):
            def _variables(self, name, **kwargs):
                variables = super()._variables(name, **kwargs)
                variables["agent"] = self.name
                return variables

        class Other:
            def _render(self, name, **kwargs):
                return f"{name}: {kwargs.get('topic')}"

            def ask(self, messages, **kwargs):
                system = self._render("other", topic=datetime.date.today())
                return Anthropic().messages.create(model="m", system=system, messages=messages)  # expect: AC101
    """,
    "a_field_sorted_before_one_call_of_a_method_and_not_before_another": """
        from anthropic import Anthropic

        class Planner:
            def __init__(self, names):
                self.files = set(names)

            def plan(self):
                self.files = sorted(self.files)
                return self._ask()

            def _ask(self):
                system = "Files: " + ", ".join(self.files)
                return Anthropic().messages.create(model="m", system=system, messages=[])  # expect: AC103

            def other(self):
                return self._ask()
    """,
    "a_field_bound_by_unpacking_before_a_method_is_called": """
        from datetime import datetime

        from anthropic import Anthropic

        class Assistant:
            def __init__(self):
                self.system, self.notes = "You are helpful.", ""

            def _send(self):
                return Anthropic().messages.create(model="m", system=self.system, messages=[])  # expect: AC101

            def ask(self):
                self.system, self.notes = f"Now: {datetime.now()}", "x"
                return self._send()
    """,
    "fields_a_method_binds_for_the_methods_it_then_calls": """
        from anthropic import Anthropic

        class Planner:
            def __init__(self, spec):
                self.spec = spec
                self.files = {}
                self.context = {"files": []}

            def _find_files(self):
                words = set(self.spec.split())
                return {path: ", ".join(w for w in words if w in path) for path in ("a/cli", "a/chat")}

            def _format_files(self):
                return "\\n".join(f"{path}: {note}" for path, note in self.files.items())

            def _build_prompt(self):
                return "Plan the change. Relevant files:\\n" + self._format_files()

            def plan(self):
                self.files = self._find_files()
                system = self._build_prompt()
                return Anthropic().messages.create(model="m", system=system, messages=[])  # expect: AC103

            def _ask_prompt(self):
                return "Ask about: " + ", ".join(self.context["files"])

            def ask(self, text):
                self.context["files"] = list(set(self.spec.split(",")))
                system = self._ask_prompt()
                return Anthropic().messages.create(
                    model="m", system=system, messages=[{"role": "user", "content": text}]  # expect: AC103
                )
    """,
    "fields_a_method_binds_for_the_methods_of_a_base_it_then_calls": """
        from anthropic import Anthropic

        class Base:
            def _format(self):
                return "\\n".join(self.topics)

        class Interviewer(Base):
            def __init__(self, spec):
                self.spec = spec
                self.topics = []

            def _build(self):
                return "Cover these topics:\\n" + self._format()

            def run(self):
                self.topics = list(set(self.spec.split(",")))
                system = self._build()
                return Anthropic().messages.create(model="m", system=system, messages=[])  # expect: AC103

        class Other:
            def _format(self):
                return "unrelated"
    """,
}

NEGATIVE = {
    "tools_bound_by_unpacking_only_tested_there": """
        from datetime import datetime

        def stale(load):
            enabled_tools, checked = load()
            enabled_tools = {f"{name}@{datetime.now():%H}" for name in enabled_tools}
            return [name for name in checked if name in enabled_tools]
    """,
    "fields_a_method_binds_after_the_prompt_is_built_or_another_method_binds": """
        from datetime import datetime

        from anthropic import Anthropic

        class Planner:
            def __init__(self, spec):
                self.spec = spec
                self.stamp = "2024-01-01"

            def _build(self):
                return f"As of {self.stamp}, plan: {self.spec}"

            def refresh(self):
                self.stamp = datetime.now().isoformat()

            def ask(self):
                system = self._build()
                self.stamp = datetime.now().isoformat()
                return Anthropic().messages.create(model="m", system=system, messages=[])
    """,
    "a_prompt_kept_while_it_is_young": """
        import time

        from openai import OpenAI

        client = OpenAI()

        class Prompt:
            def __init__(self, rules):
                self.rules = rules
                self.built = None
                self.at = 0.0

            def text(self):
                if self.built is not None and time.monotonic() - self.at < 60:
                    return self.built
                lines = []
                for rule in self.rules:
                    if rule is None:
                        continue
                    lines.append(f"- {rule}")
                self.built, self.at = "Rules:\\n" + "\\n".join(lines), time.monotonic()
                return self.built

            def ask(self, question):
                system = {"role": "system", "content": self.text()}
                return client.chat.completions.create(model="m", messages=[system, question])
    """,
    "a_record_copied_with_a_new_branch": """
        import time
        import uuid
        from dataclasses import replace

        from openai import OpenAI

        TOOLS = {"read": {"name": "read"}, "write": {"name": "write"}}

        def checkpoint(loaded, names):
            branches = [*loaded.branches, {"id": uuid.uuid4().hex, "at": time.time()}]
            return replace(loaded, branches=branches, active_tools=tuple(names))

        def resume(loaded, names, question):
            copy = checkpoint(loaded, names)
            tools = [TOOLS[name] for name in copy.active_tools]
            return OpenAI().chat.completions.create(model="m", messages=[question], tools=tools)
    """,
    "the_only_match_in_a_set": """
        from openai import OpenAI

        class Aggregator:
            def __init__(self, configured, attached):
                self.configured = configured
                self.attached = attached

            def resolve(self, name):
                servers = set(self.configured)
                servers.update(self.attached)
                matches = [key for key in servers if key.endswith(name)]
                if len(matches) == 1:
                    return matches[0]
                return name

            def ask(self, question, name):
                tools = [{"name": f"{self.resolve(name)}__search"}]
                return OpenAI().chat.completions.create(model="m", messages=[question], tools=tools)
    """,
    "a_constant_prompt_after_a_wait": """
        import time

        from openai import OpenAI

        client = OpenAI()

        def poll(question, next_at):
            while True:
                if time.time() < next_at:
                    continue
                system = {"role": "system", "content": "You watch the queue."}
                return client.chat.completions.create(model="m", messages=[system, question])
    """,
    "a_catalog_refreshed_when_it_expires": """
        import time

        from openai import OpenAI

        client = OpenAI()

        class Catalog:
            def __init__(self, fetch, prompt):
                self.prompt = prompt
                self.fetch = fetch
                self.fetched = 0.0
                self.tools = []

            def refresh(self):
                if time.monotonic() - self.fetched > 30:
                    self.tools = self.fetch()
                    self.fetched = time.monotonic()
                return self.tools

            def ask(self, question):
                system = {"role": "system", "content": self.prompt}
                return client.chat.completions.create(model="m", messages=[system, question], tools=self.refresh())
    """,
    "a_reply_read_before_a_deadline": """
        import json
        import time

        class Client:
            def __init__(self, proc):
                self.proc = proc
                self.tools = []

            def start(self):
                self.tools = self.call("tools/list", timeout=5.0).get("tools", [])

            def call(self, method, timeout):
                self.proc.stdin.write(json.dumps({"method": method}))
                deadline = time.monotonic() + timeout
                while True:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        raise TimeoutError(f"{method} timed out after {timeout}s")
                    frame = self.read_frame(remaining)
                    if "id" in frame:
                        return frame

            def read_frame(self, timeout):
                line = self.proc.stdout.readline()
                if not line.strip():
                    return self.read_frame(timeout)
                return json.loads(line)
    """,
    "a_system_prompt_given_to_a_tracer": """
        import logging
        from datetime import datetime

        from opentelemetry import trace

        logger = logging.getLogger(__name__)

        class Session:
            def __init__(self, tracer, tools):
                self.tracer = tracer
                self.tools = tools

            def start(self, base):
                prompt = f"{base} Started at {datetime.now():%H:%M}."
                self.tracer.start_session(system_prompt=prompt, tools=list(set(self.tools)))
                with trace.get_tracer(__name__).start_as_current_span("turn") as span:
                    span.set_attributes(system_prompt=prompt)
                logger.info("session", system_prompt=prompt)
                return prompt
    """,
    "a_graph_run_under_a_fresh_thread_id": """
        import uuid

        from openai import OpenAI

        client = OpenAI()

        def plan(graph, task):
            config = {"configurable": {"thread_id": f"plan_{uuid.uuid4()}"}, "recursion_limit": 20}
            state = graph.invoke({"messages": [task]}, config)
            return graph.get_state(config).values["messages"][-1].content or state

        def run(graph, task):
            plan_text = plan(graph, task)
            system = {"role": "system", "content": "Follow this plan:\\n" + plan_text}
            return client.chat.completions.create(model="m", messages=[system])
    """,
    "coroutines_run_together_each_filling_its_own_list": """
        import asyncio

        from openai import OpenAI

        class Loader:
            def __init__(self):
                self.tools = []
                self.prompts = []

            async def load_tools(self):
                for tool in await fetch_tools():
                    self.tools.append(tool)

            async def load_prompts(self):
                self.prompts.extend(await fetch_prompts())

            async def stream(self):
                async for chunk in source():
                    self.tools.append(chunk)
                    yield chunk

            async def start(self):
                await asyncio.gather(self.load_tools(), self.load_prompts())
                for _ in range(2):
                    async for chunk in self.stream():
                        print(chunk)

            def ask(self):
                system = "\\n".join(self.prompts)
                return OpenAI().chat.completions.create(
                    model="m", messages=[{"role": "system", "content": system}], tools=self.tools
                )
    """,
    "keywords_given_to_no_prompt_builder_or_to_a_method_that_makes_nothing": """
        from datetime import datetime

        from openai import OpenAI

        TEMPLATE = "You are a coworker. Conversation started: {conversation_started}."

        def system_text(builder, client):
            prompt_store = builder.make()
            text = prompt_store.save(conversation_started=datetime.now())
            prompt_builder = builder.make()
            text += prompt_builder.log_timing(conversation_started=datetime.now())
            return text + client.compose(conversation_started=datetime.now())

        def ask(builder, client, text):
            messages = [{"role": "system", "content": system_text(builder, client)}]
            return OpenAI().chat.completions.create(model="m", messages=messages)
    """,
    "finishing_order_sorted_after_or_tasks_waited_one_at_a_time": """
        import asyncio
        import json
        from concurrent.futures import ThreadPoolExecutor, as_completed

        from openai import OpenAI

        class Servers:
            def __init__(self, servers):
                self.servers = servers
                self.tools = []
                self.names = []

            async def load(self, server):
                self.tools.extend(await server.list_tools())

            async def name(self, server):
                self.names.append(await server.name())

            async def start(self):
                await asyncio.gather(*(self.load(s) for s in self.servers))
                self.tools.sort(key=lambda tool: tool["name"])
                await asyncio.gather(*(self.name(s) for s in self.servers))
                self.names = sorted(self.names)

            def ask(self):
                system = ", ".join(self.names)
                return OpenAI().chat.completions.create(
                    model="m", messages=[{"role": "system", "content": system}], tools=self.tools
                )

        async def described(servers):
            schemas = {}

            async def fetch(server):
                schemas[server.name] = await server.describe()

            await asyncio.gather(*(fetch(s) for s in servers))
            system = "Servers: " + json.dumps(schemas, sort_keys=True)
            return OpenAI().chat.completions.create(model="m", messages=[{"role": "system", "content": system}])

        async def one_at_a_time(servers, paths, forms):
            listed = []

            async def fetch(server):
                listed.extend(await server.list_tools())

            def read(path):
                listed.append(path.read_text())

            def fill(form):
                listed.append(form.read())

            for server in servers:
                task = asyncio.create_task(fetch(server))
                await task
            with ThreadPoolExecutor() as pool:
                for path in paths:
                    pool.submit(read, path).result()
            for form in forms:
                form.submit(fill, form)
            return OpenAI().chat.completions.create(model="m", messages=[], tools=listed)

        def by_position(skills):
            results = [""] * len(skills)
            with ThreadPoolExecutor() as pool:
                started = {pool.submit(describe, skill): index for index, skill in enumerate(skills)}
                for future in as_completed(started):
                    index = started[future]
                    results[index] = future.result()
            system = "Skills: " + "; ".join(results)
            return OpenAI().chat.completions.create(model="m", messages=[{"role": "system", "content": system}])
    """,
    "concurrent_results_in_the_order_given_or_sorted_or_looked_up": """
        import asyncio

        import anyio

        from openai import OpenAI

        class Servers:
            def __init__(self, profiles):
                self.profiles = profiles
                self.clients = {}
                self.order = []

            async def start_all(self):
                async def connect_one(name, profile):
                    client = Client(profile)
                    self.order.append(name)  # before it waits: in the order the tasks start
                    await client.connect()
                    self.clients[name] = client

                await asyncio.gather(*(connect_one(n, p) for n, p in self.profiles.items()))

            def one(self, name):
                return OpenAI().chat.completions.create(model="m", messages=[], tools=self.clients[name].tools)

            def named(self):
                tools = [tool for name in self.order for tool in self.clients[name].tools]
                return OpenAI().chat.completions.create(model="m", messages=[], tools=tools)

            def by_name(self):
                tools = sorted((tool for client in self.clients.values() for tool in client.tools), key=str)
                return OpenAI().chat.completions.create(model="m", messages=[], tools=tools)

        async def gathered(servers):
            groups = await asyncio.gather(*(server.list_tools() for server in servers))
            tools = [tool for group in groups for tool in group]
            return OpenAI().chat.completions.create(model="m", messages=[], tools=tools)

        async def gather_in_order(*coros):
            results = [None] * len(coros)

            async def run(index: int, coro):
                results[index] = await coro

            async with anyio.create_task_group() as group:
                for i, coro in enumerate(coros):
                    group.start_soon(run, i, coro)
            return results

        async def all_tools(toolsets):
            groups = await gather_in_order(*(toolset.get_tools() for toolset in toolsets))
            tools = [tool for group in groups for tool in group]
            return OpenAI().chat.completions.create(model="m", messages=[], tools=tools)

        async def checks(guards):
            passed = []
            for done in asyncio.as_completed([guard.run() for guard in guards]):
                passed.append(await done)
            return passed

        async def turn(guards, agent):
            passed, tools = await asyncio.gather(checks(guards), agent.get_tools())
            return OpenAI().chat.completions.create(model="m", messages=[], tools=tools)

        async def one_after_another(servers):
            listed = []

            async def fetch(server):
                listed.extend(await server.list_tools())

            for server in servers:
                await fetch(server)
            for server in servers:
                asyncio.run(fetch(server))
            for server in servers:
                await asyncio.wait_for(fetch(server), 10)
            while servers:
                task = asyncio.create_task(fetch(servers.pop()))
                await task

            def read(server):
                listed.extend(server.read_tools())

            for server in servers:
                await asyncio.to_thread(read, server)
            return OpenAI().chat.completions.create(model="m", messages=[], tools=listed)
    """,
    "a_token_count_of_a_dated_history_and_the_tools_a_response_record_shows": """
        from datetime import datetime

        from .models import ResponseOverview
        from .tokens import count_tokens

        def prompt(history):
            stamped = [*history, {"role": "user", "content": f"Sent at {datetime.now()}"}]
            budget = count_tokens(stamped)
            return [{"role": "system", "content": f"You have {budget} tokens left."}]

        def overview(agent):
            active_tools = list(set(agent.tool_names))
            return ResponseOverview(active_tools=active_tools)
    """,
    "a_method_several_classes_define_where_python_may_run_another": """
        import logging
        import time
        from anthropic import Anthropic

        class Root:
            def _header(self, **kwargs):
                return f"Run {time.time()}"

        class Mixin(Root):
            def greet(self):
                return "hi"

        class Stable(Root):
            def _header(self, **kwargs):
                return "You help."

        class Both(Mixin, Stable):
            def ask(self, messages):  # Python runs Stable._header
                return Anthropic().messages.create(model="m", system=self._header(), messages=messages)

        class Abstract(Root):
            def ask(self, messages):  # its only subclass replaces _header
                return Anthropic().messages.create(model="m", system=self._header(), messages=messages)

        class Concrete(Abstract):
            def _header(self, **kwargs):
                return "You help with math."

        def helper(self, name):  # self is whatever object it is given
            return f"{name}: {self._header()}"

        class Runner(Root):
            def ask(self, messages, plain):
                return Anthropic().messages.create(model="m", system=helper(plain, "main"), messages=messages)

        class Logged:
            def _header(self, stamp=None, **variables):
                logging.info("rendered at %s", stamp)
                return ", ".join(f"{key}={value}" for key, value in variables.items())

            def ask(self, messages):
                options = {"stamp": time.time(), "role": "helper"}
                return Anthropic().messages.create(model="m", system=self._header(**options), messages=messages)
    """,
    "a_method_named_as_another_classs_is_its_own_classs": """
        import time
        from anthropic import Anthropic

        class Stamped:
            def _header(self, **kwargs):
                return f"Run {time.time()}"

        class Plain:
            def _header(self, **kwargs):
                return f"You help with {kwargs.get('topic', 'anything')}."

            def ask(self, messages, **options):
                system = self._header(**options)
                return Anthropic().messages.create(model="m", system=system, messages=messages)
    """,
    "a_message_list_given_only_to_a_tool_run": """
        import json
        from datetime import date

        def stream(client, messages, tool_calls, available_functions):
            search_messages = [{"role": "system", "content": f"Search the web. Today is {date.today()}."}]
            for tool_call in tool_calls:
                run = available_functions[tool_call["function"]["name"]]
                args = json.loads(tool_call["function"]["arguments"])
                search_messages.append({"role": "user", "content": args["query"]})
                result = run(client, messages=search_messages)
                messages.append({"role": "tool", "content": result})
            return client.chat.completions.create(model="m", messages=messages)
    """,
    "system_messages_written_only_to_be_measured": """
        from datetime import datetime

        from .compaction import estimate_tokens

        def context_report(parts):
            def _est(text):
                return estimate_tokens([{"role": "system", "content": text}]) if text else 0

            dated = [{"role": "system", "content": f"Today is {datetime.now():%A}."}]
            return {"system": _est(parts["system"] + str(datetime.now())), "dated": estimate_tokens(dated)}
    """,
    "branches_every_call_of_a_private_function_decides": """
        import time
        from datetime import datetime

        from openai import OpenAI

        class Agent:
            def __init__(self, base):
                self.system = self._build_system_prompt(base, use_compiled=True)

            def _build_system_prompt(self, base, task="", use_compiled=False):
                if use_compiled:
                    return self._compiled(task)
                return f"{base} Now: {datetime.now()}"

            def _compiled(self, task):
                return "You help." + task

            def ask(self, question):
                messages = [{"role": "system", "content": self.system}, {"role": "user", "content": question}]
                return OpenAI().chat.completions.create(model="m", messages=messages)

        class Briefs:
            def _mode_prompt(self, mode="short"):
                if mode == "long":
                    return "You help at length."
                elif mode == "short":
                    return "You help."
                return f"You help. {time.time()}"

            def brief(self, question):
                return [{"role": "system", "content": self._mode_prompt()}, {"role": "user", "content": question}]

        def request(question):
            def _header(verbose=False):
                if not verbose:
                    return "You help."
                return f"You help. It is {time.time()}."

            return [{"role": "system", "content": _header()}, {"role": "user", "content": question}]
    """,
    "a_worker_thread_given_a_time_only_to_write_it": """
        import asyncio
        import time

        from anthropic import AsyncAnthropic

        def write_log(path, line):
            with open(path, "a") as log:
                log.write(line)
            return "You help."

        async def ask(question):
            system = await asyncio.to_thread(write_log, "run.log", f"asked at {time.time()}")
            return await AsyncAnthropic().messages.create(model="m", system=system, messages=question)
    """,
    "tools_in_a_set_order_stored_only_as_a_policy": """
        class Profiles:
            def __init__(self, profiles, default_tools):
                self.profiles, self.default_tools = profiles, default_tools

            def get_profile(self, name):
                profile = dict(self.profiles[name])
                all_tools = list(set(self.default_tools + profile.get("allowed_tools", [])))
                profile["allowed_tools"] = all_tools
                return profile

            def summary(self, name):
                merged_tools = list(set(self.default_tools))
                return {"name": name, "allowed_tools": merged_tools}

            def annotated(self, name):
                profile: dict[str, list[str]] = dict(self.profiles[name])
                chosen_tools = list(set(self.default_tools))
                profile["allowed_tools"]: list[str] = chosen_tools
                return profile
    """,
    "a_record_made_of_a_dict_read_field_by_field": """
        import time
        from langchain_core.messages import SystemMessage
        from pydantic import BaseModel

        class Completion(BaseModel):
            created: int
            choices: list

        def parse(message):
            return SystemMessage(content=message["content"])

        def finish(message):
            completion = {"created": int(time.time()), "choices": [{"index": 0, "message": message}]}
            response = Completion.model_validate(completion)
            return parse(response.choices[0]["message"]), response.created
    """,
    "a_date_library_given_a_date": """
        import arrow
        import pendulum
        from django.utils import timezone
        from sqlalchemy import func

        def prompt(base, year, month, day):
            return {"role": "system", "content": f"{base} {pendulum.datetime(year, month, day)} {pendulum.today}"}

        def stamped(base):
            return {"role": "system", "content": f"{base} {func.now()}"}

        def given(base, when, stamp):
            return {"role": "system", "content": f"{base} {timezone.localtime(when)} {arrow.get(stamp)}"}
    """,
    "a_branch_a_literal_argument_does_not_take": SLOT_SETTER.format(expect="", kind="state"),
    "a_property_that_returns_what_does_not_differ": """
        from datetime import date
        from langchain_core.messages import SystemMessage

        class Agent:
            def __init__(self):
                self.started = date.today()

            @property
            def system_prompt(self):
                return "You help."

            @property
            def age(self):
                return date.today() - self.started

            def messages(self):
                return [SystemMessage(content=self.system_prompt)]
    """,
    "a_value_looked_up_in_a_dict_built_from_a_set": REASONS.format(  # its keys' order does not reach one value
        send='            annotated = [{**tool, "note": self.reasons().get(tool["name"], "")} for tool in tools]',
        expect="",
    ),
    "volatile_in_the_user_turn": """
        from datetime import date
        from langchain_core.messages import HumanMessage, SystemMessage

        SYSTEM = "You are a travel planner. Ask before booking anything."

        def turn(question):
            return [SystemMessage(content=SYSTEM), HumanMessage(content=f"{question} (today is {date.today()})")]
    """,
    "sorted_sets_and_fixed_orders": """
        CAPABILITIES = {"search the web", "read files"}
        PORTS = {8000, 8001}
        system_prompt = "You can: " + ", ".join(sorted(CAPABILITIES)) + f" on ports {PORTS}"
        tools = sorted(TOOLSET, key=lambda tool: tool.name)
        names = list(CAPABILITIES)
        names.sort()
        instructions = " ".join(names)
        count = f"{len(CAPABILITIES)} capabilities"
        agent = create_agent("m", tools=tools, system_prompt=count)
    """,
    "deterministic_randomness_and_ids": """
        import random
        import time
        import uuid

        rng = random.Random(42)
        NAMESPACE = uuid.UUID("6ba7b811-9dad-11d1-80b4-00c04fd430c8")
        EPOCH = (2025, 1, 1, 0, 0, 0, 2, 1, 0)
        system_prompt = f"Persona {rng.choice(['a', 'b'])}, id {uuid.uuid5(NAMESPACE, 'agent')}"
        system_prompt += time.strftime(" since %Y", EPOCH)
    """,
    "volatile_values_outside_the_prefix": """
        import logging
        import time
        import uuid
        from openai import OpenAI

        client = OpenAI()
        started = time.time()
        reply = client.chat.completions.create(
            model="gpt-4o",
            messages=[{"role": "system", "content": "Be terse."}, {"role": "user", "content": "hi"}],
            metadata={"request_id": str(uuid.uuid4())},
            extra_headers={"X-Started": str(started)},
        )
        logging.info("took %s s", time.time() - started)
    """,
    "rebinding_replaces_the_volatile_value": """
        from datetime import datetime

        prompt = f"{datetime.now()}"
        prompt = "Answer in French."
        messages = [{"role": "system", "content": prompt}]
    """,
    "dumps_that_are_not_schemas_or_are_sorted": """
        import json
        import orjson

        def tool_message(tool_call, function_response):
            args = json.loads(tool_call.function.arguments)
            return {"role": "tool", "content": json.dumps(function_response), "echo": json.dumps(args)}

        payload = json.dumps(tools, sort_keys=True)
        blob = orjson.dumps(tools, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2)
        record = json.dumps({"user": "ada", "score": 3})
        output = json.dumps(tool_result)
        inference = json.dumps({"inputs": "Hello", "parameters": {"max_new_tokens": 20}})
    """,
    "sets_for_membership_records_and_logs": """
        import json
        import logging
        import time
        import uuid

        write_tools = {"create_event", "update_event", "delete_event"}
        supported_native_tools = frozenset({WebSearchTool}) - {ImageTool}

        def check(functions):
            return any(name in write_tools for name in functions)

        def record(tools):
            run = RunOutput(run_id=str(uuid.uuid4()), tools=tools, created_at=time.time())
            run.tools = [ToolExecution(id=str(uuid.uuid4()), name="x")]
            logging.info("tools: %s", json.dumps({"tools": list(write_tools)}))
            return agent.aget_tools(session=Session(session_id=str(uuid.uuid4())))

        def build(agent):
            agent.tools = record([])
    """,
    "tool_calls_parsed_from_the_reply": """
        class Agent:
            def __init__(self, handled):
                self.handled = set(handled)

            def tool_messages(self, text):
                candidate_tools = [self.classes[name].parse(text) for name in self.handled]
                return [tool for tool in candidate_tools if tool is not None]

            async def handle(self, reply):
                json_tools = self.tool_messages(reply)
                parsed_tools = await self.aparse_tool_calls(reply, [name for name in self.handled])
                return json_tools + parsed_tools
    """,
    "each_item_of_a_shuffled_or_unordered_collection_sent_on_its_own": """
        import random

        def evaluate(client, samples, labels):
            random.shuffle(samples)
            for sample in samples:
                for label in set(labels):
                    prompt = f"You grade answers. The expected label is {label}."
                    client.chat.completions.create(
                        model="m", messages=[{"role": "system", "content": prompt}, {"role": "user", "content": sample}]
                    )

        def count_prompt(skills):
            count = 0
            for skill in set(skills):
                count += 1
            return {"role": "system", "content": f"You have {count} skills."}
    """,
    "a_sentinel_default_and_a_session_id_given_to_a_method": """
        import uuid
        from datetime import datetime

        DEFAULT_SYSTEM_PROMPT = f"You are an agent. Time: {datetime.now()}"

        class Agent:
            def __init__(self, tools, system_prompt=DEFAULT_SYSTEM_PROMPT):
                if system_prompt is DEFAULT_SYSTEM_PROMPT:
                    system_prompt = "You are an agent."
                self.system_prompt = system_prompt
                new_session_id = str(uuid.uuid4())[:8]
                self.tools = [tool.clone_for_new_session(new_session_id) for tool in tools]
    """,
    "one_element_of_a_returned_tuple_is_volatile": """
        from datetime import datetime

        class Manager:
            def rebuild(self, agent):
                note = f"Memory edited at {datetime.now()}"
                return agent, note

            def update(self, client, agent):
                agent, note = self.rebuild(agent)
                client.messages.create(system=agent.system, messages=[{"role": "user", "content": note}])
    """,
    "counts_and_sorted_orders": """
        import random

        def prompt(skills, examples):
            total = 0
            stats = {"total": 0}
            for skill in set(skills):
                total += len(skill)
                stats["total"] += 1
            random.shuffle(examples)
            ordered = sorted(examples)
            return {"role": "system", "content": f"{total} {stats['total']} {', '.join(ordered)}"}
    """,
    "stable_schemas_in_prompts": """
        import json

        def structured_prompt(model_cls, schema_path):
            schema = json.dumps(model_cls.model_json_schema(), indent=2)
            with open(schema_path) as handle:
                loaded = json.dumps(json.load(handle))
            tools = json.dumps([{"name": "a", "parameters": {}}])
            return {"role": "system", "content": f"Answer as {schema}; also {loaded}; tools {tools}"}
    """,
    "shadowed_module_names": """
        def answer(time, uuid):
            return {"role": "system", "content": f"At {time.time()} for {uuid.uuid4()}"}
    """,
    "helpers_that_render_other_messages_or_take_a_system_message": """
        import logging
        import time
        from letta_like.prompts import compile_system_message, compile_user_message, get_system_message

        def turn(state, messages, question):
            messages.append(compile_user_message(question, sent_at=time.time()))
            logging.info(format_log_line(step="rebuild", at=time.time()))
            current = get_system_message(agent_id=state.id, created_at=time.time())
            text = compile_system_message(system_prompt=state.system, timezone=state.timezone)
            if is_system_message(f"{time.time()}") or log_system_prompt(text, time.time()):
                return current
    """,
    "a_set_of_tool_names_built_in_a_loop_over_a_set": """
        class Skills:
            def __init__(self, skills):
                self.skills = skills
                self.active = set()

            def active_skill_tools(self):
                tools = set()
                for name in self.active:
                    tools.update(self.skills[name].tools)
                return tools
    """,
    "tools_given_to_what_reads_the_reply": """
        from langchain_core.output_parsers import PydanticToolsParser

        async def step(client, tools, request):
            names = list(set(tools))
            parser = PydanticToolsParser(tools=names)
            interface = OpenAIStreamingInterface(tools=request.get("tools", names))
            async for chunk in interface.process(await client.stream(request)):
                yield parser.parse(chunk)
    """,
    "output_schemas_of_stable_types": """
        import uuid
        from typing import Literal, Union
        from pydantic import BaseModel, Field

        def classify(client, question, categories):
            labels = {category.strip().lower() for category in categories}

            class Verdict(BaseModel):
                request_id: str = Field(default_factory=lambda: uuid.uuid4().hex)
                label: Literal[tuple(sorted(labels))]

            verdict = client.beta.chat.completions.parse(model="m", messages=[], response_format=Verdict)
            if verdict.label not in labels:
                raise ValueError(verdict.label)
            return verdict

        def route(llm, handlers):
            known = set(handlers)

            class Route(BaseModel):
                target: Union[tuple(handler.model for handler in handlers if handler in known)]

            return llm.with_structured_output(Route)
    """,
    "dicts_built_in_a_sets_order_dumped_with_sorted_keys": """
        import json

        def system_prompt_for(tools):
            enabled = {tool.name for tool in tools}
            table = {name: "enabled" for name in enabled}
            flags = {}
            for name in enabled:
                flags[name] = True
            text = json.dumps(table, sort_keys=True) + json.dumps({"flags": flags}, indent=2, sort_keys=True)
            return {"role": "system", "content": "Tools: " + text}
    """,
    "an_id_given_to_a_constructor_is_what_the_object_keeps": """
        import uuid

        class Session:
            def __init__(self, storage):
                self.storage = storage
                self.session_id = uuid.uuid4().hex

            def attach(self):
                stash = Stash(self.storage, self.session_id)
                self.session_tools = [retrieval_tool(stash)]
    """,
    "silenced_with_noqa": """
        import time

        system_prompt = f"Now: {time.time()}"  # noqa: AC101
        SYSTEM_PROMPT_DEBUG = f"Now: {time.time()}"  # noqa
    """,
}


test_finds_what_each_fixture_marks, test_stays_quiet_where_nothing_reaches_a_sink = fixture_tests(POSITIVE, NEGATIVE)


def test_finding_spans_the_sink_and_names_the_source(tmp_path: Path) -> None:
    text, findings = lint_source(
        tmp_path,
        """
        import uuid
        label = "é"; msg = {"role": "system", "content": f"{uuid.uuid4()}"}
        """,
    )
    [finding] = findings
    line = text.splitlines()[1]
    sink = 'f"{uuid.uuid4()}"'
    start = line.index(sink) + 1  # columns count code points, so "é" is one column
    assert (finding.line, finding.column, finding.end_line, finding.end_column) == (2, start, 2, start + len(sink))
    assert "`uuid.uuid4()` (line 2)" in finding.message
    assert finding.hint


def test_volatile_before_stable_text_counts_the_uncacheable_tail(tmp_path: Path) -> None:
    tail = "You review pull requests for security issues and explain each one."
    _, findings = lint_source(
        tmp_path,
        f"""
        import time
        SYSTEM_PROMPT = f"[{{time.time()}}] {tail}"
        """,
    )
    [finding] = findings
    assert finding.code == "AC105"
    assert f"before {len('] ' + tail)} characters of stable text" in finding.message


def test_a_syntax_error_is_a_note_not_a_finding(tmp_path: Path) -> None:
    """A module no Python grammar reads sends nothing (Python refuses to import it) and no rule can run on it: it
    is noted as skipped, where it is, not reported as a cache break."""
    path = tmp_path / "agent.py"
    path.write_text("system_prompt = 1\ndef broken(:\n    pass\n")
    result = lint_paths([path])
    assert result.findings == ()
    assert result.notes == (f"{path}: skipped: not valid Python (line 2, column 12: invalid syntax)",)


def test_source_encoding_cookie_is_honoured(tmp_path: Path) -> None:
    path = tmp_path / "latin.py"
    source = '# -*- coding: latin-1 -*-\nimport uuid\nnote = "café"; system_prompt = f"{uuid.uuid4()}"\n'
    path.write_bytes(source.encode("latin-1"))
    [finding] = lint_paths([path]).findings
    assert (finding.code, finding.line, finding.column) == ("AC101", 3, source.splitlines()[2].index('f"') + 1)


def test_deep_code_is_noted_not_a_crash(tmp_path: Path) -> None:
    from agentcache.lint import lint_paths

    branches = "".join(f"    elif x == {i}:\n        return {i}\n" for i in range(1, 500))
    path = tmp_path / "deep.py"
    path.write_text("def f(x):\n    if x == 0:\n        return 0\n" + branches)
    result = lint_paths([path])
    assert result.findings == ()
    assert set(result.notes) <= {f"{path}: skipped: expressions or branches nested too deep to analyse"}


def test_a_long_elif_chain_is_analysed_to_its_end(tmp_path: Path) -> None:
    """Each elif costs the analysis three Python frames: 250 of them fit under the default recursion limit."""
    branches = "".join(f"elif x == {i}:\n    pass\n" for i in range(1, 250))
    source = "import time\nif x == 0:\n    pass\n" + branches + "else:\n    system_prompt = f'{time.time()}'\n"
    _, findings = lint_source(tmp_path, source)
    assert [finding.code for finding in findings] == ["AC101"]


def test_unicode_digit_format_fields_and_columns_in_code_points(tmp_path: Path) -> None:
    from agentcache.lint import lint_paths

    fields = tmp_path / "fields.py"
    fields.write_text('x = "{²}".format(1)\n')
    assert lint_paths([fields]).findings == ()
    broken = tmp_path / "broken.py"
    broken.write_text('system_prompt = "😀😀" $\n', encoding="utf-8")
    assert lint_paths([broken]).notes == (
        f"{broken}: skipped: not valid Python (line 1, column 22: invalid syntax)",
    )


def test_a_helper_in_another_module_is_followed(tmp_path: Path) -> None:
    """The issue's example: ``prompt.format(date=get_today_str())``, the helper and the template in other modules,
    reached through a relative import; the importer is walked first, so it is checked again at the end."""
    write_package(
        tmp_path / "agent",
        a_graph="from langchain_core.messages import SystemMessage\n"
        "from .prompts import research_prompt\n"
        "from .utils import get_today_str\n\n"
        "def node(state):\n"
        "    return [SystemMessage(content=research_prompt.format(date=get_today_str()))]\n",
        prompts='research_prompt = """You research. Today is {date}."""\n',
        utils="from datetime import datetime\n\ndef get_today_str():\n    return datetime.now().strftime('%a %b %d')\n",
    )
    [finding] = lint_paths([tmp_path]).findings
    assert (Path(finding.path).name, finding.line, finding.code) == ("a_graph.py", 6, "AC101")
    assert "`get_today_str()`" in finding.message


def test_a_value_of_the_running_process_is_said_to_differ_between_processes(tmp_path: Path) -> None:
    """A process id is the same on every call of one process: the message says where it differs."""
    module = tmp_path / "worker.py"
    module.write_text("import os\n\ndef system():\n    return [{'role': 'system', 'content': f'On {os.getpid()}'}]\n")
    [finding] = lint_paths([module]).findings
    assert (finding.code, finding.line) == ("AC101", 4)
    assert "a value of the running process `os.getpid()` (line 4): it differs between processes" in finding.message


def test_a_static_method_of_another_module_called_on_its_class_is_followed(tmp_path: Path) -> None:
    """A utility class of static and class methods (``Clock.today()``, ``Clock.stamp(fmt)``): what they return,
    with or without arguments, is known where another module calls them on the class; a static method whose clock
    depends on what it is given is not followed."""
    write_package(
        tmp_path / "pkg",
        util="from datetime import datetime\n\n"
        "class Clock:\n"
        "    @staticmethod\n"
        "    def today():\n"
        "        return datetime.now().strftime('%Y-%m-%d')\n\n"
        "    @classmethod\n"
        "    def stamp(cls, fmt):\n"
        "        return datetime.now().strftime(fmt)\n\n"
        "    @staticmethod\n"
        "    def maybe(text, dated):\n"
        "        return f'{text} {datetime.now()}' if dated else text\n",
        agent="from .util import Clock\n\n"
        "def today_prompt():\n"
        "    return [{'role': 'system', 'content': f'Today is {Clock.today()}.'}]\n\n"
        "def time_prompt():\n"
        "    return [{'role': 'system', 'content': 'Now: ' + Clock.stamp('%H:%M')}]\n\n"
        "def plain_prompt(text):\n"
        "    return [{'role': 'system', 'content': Clock.maybe(text, False)}]\n",
    )
    found = sorted((Path(finding.path).name, finding.line, finding.code) for finding in lint_paths([tmp_path]).findings)
    assert found == [("agent.py", 4, "AC101"), ("agent.py", 7, "AC101")]


def test_an_object_of_another_modules_class_held_in_a_module_name_or_a_typed_field(tmp_path: Path) -> None:
    """A registry whose class (in another module) keeps its tools in a set: read through a module-level object
    made of it, a field an ``__init__`` binds to a parameter annotated with it, or a dataclass field declared with
    it, the set's order reaches the tool list and the system prompt. A field declared with two classes is not
    known."""
    write_package(
        tmp_path / "pkg",
        reg="class Registry:\n"
        "    def __init__(self):\n"
        "        self.tools = set()\n"
        "        self.names: set[str] = set()\n\n"
        "class Catalog:\n"
        "    def __init__(self):\n"
        "        self.names = []\n",
        agent="from dataclasses import dataclass\n\n"
        "from openai import OpenAI\n\n"
        "from .reg import Catalog, Registry\n\n"
        "registry = Registry()\n\n"
        "def system():\n"
        "    return [{'role': 'system', 'content': 'Tools: ' + ', '.join(registry.names)}]\n\n"
        "class Agent:\n"
        "    def __init__(self, reg: Registry):\n"
        "        self.reg = reg\n\n"
        "    def ask(self, messages):\n"
        "        tools = [tool.schema() for tool in self.reg.tools]\n"
        "        return OpenAI().chat.completions.create(model='m', messages=messages, tools=tools)\n\n"
        "@dataclass\n"
        "class Planner:\n"
        "    registry: Registry\n\n"
        "    def system(self):\n"
        "        return [{'role': 'system', 'content': 'You plan with ' + ' '.join(self.registry.names)}]\n\n"
        "class Either:\n"
        "    def __init__(self, reg: Registry, other: Catalog, pick: bool):\n"
        "        self.source = reg if pick else other\n\n"
        "    def system(self):\n"
        "        return [{'role': 'system', 'content': ', '.join(self.source.names)}]\n",
    )
    found = sorted((Path(f.path).name, f.line, f.code) for f in lint_paths([tmp_path]).findings)
    assert found == [("agent.py", 10, "AC103"), ("agent.py", 17, "AC103"), ("agent.py", 25, "AC103")]


def test_a_list_of_tools_returned_in_a_sets_order_is_a_tool_list(tmp_path: Path) -> None:
    """cogency's registry: a method annotated to return a list of tools (``-> list[Tool]``) hands its caller the
    tools in the order of a set of them, which that caller gives an agent, whatever form the annotation takes
    (``"Optional[List[Tool]]"``), and so does one that iterates the set it is declared to take; one that keeps its
    registry's order, or returns names or an empty tuple (``tuple[()]``), is quiet, and a caller's set it iterates
    is reported once, at the return, not again where the caller sorts what it returns."""
    write_package(
        tmp_path / "pkg",
        registry="from .tools import Tool\n\n"
        "class ToolRegistry:\n"
        "    def __init__(self):\n"
        "        self.by_name: dict[str, Tool] = {}\n\n"
        "    def name(self, names: list[str]) -> list[Tool]:\n"
        "        filtered: set[Tool] = set()\n"
        "        for name in names:\n"
        "            filtered.add(self.by_name[name])\n"
        "        return list(filtered)\n\n"
        "    def ordered(self, names: list[str]) -> list[Tool] | None:\n"
        "        return [self.by_name[name] for name in names if name in self.by_name]\n\n"
        "    def names(self) -> list[str]:\n"
        "        return list(set(self.by_name))\n\n"
        "    def nothing(self) -> tuple[()]:\n"
        "        return ()\n\n"
        "    def optional(self) -> 'Optional[List[Tool]]':\n"
        "        return list(set(self.by_name.values()))\n\n"
        "def select(names: set[str], by_name) -> list[Tool]:\n"
        "    return [by_name[name] for name in names]\n\n"
        "def chosen(names, by_name):\n"
        "    return sorted(select(set(names), by_name), key=lambda tool: tool.name)\n",
    )
    found = [(Path(finding.path).name, finding.line, finding.code) for finding in lint_paths([tmp_path]).findings]
    assert found == [("registry.py", 11, "AC103"), ("registry.py", 23, "AC103"), ("registry.py", 26, "AC103")]


def test_what_a_helper_of_another_module_returns_on_its_own_is_followed(tmp_path: Path) -> None:
    """bolna's shape: a helper given arguments returns the clock whatever it is given (a date for a time zone, a
    prompt with the date appended, a pair of them, a method's stamp): the callers' system prompts are reported. A
    helper whose clock depends on what it is given is not followed: the date only behind a flag, a placeholder of
    the caller's text it fills (by a method of the text or a template engine's function), one part of a pair (the
    user's), an object or a JSON record that holds a time among other values, a system prompt it reports itself,
    and a set's order it may keep of its arguments."""
    write_package(
        tmp_path / "pkg",
        utils="import json\nimport random\nimport time\nfrom datetime import datetime\n\nimport chevron\n\n"
        "DATE_PROMPT = 'Today is {}, {} ({}).'\n\n"
        "def date_and_time(tz):\n"
        "    now = datetime.now(tz)\n"
        "    return now.strftime('%A, %B %d, %Y'), now.strftime('%I:%M:%S %p')\n\n"
        "def structure_prompt(prompt, tz):\n"
        "    current_date, current_time = date_and_time(tz)\n"
        "    return f'{prompt}\\n{DATE_PROMPT.format(current_date, current_time, tz)}'\n\n"
        "class Stamper:\n"
        "    def stamp(self, text) -> str:\n"
        "        return f'{text} at {time.time()}'\n\n"
        "def maybe_dated(prompt, add_date=False):\n"
        "    if add_date:\n"
        "        prompt += f' Today is {datetime.now():%Y-%m-%d}.'\n"
        "    return prompt\n\n"
        "def fill(prompt):\n"
        "    today = datetime.now().strftime('%Y-%m-%d')\n"
        "    return prompt.replace('__DATE__', today)\n\n"
        "def prompts(system, question):\n"
        "    return system, f'{question} (asked {datetime.now()})'\n\n"
        "class Target:\n"
        "    def __init__(self, name, seen):\n"
        "        self.name, self.seen = name, seen\n\n"
        "def resolve(name):\n"
        "    return Target(name, time.monotonic())\n\n"
        "def package(message):\n"
        "    return json.dumps({'message': message, 'time': time.time()})\n\n"
        "def build_system_prompt(base):\n"
        "    return f'{base} Today is {datetime.now():%Y-%m-%d}.'\n\n"
        "def names(tools):\n"
        "    return ', '.join({tool.name for tool in tools})\n\n"
        "def render_text(template, data):\n"
        "    return chevron.render(template=template, data=data, partials_ext=''.join(random.choices('AB', k=8)))\n",
        app="from openai import OpenAI\n\n"
        "from .utils import (\n"
        "    Stamper, build_system_prompt, date_and_time, fill, maybe_dated, names, package, prompts, render_text,\n"
        "    resolve, structure_prompt,\n)\n\n"
        "def found(client: OpenAI, prompt, tz, stamper: Stamper):\n"
        "    day, _ = date_and_time(tz)\n"
        "    client.responses.create(model='m', instructions=structure_prompt(prompt, tz))\n"
        "    client.responses.create(model='m', instructions=f'{prompt} Today is {day}.')\n"
        "    client.responses.create(model='m', instructions=stamper.stamp(prompt))\n\n"
        "def quiet(client: OpenAI, prompt, question, tools):\n"
        "    client.responses.create(model='m', instructions=maybe_dated(prompt))\n"
        "    client.responses.create(model='m', instructions=fill(prompt))\n"
        "    system, _ = prompts(prompt, question)\n"
        "    client.responses.create(model='m', instructions=system)\n"
        "    client.responses.create(model='m', instructions=f'{prompt} on {resolve(prompt).name}')\n"
        "    client.responses.create(model='m', instructions=package(prompt))\n"
        "    client.responses.create(model='m', instructions=build_system_prompt(prompt))\n"
        "    client.responses.create(model='m', instructions=f'{prompt} Tools: {names(tools)}')\n"
        "    client.responses.create(model='m', instructions=render_text(prompt, {'tools': tools}))\n",
    )
    found = sorted((Path(f.path).name, f.line, f.code) for f in lint_paths([tmp_path]).findings)
    assert found == [
        ("app.py", 10, "AC101"),
        ("app.py", 11, "AC101"),
        ("app.py", 12, "AC101"),
        ("utils.py", 45, "AC101"),
    ]


def test_what_a_helper_returns_on_some_paths_only_is_not_its_own(tmp_path: Path) -> None:
    """What a helper of another module returns on its own is what every call reaches, through the helpers it calls
    too: not a clock after an early return (``if not add_date: return prompt``), nor one a helper called in a branch
    reads, nor an id made by a helper named for one (a record's key: ``generate_group_id(tool)``). A text the
    helper adds to before filling it (``f"{prompt} Today is {today}".replace(...)``), a method that renders through
    another of its class, and a JSON dump appended to a text keep the clock; a name bound through a long chain of
    conditional expressions is judged text at once."""
    write_package(
        tmp_path / "pkg",
        utils="import json\nimport time\nimport uuid\nfrom datetime import datetime\n\n"
        "def today():\n"
        "    return datetime.now().strftime('%Y-%m-%d')\n\n"
        "def early(prompt, add_date=False):\n"
        "    if not add_date:\n"
        "        return prompt\n"
        "    return f'{prompt} Today is {today()}.'\n\n"
        "def branch(prompt, add_date=False):\n"
        "    if add_date:\n"
        "        prompt += f' Today is {today()}.'\n"
        "    return prompt\n\n"
        "def generate_group_id(tool, extra=''):\n"
        "    return f'{tool}_{extra}_{int(time.time() * 1e6)}_{uuid.uuid4().hex[:8]}'\n\n"
        "def with_date(prompt):\n"
        "    return f'{prompt}\\n\\nToday is {datetime.now():%Y-%m-%d}.'.replace('\\n\\n', '\\n')\n\n"
        "def with_record(prompt):\n"
        "    return f'{prompt}\\n' + json.dumps({'at': time.time()})\n\n"
        "def deep(x, flag):\n"
        "    a0 = f'{x} {time.time()}'\n"
        "    a1 = a0 if flag else a0\n"
        "    a2 = a1 if flag else a1\n"
        "    a3 = a2 if flag else a2\n"
        "    a4 = a3 if flag else a3\n"
        "    a5 = a4 if flag else a4\n"
        "    a6 = a5 if flag else a5\n"
        "    a7 = a6 if flag else a6\n"
        "    a8 = a7 if flag else a7\n"
        "    a9 = a8 if flag else a8\n"
        "    a10 = a9 if flag else a9\n"
        "    a11 = a10 if flag else a10\n"
        "    a12 = a11 if flag else a11\n"
        "    a13 = a12 if flag else a12\n"
        "    a14 = a13 if flag else a13\n"
        "    a15 = a14 if flag else a14\n"
        "    a16 = a15 if flag else a15\n"
        "    a17 = a16 if flag else a16\n"
        "    a18 = a17 if flag else a17\n"
        "    a19 = a18 if flag else a18\n"
        "    a20 = a19 if flag else a19\n"
        "    a21 = a20 if flag else a20\n"
        "    a22 = a21 if flag else a21\n"
        "    a23 = a22 if flag else a22\n"
        "    a24 = a23 if flag else a23\n"
        "    return a24\n\n"
        "class Builder:\n"
        "    def render(self, prompt):\n"
        "        return f'{prompt} Today is {today()}.'\n\n"
        "    def build(self, prompt):\n"
        "        return self.render(prompt)\n",
        app="from openai import OpenAI\n\n"
        "from .utils import Builder, branch, deep, early, generate_group_id, with_date, with_record\n\n"
        "def quiet(client: OpenAI, prompt, flag):\n"
        "    client.responses.create(model='m', instructions=early(prompt))\n"
        "    client.responses.create(model='m', instructions=branch(prompt))\n"
        "    group = generate_group_id('agent', prompt)\n"
        "    client.responses.create(model='m', instructions=f'{prompt} ({group})')\n\n"
        "def found(client: OpenAI, prompt, builder: Builder, flag):\n"
        "    client.responses.create(model='m', instructions=with_date(prompt))\n"
        "    client.responses.create(model='m', instructions=with_record(prompt))\n"
        "    client.responses.create(model='m', instructions=builder.build(prompt))\n"
        "    client.responses.create(model='m', instructions=deep(prompt, flag))\n",
    )
    found = sorted((Path(f.path).name, f.line, f.code) for f in lint_paths([tmp_path]).findings)
    assert found == [("app.py", line, "AC101") for line in (12, 13, 14, 15)]


def test_what_every_path_of_a_helper_returns_is_its_own(tmp_path: Path) -> None:
    """The second review's shapes: a clock read on every path, at two sites (``datetime.now(tz) if tz else
    datetime.now()``, or in both branches of an ``if``), in the test of a conditional expression, in every case of a
    ``match``, after a branch that raises, or added by a loop's ``else`` is the helper's own; a clock after a
    ``return`` in a ``try`` body, and a pair whose first part is the caller's in every branch, are not; and the
    second runs leave the tuples a module stores as they found them (a template summed up after them still reads
    the data stored beside a time)."""
    write_package(
        tmp_path / "pkg",
        utils="from datetime import datetime\nimport time\n\nfrom jinja2 import Template\n\n"
        "CACHE = {}\nT = Template('{{ data }} for {{ user }}')\n\n"
        "def two_sites(prompt, tz=None):\n"
        "    if tz:\n        now = datetime.now(tz)\n    else:\n        now = datetime.now()\n"
        "    return f'{prompt} Today: {now:%Y-%m-%d}'\n\n"
        "def greeting(name):\n"
        "    part = 'morning' if datetime.now().hour < 12 else 'afternoon'\n"
        "    return f'Good {part}, {name}.'\n\n"
        "def by_mode(prompt, mode):\n"
        "    stamp = datetime.now()\n"
        "    match mode:\n"
        "        case 'a':\n            return f'{prompt} A {stamp}'\n"
        "    return f'{prompt} {stamp}'\n\n"
        "def checked(prompt, strict=False):\n"
        "    if not prompt:\n        raise ValueError('no prompt')\n    else:\n        stamp = datetime.now()\n"
        "    return f'{prompt} {stamp}'\n\n"
        "def looped(prompt, parts):\n"
        "    for part in parts:\n        prompt += part\n    else:\n        prompt += f' {datetime.now()}'\n"
        "    return prompt\n\n"
        "def formatted(prompt):\n"
        "    try:\n        return prompt.format()\n    except KeyError:\n        pass\n"
        "    return f'{prompt} {datetime.now()}'\n\n"
        "def prompts(system, user, lang=None):\n"
        "    stamp = datetime.now()\n"
        "    pair = (system, f'{user} Now: {stamp}')\n"
        "    if lang:\n        pair = (system, f'{user} ({lang}) Now: {stamp}')\n"
        "    return pair\n\n"
        "def remember(prompt, key, fresh):\n"
        "    entry = (prompt, time.time())\n"
        "    if fresh:\n        entry = (prompt.strip(), time.time())\n"
        "    CACHE[key] = entry\n"
        "    return f'{prompt} {time.time()}'\n\n"
        "def render_cached(key, user):\n"
        "    data, stamp = CACHE[key]\n"
        "    return T.render(data=data, user=user)\n",
        app="from openai import OpenAI\n\n"
        "from .utils import by_mode, checked, formatted, greeting, looped, prompts, render_cached, two_sites\n\n"
        "def found(client: OpenAI, prompt, name, parts):\n"
        "    client.responses.create(model='m', instructions=two_sites(prompt))\n"
        "    client.responses.create(model='m', instructions=greeting(name))\n"
        "    client.responses.create(model='m', instructions=by_mode(prompt, name))\n"
        "    client.responses.create(model='m', instructions=checked(prompt))\n"
        "    client.responses.create(model='m', instructions=looped(prompt, parts))\n\n"
        "def quiet(client: OpenAI, prompt, user, key):\n"
        "    client.responses.create(model='m', instructions=formatted(prompt))\n"
        "    system, question = prompts(prompt, user)\n"
        "    client.responses.create(model='m', instructions=system, input=question)\n"
        "    client.responses.create(model='m', instructions=render_cached(key, user))\n",
    )
    found = sorted((Path(f.path).name, f.line, f.code) for f in lint_paths([tmp_path]).findings)
    assert found == [("app.py", line, "AC101") for line in (6, 7, 8, 9, 10)]


def test_a_prompt_builder_of_another_module_that_reads_the_clock_in_init_is_followed(tmp_path: Path) -> None:
    """mcpomni-connect's shape: a prompt builder of another module reads the clock once in ``__init__`` and returns
    it from ``build(tools)``, which takes arguments: every caller's prompt holds it, through the field that holds
    the builder (its class is known by the method's export). As before, ``generate_system_prompt(current_date_time=
    ...)`` of another module prints the time it is given, and an id given to a prompt maker is not followed."""
    write_package(
        tmp_path / "pkg",
        prompts="def generate_system_prompt(current_date_time, tools=''):\n"
        "    return f'You help. Tools: {tools}. The current date and time is: {current_date_time}'\n\n"
        "def generate_agent_prompt(agent_id, role):\n"
        "    return f'You are the {role}.'\n",
        builder="from datetime import datetime, timezone\n\n"
        "class PromptBuilder:\n"
        "    def __init__(self, template):\n"
        "        self.template = template\n"
        "        self.now = datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M:%S')\n\n"
        "    def build(self, tools):\n"
        "        return f'{self.template}\\nTools: {tools}\\n<current_date_time>{self.now}</current_date_time>'\n",
        cli="import uuid\nfrom datetime import datetime\n\nfrom openai import OpenAI\n\n"
        "from .builder import PromptBuilder\nfrom .prompts import generate_agent_prompt, generate_system_prompt\n\n"
        "class Agent:\n"
        "    def __init__(self, template):\n"
        "        self.prompt_builder = PromptBuilder(template)\n\n"
        "    def run(self, client: OpenAI, tools):\n"
        "        system = self.prompt_builder.build(tools)\n"
        "        return client.responses.create(model='m', instructions=system)\n\n"
        "def chat(client: OpenAI):\n"
        "    system = generate_system_prompt(current_date_time=datetime.now().strftime('%Y-%m-%d %H:%M:%S'))\n"
        "    client.responses.create(model='m', instructions=system)\n"
        "    agent = generate_agent_prompt(agent_id=uuid.uuid4().hex, role='researcher')\n"
        "    return client.responses.create(model='m', instructions=agent)\n",
    )
    found = sorted((Path(f.path).name, f.line, f.code) for f in lint_paths([tmp_path]).findings)
    assert found == [("cli.py", 15, "AC101"), ("cli.py", 18, "AC101")]


def test_a_helper_kept_in_a_dispatch_table_is_called(tmp_path: Path) -> None:
    """mcpomni-connect's shape: a date helper kept as a lambda in a module-level dict, called by its literal key
    (``date_time_func["format_date"]()``), in the module or one that imports the dict, returns the clock; so does a
    function of the module kept there. A lambda elsewhere is no call (a tool's function that returns the time is no
    volatile tool), and an entry of another key, or a table a function rebinds, is not this one's."""
    write_package(
        tmp_path / "pkg",
        constants="from datetime import datetime, timezone\n\n"
        "def _today():\n"
        "    return datetime.now().strftime('%Y-%m-%d')\n\n"
        "date_time_func = {\n"
        "    'format_date': lambda data=None: datetime.now(timezone.utc).strftime('%Y-%m-%dT%H:%M:%S'),\n"
        "    'today': _today,\n"
        "    'name': lambda data=None: 'assistant',\n"
        "}\n",
        cli="from datetime import datetime\n\n"
        "from langchain_core.tools import Tool\n"
        "from openai import OpenAI\n\n"
        "from .constants import date_time_func\n\n"
        "LOCAL = {'now': lambda: datetime.now().isoformat()}\n\n"
        "def chat(client: OpenAI, prompt):\n"
        "    client.responses.create(model='m', instructions=f'{prompt} {date_time_func[\"format_date\"]()}')\n"
        "    client.responses.create(model='m', instructions=f'{prompt} {date_time_func[\"today\"]()}')\n"
        "    client.responses.create(model='m', instructions=f'{prompt} {LOCAL[\"now\"]()}')\n"
        "    client.responses.create(model='m', instructions=f'{prompt} {date_time_func[\"name\"]()}')\n"
        "    clock = Tool(name='clock', func=lambda _: datetime.now().isoformat(), description='The time.')\n"
        "    return client.responses.create(model='m', instructions=prompt, tools=[clock])\n\n"
        "def shadowed(client: OpenAI, prompt, LOCAL):\n"
        "    return client.responses.create(model='m', instructions=f'{prompt} {LOCAL[\"now\"]()}')\n",
    )
    found = sorted((Path(f.path).name, f.line, f.code) for f in lint_paths([tmp_path]).findings)
    assert found == [("cli.py", line, "AC101") for line in (11, 12, 13)]


def test_a_dated_system_prompt_handed_to_an_agent_of_another_module_is_followed(tmp_path: Path) -> None:
    """mcpomni-connect's shape: prompt makers of another module are given the time as ``current_date_time=`` (the
    time a prompt says, not a record's), an agent class of another module is given it to keep, and the prompts go
    to an agent's method as ``system_prompt=``. A top-level helper that takes ``system_prompt`` and never reads it
    sends nothing: the prompt is reported where the agent is given it. Not so a method's unread parameter (an
    override may read it: the abstract one here), a decorated function's (its wrapper is given it), nor an imported
    function's that a nested function of the module shares the name of. A record's ``created_at=`` stays a record's,
    and ``current_time=`` given to a class not of the project stays in its field."""
    write_package(
        tmp_path / "pkg",
        prompts="def generate_react_prompt(current_date_time: str) -> str:\n"
        "    return f\"You are an agent.\\n<now>{current_date_time}</now>\"\n\n"
        "def generate_role_prompt_template(agent_role_prompt: str, current_date_time: str) -> str:\n"
        "    return f\"{agent_role_prompt}\\n<now>{current_date_time}</now>\"\n\n"
        "async def get_prompt_with_agent(system_prompt: str, name: str, fetch):\n"
        "    return await fetch(name)\n\n"
        "@traced\n"
        "async def traced_prompt(system_prompt: str, name: str, fetch):\n"
        "    return await fetch(name)\n",
        agent="class Agent:\n"
        "    async def run(self, system_prompt: str, query: str, llm):\n"
        "        raise NotImplementedError\n\n"
        "class ReactAgent:\n"
        "    async def _run(self, system_prompt: str, query: str, llm):\n"
        "        messages = [{'role': 'system', 'content': system_prompt}, {'role': 'user', 'content': query}]\n"
        "        return await llm(messages)\n",
        team="from .prompts import generate_role_prompt_template\n\n"
        "class Record:\n"
        "    def __init__(self, created_at):\n"
        "        self.created_at = created_at\n\n"
        "class Team:\n"
        "    def __init__(self, role: str, current_date_time: str, record: Record):\n"
        "        self.role, self.current_date_time, self.record = role, current_date_time, record\n\n"
        "    async def ask(self, query: str, llm):\n"
        "        agent_system_prompt = generate_role_prompt_template(\n"
        "            agent_role_prompt=self.role, current_date_time=self.current_date_time\n"
        "        )\n"
        "        stamped_system_prompt = f'{self.role} {self.record.created_at}'\n"
        "        return await llm([{'role': 'system', 'content': agent_system_prompt}, query])\n",
        cli="import time\nfrom datetime import datetime\n\n"
        "from langgraph_agents import AgentState\n"
        "from simple_llm import chat as send\n\n"
        "from .agent import Agent, ReactAgent\n"
        "from .prompts import generate_react_prompt, get_prompt_with_agent, traced_prompt\n"
        "from .team import Record, Team\n\n"
        "async def chat(query, llm, fetch, agent: Agent):\n"
        "    react_prompt = generate_react_prompt(current_date_time=datetime.now().isoformat())\n"
        "    first = await get_prompt_with_agent(system_prompt=react_prompt, name=query, fetch=fetch)\n"
        "    await ReactAgent()._run(system_prompt=react_prompt, query=first, llm=llm)\n"
        "    await agent.run(system_prompt=f'Now: {datetime.now()}', query=query, llm=llm)\n"
        "    await traced_prompt(system_prompt=f'Now: {datetime.now()}', name=query, fetch=fetch)\n"
        "    send(query, system_prompt=f'Now: {datetime.now()}')\n"
        "    team = Team('lead', current_date_time=str(datetime.now()), record=Record(created_at=datetime.now()))\n"
        "    return await team.ask(query, llm)\n\n"
        "def step(client, goal):\n"
        "    state = AgentState(goal=goal, current_time=time.time())\n"
        "    return client.messages.create(model='m', system=f'Your goal: {state.goal}', messages=[])\n\n"
        "def build_ui(gr):\n"
        "    def send(message, history, system_prompt):\n"
        "        return message\n"
        "    return gr.ChatInterface(send)\n",
    )
    found = sorted((Path(f.path).name, f.line, f.code) for f in lint_paths([tmp_path]).findings)
    assert found == [("cli.py", line, "AC101") for line in (14, 15, 16, 17)] + [("team.py", 12, "AC101")]


def test_a_tool_definition_is_checked_where_it_is_made(tmp_path: Path) -> None:
    """agentmake's shape: a tool file holds its definition in a module-level dict that the framework reads and runs
    (no call of this code sends it); a definition (a function's name, description and parameters, or
    ``{"type": "function", "function": ...}``) is only made to be sent, so a clock, a draw or an id in it is
    reported there; not a set's order, which what the analysis does not see may make moot. A definition the module
    sends as a tool is reported where it is sent, once; one written into a system prompt there and where it is
    made (a clock in both is two problems, as agentmake's plugin gives one text as ``system=`` and the definition as
    ``schema=``); a tool call (its id, its arguments), even kept in a list named for tools (npcpy's
    ``detected_tools``), a ``tool_choice``, a record with an id and a run's config naming its parameters are none."""
    write_package(
        tmp_path / "pkg",
        tool="import datetime\n\n"
        "CURRENT_DATETIME = str(datetime.datetime.now())\n\n"
        "TOOL_SCHEMA = {\n"
        "    'name': 'convert_relative_datetime',\n"
        "    'description': f'Convert relative dates; the current datetime is {CURRENT_DATETIME}.',\n"
        "    'parameters': {'type': 'object', 'properties': {'text': {'type': 'string'}}},\n"
        "}\n",
        kinds="import random\nimport uuid\nfrom datetime import datetime\n\n"
        "def kinds_tool(k):\n"
        "    kind = {'type': 'string', 'enum': random.sample(k, 2)}\n"
        "    pick = {'name': 'pick', 'description': 'Pick one', 'parameters': {'type': 'object', 'properties': kind}}\n"
        "    return {'type': 'function', 'function': pick}\n\n"
        "def ordered_tool(k):\n"
        "    kind = {'type': 'string', 'enum': list(set(k))}\n"
        "    return {'name': 'pick', 'description': 'One', 'parameters': {'type': 'object', 'properties': kind}}\n\n"
        "def tool_call(name, args):\n"
        "    return {'id': str(uuid.uuid4()), 'type': 'function', 'function': {'name': name, 'arguments': args}}\n\n"
        "def choice(name):\n"
        "    return {'type': 'function', 'function': {'name': f'{name}-{uuid.uuid4()}'}}\n\n"
        "def record(db, name, schema):\n"
        "    row = {'id': str(uuid.uuid4()), 'name': name, 'description': 'a tool', 'parameters': {'type': 'object'}}\n"
        "    db.insert('tools', row)\n"
        "    return {'name': f'run-{datetime.now()}', 'description': 'a sweep', 'parameters': schema}\n\n"
        "def detect(tools, reply):\n"
        "    detected_tools = []\n"
        "    for tool in tools:\n"
        "        detected_tools.append({'id': str(uuid.uuid4()), 'function': {'name': tool, 'arguments': reply}})\n"
        "    return detected_tools\n",
        sent="import json\nimport time\n\n"
        "def ask(client, question):\n"
        "    tool = {'name': 'clock', 'description': f'Now: {time.time()}', 'input_schema': {'type': 'object'}}\n"
        "    return client.messages.create(model='m', messages=[question], tools=[tool])\n\n"
        "def react(client, question):\n"
        "    tool = {'name': 'clock', 'description': f'Now: {time.time()}', 'input_schema': {'type': 'object'}}\n"
        "    system = f'Answer with JSON calling these tools: {json.dumps([tool])}'\n"
        "    return client.messages.create(model='m', system=system, messages=[question])\n",
    )
    found = sorted((Path(f.path).name, f.line, f.code) for f in lint_paths([tmp_path]).findings)
    assert found == [
        ("kinds.py", 7, "AC102"),
        ("sent.py", 6, "AC102"),
        ("sent.py", 9, "AC102"),
        ("sent.py", 11, "AC101"),
        ("tool.py", 5, "AC102"),
    ]


def test_a_set_returned_by_a_method_of_an_imported_object_is_followed(tmp_path: Path) -> None:
    """nonebot-plugin-moellmchats' shape: a module-level object of another module's class (``tool_manager =
    ToolManager()``), whose method is annotated to return a set, is known by its class where it is imported: the
    tools listed in the set's order are reported; sorted, they are not, nor a dict's keys view (``AbstractSet``)
    or a set of ints, whose order is the same in every process."""
    write_package(
        tmp_path / "pkg",
        tool_manager="class ToolManager:\n"
        "    def __init__(self):\n"
        "        self.deps = {'search': ['fetch']}\n\n"
        "    def expand_dependencies(self, plugins: set) -> set[str]:\n"
        "        expanded = set(plugins)\n"
        "        for name in plugins:\n"
        "            expanded.update(self.deps.get(name, []))\n"
        "        return expanded\n\n"
        "tool_manager = ToolManager()\n",
        payload="from .tool_manager import tool_manager\n\n"
        "TOOLS = {'search': {'name': 'search'}, 'fetch': {'name': 'fetch'}}\n\n"
        "def payload(names, model):\n"
        "    chosen = tool_manager.expand_dependencies(names)\n"
        "    return {'model': model, 'tools': [TOOLS[name] for name in chosen]}\n\n"
        "def sorted_payload(names, model):\n"
        "    chosen = sorted(tool_manager.expand_dependencies(names))\n"
        "    return {'model': model, 'tools': [TOOLS[name] for name in chosen]}\n\n"
        "def fixed_payload(model):\n"
        "    return {'model': model, 'tools': [TOOLS[n] for n in registry.names()] + [registry.ids()]}\n",
        registry="from typing import AbstractSet\n\n"
        "class Registry:\n"
        "    def __init__(self):\n"
        "        self.by_name = {'search': 1}\n\n"
        "    def names(self, kind: str = '') -> AbstractSet[str]:\n"
        "        return self.by_name.keys()\n\n"
        "    def ids(self, kind: str = '') -> set[int]:\n"
        "        return {1, 2, 3}\n\n"
        "registry: Registry = Registry()\n",
    )
    (tmp_path / "pkg" / "payload.py").write_text(
        (tmp_path / "pkg" / "payload.py").read_text().replace("import tool_manager\n", "import tool_manager\n"
        "from .registry import registry\n", 1)
    )
    found = sorted((Path(f.path).name, f.line, f.code) for f in lint_paths([tmp_path]).findings)
    assert found == [("payload.py", 8, "AC103")]


def test_a_set_an_object_of_another_module_holds_is_followed_through_its_methods(tmp_path: Path) -> None:
    """agently's shape: a registry of another module keeps its actions' ids by tag in a dict of sets, and its method
    given the tags lists them by iterating that set, as a function does a set its module holds, and so do the
    methods of another object that list what it returns: the tool list built of it is reported where it is sent.
    Not what such a method returns sorted, nor one item it picks by a test, nor the items of what it is given kept
    in the caller's order, nor a set it makes of what it is given."""
    write_package(
        tmp_path / "pkg",
        registry="class ActionRegistry:\n"
        "    def __init__(self):\n"
        "        self._by_tag: dict[str, set[str]] = {}\n"
        "        self._specs = {}\n\n"
        "    def register(self, action_id, spec, tags):\n"
        "        self._specs[action_id] = spec\n"
        "        for tag in tags:\n"
        "            self._by_tag.setdefault(tag, set()).add(action_id)\n\n"
        "    def list_action_ids(self, tags=None):\n"
        "        if tags is None:\n"
        "            return list(self._specs)\n"
        "        collected = []\n"
        "        for tag in tags:\n"
        "            for action_id in self._by_tag.get(tag, set()):\n"
        "                collected.append(action_id)\n"
        "        return collected\n\n"
        "    def sorted_ids(self, tag):\n"
        "        return sorted(self._by_tag.get(tag, set()))\n\n"
        "    def first(self, tag, name):\n"
        "        return next((i for i in self._by_tag.get(tag, set()) if i == name), None)\n\n"
        "    def known(self, names):\n"
        "        return [name for name in names if name in self._specs]\n\n"
        "    def tools_of(self, names):\n"
        "        return list(set(names))\n\n"
        "    def spec(self, action_id):\n"
        "        return self._specs[action_id]\n\n"
        "class Actions:\n"
        "    def __init__(self):\n"
        "        self.registry = ActionRegistry()\n\n"
        "    def _ids(self, tags):\n"
        "        return self.registry.list_action_ids(tags)\n\n"
        "    def action_list(self, tags):\n"
        "        return [self.registry.spec(i) for i in self._ids(tags)]\n\n"
        "BUILTIN = {'search', 'fetch'}\n\n"
        "def builtin_ids(prefix):\n"
        "    return [prefix + name for name in BUILTIN]\n",
        agent="from openai import OpenAI\n\n"
        "from .registry import ActionRegistry, Actions, builtin_ids\n\n"
        "class Agent:\n"
        "    def __init__(self):\n"
        "        self.registry = ActionRegistry()\n\n"
        "    def ask(self, question, tag):\n"
        "        tools = [self.registry.spec(i) for i in self.registry.list_action_ids([tag])]\n"
        "        return OpenAI().chat.completions.create(model='m', messages=[question], tools=tools)\n\n"
        "    def ask_sorted(self, question, tag, names):\n"
        "        tools = [self.registry.spec(i) for i in self.registry.sorted_ids(tag)]\n"
        "        tools += [self.registry.spec(self.registry.first(tag, 'search'))]\n"
        "        tools += [self.registry.spec(i) for i in self.registry.known(names)]\n"
        "        return OpenAI().chat.completions.create(model='m', messages=[question], tools=tools)\n\n"
        "    def ask_builtin(self, question):\n"
        "        tools = [self.registry.spec(i) for i in builtin_ids('x-')]\n"
        "        return OpenAI().chat.completions.create(model='m', messages=[question], tools=tools)\n\n"
        "    def ask_actions(self, question, tag):\n"
        "        tools = Actions().action_list([tag])\n"
        "        return OpenAI().chat.completions.create(model='m', messages=[question], tools=tools)\n",
    )
    found = sorted((Path(f.path).name, f.line, f.code) for f in lint_paths([tmp_path]).findings)
    assert found == [("agent.py", 10, "AC103"), ("agent.py", 20, "AC103"), ("agent.py", 24, "AC103")]


SENDING_MODULES = {
    "a_assistant": "import datetime\nimport secrets\n\n"
    "from .b_explain import llm_chat\nfrom .client import AgentState, Client\nfrom .llm import chat_as\n\n"
    "SYSTEM = 'Read the text between the {fence} markers.'\n\n"
    "def pick(question):\n"
    "    fence = f'UNTRUSTED-{secrets.token_hex(6)}'\n"
    "    return llm_chat(SYSTEM.format(fence=fence), f'<<{fence}>>{question}<</{fence}>>')\n\n"
    "def ask(question):\n"
    "    return llm_chat('You answer questions.', f'{question} at {datetime.datetime.now()}')\n\n"
    "def answer(question, tools):\n"
    "    client = Client()\n"
    "    return client.ask(f'You help. Today is {datetime.date.today()}.', question, tools=list(set(tools)))\n\n"
    "def named():\n"
    "    agent = AgentState(name=f'agent-{secrets.token_hex(4)}', system='You help.')\n"
    "    return chat_as(agent, 'hello')\n\n"
    "def relayed(question):\n"
    "    from .b_explain import relay\n\n"
    "    return relay(f'You help. It is {datetime.datetime.now()}.', question)\n",
    "b_explain": "from . import llm\n\ndef llm_chat(system, user):\n    return llm.chat(system, user)\n\n"
    "def _go(system, user):\n    return llm.chat(system, user)\n\n"
    "def relay(system, user):\n    return _go(system, user)\n",
    "llm": "from langchain_openai import ChatOpenAI\n\n"
    "def _chat(system, user):\n"
    "    return ChatOpenAI().invoke([('system', system), ('human', user)])\n\n"
    "def chat(system, user):\n    return _chat(system, user)\n\n"
    "def chat_as(agent, user):\n    return _chat(agent.system, user)\n",
    "client": "from dataclasses import dataclass\n\nfrom openai import OpenAI\n\n"
    "@dataclass\nclass AgentState:\n    name: str\n    system: str\n\n"
    "class Client:\n"
    "    def ask(self, instructions, question, tools):\n"
    "        messages = [{'role': 'system', 'content': instructions}, {'role': 'user', 'content': question}]\n"
    "        return OpenAI().chat.completions.create(model='m', messages=messages, tools=tools)\n",
}


@pytest.mark.parametrize("jobs", [1, 2])
def test_what_a_function_of_another_module_sends_is_reported_where_it_is_given(tmp_path: Path, jobs: int) -> None:
    """rootsight's shape: ``llm_chat(system, user)`` hands its first parameter to ``llm.chat``, which sends it as
    the system message: what a caller gives it is reported at the argument, through a chain of modules walked
    before them or after and of functions of one module (``relay`` hands it to ``_go``), and so is what a method
    of a class of another module sends (``Client().ask``). A value given the user's parameter is not, nor an
    object of which only a field is sent (its name)."""
    write_package(tmp_path / "pkg", **SENDING_MODULES)
    found = sorted((Path(f.path).name, f.line, f.code) for f in lint_paths([tmp_path], jobs=jobs).findings)
    assert found == [
        ("a_assistant.py", 12, "AC101"),
        ("a_assistant.py", 19, "AC101"),
        ("a_assistant.py", 19, "AC103"),
        ("a_assistant.py", 28, "AC101"),
    ]


def test_a_parameter_not_sent_whole_is_not_reported_where_it_is_given(tmp_path: Path) -> None:
    """What a caller gives a parameter that reaches the system prompt only through a call the run does not follow
    (a lookup two calls deep), or of which only an item (``agent["system"]``, ``state.get("catalog")``) or a
    property is sent, is not reported: the dated text, the object's random name and the state's start time are not
    what the system message holds."""
    write_package(
        tmp_path / "pkg",
        llm="from dataclasses import dataclass\n\nfrom langchain_openai import ChatOpenAI\n\n"
        "PROMPTS = {'default': 'You are a helpful assistant.'}\n\n"
        "@dataclass\nclass Agent:\n    name: str\n\n    @property\n    def system(self):\n"
        "        return 'You help.'\n\n"
        "def _lookup(topic):\n    return PROMPTS['default']\n\n"
        "def _system_for(topic):\n    return _lookup(topic)\n\n"
        "def chat(topic, user):\n    return ChatOpenAI().invoke([('system', _system_for(topic)), ('human', user)])\n\n"
        "def chat_as(agent, user):\n    return ChatOpenAI().invoke([('system', agent['system']), ('human', user)])\n\n"
        "def chat_with(agent: Agent, user):\n"
        "    return ChatOpenAI().invoke([('system', agent.system), ('human', user)])\n\n"
        "def chat_from(state, user):\n"
        "    catalog = state.get('catalog')\n"
        "    return ChatOpenAI().invoke([('system', f'Files: {catalog.listing()}'), ('human', user)])\n",
        app="import datetime\nimport secrets\n\nfrom .llm import Agent, chat, chat_as, chat_from, chat_with\n\n"
        "def ask(question):\n    return chat(f'asked at {datetime.datetime.now()}', question)\n\n"
        "def named():\n"
        "    agent = {'name': f'agent-{secrets.token_hex(4)}', 'system': 'You help.'}\n"
        "    return chat_as(agent, 'hello')\n\n"
        "def typed():\n    return chat_with(Agent(name=f'agent-{secrets.token_hex(4)}'), 'hello')\n\n"
        "def stated(state):\n    return chat_from({**state, 'started': datetime.datetime.now()}, 'go')\n",
    )
    assert lint_paths([tmp_path]).findings == ()


def test_a_folder_without_init_inside_a_package_is_a_namespace_package_of_it(tmp_path: Path) -> None:
    """elroy's shape: ``pkg/utils/`` holds no ``__init__.py``, and ``from ..utils.clock import local_now`` in
    ``pkg/repository/memo.py`` names its module (PEP 420), whose helper reads the clock with an argument."""
    for folder in ("pkg", "pkg/repository"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "pkg" / "utils").mkdir()
    (tmp_path / "pkg" / "utils" / "clock.py").write_text(
        "from datetime import UTC, datetime\n\ndef local_now():\n    return datetime.now(UTC)\n"
    )
    (tmp_path / "pkg" / "repository" / "memo.py").write_text(
        "from ..utils.clock import local_now\n\n"
        "def augment(llm, text):\n"
        "    return llm.query_llm(system=f'Augment the text. The time is {local_now()}.', prompt=text)\n"
    )
    found = [(Path(f.path).name, f.line, f.code) for f in lint_paths([tmp_path / "pkg"]).findings]
    assert found == [("memo.py", 4, "AC101")]


def test_a_script_imports_a_module_beside_it(tmp_path: Path) -> None:
    """``pkg/examples/run.py`` runs as a script: ``from helpers import stamp`` is ``pkg/examples/helpers.py`` (the
    script's folder is where its imports start), though the folder, without ``__init__.py``, is in the package."""
    (tmp_path / "pkg" / "examples").mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "examples" / "helpers.py").write_text(
        "from datetime import datetime\n\ndef stamp():\n    return datetime.now().isoformat()\n"
    )
    (tmp_path / "pkg" / "examples" / "run.py").write_text(
        "from helpers import stamp\nfrom langchain_core.messages import SystemMessage\n\n"
        "def messages():\n    return [SystemMessage(content=f'You help. Time: {stamp()}')]\n"
    )
    found = [(Path(f.path).name, f.line, f.code) for f in lint_paths([tmp_path / "pkg"]).findings]
    assert found == [("run.py", 5, "AC101")]


@pytest.mark.parametrize("clock", [True, False])
def test_an_import_of_a_namespace_package_is_followed(tmp_path: Path, clock: bool) -> None:
    """``src/pkg/`` without ``__init__.py`` (PEP 420, a src layout): ``from pkg.utils import today`` is the
    module beside the importer, not a module of the same name in a folder the importer's root does not reach."""
    stamp = "datetime.now().strftime('%Y-%m-%d')"
    helper = "from datetime import datetime\n\ndef today():\n    return {}\n"
    for folder, value in (("src", stamp if clock else "'2024-01-01'"), ("other", stamp)):
        (tmp_path / folder / "pkg").mkdir(parents=True)
        (tmp_path / folder / "pkg" / "utils.py").write_text(helper.format(value))
    (tmp_path / "src" / "pkg" / "graph.py").write_text(
        "from langchain_core.messages import SystemMessage\n"
        "from pkg.utils import today\n\n"
        "def node(state):\n"
        "    return [SystemMessage(content=f'Today is {today()}')]\n"
    )
    found = [(Path(f.path).name, f.line, f.code) for f in lint_paths([tmp_path]).findings]
    assert found == ([("graph.py", 5, "AC101")] if clock else [])


@pytest.mark.parametrize("helper", ["self._set_from_env()", "self.date = data['date']"])
def test_a_field_a_helper_of_init_sets_is_read_through_an_imported_class(tmp_path: Path, helper: str) -> None:
    """rawdog's shape: ``EnvInfo(config).render_prompt()`` in one module formats ``self.date``, which a helper that
    ``EnvInfo.__init__`` calls sets from the clock in another; set from an argument, it is no finding."""
    write_package(
        tmp_path / "app",
        client="from app.utils import EnvInfo\n\n"
        "def ask(completion, config):\n"
        "    messages = [{'role': 'system', 'content': EnvInfo(config=config).render_prompt()}]\n"
        "    return completion(model='m', messages=messages)\n",
        utils="import datetime\n\nclass EnvInfo:\n"
        f"    def __init__(self, config=None, data=None):\n        self.config = config\n        {helper}\n\n"
        "    def _set_from_env(self):\n        self.date = datetime.datetime.now().strftime('%Y-%m-%d %H:%M')\n\n"
        "    def render_prompt(self):\n        return 'Today is {date}.'.format(date=self.date)\n",
    )
    found = [(Path(f.path).name, f.line, f.code) for f in lint_paths([tmp_path]).findings]
    assert found == ([("client.py", 4, "AC101")] if "env" in helper else [])


@pytest.mark.parametrize("other", ["", "    id: str = Field(default_factory=lambda: uuid.uuid4().hex)\n"])
def test_a_field_of_a_base_class_in_another_module_is_followed(tmp_path: Path, other: str) -> None:
    """semantic-kernel's shape: the base class gives every agent a random name by ``default_factory`` (through a
    helper in a third module), and a subclass in another module sends it as its system message's name. The
    subclass's module is walked first; the base's ``name`` is learned after its ``id`` (``other``), which the
    subclass does not read: it is checked again for the field it reads."""
    chat = (
        "class ChatAgent({}):\n"
        "    def messages(self, history):\n"
        "        return [Message(role='system', content=self.instructions, name=self.name), *history]\n"
    )
    package = write_package(
        tmp_path / "kernel",
        a_chat="from .base import Agent\n\n" + chat.format("Agent"),
        base="import uuid\nfrom pydantic import BaseModel, Field\n"
        "from .naming import random_name\n\n"
        "class Agent(BaseModel):\n"
        "    instructions: str = 'You help.'\n"
        f"{other}"
        "    name: str = Field(default_factory=lambda: f'agent_{random_name()}')\n",
        naming="import random\nimport string\n\n"
        "def random_name(length=8):\n    return ''.join(random.choices(string.ascii_letters, k=length))\n",
    )
    result = lint_paths([tmp_path])
    assert [(Path(f.path).name, f.line, f.code) for f in result.findings] == [("a_chat.py", 5, "AC101")]
    # The base module imported as a module (from . import base; base.Agent): found whatever the walk order.
    (package / "a_chat.py").write_text("from . import base\n\n" + chat.format("base.Agent"))
    assert lint_paths([tmp_path]).findings == result.findings


@pytest.mark.parametrize(
    ("init", "text"),
    [
        ("__init__.py", "from .base import Agent\n"),
        ("__init__.pyi", "from .base import Agent as Agent\n"),  # the stub of a package that imports lazily
        # A lazy import's table, that __getattr__ imports from.
        (
            "__init__.py",
            "import importlib\n_AGENTS = {'Agent': '.base'}\n\ndef __getattr__(name):\n"
            "    return getattr(importlib.import_module(_AGENTS[name], __name__), name)\n",
        ),
    ],
)
def test_a_class_a_package_reexports_is_followed(tmp_path: Path, init: str, text: str) -> None:
    """semantic-kernel's import: ``from kernel.agents import Agent``, the class defined in ``kernel.agents.base``
    and re-exported by the package's ``__init__``; its random ``name`` reaches a subclass's system message."""
    write_package(tmp_path / "kernel")
    agents = write_package(
        tmp_path / "kernel" / "agents",
        base="import random\nfrom pydantic import BaseModel, Field\n\n"
        "class Agent(BaseModel):\n"
        "    name: str = Field(default_factory=lambda: f'agent_{random.randint(0, 999)}')\n"
        "    label: str = 'helper'\n",
    )
    (agents / init).write_text(text)
    chat = (
        "from kernel.agents import {}\n\n"
        "class ChatAgent({}):\n"
        "    def messages(self, history):\n"
        "        return [Message(role='system', content='You help.', name=self.{}), *history]\n"
    )
    (tmp_path / "kernel" / "a_chat.py").write_text(chat.format("Agent", "Agent", "name"))
    findings = lint_paths([tmp_path]).findings
    assert [(Path(f.path).name, f.line, f.code) for f in findings] == [("a_chat.py", 5, "AC101")]
    # A stable field of it, or a class of the same name the package does not re-export, is not reported.
    (tmp_path / "kernel" / "a_chat.py").write_text(chat.format("Agent", "Agent", "label"))
    assert lint_paths([tmp_path]).findings == ()
    (agents / init).write_text(text.replace("Agent", "Team"))
    (tmp_path / "kernel" / "a_chat.py").write_text(chat.format("Agent", "Agent", "name"))
    assert lint_paths([tmp_path]).findings == ()


@pytest.mark.parametrize(
    ("tools", "expected"),
    [
        ("[{'name': name} for name in self.enabled_tools]", [("a_chat.py", 7, "AC103")]),
        ("[{'name': name} for name in ALL_TOOLS]", [("a_chat.py", 7, "AC103")]),
        ("list(SAFE_TOOLS)", [("a_chat.py", 7, "AC103")]),  # a set made from iterating a set is still a set
        ("[{'name': name} for name in sorted(self.enabled_tools | ALL_TOOLS)]", []),
        ("[{'name': name} for name in names if name in ALL_TOOLS and name not in self.enabled_tools]", []),
    ],
)
def test_a_set_another_module_makes_is_a_set(tmp_path: Path, tools: str, expected: list[tuple[str, int, str]]) -> None:
    """A set a base class makes in ``__init__`` and set constants, each in another module: iterated into the tool
    list they are found; sorted, or kept for membership tests, they are not. The importer is walked first."""
    write_package(
        tmp_path / "agent",
        a_chat="from .base import Agent\nfrom .catalog import ALL_TOOLS, SAFE_TOOLS\n\n"
        "class Chat(Agent):\n"
        "    def request(self, client, names):\n"
        "        return client.chat.completions.create(\n"
        f"            model='m', messages=[], tools={tools},\n"
        "        )\n",
        base="class Agent:\n    def __init__(self):\n        self.enabled_tools: set[str] = set()\n",
        catalog="ALL_TOOLS = frozenset({'search', 'summarize', 'translate'})\n"
        "SAFE_TOOLS = frozenset(name for name in ALL_TOOLS if name != 'translate')\n",
    )
    findings = lint_paths([tmp_path]).findings
    assert [(Path(f.path).name, f.line, f.code) for f in findings] == expected


@pytest.mark.parametrize(("options", "expected"), [("", [("a_chat.py", 5, "AC104")]), (", sort_keys=True", [])])
def test_a_dump_another_module_orders_by_a_set_is_followed(
    tmp_path: Path, options: str, expected: list[tuple[str, int, str]]
) -> None:
    """A helper in another module dumps a dict built by iterating a set: its text, put in a system prompt, has its
    keys in hash order (AC104), unless the dump sorts them."""
    write_package(
        tmp_path / "agent",
        a_chat="from .catalog import tools_schema\n\n"
        "def messages(question):\n"
        "    return [\n"
        "        {'role': 'system', 'content': 'Switches: ' + tools_schema()},\n"
        "        {'role': 'user', 'content': question},\n"
        "    ]\n",
        catalog="import json\n\nALL_TOOLS = {'search', 'summarize', 'translate'}\n\n"
        "def tools_schema():\n"
        f"    return json.dumps({{name: {{'type': 'boolean'}} for name in ALL_TOOLS}}{options})\n",
    )
    findings = lint_paths([tmp_path]).findings
    assert [(Path(f.path).name, f.line, f.code) for f in findings] == expected


@pytest.mark.parametrize(
    ("read", "expected"),
    [
        ("', '.join(catalog.skill_names())", [("a_prompt.py", 5, "AC103")]),  # a method that returns a set
        ("catalog.banner", [("a_prompt.py", 5, "AC101")]),  # a property that reads the clock
        ("f'You are {agent.name}.'", [("a_prompt.py", 5, "AC101")]),  # a field made by default_factory
        ("', '.join(sorted(catalog.skill_names()))", []),
        ("', '.join(catalog.skills_for(agent))", []),  # a method given arguments: what it returns is not known
        ("', '.join(other.skill_names())", []),  # a parameter without a class
    ],
)
def test_a_parameter_of_a_class_in_another_module_reads_its_methods_and_fields(
    tmp_path: Path, read: str, expected: list[tuple[str, int, str]]
) -> None:
    """A parameter annotated with a class of another module (``catalog: Catalog``, ``"Agent | None"``) reads
    what that class's methods that take no arguments return, its properties and its fields."""
    write_package(
        tmp_path / "app",
        a_prompt="from .catalog import Agent, Catalog\n\n"
        "def messages(catalog: Catalog, agent: 'Agent | None', other, question):\n"
        "    return [\n"
        f"        {{'role': 'system', 'content': {read}}},\n"
        "        {'role': 'user', 'content': question},\n"
        "    ]\n",
        catalog="import random\nfrom datetime import datetime\nfrom pydantic import BaseModel, Field\n\n"
        "class Agent(BaseModel):\n"
        "    name: str = Field(default_factory=lambda: random.choice(['Ada', 'Bo']))\n\n"
        "class Catalog:\n"
        "    def __init__(self, skills):\n"
        "        self.skills = skills\n\n"
        "    def skill_names(self):\n"
        "        return {skill.name for skill in self.skills}\n\n"
        "    def skills_for(self, agent):\n"
        "        return {skill.name for skill in self.skills if skill.fits(agent)}\n\n"
        "    @property\n"
        "    def banner(self):\n"
        "        return f'Catalog as of {datetime.now():%H:%M}'\n",
    )
    findings = lint_paths([tmp_path]).findings
    assert [(Path(f.path).name, f.line, f.code) for f in findings] == expected


@pytest.mark.parametrize(("options", "expected"), [("", [("config.py", 8, "AC104")]), (", sort_keys=True", [])])
def test_what_a_constructor_is_given_elsewhere_is_the_objects_field(
    tmp_path: Path, options: str, expected: list[tuple[str, int, str]]
) -> None:
    """A config object is made in one module with a schema dumped from a set in another (read through a
    parameter of that class), and formats it into its system message in a third: the dump's key order reaches
    the system message (AC104), unless the dump sorts the keys. A keyword that is a sink itself (``tools=``) is
    reported where it is given, not again where the class sends it."""
    write_package(
        tmp_path / "rag",
        a_task="from .config import PlannerConfig\nfrom .store import Store\n\n"
        "def planner(store: Store):\n"
        "    config = PlannerConfig(schema_text=store.schema(), tools=list(store.columns))\n"
        "    config.set_system_message()\n"
        "    return config\n",
        config="from pydantic import BaseModel\n\n"
        "class PlannerConfig(BaseModel):\n"
        "    schema_text: str = ''\n"
        "    system_message: str = 'Plan queries over these fields: {schema}'\n\n"
        "    def set_system_message(self):\n"
        "        self.system_message = self.system_message.format(schema=self.schema_text)\n\n"
        "    def request(self, client):\n"
        "        return client.chat.completions.create(model='m', messages=[], tools=self.tools)\n",
        store="import json\n\n"
        "class Store:\n"
        '    """The columns a planner\'s system prompt may filter on."""\n\n'
        "    def __init__(self):\n"
        "        self.columns = set()\n\n"
        "    def schema(self):\n"
        f"        return json.dumps({{column: {{'type': 'string'}} for column in self.columns}}{options})\n",
    )
    findings = lint_paths([tmp_path]).findings
    assert [(Path(f.path).name, f.line, f.code) for f in findings] == [("a_task.py", 5, "AC103"), *expected]


def test_syntax_newer_than_the_interpreter_is_rewritten_and_checked(tmp_path: Path) -> None:
    """Type parameters, type aliases and f-strings that reuse their quotes or hold a backslash in a replacement
    field (Python 3.12) are checked by any interpreter: the module is parsed with the newest grammar and rewritten
    for the running one's parser, every line in its place (wren-agent's loop, vtx-coding-agent's SDK agent)."""
    path = tmp_path / "new.py"
    path.write_text(
        "from datetime import datetime\n\n"
        "from openai import OpenAI\n\n"
        "type Messages = list[dict[str, str]]\n\n"
        "class Box[T]:\n"
        "    def __init__(self, item: T) -> None:\n"
        "        self.item = item\n\n"
        "def rules[T](items: list[T]) -> str:\n"
        "    return f\"Rules: {'\\n'.join(str(item) for item in items)}\"\n\n"
        "def system_prompt(items: list[str]) -> str:\n"
        "    return f\"Today is {datetime.now().strftime(\"%Y-%m-%d\")}. {rules(items)}\"\n\n"
        "def ask(question: str) -> object:\n"
        "    messages: Messages = [{'role': 'system', 'content': system_prompt(['Be brief.'])}, question]\n"
        "    return OpenAI().chat.completions.create(model='m', messages=messages)\n\n"
        "def plain[T](lines: list[T]) -> object:\n"
        "    system = {'role': 'system', 'content': f\"{'\\n'.join(lines)}{'\\t'.join(lines)} {datetime.now()}\"}\n"
        "    return OpenAI().chat.completions.create(model='m', messages=[system])\n"
    )
    result = lint_paths([path])
    assert [(f.line, f.code) for f in result.findings] == [(18, "AC101"), (22, "AC101")]
    assert result.notes == ()
    line = path.read_text().splitlines()[21]  # what follows a rewrite on its line keeps its column
    assert result.findings[1].end_column == line.rindex('"') + 2


def test_syntax_that_cannot_be_rewritten_is_a_note_not_a_finding(tmp_path: Path) -> None:
    """A comment inside an f-string's replacement field is valid from Python 3.12 and left as written: a module
    that holds one is noted as needing a newer parser, not reported as broken, on an older interpreter."""
    path = tmp_path / "new.py"
    path.write_text('def system_prompt(name):\n    return f"Hello {\n        name  # who\n    }"\n')
    moved = tmp_path / "moved.py"  # a string over several lines with a backslash, in a replacement field
    moved.write_text(
        "import textwrap\nimport time\n\n"
        + 'HEAD = f"""You help.\n{textwrap.dedent(' + "'" * 3 + "\\\n    Be brief.\n" + "'" * 3 + ')}"""\n\n'
        + "def system_prompt():\n    return HEAD + f' {time.time()}'\n"
    )
    result = lint_paths([path, moved])
    if sys.version_info >= (3, 12):
        assert [(Path(f.path).name, f.line) for f in result.findings] == [("moved.py", 10)]
        assert result.notes == ()
    else:
        running = f"Python {sys.version_info.major}.{sys.version_info.minor}"
        assert result.findings == ()
        assert result.notes == tuple(
            f"{name}: skipped: needs a newer parser (valid Python 3.14, not {running})" for name in (moved, path)
        )


def test_a_template_of_python_code_is_a_note_not_a_finding(tmp_path: Path) -> None:
    """cookiecutter's project templates (a folder named by a tag), and a module a generator renders: Jinja tags make
    them invalid Python until rendered. A file that is broken Python without them is noted as such."""
    project = tmp_path / "{{cookiecutter.project_slug}}" / "src"
    project.mkdir(parents=True)
    (project / "main.py").write_text("class {{ cookiecutter.name }}Crew:\n    tools = []\n")
    (tmp_path / "generated.py").write_text(
        "from agents import Agent\n\n{% for agent in agents %}\n"
        "{{ agent.name }} = Agent(name='{{ agent.name }}', instructions='{{ agent.prompt }}')\n{% endfor %}\n"
    )
    (tmp_path / "broken.py").write_text("def system_prompt(:\n    return '%s' % {'a': 1}\n")
    (tmp_path / "prompt.py").write_text(  # a prompt's tags in a string; the file is broken elsewhere
        'SYSTEM_PROMPT = Template("""Tools:\n{% for tool in tools %}- {{ tool.name }}\n{% endfor %}""")\n'
        "def system_prompt(tools):\n    return SYSTEM_PROMPT.render(tools=tools\n"
    )
    (tmp_path / "paged.py").write_text("import os\n\f\ntools = []\n{% if a %}\ny = 2\n{% endif %}\n")  # a form feed
    (tmp_path / "escaped.py").write_text('def system_prompt(name):\n    return f"Hello {{ name }}, {name} {{% x"(\n')
    odd = tmp_path / os.fsdecode(b"caf\xe9")  # a folder name that is not UTF-8
    odd.mkdir()
    (odd / "agent.py").write_text("SYSTEM_PROMPT = (\n")
    result = lint_paths([tmp_path])
    assert result.findings == ()
    noted = sorted(
        (Path(path).name, note.partition(" (")[0])
        for path, _, note in (line.rpartition(": skipped: ") for line in result.notes)
    )
    assert noted == [
        ("agent.py", "not valid Python"),
        ("broken.py", "not valid Python"),
        ("escaped.py", "not valid Python"),
        ("generated.py", "a template of Python code"),
        ("main.py", "a template of Python code"),
        ("paged.py", "a template of Python code"),
        ("prompt.py", "not valid Python"),
    ]


def test_a_private_function_nothing_in_the_project_calls_sends_nothing(tmp_path: Path) -> None:
    """aacode's ``_compact_context`` and omagent's ``_generate_default_sys_prompt``: a private function or method
    that nothing in the project calls (its tests aside, a comment or a docstring's prose aside), or that only other
    classes' namesakes call on themselves, is never run. Still reported: what a class it derives from calls (a
    mixin's too), what a string names (``getattr``) or a name built from a prefix of it reaches, an entry point
    ``pyproject.toml`` names, a method a library's base class may call (``_run``, even of a class named as that
    base), a sunder hook (Enum's ``_missing_``), and a public function."""
    (tmp_path / "pyproject.toml").write_text('[project.scripts]\npkg = "pkg.cli:_main"\n')
    package = tmp_path / "src" / "pkg"
    package.parent.mkdir()
    stamp = "client.chat.completions.create(messages=[{'role': 'system', 'content': f'Now: {datetime.now()}'}])"
    head = "import abc\nfrom datetime import datetime\n"
    write_package(
        package,
        loop=head + "class Loop:\n"
        "    def run(self, client):\n"
        "        return self._step(client)\n\n"
        "    def _step(self, client):\n"
        f"        return {stamp}\n\n"
        "    def _compact_context(self, client):\n"
        '        """Unlike _compact_context of old, self._compact_context is not called."""\n'
        f"        return {stamp}\n\n"
        "    def _named(self, client):\n"
        f"        return {stamp}\n\n"
        "    def call(self, client):\n"
        "        return getattr(self, '_named')(client)\n\n"
        "def _unused(client):\n"
        f"    return {stamp}\n\n"
        "def public(client):\n"
        f"    return {stamp}\n",
        dispatch=head + "class Handlers:\n"
        "    def handle(self, kind, client):\n"
        "        return getattr(self, f'_on_{kind}')(client)\n\n"
        "    def _on_start(self, client):\n"
        f"        return {stamp}\n",
        llms=head + "from pydantic import BaseModel\n\n"
        "class Base(BaseModel, abc.ABC):\n"
        "    def ask(self, client):\n"
        "        return client\n\n"
        "class Qwen(Base):\n"
        "    def ask(self, client):\n"
        "        return self._default_sys(client)\n\n"
        "    def _default_sys(self, client):\n"
        f"        return {stamp}\n",
        vision=head + "from .llms import Base, Qwen\n\n"
        "class QwenVision(Base, abc.ABC):\n"
        "    def _default_sys(self, client):\n"
        f"        return {stamp}\n\n"
        "class Tuned(Qwen):\n"
        "    def _default_sys(self, client):\n"
        f"        return {stamp}\n",
        agent=head + "class Agent:\n"
        "    def _prompt(self, client):\n"
        "        return None\n\n"
        "    def run(self, client):\n"
        "        return self._prompt(client)\n\n"
        "class StampMixin:\n"
        "    def _prompt(self, client):\n"
        f"        return {stamp}\n\n"
        "class StampedAgent(StampMixin, Agent):\n"
        "    pass\n\n"
        "class Mine(\n"
        "    Agent,  # (overrides _prompt)\n"
        "):\n"
        "    def _prompt(self, client):\n"
        f"        return {stamp}\n",
        tool=head + "import langchain_core.tools as lc\nfrom enum import Enum\n"
        "from langchain_core.tools import BaseTool as LibraryTool\n\n"
        "class Clock(LibraryTool):\n"
        "    def _run(self, client):\n"
        f"        return {stamp}\n\n"
        "class BaseTool(lc.BaseTool):\n"
        "    def _run(self, client):\n"
        f"        return {stamp}\n\n"
        "class Kind(Enum):\n"
        "    A = 'a'\n\n"
        "    @classmethod\n"
        "    def _missing_(cls, client):\n"
        f"        return {stamp}\n",
        cli=head + "def _main(client):\n"
        f"    return {stamp}\n",
    )
    tests = package / "tests"
    tests.mkdir()
    (tests / "test_loop.py").write_text("from pkg.loop import Loop\n\ndef test(c):\n    Loop()._compact_context(c)\n")
    found = sorted((Path(f.path).name, f.line) for f in lint_paths([package]).findings)
    assert found == [
        ("agent.py", 12),
        ("agent.py", 21),
        ("cli.py", 4),
        ("dispatch.py", 8),
        ("llms.py", 14),
        ("loop.py", 8),
        ("loop.py", 15),
        ("loop.py", 24),
        ("tool.py", 9),
        ("tool.py", 13),
        ("tool.py", 20),
        ("vision.py", 11),
    ]  # not loop.py's _compact_context (12) and _unused (21), nor vision.py's QwenVision (7)


def test_a_constant_nothing_in_the_project_reads_sends_nothing(tmp_path: Path) -> None:
    """computer-use-ootb's shape: a planner module binds a dated ``SYSTEM_PROMPT`` that nothing reads (another
    module's bare ``SYSTEM_PROMPT`` is its own constant). Kept: a constant its module reads, one another module
    imports or reads as an attribute, one in ``__all__``, one read by a name built with a suffix of it or through
    a star import under a name bound again, a request made while a constant is computed, and a name that is no
    constant."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'pkg'\n")
    dated = "from datetime import datetime\n\n{name} = f'Today is {{datetime.today()}}.'\n"
    write_package(
        tmp_path / "pkg",
        planner=dated.format(name="SYSTEM_PROMPT") + "\nclass Planner:\n    def ask(self, client):\n"
        "        return client.messages.create(system='Plan.', messages=[])\n",
        agent=dated.format(name="SYSTEM_PROMPT") + "\ndef ask(client):\n"
        "    return client.messages.create(system=SYSTEM_PROMPT, messages=[])\n",
        prompts=dated.format(name="DATED_SYSTEM_PROMPT"),
        main="from .prompts import DATED_SYSTEM_PROMPT as _dated\n",
        exported=dated.format(name="EXPORTED_SYSTEM_PROMPT") + "__all__ = ['EXPORTED_SYSTEM_PROMPT']\n",
        attr=dated.format(name="ATTR_SYSTEM_PROMPT"),
        reader="from . import attr\n\nATTR_SYSTEM_PROMPT = attr.ATTR_SYSTEM_PROMPT + ' Be brief.'\n",
        lower=dated.format(name="system_prompt"),
        roles=dated.format(name="PLANNER_SYSTEM_PROMPT"),
        router="from . import roles\n\ndef system_for(role):\n"
        "    return getattr(roles, f'{role.upper()}_SYSTEM_PROMPT')\n",
        langs=dated.format(name="EN_SYSTEM_PROMPT"),
        lang_router="from . import langs\n\ndef system_for(lang):\n"
        "    return getattr(langs, '%s_SYSTEM_PROMPT' % lang.upper())\n",
        base=dated.format(name="BASE_SYSTEM_PROMPT"),
        brief="from .base import *\n\nBASE_SYSTEM_PROMPT = BASE_SYSTEM_PROMPT + ' Be brief.'\n\n"
        "def ask(client):\n    return client.messages.create(system=BASE_SYSTEM_PROMPT, messages=[])\n",
        script="from datetime import datetime\nfrom openai import OpenAI\n\nclient = OpenAI()\n"
        "RESPONSE = client.chat.completions.create(\n"
        "    model='m', messages=[{'role': 'system', 'content': f'Today is {datetime.now()}'}]\n)\n",
    )
    found = sorted((Path(f.path).name, f.line) for f in lint_paths([tmp_path / "pkg"]).findings)
    assert found == [
        ("agent.py", 3),
        ("attr.py", 3),
        ("base.py", 3),
        ("exported.py", 3),
        ("langs.py", 3),
        ("lower.py", 3),
        ("prompts.py", 3),
        ("roles.py", 3),
        ("script.py", 6),
    ]


def test_a_clock_flag_in_a_dict_the_project_reads_itself_is_judged_where_it_reads_the_clock(tmp_path: Path) -> None:
    """astrbot's default settings hold ``"datetime_system_prompt": True``, which its own agent reads
    (``cfg.get(...)``) to put the time in the user's turn: the project implements the flag, so the flag is no
    finding (its clock read is judged where it is made). xpander-sdk's agno arguments hold
    ``"add_datetime_to_context": True`` that nothing in the project reads: made for a framework, reported; so are
    two dicts that set the same flag (neither reads it), a flag stored as an item in a module that names no sink,
    and one whose key is only handed on to the framework under its own name or listed."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'pkg'\n")
    write_package(
        tmp_path / "pkg",
        defaults="DEFAULTS = {'datetime_system_prompt': True, 'streaming': False}\n",
        agent="import datetime\nfrom .defaults import DEFAULTS\n\n"
        "def turn(client, text):\n"
        "    if DEFAULTS.get('datetime_system_prompt'):\n"
        "        text = f'{text} (sent {datetime.datetime.now()})'\n"
        "    return client.chat.completions.create(messages=[{'role': 'user', 'content': text}])\n",
        agno="def build_agent_args(agent):\n"
        "    return {'name': agent.name, 'add_datetime_to_context': True}\n",
        agents="RESEARCH = {'name': 'research', 'add_datetime_to_instructions': True}\n"
        "WRITER = {'name': 'writer', 'add_datetime_to_instructions': True}\n",
        team="def team_args(members):\n    args = {'members': members}\n"
        "    args['add_date_to_context'] = True\n    return args\n",
        handed="from agno import Agent\n\nDEFAULTS = {'add_datetime_to_instructions': True, 'markdown': True}\n"
        "FLAGS = ['add_datetime_to_instructions']\n\n"
        "def make(opts):\n"
        "    return Agent(add_datetime_to_instructions=opts.get('add_datetime_to_instructions', False))\n",
    )
    found = sorted((Path(f.path).name, f.line) for f in lint_paths([tmp_path / "pkg"]).findings)
    assert found == [("agents.py", 1), ("agents.py", 2), ("agno.py", 2), ("handed.py", 3), ("team.py", 3)]


def test_a_set_given_to_a_field_declared_as_a_set_is_judged_where_the_field_is_read(tmp_path: Path) -> None:
    """hindsight's MCP server gives ``tools=set(base_tools)`` to a config dataclass whose ``tools: set[str] | None``
    field its registration only tests for membership: the object keeps a set whatever order it was given in, so
    the order is the reader's to fix. A field declared as a set is read as one, in this module or another: iterated
    into a tool list, reported there. A field declared as a list keeps the order it is given. Still reported at the
    call: a field with a default of its own (not an empty set), a ``TypedDict``'s, a class with its own
    ``__init__`` given a list in a set's order. Not a set field declared again as a list by a subclass, or sorted
    by ``__init__``."""
    head = "from dataclasses import dataclass, field\n\nREGISTRY = {'search': {'name': 'search'}}\n\n"
    write_package(
        tmp_path / "pkg",
        config=head + "@dataclass\nclass ToolsConfig:\n"
        "    tools: set[str] | None = field(default=None)\n"
        "    functions: list[str] = field(default_factory=list)\n\n"
        "def offered_here(client, config: ToolsConfig):\n"
        "    return client.chat.completions.create(tools=[REGISTRY[n] for n in config.tools])\n",
        server="from .config import REGISTRY, ToolsConfig\n\n"
        "def register(server, config: ToolsConfig):\n"
        "    wanted = config.tools or {'search'}\n"
        "    if 'search' in wanted:\n"
        "        server.add(REGISTRY['search'])\n\n"
        "def start(base):\n"
        "    return ToolsConfig(tools=set(base)), ToolsConfig(functions=list(set(base)))\n\n"
        "def offered(client, config: ToolsConfig):\n"
        "    return client.chat.completions.create(tools=[REGISTRY[n] for n in config.tools])\n",
        others="from dataclasses import dataclass, field\nfrom typing import TypedDict\n"
        "from .config import REGISTRY\n\n"
        "@dataclass\nclass Defaulted:\n    tools: set[str] = field(default_factory=lambda: {'search'})\n\n"
        "class Options(TypedDict, total=False):\n    tools: set[str]\n\n"
        "class Agent:\n    tools: set[str] | None = None\n\n"
        "    def __init__(self, tools=None):\n        self.schemas = [REGISTRY[n] for n in tools or ()]\n\n"
        "@dataclass\nclass Base:\n    tools: set[str] | None = None\n\n"
        "@dataclass\nclass Ordered(Base):\n    tools: list[str] | None = None\n\n"
        "class Sorted:\n    names: set[str] | None = None\n\n"
        "    def __init__(self, names=None):\n        self.names = sorted(names or ())\n\n"
        "    def offered(self, client):\n"
        "        return client.chat.completions.create(tools=[REGISTRY[n] for n in self.names])\n\n"
        "def made(names):\n"
        "    return Defaulted(tools=set(names)), Options(tools=set(names)), Agent(tools=list(set(names)))\n\n"
        "def ordered(client):\n"
        "    config = Ordered(tools=['search'])\n"
        "    return client.chat.completions.create(tools=[REGISTRY[n] for n in config.tools])\n",
        elsewhere="from .config import REGISTRY, ToolsConfig\n\n"
        "class Sorted(ToolsConfig):\n    def __init__(self, tools):\n        self.tools = sorted(tools)\n\n"
        "    def send(self, client):\n"
        "        return client.chat.completions.create(tools=[REGISTRY[n] for n in self.tools])\n\n"
        "def unannotated(client, names):\n"
        "    cfg = ToolsConfig(tools=set(names))\n"
        "    return client.chat.completions.create(tools=[REGISTRY[n] for n in cfg.tools])\n",
    )
    found = sorted((Path(f.path).name, f.line, f.code) for f in lint_paths([tmp_path / "pkg"]).findings)
    assert found == [
        ("config.py", 11, "AC103"),
        ("elsewhere.py", 12, "AC103"),
        ("others.py", 36, "AC103"),
        ("others.py", 36, "AC103"),
        ("others.py", 36, "AC103"),
        ("server.py", 9, "AC103"),
        ("server.py", 12, "AC103"),
    ]


def test_a_record_loaded_from_another_module_keeps_its_own_creation_time(tmp_path: Path) -> None:
    """abreka's shape: an experiment loaded from disk by a function of another module annotated to return it, its
    ``created_at`` the stored one (its class stamps only the new ones it makes); the object's other fields whose
    defaults differ stay sources, and so does its class's stamp read in its own method."""
    write_package(
        tmp_path / "pkg",
        models="from dataclasses import dataclass, field\nfrom datetime import datetime, timezone\nimport uuid\n\n"
        "@dataclass\n"
        "class Experiment:\n"
        "    id: str\n"
        "    created_at: datetime = field(default_factory=lambda: datetime.now(timezone.utc))\n"
        "    nonce: str = field(default_factory=lambda: uuid.uuid4().hex)\n\n"
        "    def brief(self):\n"
        "        return f'Experiment made {self.created_at}'\n\n"
        "    @classmethod\n"
        "    def from_dict(cls, d: dict) -> 'Experiment':\n"
        "        return cls(id=d['id'], created_at=datetime.fromisoformat(d['created_at']))\n",
        chat="from .models import Experiment\n\n"
        "def chat(client, exp: Experiment):\n"
        "    client.chat.completions.create(messages=[{'role': 'system', 'content': f'Made {exp.created_at}.'}])\n"
        "    client.chat.completions.create(messages=[{'role': 'system', 'content': f'Nonce {exp.nonce}.'}])\n"
        "    return client.chat.completions.create(messages=[{'role': 'system', 'content': exp.brief()}])\n",
    )
    found = sorted((Path(f.path).name, f.line, f.code) for f in lint_paths([tmp_path / "pkg"]).findings)
    assert found == [("chat.py", 5, "AC101"), ("chat.py", 6, "AC101")]


_STAMP = "client.chat.completions.create(messages=[{'role': 'system', 'content': f'Now: {datetime.now()}'}])"
_REACHED = {
    "by_a_nested_class_that_shares_a_name": {
        "tool": "from datetime import datetime\n\n"
        f"class Tool:\n    def _build(self, client):\n        return {_STAMP}\n\n"
        "def make():\n    class Wrapper(Tool):\n        def run(self, c):\n            return self._build(c)\n\n"
        "def make2():\n    class Wrapper(Tool):\n        def other(self):\n            return 1\n",
    },
    "through_a_name_with_a_letter_outside_ascii": {
        "util": f"from datetime import datetime\n\ndef _prüfe(client):\n    return {_STAMP}\n",
        "main": "from . import util\n\ndef go(client):\n    return util._prüfe(client)\n",
    },
    "by_a_name_built_with_percent_format_or_a_prefix_constant": {
        "loop": "from datetime import datetime\n\nPREFIX = '_on_'\n\nclass Loop:\n"
        f"    def _on_tick(self, client):\n        return {_STAMP}\n\n"
        "    def handle(self, kind, client):\n"
        "        return getattr(self, '_on_%s' % kind)(client), getattr(self, '_on_{}'.format(kind))(client)\n",
    },
    "by_a_base_that_a_name_is_bound_to": {
        "runner": "class Runner:\n    def _prompt(self, client):\n        return None\n\n"
        "    def run(self, client):\n        return self._prompt(client)\n",
        "mixin": "from datetime import datetime\n\n"
        f"class StampMixin:\n    def _prompt(self, client):\n        return {_STAMP}\n",
        "agent": "from . import runner\nfrom .mixin import StampMixin\n\nBaseRunner = runner.Runner\n\n"
        "class Agent(StampMixin, BaseRunner):\n    pass\n",
    },
}


@pytest.mark.parametrize("case", sorted(_REACHED))
def test_a_private_function_reached_in_other_ways_keeps_its_findings(tmp_path: Path, case: str) -> None:
    """What the first reviews found dropped: each of these private functions is reached, so its sink is reported."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'pkg'\n")
    write_package(tmp_path / "pkg", **_REACHED[case])
    assert [finding.code for finding in lint_paths([tmp_path / "pkg"]).findings] == ["AC101"]


def test_an_unreached_private_function_is_judged_the_same_from_any_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The project around a module is found from its absolute path: linting from inside the package, where the
    path given has no parent holding ``pyproject.toml``, drops the same findings."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'pkg'\n")
    unused = f"from datetime import datetime\n\ndef _unused(client):\n    return {_STAMP}\n"
    write_package(tmp_path / "pkg", util=unused)
    monkeypatch.chdir(tmp_path / "pkg")
    assert lint_paths(["util.py"]).findings == ()
    (tmp_path / "pkg" / "cli.py").write_text("from .util import _unused\n")
    assert [finding.line for finding in lint_paths(["util.py"]).findings] == [4]


def test_an_id_a_caller_hands_to_another_modules_prompt_builder_is_reported(tmp_path: Path) -> None:
    """agentouto's shape: the id is made by the method that calls the agent loop, which gives it to another
    module's prompt builder that prints it. What a function gives a parameter another module sends was reported
    only when the function made it itself; a caller that handed it in made it too, but for an order: fast-agent
    hands a dict of agents, in the order of a set, to a function that sends each agent's prompt on its own."""
    write_package(
        tmp_path / "pkg",
        router="from openai import OpenAI\n\nclient = OpenAI()\n\nclass Router:\n"
        "    def build_system_prompt(self, agent, caller_loop_id=None):\n"
        "        text = agent.instructions\n"
        "        if caller_loop_id:\n"
        "            text += f'Your caller is {caller_loop_id}.'\n"
        "        return text\n\n"
        "    def send(self, prompt, question):\n"
        "        system = {'role': 'system', 'content': prompt}\n"
        "        return client.chat.completions.create(model='m', messages=[system, question])\n\n"
        "def greet_each(agents, question):\n"
        "    for agent in agents:\n"
        "        system = {'role': 'system', 'content': f'You are {agent}.'}\n"
        "        client.chat.completions.create(model='m', messages=[system, question])\n",
        runtime="import uuid\n\nfrom .router import Router, greet_each\n\nclass Runtime:\n"
        "    def __init__(self):\n"
        "        self._router = Router()\n\n"
        "    async def execute(self, agent, message):\n"
        "        loop_id = f'user_{uuid.uuid4().hex}'\n"
        "        return await self._run_agent_loop(agent, message, caller_loop_id=loop_id)\n\n"
        "    async def _run_agent_loop(self, agent, message, caller_loop_id=None):\n"
        "        prompt = self._router.build_system_prompt(agent, caller_loop_id=caller_loop_id)\n"
        "        return self._router.send(prompt, message)\n\n"
        "    def refresh(self, agents, names):\n"
        "        self._greet({name: agents[name] for name in set(names)})\n\n"
        "    def _greet(self, updated):\n"
        "        greet_each(updated.values(), 'hello')\n",
    )
    found = [(Path(f.path).name, f.line, f.code) for f in lint_paths([tmp_path / "pkg"]).findings]
    assert found == [("runtime.py", 14, "AC101")]


def test_a_package_in_a_folder_named_as_an_sdist_is_linted_from_any_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """klauso's sdist ships its package's ``__init__.py`` in ``klauso-0.1.1/``: the dots in the folder's name were
    counted as package levels, and lint raised IndexError finding the import root of a path given relatively. Its
    relative imports are followed the same given relatively, absolutely, from inside it and from a subpackage."""
    clock = "from datetime import datetime\n\ndef today():\n    return datetime.now().strftime('%Y-%m-%d')\n"
    run = (
        "from .clock import today\n\ndef ask(client):\n"
        "    return client.chat.completions.create(\n"
        "        model='m', messages=[{'role': 'system', 'content': f'Today is {today()}'}]\n    )\n"
    )
    write_package(tmp_path / "pkg-1.0.0", clock=clock, run=run)
    write_package(tmp_path / "pkg-1.0.0" / "agent", clock=clock, run=run)
    monkeypatch.chdir(tmp_path)
    found = [(Path(f.path).name, f.line, f.code) for f in lint_paths(["pkg-1.0.0"]).findings]
    assert found == [("run.py", 5, "AC101")] * 2
    assert [(Path(f.path).name, f.line, f.code) for f in lint_paths([tmp_path / "pkg-1.0.0"]).findings] == found
    monkeypatch.chdir(tmp_path / "pkg-1.0.0")
    assert [(Path(f.path).name, f.line, f.code) for f in lint_paths(["."]).findings] == found


def test_a_src_layout_is_linted_the_same_from_its_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A namespace package of a src layout (``src/app/`` without ``__init__.py``) imports its helper by folders;
    given as ``.`` or ``src`` from the project's root, the helper is found as it is from an absolute path."""
    app = tmp_path / "src" / "app"
    app.mkdir(parents=True)
    (app / "utils.py").write_text(
        "from datetime import datetime\n\ndef today():\n    return datetime.now().isoformat()\n"
    )
    (app / "graph.py").write_text(
        "from openai import OpenAI\n\nfrom app.utils import today\n\nclient = OpenAI()\n\ndef ask(question):\n"
        "    system = {'role': 'system', 'content': f'Now: {today()}'}\n"
        "    return client.chat.completions.create(model='m', messages=[system, question])\n"
    )
    monkeypatch.chdir(tmp_path)
    for given in (".", "src", tmp_path):
        assert [(Path(f.path).name, f.line) for f in lint_paths([given]).findings] == [("graph.py", 8)], given


def test_a_list_of_prompt_parts_a_helper_of_another_module_returns_is_followed(tmp_path: Path) -> None:
    """ag2-assistant's shape: a helper of another module returns a prompt's parts as a list of texts, one of them
    the clock whatever it is given (by its annotation, or by the list it returns); the caller spreads them into the
    guidance it gives an agent. A list of records that hold a time is no prompt's parts, nor is a list of texts of a
    function whose name does not say prompt (the system and user texts of ``build_messages``, unpacked)."""
    write_package(
        tmp_path / "pkg",
        agent="from datetime import datetime\n\n"
        "def environment(config) -> str:\n"
        "    return f'Current date and time: {datetime.now():%H:%M} in {config.city}'\n\n"
        "def turn_prompt(config, surface='') -> list[str]:\n"
        "    parts = [config.persona, 'Be brief.']\n"
        "    if surface:\n"
        "        parts.append(surface)\n"
        "    parts.append(environment(config))\n"
        "    return parts\n\n"
        "def voice_prompt(persona, rules):\n"
        "    return [persona, *rules, f'Call started {datetime.now():%H:%M}']\n\n"
        "def events(config):\n"
        "    return [{'persona': config.persona, 'at': datetime.now().isoformat()}]\n\n"
        "def build_messages(question) -> list[str]:\n"
        "    return ['You answer.', f'{question} (asked at {datetime.now():%H:%M})']\n",
        gateway="from autogen.beta import Plugin\n"
        "from .agent import build_messages, events, turn_prompt, voice_prompt\n\n"
        "def prepare(config, surface):\n"
        "    guidance = [config.system_prompt, *turn_prompt(config, surface)]\n"
        "    return Plugin(prompt=guidance)\n\n"
        "def voice(config):\n"
        "    return Plugin(prompt=voice_prompt(config.persona, config.rules))\n\n"
        "def logged(config):\n"
        "    return Plugin(prompt=[config.system_prompt, *[str(e) for e in events(config)]])\n\n"
        "def asked(question):\n"
        "    system, user = build_messages(question)\n"
        "    return Plugin(prompt=system), user\n",
    )
    found = sorted((Path(f.path).name, f.line, f.code) for f in lint_paths([tmp_path]).findings)
    assert found == [("gateway.py", 6, "AC101"), ("gateway.py", 9, "AC101")]


def test_an_alternate_constructor_of_another_module_is_followed(tmp_path: Path) -> None:
    """amcp's shape: a class method makes its object with ``cls(date=...)`` from the clock (bound to an annotated
    name), and a module that makes the prompt's context with it renders the system prompt from it; the same in the
    class's module, and on a subclass that inherits it, whose own name says prompt. A class whose
    name says it holds a prompt's values prints its ``date=``; a ``timestamp=`` is its own bookkeeping, and so is
    the date of a class whose name does not say prompt. What the caller gives an alternate constructor does not
    pass whole into its object (a budget given the prompt's variables, the date among them, renders the system
    prompt from the template that prints none)."""
    write_package(
        tmp_path / "pkg",
        context="from dataclasses import dataclass\n"
        "from datetime import datetime\n"
        "from jinja2 import Template\n"
        "from openai import OpenAI\n\n"
        "@dataclass\n"
        "class PromptContext:\n"
        "    cwd: str = ''\n"
        "    date: str = ''\n\n"
        "    @classmethod\n"
        "    def from_environment(cls, cwd: str = '.') -> 'PromptContext':\n"
        "        context: PromptContext = cls(cwd=cwd, date=datetime.now().strftime('%Y-%m-%d'))\n"
        "        return context\n\n"
        "    @classmethod\n"
        "    def stamped(cls, cwd: str) -> 'PromptContext':\n"
        "        return cls(cwd=cwd, timestamp=datetime.now().isoformat())\n\n"
        "@dataclass\n"
        "class Event:\n"
        "    name: str = ''\n"
        "    date: str = ''\n\n"
        "    @classmethod\n"
        "    def now(cls, name: str) -> 'Event':\n"
        "        return cls(name=name, date=datetime.now().isoformat())\n\n"
        "@dataclass\n"
        "class ContextBase:\n"
        "    cwd: str = ''\n"
        "    date: str = ''\n\n"
        "    @classmethod\n"
        "    def here(cls, cwd: str):\n"
        "        return cls(cwd=cwd, date=datetime.now().strftime('%Y-%m-%d'))\n\n"
        "class ShellPrompt(ContextBase):\n"
        "    shell: str = 'bash'\n\n"
        "def shell(question):\n"
        "    system = render(ShellPrompt.here('/srv'))\n"
        "    return OpenAI().chat.completions.create(\n"
        "        model='m', messages=[{'role': 'system', 'content': system}, {'role': 'user', 'content': question}]\n"
        "    )\n\n"
        "class Budget:\n"
        "    def __init__(self, variables, system_template):\n"
        "        self.system_prompt = Template(system_template).render(**variables)\n\n"
        "    @classmethod\n"
        "    def for_prompt(cls, variables, system_template):\n"
        "        return cls(variables=variables, system_template=system_template)\n\n"
        "def render(context) -> str:\n"
        "    return f'Date: {context.date} in {context.cwd}'\n\n"
        "def ask(question):\n"
        "    system = render(PromptContext.from_environment('/srv'))\n"
        "    return OpenAI().chat.completions.create(\n"
        "        model='m', messages=[{'role': 'system', 'content': system}, {'role': 'user', 'content': question}]\n"
        "    )\n",
        spec="from datetime import date\n"
        "from openai import OpenAI\n"
        "from .context import Budget, Event, PromptContext, render\n\n"
        "def send(system, question):\n"
        "    return OpenAI().chat.completions.create(\n"
        "        model='m', messages=[{'role': 'system', 'content': system}, {'role': 'user', 'content': question}]\n"
        "    )\n\n"
        "def ask(question, cwd):\n"
        "    return send(render(PromptContext.from_environment(cwd=cwd)), question)\n\n"
        "def noted(question):\n"
        "    return send(render(Event.now('start')), question)\n\n"
        "def stamped(question, cwd):\n"
        "    return send(render(PromptContext.stamped(cwd)), question)\n\n"
        "def budgeted(question):\n"
        "    budget = Budget.for_prompt({'date': date.today(), 'role': 'coder'}, 'You are a {role}.')\n"
        "    return send(budget.system_prompt, question)\n",
    )
    findings = sorted(lint_paths([tmp_path]).findings, key=lambda finding: finding.path)
    found = [(Path(f.path).name, f.line, f.code) for f in findings]
    assert found == [("context.py", 44, "AC101"), ("context.py", 61, "AC101"), ("spec.py", 7, "AC101")]
    assert "(line 11)" in findings[2].message  # the system prompt send() is given: not by noted, stamped, budgeted
    assert not any(f"(line {line})" in findings[2].message for line in (14, 17, 20))


def test_a_module_that_compacts_the_conversation_makes_no_system_prompt(tmp_path: Path) -> None:
    """clawsoul's and nucleusiq's shape: a module named for compaction inserts a dated summary (or an id it keeps) as
    a system message once into the history, resent as stored; the agent's own dated system prompt is reported."""
    write_package(
        tmp_path / "pkg",
        compaction="import uuid\nfrom datetime import datetime\n\n"
        "def summarize(messages, llm):\n"
        "    summary = llm(messages)\n"
        "    note = {'role': 'system', 'content': f'[Summary {datetime.now():%Y-%m-%d}] {summary} ({uuid.uuid4()})'}\n"
        "    return [messages[0], note]\n",
        agent="from datetime import datetime\n\n"
        "def build(messages):\n"
        "    return [{'role': 'system', 'content': f'Today is {datetime.now():%Y-%m-%d}.'}, *messages]\n",
    )
    found = [(Path(f.path).name, f.line, f.code) for f in lint_paths([tmp_path]).findings]
    assert found == [("agent.py", 4, "AC101")]
