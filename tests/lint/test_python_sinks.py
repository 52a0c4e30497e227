"""Where prompts and tools are sent: message classes given their role by position or by name, sinks written inside
``yield``, the instruction keywords and setters of agent frameworks, a structured-output schema, the keyword
arguments a dict holds (returned, bound, spread as ``**kwargs``), and the values that do not reach a sink (a location
read from, another role's message, a variable named like tools that never leaves its function).

Fixtures as in tests/lint/marked.py: ``# expect: CODE`` marks each finding's line; a fixture without marks must
produce nothing.
"""

from __future__ import annotations

from tests.lint.marked import fixture_tests

REGISTERED = """
    from mcp.server.fastmcp import FastMCP
    from tools import REGISTRY

    def serve(names):
        server = FastMCP("tools")
        for name in {order}:
            server.add_tool(REGISTRY[name], name=name){expect}
        return server
"""

POSITIVE = {
    "a_tool_definition_with_an_id_appended_to_tools": """
        from datetime import date

        class Client:
            def __init__(self):
                self.available_tools = []

            def register(self, server, tool):
                self.available_tools.append(  # expect: AC102
                    {
                        "type": "function",
                        "id": f"{server}:{tool.name}",
                        "function": {"name": tool.name, "description": f"{tool.description} ({date.today()})"},
                    }
                )
    """,
    "a_system_prompt_init_binds_only_as_a_default_run_rebuilds": """
        from datetime import date

        class Planner:
            def __init__(self, llm, instruction):
                self.llm = llm
                self.instruction = instruction
                self.system_prompt = f"{instruction} Today is {date.today()}."

            def run(self, question):
                self.system_prompt = f"{self.instruction} Use its language. Today is {date.today()}."  # expect: AC101
                system = {"role": "system", "content": self.system_prompt}
                return self.llm.chat([system, {"role": "user", "content": question}])

        class Writer:
            def __init__(self, llm, instruction):
                self.llm = llm
                self.system_prompt = f"{instruction} Today is {date.today()}."  # expect: AC101

            def run(self, question):
                system = {"role": "system", "content": self.system_prompt}
                answer = self.llm.chat([system, {"role": "user", "content": question}])
                self.system_prompt = "Revise."
                return answer

        class Lazy:
            def __init__(self, llm, dynamic):
                self.llm, self.dynamic = llm, dynamic
                self.system_prompt = f"You plan. Today is {date.today()}."  # expect: AC101

            def run(self, question):
                if self.dynamic:
                    self.system_prompt = "You plan."
                return self.llm.invoke(self.system_prompt + question)
    """,
    "a_tool_class_declared_by_its_class_attributes": """
        from datetime import date, datetime

        from langchain_core.tools import BaseTool
        from smolagents import Tool

        UNITS = {"daily", "minute"}

        class StockTool(Tool):
            name = "stock_prices"
            description = f"Prices of a stock. Today is {date.today()}."  # expect: AC102
            inputs = {  # expect: AC102 AC103
                "start": {"type": "string", "description": f"First day, before {datetime.now():%Y-%m-%d}"},
                "unit": {"type": "string", "enum": list(UNITS)},
            }
            output_type = "string"
            loaded_at = datetime.now()

        class UnitTool(BaseTool[dict]):
            description: str = f"Units: {', '.join(UNITS)}."  # expect: AC103

        class Report:
            description = f"Report of {date.today()}"
    """,
    "a_records_item_read_from_a_table_of_records": """
        import uuid
        from datetime import datetime

        from openai import OpenAI

        sessions = {}

        def create(agent):
            session_id = str(uuid.uuid4())
            record = {"id": session_id, "agent": agent, "prompt": f"Started {datetime.now()}"}
            sessions[session_id] = record
            return session_id

        def chat(session_id, question):
            session = sessions.get(session_id)
            agent = session["agent"]
            return OpenAI().chat.completions.create(
                model="m",
                tools=agent.tools,
                messages=[{"role": "system", "content": sessions[session_id]["prompt"]}],  # expect: AC101
            )
    """,
    "a_tuples_volatile_item_read_by_its_index": """
        import time

        def decide(tools, start):
            return None, [*tools, {"name": f"wait_{time.time()}"}]

        def route(tools, start):
            result = decide(tools, start)
            r_tools = result[1]  # expect: AC102
            return r_tools
    """,
    "tools_registered_in_a_sets_order": REGISTERED.format(order="set(names)", expect="  # expect: AC103"),
    "role_first_message_built_by_a_prompt_function": """
        from datetime import date
        from chatkit import Message, Role

        def prompt_today():
            yield Message("system", f"Today is {date.today():%A %d %B}.")  # expect: AC101

        def build_prompt(skills):
            names = ", ".join({skill.name for skill in skills})
            return [Message(Role.SYSTEM, "Skills: " + names)]  # expect: AC103
    """,
    "content_first_with_a_role_keyword_and_factory_methods": """
        import time
        import uuid
        from griptape_like import Message
        from haystack.dataclasses import ChatMessage

        def messages(query):
            session = uuid.uuid4().hex
            return [
                Message(f"You serve session {session}.", role=Message.SYSTEM_ROLE),  # expect: AC101
                Message(query, role=Message.USER_ROLE),
            ]

        def opening():
            return [ChatMessage.from_system(f"Started at {time.ctime()}")]  # expect: AC101
    """,
    "sinks_inside_yield_and_yield_from": """
        import time
        import uuid
        from langchain_core.messages import SystemMessage

        def opening():
            yield Message(role="system", content=f"Started {time.ctime()}")  # expect: AC101

        def traced():
            yield from [{"role": "system", "content": f"Trace {uuid.uuid4()}"}]  # expect: AC101

        def conversation():
            reply = yield SystemMessage(content=f"Clock {time.time()}")  # expect: AC101
            return reply
    """,
    "a_generator_yields_in_a_sets_order": """
        def tool_specs(registry):
            for name in set(registry):
                yield {"type": "function", "function": {"name": name}}

        def request(client, registry):
            return client.create(tools=list(tool_specs(registry)))  # expect: AC103
    """,
    "instruction_keywords_and_setters": """
        from datetime import datetime
        from google.genai import types
        from mcp_like import Agent

        writer = Agent(name="writer", instruction=f"Report date: {datetime.now():%Y-%m-%d}. Be brief.")  # expect: AC101
        config = types.GenerateContentConfig(system_instruction=f"Now {datetime.now()}")  # expect: AC101

        def refresh(agent, signature, request):
            agent.set_instruction(f"As of {datetime.now()}")  # expect: AC101
            signature = signature.with_instructions(f"Started {datetime.now()}")  # expect: AC101
            request.append_instructions([f"Clock: {datetime.now()}"])  # expect: AC101
            agent.memory.add_system_message(f"Woke at {datetime.now()}")  # expect: AC101
    """,
    "a_tool_parameter_annotation_is_its_schema": """
        from typing import Annotated
        from pydantic import Field
        from livekit.agents import function_tool

        class TaskGroup:
            def __init__(self):
                self._visited = set[str]()

            def out_of_scope_tool(self, active):
                task_ids = self._visited.copy()
                task_ids.discard(active)

                @function_tool(description="Go back to tasks already visited")
                async def out_of_scope(
                    ids: Annotated[list[str], Field(json_schema_extra={"enum": list(task_ids)})],  # expect: AC103
                ) -> None:
                    pass

                return out_of_scope
    """,
    "an_agents_instruction_from_a_request_not_a_reply": """
        import uuid
        import litellm

        async def step(messages):
            call_id = uuid.uuid4().hex
            response = await litellm.acompletion(messages=[*messages, {"call_id": call_id}])
            Agent(name="clicker", instruction=f"Click {response.choices[0]} for {call_id}")  # expect: AC101
    """,
    "a_setter_given_its_prompt_by_keyword": """
        from datetime import datetime

        def refresh(chat_ctx):
            update_instructions(chat_ctx, instructions=f"As of {datetime.now()}")  # expect: AC101
    """,
    "a_setter_given_the_prompt_alone_or_beside_a_session_id": """
        from datetime import datetime
        from uuid import uuid4

        def refresh(agent, session, sessions, sid, prompt):
            agent.update_system_prompt(f"Now {datetime.now()}")  # expect: AC101
            session.set_system_prompt(f"Run {uuid4()}")  # expect: AC101
            sessions.update_system_prompt(sid, f"Now {datetime.now()}")  # expect: AC101
    """,
    "a_request_measured_and_sent": """
        from datetime import datetime
        from uuid import uuid4

        def turn(agent, llm, history):
            estimate_request_tokens(history, system_prompt=f"{datetime.now()}")
            agent.run(history, system_prompt=f"{datetime.now()}")  # expect: AC101
            llm.invoke(history, tools=[{"name": str(uuid4())}])  # expect: AC102
    """,
    "a_request_body_and_a_payload_spread_into_a_call": """
        from datetime import datetime
        from uuid import uuid4

        def send(client, url, m, ms):
            body = {"model": m, "messages": ms, "tools": [{"name": "t", "description": f"{uuid4()}"}]}  # expect: AC102
            client.post(url, json=body)

        def ask(msgs):
            payload = {"model": "m", "messages": msgs}
            payload["system_prompt"] = f"{datetime.now()}"  # expect: AC101
            return completion(**payload)
    """,
    "a_helpers_set_ordered_list_made_into_tools": """
        PLUGINS = {"a", "b"}

        def names():
            return list(PLUGINS)

        def bind(llm, registry):
            tools = [registry[n] for n in names()]  # expect: AC103
            return llm.bind_tools(tools)
    """,
    "a_prompt_function_registered_by_a_decorator": """
        from datetime import date, datetime
        from uuid import uuid4
        from pydantic_ai import Agent

        agent = Agent("openai:gpt-4o")


        @agent.instructions
        async def instructions() -> str:
            return f'''Today's date = {date.today()}.  # expect: AC105
        Rule 0: answer with care, cite the table schema and check each column name.
        Rule 1: answer with care, cite the table schema and check each column name.
        Rule 2: answer with care, cite the table schema and check each column name.
        Rule 3: answer with care, cite the table schema and check each column name.
        Rule 4: answer with care, cite the table schema and check each column name.
        Rule 5: answer with care, cite the table schema and check each column name.
        Rule 6: answer with care, cite the table schema and check each column name.
        Rule 7: answer with care, cite the table schema and check each column name.
        Rule 8: answer with care, cite the table schema and check each column name.
        Rule 9: answer with care, cite the table schema and check each column name.
        Rule 10: answer with care, cite the table schema and check each column name.
        Rule 11: answer with care, cite the table schema and check each column name.
        Rule 12: answer with care, cite the table schema and check each column name.
        Rule 13: answer with care, cite the table schema and check each column name.
        Rule 14: answer with care, cite the table schema and check each column name.
        Rule 15: answer with care, cite the table schema and check each column name.
        Rule 16: answer with care, cite the table schema and check each column name.
        Rule 17: answer with care, cite the table schema and check each column name.
        Rule 18: answer with care, cite the table schema and check each column name.
        Rule 19: answer with care, cite the table schema and check each column name.
        Rule 20: answer with care, cite the table schema and check each column name.
        Rule 21: answer with care, cite the table schema and check each column name.
        Rule 22: answer with care, cite the table schema and check each column name.
        Rule 23: answer with care, cite the table schema and check each column name.
        Rule 24: answer with care, cite the table schema and check each column name.
        Rule 25: answer with care, cite the table schema and check each column name.
        Rule 26: answer with care, cite the table schema and check each column name.
        Rule 27: answer with care, cite the table schema and check each column name.
        Rule 28: answer with care, cite the table schema and check each column name.
        Rule 29: answer with care, cite the table schema and check each column name.
        Rule 30: answer with care, cite the table schema and check each column name.
        Rule 31: answer with care, cite the table schema and check each column name.
        Rule 32: answer with care, cite the table schema and check each column name.
        Rule 33: answer with care, cite the table schema and check each column name.
        Rule 34: answer with care, cite the table schema and check each column name.
        Rule 35: answer with care, cite the table schema and check each column name.
        Rule 36: answer with care, cite the table schema and check each column name.
        Rule 37: answer with care, cite the table schema and check each column name.
        Rule 38: answer with care, cite the table schema and check each column name.
        Rule 39: answer with care, cite the table schema and check each column name.
        Rule 40: answer with care, cite the table schema and check each column name.
        Rule 41: answer with care, cite the table schema and check each column name.
        Rule 42: answer with care, cite the table schema and check each column name.
        Rule 43: answer with care, cite the table schema and check each column name.
        Rule 44: answer with care, cite the table schema and check each column name.
        Rule 45: answer with care, cite the table schema and check each column name.
        Rule 46: answer with care, cite the table schema and check each column name.
        Rule 47: answer with care, cite the table schema and check each column name.
        Rule 48: answer with care, cite the table schema and check each column name.
        Rule 49: answer with care, cite the table schema and check each column name.
        Rule 50: answer with care, cite the table schema and check each column name.
        Rule 51: answer with care, cite the table schema and check each column name.
        Rule 52: answer with care, cite the table schema and check each column name.
        Rule 53: answer with care, cite the table schema and check each column name.
        Rule 54: answer with care, cite the table schema and check each column name.
        Rule 55: answer with care, cite the table schema and check each column name.
        Rule 56: answer with care, cite the table schema and check each column name.
        Rule 57: answer with care, cite the table schema and check each column name.
        Rule 58: answer with care, cite the table schema and check each column name.
        Rule 59: answer with care, cite the table schema and check each column name.
        '''


        @agent.system_prompt
        def identity():
            return f"Run {uuid4()}"  # expect: AC101


        @agent.system_prompt(dynamic=True)
        def stamp():
            return f"Now {datetime.now()}"  # expect: AC101
    """,
    "an_instance_field_a_helper_of_init_sets_from_the_clock": """
        import datetime
        from openai import OpenAI


        class EnvInfo:
            def __init__(self, config=None, data=None):
                self.config = config
                if data:
                    self.date = data["date"]
                else:
                    self._set_from_env()

            def _set_from_env(self):
                self.date = datetime.datetime.now().strftime("%d %B %Y")

            def render_prompt(self):
                return "Today is {date}. Answer briefly.".format(date=self.date)


        def ask(client, config):
            messages = [{"role": "system", "content": EnvInfo(config=config).render_prompt()}]  # expect: AC101
            client.chat.completions.create(model="m", messages=messages)
    """,
    "structured_output_schema_is_a_tool": """
        def extraction_schema(labels):
            kinds = list({label.kind for label in labels})
            return {"title": "Entity", "type": "object", "properties": {"kind": {"type": "string", "enum": kinds}}}

        def extractor(llm, labels):
            return llm.with_structured_output(extraction_schema(labels))  # expect: AC103
    """,
    "structured_output_of_a_model_built_at_run_time": """
        from pydantic import BaseModel, Field, create_model

        def graph_model(relations):
            kinds = list({relation.kind for relation in relations})
            Edge = create_model("Edge", **{"kind": (str, Field(description=f"One of {kinds}"))})

            class Graph(BaseModel):
                edges: list[Edge] = Field(description="The edges between the entities")

            return Graph

        def extractor(llm, relations):
            return llm.with_structured_output(graph_model(relations), include_raw=True)  # expect: AC103
    """,
    "a_location_printed_is_still_volatile": """
        import uuid
        from pathlib import Path

        def start(client):
            log_dir = Path("logs") / uuid.uuid4().hex
            client.create(system=f"Save your notes under {log_dir}.")  # expect: AC101
    """,
    "the_system_message_among_other_roles": """
        from datetime import date

        def build(seen, question):
            messages = [ChatMessage(content="; ".join(set(seen)), role="user")]
            messages.append(ChatMessage(content=f"Date {date.today()}", role="system"))  # expect: AC101
            system_message = messages.pop(0)
            return system_message
    """,
    "a_sink_first_reached_deep_in_a_chain_of_calls": """
        import time

        def handle(request):
            return route(request)

        def route(request):
            return respond(request)

        def respond(request):
            return [opening(), request]

        def opening():
            return {"role": "system", "content": f"Session opened at {started()}"}  # expect: AC101

        def started():
            return time.time()
    """,
    "a_cache_entry_holding_the_time_in_its_data": """
        import time

        _PROMPTS = {}

        def remember(user):
            _PROMPTS[user] = (f"You serve {user}, signed in at {time.ctime()}.", 0)

        def request(client, user):
            text, hits = _PROMPTS[user]
            return client.create(system=text)  # expect: AC101
    """,
    "an_output_schema_named_by_a_constructor_and_returned_as_keyword_arguments": """
        import uuid

        class _SchemaSpec:
            def __init__(self, schema, *, name=None):
                self.schema = schema
                if name:
                    self.name = name
                else:
                    self.name = str(schema.get("title", f"response_format_{str(uuid.uuid4())[:4]}"))

        class ProviderStrategy:
            def __init__(self, schema):
                self.schema_spec = _SchemaSpec(schema)

            def to_model_kwargs(self):
                json_schema = {"name": self.schema_spec.name, "schema": self.schema_spec.schema}
                response_format = {"type": "json_schema", "json_schema": json_schema}
                return {"response_format": response_format}  # expect: AC102
    """,
    "keyword_arguments_spread_into_a_call": """
        import random

        BASE = {"model": "gpt-4o", "temperature": 0}

        def request(client, tools, question):
            kwargs = BASE | {"tools": random.sample(tools, 3)}
            return client.create(messages=[{"role": "user", "content": question}], **kwargs)  # expect: AC102

        def extract(client, schema):
            options = {"model": "gpt-4o"}
            options["response_format"] = {"name": f"out_{random.getrandbits(16)}", "schema": schema}  # expect: AC102
            return client.create(**options)
    """,
    "a_variable_named_like_tools_that_leaves_its_function": """
        import random

        def pick_tools(catalog):
            chosen_tools = random.sample(catalog, 3)  # expect: AC102
            return chosen_tools
    """,
    "a_flag_that_asks_the_framework_for_the_clock": """
        from agentkit import Agent, Branch

        researcher = Agent(name="researcher", add_datetime_to_context=True)  # expect: AC101

        def orchestrator(model):
            return Branch(
                chat_model=model,
                system_datetime=True,  # expect: AC101
                name="orchestrator",
            )
    """,
    "a_choice_by_membership_of_an_item_picked_in_a_sets_order": """
        def answer(client, names):
            first = list(set(names))[0]
            system = "Be formal." if first in ("legal", "finance") else "Be casual."
            return client.messages.create(model="m", system=system, messages=[])  # expect: AC103
    """,
    "what_a_lookup_of_an_item_picked_in_a_sets_order_finds": """
        SPECIAL = {"legal": "Cite statutes."}

        def ask(client, tags):
            pick = next(iter(set(tags)))
            extra = "" if SPECIAL.get(pick) is None else " Special mode."
            return client.chat.completions.create(
                model="m", messages=[{"role": "system", "content": f"Base.{extra}"}]  # expect: AC103
            )
    """,
    "a_computed_field_and_a_field_an_init_sets_after_a_reset": """
        from datetime import datetime
        from typing import ClassVar
        from pydantic import BaseModel, computed_field

        class Prompt(BaseModel):
            text: str

            @computed_field
            def system(self) -> str:
                return self.text.strip()

        class Chat:
            def __init__(self, name):
                self.reset()
                self.system = f"You are {name}. Now: {datetime.now():%H:%M}"

            def reset(self):
                self.system = "You are helpful."

            def ask(self, client):
                return client.messages.create(system=self.system, messages=[])  # expect: AC101

        class Base:
            system: ClassVar[str] = f"Now: {datetime.now():%H:%M}"

        class Child(Base):
            system: ClassVar[str]

            def ask(self, client):
                return client.messages.create(system=self.system, messages=[])  # expect: AC101

        def ask(client):
            prompt = Prompt(text=f"Today {datetime.now()}")
            return client.messages.create(system=prompt.system, messages=[])  # expect: AC101
    """,
    "a_clock_flag_in_a_dict_of_an_agents_arguments": """
        def build_agent_args(agent):
            args = {"name": agent.name}
            args.update(
                {
                    "instructions": agent.instructions,
                    "add_datetime_to_context": True,  # expect: AC101
                }
            )
            return args

        def team_args(members):
            args = {"members": members}
            args["add_date_to_instructions"] = True  # expect: AC101
            return args
    """,
    "tools_chosen_from_a_policy_keep_its_order": """
        from agentkit import Agent

        REGISTRY = {"search": {"name": "search"}, "fetch": {"name": "fetch"}}

        def build(names):
            allowed_tools = set(names)
            return Agent(tools=[REGISTRY[name] for name in allowed_tools])  # expect: AC103
    """,
    "tools_a_script_binds_and_a_function_of_the_module_sends": """
        from agentkit import Agent

        def main():
            return Agent(tools=tools).run("hello")

        if __name__ == "__main__":
            tools = list(set(["search", "fetch"]))  # expect: AC103
            main()
    """,
    "enabled_tools_and_a_spread_dict_of_tools_are_sent": """
        from agentkit import Options

        REGISTRY = {"search": {"name": "search"}, "fetch": {"name": "fetch"}}

        def enabled(names):
            enabled_tools = [REGISTRY[name] for name in set(names)]  # expect: AC103
            return enabled_tools

        def options(names):
            return Options(**{"tools": list(set(names))})  # expect: AC103
    """,
    "an_instruction_given_to_a_function_that_runs_an_agent": """
        import time
        from agentkit import run_agent

        def main(task):
            return run_agent(task, instruction=f"You started at {time.time()}.")  # expect: AC101
    """,
    "tools_a_script_block_hands_on": """
        from agentkit import serve

        def resolve_toolset(names):
            return list(set(names))

        if __name__ == "__main__":
            tools = resolve_toolset(["web", "terminal"])  # expect: AC103
            serve(tools)
    """,
    "an_item_set_deep_inside_a_tool_schema": """
        import datetime
        from openai import OpenAI

        def tools_for(fn, make_tool):
            tools = []
            tool = make_tool(fn)
            for name in ("min_year", "max_year"):
                tool.info.get_properties()[name]["description"] = f"It is {datetime.date.today().year}."
            tools.append(tool)  # expect: AC102
            return tools

        def run(client: OpenAI):
            schema = {"type": "function", "function": {"name": "search", "parameters": {}}}
            schema["function"]["description"] = f"Search. Today is {datetime.date.today()}"
            return client.chat.completions.create(model="m", messages=[], tools=[schema])  # expect: AC102
    """,
    "a_functions_doc_set_keeps_the_function": """
        import datetime
        from langchain_core.messages import SystemMessage

        def today_line():
            return f"Today is {datetime.date.today()}."

        def build():
            today_line.__doc__ = f"The date line, as of {datetime.date.today()}."
            return [SystemMessage(content=today_line())]  # expect: AC101
    """,
    "a_tools_description_set_from_the_clock": """
        import datetime
        from agents import FunctionTool
        from openai import OpenAI

        def tools_for(fn):
            tool = FunctionTool(fn)
            tool.description = f"Search. Today is {datetime.date.today()}"
            return [tool]

        def run(client: OpenAI, fn):
            return client.chat.completions.create(model="m", messages=[], tools=tools_for(fn))  # expect: AC102
    """,
    "a_system_message_template_given_its_prompt": """
        from datetime import datetime
        from langchain_core.prompts import (
            ChatPromptTemplate, HumanMessagePromptTemplate, PromptTemplate, SystemMessagePromptTemplate,
        )

        def load(system_path, user_path):
            system = PromptTemplate.from_file(
                system_path, partial_variables={"current_date": datetime.now().strftime("%m/%d/%Y")}
            )
            user = PromptTemplate.from_file(user_path, template_format="jinja2")
            return ChatPromptTemplate(
                messages=[
                    SystemMessagePromptTemplate(prompt=system),  # expect: AC101
                    HumanMessagePromptTemplate(prompt=user),
                ]
            )
    """,
    "an_instruction_given_to_a_model_class_made_configures_it": """
        import time
        from agentkit import LLM, Agent

        llm = LLM(instruction=f"Started {time.time()}")  # expect: AC101
        agent = Agent(instruction=f"Started {time.time()}")  # expect: AC101
    """,
    "a_loop_over_zip_keeps_what_each_part_carries": """
        import uuid
        from datetime import datetime
        from agentkit import Agent

        def agents(names):
            stamps = [datetime.now().isoformat() for _ in names]
            built = []
            for name, stamp in zip(names, stamps):
                built.append(Agent(name=name, instructions=f"You are {name}, started {stamp}."))  # expect: AC101
            for index, run in enumerate([uuid.uuid4().hex for _ in names]):
                built.append(Agent(name=f"agent-{index}", instructions=f"Run {run}."))  # expect: AC101
            return built
    """,
    "a_dict_of_sets_read_with_a_set_default": """
        from openai import OpenAI

        class Registry:
            def __init__(self):
                self._tag_mappings: dict[str, set[str]] = {}
                self._specs = {}

            def add(self, tag, action_id, spec):
                self._tag_mappings.setdefault(tag, set()).add(action_id)
                self._specs[action_id] = spec

            def list_action_ids(self, tags):
                collected = []
                for tag in tags:
                    for action_id in self._tag_mappings.get(tag, set()):
                        collected.append(action_id)
                return collected

            def ask(self, tags):
                tools = [self._specs[i] for i in self.list_action_ids(tags)]  # expect: AC103
                return OpenAI().chat.completions.create(model="m", messages=[], tools=tools)

            def allowed(self, tag, action_id):
                return action_id in self._tag_mappings.get(tag, set())
    """,
    "an_instruction_given_to_a_function_that_makes_a_model": """
        import time
        from datetime import date
        from mylib import StepAgent, _StepAgent, create_model, init_chat_model

        def build():
            model = create_model("gemini", instruction=f"You are a helper. Today is {date.today()}.")  # expect: AC101
            chat = init_chat_model("gpt", instruction=f"Session started {time.time()}")  # expect: AC101
            step = StepAgent(instruction=f"You act for the session of {time.time()}")  # expect: AC101
            private = _StepAgent(instruction=f"You act for the session of {time.time()}")  # expect: AC101
            return model, chat, step, private
    """,
    "a_request_state_holds_the_tools_and_schema_sent": """
        from pydantic import BaseModel
        from openai import OpenAI

        class RequestState(BaseModel):
            messages: list
            tools: list
            response_format: dict

        def send(messages, registry, fields):
            state = RequestState(
                messages=messages,
                tools=[registry[name] for name in set(registry)],  # expect: AC103
                response_format={"type": "json_schema", "properties": {k: {} for k in set(fields)}},  # expect: AC103
            )
            return OpenAI().chat.completions.create(model="m", **state.model_dump())
    """,
    "a_dict_of_sets_read_by_key_or_by_value": """
        from collections import defaultdict
        from openai import OpenAI

        class Registry:
            def __init__(self):
                self.by_tag = defaultdict(set)
                self.by_server: dict[str, set[str]] = {}
                self.specs = {}

            def add(self, server, tag, name, spec):
                self.by_tag[tag].add(name)
                self.by_server.setdefault(server, set()).add(name)
                self.specs[name] = spec

            def for_tag(self, tag):
                tools = [self.specs[name] for name in self.by_tag[tag]]  # expect: AC103
                return OpenAI().chat.completions.create(model="m", messages=[], tools=tools)

            def for_server(self, server):
                tools = [self.specs[name] for name in self.by_server[server]]  # expect: AC103
                return OpenAI().chat.completions.create(model="m", messages=[], tools=tools)

            def every(self):
                tools = [self.specs[name] for names in self.by_tag.values() for name in names]  # expect: AC103
                return OpenAI().chat.completions.create(model="m", messages=[], tools=tools)
    """,
    "an_agents_prompt_given_by_keyword": """
        from datetime import datetime
        from autogen.beta import Agent, Plugin
        from autogen.beta.live import LiveAgent

        def environment() -> str:
            return f"Current date and time: {datetime.now():%A %H:%M}"

        def turn_prompt(persona: str) -> list[str]:
            parts = [persona, "Be brief."]
            parts.append(environment())
            return parts

        async def reply(agent, message, persona):
            return await agent.ask(message, prompt=turn_prompt(persona))  # expect: AC101

        async def plan(planner_agent, message, persona):
            return await planner_agent.run(message, prompt=[persona, f"{datetime.utcnow()}"])  # expect: AC101

        def spread(persona):
            options = {"prompt": f"{persona} ({datetime.now():%c})"}
            return Agent("spread", **options)  # expect: AC101

        def build(persona, tools):
            voice = LiveAgent("voice", prompt=f"{persona} It is {datetime.now():%H:%M}.")  # expect: AC101
            guidance = Plugin(prompt=[persona, f"Today: {datetime.today():%A}"])  # expect: AC101
            return Agent("main", prompt=persona, tools=tools, plugins=[guidance]), voice
    """,
}

NEGATIVE = {
    "a_compaction_summary_stamped_once_into_the_history": """
        from datetime import datetime

        def compact_history(messages, summarize):
            summary = summarize(messages[1:-4])
            note = {"role": "system", "content": f"[Summary of {datetime.now():%Y-%m-%d}]\\n{summary}"}
            return [messages[0], note, *messages[-4:]]
    """,
    "a_log_of_tool_calls_named_tools": """
        from datetime import datetime

        class Turn:
            def __init__(self):
                self.process_tools = []

            def add_process_tool(self, round_num, tool_name, observation):
                self.process_tools.append(
                    {"round": round_num, "tool": tool_name, "observation": observation, "timestamp": datetime.now()}
                )
    """,
    "a_tuples_item_read_by_its_index": """
        import time

        async def decide(tools, start):
            latency = (time.perf_counter() - start) * 1000
            return None, latency, tools, {"usage": 1}

        async def route(tools, start):
            result = await decide(tools, start)
            latency_ms, r_tools = result[1], result[2]
            return latency_ms, r_tools

        async def last(tools, start):
            result = await decide(tools, start)
            spent_tools = result[-2]
            return spent_tools
    """,
    "a_dict_of_sets_sorted_back_and_a_set_default_of_a_config": """
        import json
        from collections import defaultdict
        from openai import OpenAI

        def ask(specs, tag, path):
            groups = defaultdict(set)
            for name, spec in specs.items():
                groups[spec["tag"]].add(name)
            for key in groups:
                groups[key] = sorted(groups[key])
            tools = [specs[name] for name in groups[tag]]
            with open(path) as f:
                wanted = json.load(f).get("tools", set())
            tools += [specs[name] for name in wanted]
            return OpenAI().chat.completions.create(model="m", messages=[], tools=tools)
    """,
    "a_dict_of_sets_read_for_membership_or_sorted": """
        from collections import defaultdict
        from openai import OpenAI

        def ask(specs, tag, wanted):
            by_tag = defaultdict(set)
            by_name = defaultdict(list)
            for name, spec in specs.items():
                by_tag[spec["tag"]].add(name)
                by_name[spec["tag"]].append(name)
            tools = [specs[name] for name in sorted(by_tag[tag]) if name in by_tag[wanted]]
            tools += [specs[name] for name in by_name[tag]]
            return OpenAI().chat.completions.create(model="m", messages=[], tools=tools)
    """,
    "a_loop_over_zip_gives_each_name_its_own_part": """
        import uuid
        from datetime import datetime

        class Server:
            def list_agents(self, states):
                listing = [self.to_config(state) for state in states]
                for state, return_dict in zip(states, listing):
                    tools = []
                    for name in state.tools:
                        tools.append(self.get_tool(name))
                    return_dict["tools"] = tools
                for index, state in enumerate(states):
                    listing[index]["system_prompt"] = state.system
                return listing

            def to_config(self, state):
                return {"id": uuid.uuid4().hex, "created_at": datetime.now().isoformat()}
    """,
    "tools_an_agent_snapshot_keeps": """
        import time
        from agentkit import AgentState

        def update_state(agent, names):
            agent.state = AgentState(name=agent.name, tools=list(set(names)), saved_at=time.time())
    """,
    "items_set_inside_a_tools_record_or_in_a_sets_order": """
        import time
        from agents import FunctionTool
        from openai import OpenAI

        def run(client: OpenAI, fn, names: list[str]):
            tool = FunctionTool(fn)
            tool.stats["calls"]["last_used"] = time.time()
            schemas = {name: {"name": name, "parameters": {}} for name in sorted(names)}
            for name in set(names):
                schemas[name]["description"] = "Look it up."
            return client.chat.completions.create(model="m", messages=[], tools=[tool, *schemas.values()])
    """,
    "a_connector_named_tools_whose_methods_are_called_by_name": """
        from datetime import datetime, timezone
        from .connectors import LiveTools

        def probe(cfg, service, names):
            alert = {"name": "probe", "fired_at": datetime.now(timezone.utc).isoformat()}
            tools = LiveTools(cfg, alert)
            return [getattr(tools, name)(service) for name in names]
    """,
    "a_tools_bookkeeping_field_set_from_the_clock": """
        import time
        from agents import FunctionTool
        from openai import OpenAI

        def run(client: OpenAI, fn):
            tool = FunctionTool(fn)
            tool.last_used = time.time()
            return client.chat.completions.create(model="m", messages=[], tools=[tool])
    """,
    "a_human_message_template_given_the_date": """
        from datetime import datetime
        from langchain_core.prompts import ChatPromptTemplate, HumanMessagePromptTemplate, PromptTemplate

        def load(user_path):
            user = PromptTemplate.from_file(user_path, partial_variables={"today": str(datetime.now())})
            return ChatPromptTemplate(messages=[HumanMessagePromptTemplate(prompt=user)])
    """,
    "an_item_set_deep_inside_a_record_not_a_tool": """
        import datetime
        from openai import OpenAI

        def run(client: OpenAI, log):
            schema = {"type": "function", "function": {"name": "search", "parameters": {}}}
            schema["function"]["description"] = "Search the web."
            record = {"meta": {}, "tools": [schema]}
            record["meta"]["sent_at"] = datetime.datetime.now().isoformat()
            log.write(record)
            return client.chat.completions.create(model="m", messages=[], tools=[schema])
    """,
    "tools_registered_in_a_sorted_order": REGISTERED.format(order="sorted(set(names))", expect=""),
    "variables_named_like_tools_consumed_where_bound": """
        import secrets

        SUPPORTED_TOOLS = frozenset({"review", "describe", "improve"})

        def route(contexts):
            by_tool = {tool: [] for tool in SUPPORTED_TOOLS}
            for context in contexts:
                context["start_marker"] = f"<<<ARTIFACT_{secrets.token_hex(16)}>>>"
                requested_tools = context.get("target_tools", SUPPORTED_TOOLS)
                supported_tools = requested_tools & SUPPORTED_TOOLS
                unsupported_tools = sorted(requested_tools - SUPPORTED_TOOLS)
                if unsupported_tools:
                    print(f"ignored: {unsupported_tools}")
                for tool in supported_tools:
                    by_tool[tool].append(context)
            return by_tool
    """,
    "keyword_arguments_a_dict_does_not_send": """
        import json
        import logging
        import time
        import uuid

        class Spec:
            def __init__(self, schema):
                self.name = schema["title"]
                self.created = time.time()

        class Strategy:
            def __init__(self, schema):
                self.spec = Spec(schema)

            def to_model_kwargs(self):
                return {"response_format": {"name": self.spec.name}}

        def log(schema):
            logging.info(json.dumps({"response_format": {"name": str(uuid.uuid4())}, "schema": schema}))

        def request(client, schema):
            kwargs = {"response_format": schema, "run_id": str(uuid.uuid4())}
            return client.create(**kwargs)

        def run(client, **kwargs):
            kwargs["session_id"] = str(uuid.uuid4())
            output_schema = kwargs.get("output_schema")
            if output_schema is not None:
                kwargs["output_schema"] = output_schema
            return client.create(**kwargs)
    """,
    "role_first_notices_and_other_roles": """
        import time
        from chatkit import Message
        from agentscope.message import UserMsg

        def run_command(log, command):
            yield Message("system", f"Ran {command} at {time.strftime('%H:%M:%S')}")
            log.append(Message("user", f"Sent at {time.time()}"))
            return UserMsg("system", content=f"Hint at {time.time()}")

        def prompt_settings(settings):
            return settings.get("system", f"{time.time()}")
    """,
    "a_tool_parameter_annotation_in_a_defined_order": """
        from typing import Annotated
        from pydantic import Field
        from livekit.agents import function_tool

        def out_of_scope_tool(visited, active):
            task_ids = set[str](visited) - {active}

            @function_tool(description="Go back to tasks already visited")
            async def out_of_scope(
                ids: Annotated[list[str], Field(json_schema_extra={"items": {"enum": sorted(task_ids)}})],
            ) -> None:
                pass

            def helper(ids: Annotated[list[str], Field(json_schema_extra={"enum": list(task_ids)})]) -> None:
                pass

            return out_of_scope, helper
    """,
    "a_setter_given_its_prompt_by_keyword_updates_its_first_argument": """
        def update_tools(chat_ctx, old, new, instructions):
            chat_ctx.insert({"tools_added": list(set(new) - set(old))})
            update_instructions(chat_ctx, instructions=instructions)
    """,
    "instruction_of_one_request_and_a_models_reply": """
        import uuid
        import litellm

        async def step(grounding, messages, tools):
            call_id = uuid.uuid4().hex
            request = {"messages": [*messages, {"type": "computer_call", "call_id": call_id}], "tools": tools}
            response = await litellm.acompletion(**request)
            for desc in descriptions(response.model_dump()):
                await grounding.predict_click(model="ground", instruction=f"{desc} {call_id}")
                await grounding.predictClick(instruction=f"{desc} {call_id}")
                Agent(name="clicker", instruction=f"Click {desc}")
    """,
    "a_store_persists_the_prompt_by_a_session_key": """
        from datetime import datetime
        from uuid import uuid4

        def save(db, agent, store, prompt, p, new_id):
            db.update_system_prompt(f"{datetime.now():%Y%m%d}_{uuid4().hex}", prompt)
            agent._session_db.update_system_prompt(agent.session_id or str(uuid4()), prompt)
            store.save_system_prompt(session_id=new_id(), prompt=p)
    """,
    "a_request_only_measured": """
        from datetime import datetime
        from uuid import uuid4

        def budget(history, messages):
            tools_with_uuid = [{"name": "t", "description": str(uuid4())}]
            used = estimate_request_tokens(history, system_prompt=f"{datetime.now()}")
            return used + count_tokens(messages, tools=tools_with_uuid)
    """,
    "a_status_record_and_a_usage_report_named_tools": """
        import time
        from collections import Counter

        def status(a, cwd):
            return {"model": a.model, "cwd": cwd, "running": True, "tools": a.tools + [time.time()]}

        def session_info(agent, prompt):
            info = {"model": agent.model, "branch": "main", "version": "1"}
            info["system_prompt"] = prompt + str(time.time())
            return info

        def usage(counts):
            tools = self._compute_tool_breakdown(counts, time.time())
            return {"generated_at": time.time(), "tools": tools}
    """,
    "a_set_ordered_list_put_in_a_set_sorted_or_counted": """
        from collections import Counter

        PLUGINS = {"a", "b"}

        def names():
            return list(PLUGINS)

        def resolve(groups):
            all_tools = set()
            for group in groups:
                tools = names()
                all_tools.update(tools)
            return sorted(all_tools)

        def bind(llm, groups):
            return llm.bind_tools(resolve(groups))

        def describe(registry):
            toolset_tools = {}
            for n in PLUGINS:
                toolset_tools.setdefault(registry[n].group, []).append(n)
            return [", ".join(sorted(toolset_tools[g])) for g in sorted(toolset_tools)]

        def usage(a, b):
            merged = Counter()
            for t in set(a) | set(b):
                merged[t] = a.get(t, 0) + b.get(t, 0)
            tools = [{"tool": t, "count": c} for t, c in merged.most_common()]
            return {"tools": tools, "total_count": sum(merged.values())}
    """,
    "a_decorated_prompt_of_per_run_values_a_tool_and_a_route": """
        from datetime import date, datetime
        from pydantic_ai import Agent

        agent = Agent("openai:gpt-4o")


        @agent.instructions
        def customer(ctx):
            return f"The customer's name is {ctx.deps.name!r}"


        @agent.tool
        def now(ctx) -> str:
            return str(datetime.now())


        @app.get("/instructions")
        def web():
            return str(date.today())
    """,
    "instance_fields_from_arguments_or_not_rendered_into_the_prompt": """
        import datetime
        import time


        class FromData:
            def __init__(self, data):
                self.date = data["date"]

            def render_prompt(self):
                return f"Today is {self.date}."


        class Stamped:
            def __init__(self, cwd):
                self.cwd = cwd
                self.started = time.time()

            def render_prompt(self):
                return f"Work in {self.cwd}."

            def note(self):
                return f"Started {self.started}."


        class Notes:
            def __init__(self, root):
                self._setup(root)

            def _setup(self, root):
                self.folder = root / f"session_{datetime.datetime.now():%Y%m%d_%H%M%S}"

            def load_context(self):
                file_path = self.folder / "context.md"
                return file_path.read_text(encoding="utf-8")


        def ask(client, data, cwd):
            system = FromData(data).render_prompt() + Stamped(cwd).render_prompt() + Notes(cwd).load_context()
            client.chat.completions.create(
                model="m",
                messages=[{"role": "system", "content": system}, {"role": "user", "content": Stamped(cwd).note()}],
            )
    """,
    "instruction_as_a_template_placeholder": """
        from datetime import datetime

        USER_TEMPLATE = "Answer the instruction: {instruction}"

        def ask(client, agent, question):
            text = USER_TEMPLATE.format(instruction=f"{question} (asked {datetime.now()})")
            client.create(messages=[{"role": "user", "content": text}])
            agent.set_instruction_context({"asked": datetime.now()})
    """,
    "a_location_read_from": """
        import uuid
        from pathlib import Path
        from myapp.config import ChatConfig, get_toolchain

        def start(client):
            log_dir = Path("logs") / str(uuid.uuid4())
            config = ChatConfig.load_or_create(log_dir).save()
            settings_path = log_dir / "settings.toml"
            notes = open(settings_path).read()
            prompt = ChatConfig.load(path=log_dir).prompt
            client.create(tools=list(get_toolchain(config.tools)), system=prompt + notes)
    """,
    "other_roles_messages_do_not_reach_the_system_message": """
        import time
        import uuid

        def build(history, system_prompt, seen):
            messages = [ChatMessage(content="; ".join(set(seen)), role="user")]
            messages.append({"role": "assistant", "content": f"Answered at {time.time()}"})
            messages.append(HumanMessage(content=f"Request {uuid.uuid4()}"))
            messages.append(ChatMessage(content=f"{time.time()}", role=MessageRole.TOOL))
            messages.append(ChatMessage(content=system_prompt, role="system"))
            return truncate(messages)

        def truncate(messages):
            system_message = messages.pop()
            return [system_message, *messages[-10:]]
    """,
    "structured_output_of_a_sorted_schema": """
        def extractor(llm, labels):
            kinds = sorted({label.kind for label in labels})
            schema = {"type": "object", "properties": {"kind": {"type": "string", "enum": kinds}}}
            return llm.with_structured_output(schema)
    """,
    "a_cache_entry_stored_with_its_time": """
        import time

        _SCHEMAS = {}

        def schemas(url):
            now = time.time()
            if url in _SCHEMAS:
                data, stored = _SCHEMAS[url]
                if now - stored < 300:
                    return data
            data = fetch(url)
            _SCHEMAS[url] = (data, now)
            return data

        def request(client, url):
            client.create(tools=[{"name": name, "parameters": schema} for name, schema in schemas(url).items()])
    """,
    "a_static_method_called_through_self": """
        class Agent:
            def list_tools(self, extra):
                merged_tools = [self.search_tool]
                names = {tool.name for tool in merged_tools}
                self._add_unique(merged_tools, names, extra)
                return merged_tools

            @staticmethod
            def _add_unique(merged_tools, names, tools):
                for tool in tools:
                    if tool.name not in names:
                        merged_tools.append(tool)
                        names.add(tool.name)
    """,
    "tool_policies_applied_by_membership": """
        from agentkit import Options, Policy

        class Pack:
            def __init__(self, allowed, denied):
                self.allowed_tools = set(allowed)
                self.denied_tools = set(denied)

            def merge(self, other):
                config = {
                    "name": "merged",
                    "tools": {
                        "allow": list(self.allowed_tools | other.allowed_tools),
                        "deny": list(self.denied_tools | other.denied_tools),
                    },
                }
                return Policy(config=config)

        def options(names):
            disallowed_tools = list(set(names))
            return Options(disallowed_tools=disallowed_tools, tools={"allow": list(set(names))})
    """,
    "flags_that_keep_the_clock_out_or_are_not_the_prompts": """
        from agentkit import Agent, Bench, Logger

        quiet = Agent(name="quiet", add_datetime_to_context=False)
        logger = Logger(log_time=True, show_date=True, log_prompt_time=True)
        bench = Bench(system_time=True, use_system_clock=True, track_prompt_time=True)
        answers = Agent(name="answers", instructions="Answer briefly.", stream=True)
        settings = {"add_datetime_to_context": False, "log_time": True, "system_time": True}
        settings["track_prompt_time"] = True
    """,
    "a_set_of_a_range_of_numbers": """
        from agno import Agent

        def build(n):
            turns = frozenset(range(1, n))
            return Agent(instructions="Check in on turns " + ", ".join(str(turn) for turn in turns))
    """,
    "a_method_of_an_object_made_of_a_set_given_as_a_tool": """
        from agno import Agent

        class Tracker:
            def __init__(self, markers: dict[str, str]) -> None:
                self._markers = dict(markers)

            def fact(self, turn: str) -> str:
                "One fact of the probe."
                return self._markers[turn]

        def build(tracker: Tracker | None):
            return Agent(tools=[tracker.fact] if tracker is not None else None)

        def run(names):
            turns = set(names)
            tracker = Tracker({turn: f"marker-{turn}" for turn in turns}) if turns else None
            wanted = [name for name in ("search", "fetch") if name in turns]
            return build(tracker), Agent(tools=wanted)
    """,
    "a_policy_spread_as_keyword_arguments": """
        from agentkit import Options

        def options(names):
            return Options(**{"tools": {"allow": list(set(names)), "deny": []}})
    """,
    "an_instruction_given_to_a_method_that_runs_one_task": """
        import random
        import time
        from agentkit import SampleUserInstructionStep

        async def synthesize(branch, outputs):
            stamped = f"At {time.time()}: combine these: {outputs}"
            return await branch.operate(instruction=stamped)

        def simulate(choices):
            return SampleUserInstructionStep(instruction=random.choice(choices))

        class ToolAgent:
            def run(self):
                return self.llm(instruction=f"Tools: ... Current date: {time.strftime('%H:%M:%S')}")

        def ask(chat_model, question):
            return chat_model(instruction=f"{question} (asked at {time.time()})")
    """,
    "a_prompt_given_to_other_calls_is_a_turn": """
        from datetime import datetime
        from openai import OpenAI

        class ResearchAgent:
            def __init__(self, prompt: str) -> None:
                self.task = prompt

            def ask(self, question: str, prompt: str = "") -> str:
                return OpenAI().responses.create(model="m", instructions="Research.", input=f"{prompt} {question}")

        def daily(question):
            researcher = ResearchAgent(prompt=f"Summarize the news of {datetime.now():%x}")
            return researcher.ask(question, prompt=f"Asked at {datetime.now()}")

        def ask_all(client, llm, agent, question):
            stamped = f"{question} (asked at {datetime.now()})"
            first = client.ask(question, prompt=stamped)
            second = llm.generate(prompt=stamped)
            third = agent.ask(prompt=stamped)
            return first, second, third, Task(prompt=stamped)
    """,
    "tools_a_script_block_only_prints": """
        import sys

        def resolve_toolset(name):
            return list({f"{name}_read", f"{name}_write"})

        def describe(tools):
            return ", ".join(sorted(tools))

        if __name__ == "__main__":
            if "--quiet" not in sys.argv:
                print("Toolsets demo")
            if __name__ == "__main__":
                print("a block of its own")
            for name in ["web", "terminal"]:
                tools = resolve_toolset(name)
                print(f"{name}: {len(tools)} tools: {', '.join(sorted(tools))}")
    """,
}


test_finds_what_each_fixture_marks, test_stays_quiet_where_nothing_reaches_a_sink = fixture_tests(POSITIVE, NEGATIVE)
