"""What the analysis knows of the standard library and the agent frameworks by name: the calls that read the
clock, draw randomness or make fresh ids, the keywords and names that are sinks, and how builtins treat order."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field, fields, replace
from functools import lru_cache
from typing import NamedTuple

from agentcache.lint.python.syntax import constant, last_name
from agentcache.lint.python.values import CLOCK, FRESH_ID, PROCESS, RANDOM

CLOCK_CALLS = frozenset(
    {
        "datetime.datetime.now",
        "datetime.datetime.utcnow",
        "datetime.datetime.today",
        "datetime.date.today",
        "time.time",
        "time.time_ns",
        "time.monotonic",
        "time.monotonic_ns",
        "time.perf_counter",
        "time.perf_counter_ns",
    }
    # Date-time libraries beside the standard one: a ``now()`` of the project's own is read for what it returns,
    # and SQLAlchemy's ``func.now()`` is SQL for the database's clock (a column's default), so these are by name.
    | {"pendulum.now", "pendulum.today", "arrow.now", "arrow.utcnow", "maya.now"}
    | {"pandas.Timestamp.now", "pandas.Timestamp.today", "pandas.Timestamp.utcnow", "django.utils.timezone.now"}
    | {"zhDateTime.DateTime.now", "zhDateTime.DateTime.today"}  # a datetime subclass with the Chinese calendar
)
#: These read the clock only when called with fewer arguments than this (else they format, convert or parse the
#: time given): the standard library's, arrow's ``get()``, Django's ``localtime()`` and ``localdate()``.
CLOCK_UNLESS_GIVEN = {
    "time.strftime": 2,
    "time.ctime": 1,
    "time.asctime": 1,
    "time.localtime": 1,
    "time.gmtime": 1,
    "arrow.get": 1,
    "django.utils.timezone.localtime": 1,
    "django.utils.timezone.localdate": 1,
}
ID_CALLS = frozenset({"uuid.uuid1", "uuid.uuid4", "uuid.uuid6", "uuid.uuid7"})
#: Calls whose value is the running process's own: the same on every call, another in the next process.
PROCESS_CALLS = frozenset({"os.getpid", "os.getppid", "threading.get_ident", "threading.get_native_id"})
#: Module functions that draw nothing: seeding, state, in-place shuffles (handled as a mutation).
NOT_DRAWS = frozenset({"random.seed", "random.getstate", "random.setstate", "random.shuffle", "secrets.compare_digest"})
#: What :meth:`Vocabulary.role_named` and the sinks call the role of a system message (any of ``system_roles``).
SYSTEM = "system"


#: What :attr:`Callee.sink` says a call is: a system message (``SystemMessage``), maybe one by a factory method
#: (``ChatMessage.from_system``: :meth:`Vocabulary.is_system_message` asks its class), a method whose first argument
#: is a tool list, one whose first argument is an output schema, a call taking ``(model, tools, ...)``, a method whose
#: first argument is a system prompt.
MESSAGE, FACTORY, BINDER, SCHEMA, AGENT, SETTER = "message", "factory", "binder", "schema", "agent", "setter"


class Callee(NamedTuple):
    """What a called name says, by :class:`Vocabulary`: worked out once per name."""

    sink: str | None
    """The sink it is by its name (:data:`MESSAGE` ... :data:`SETTER`), None for none. A setter is a verb of
    ``system_setters``, then a name of ``system_keywords`` or one ending as ``system_names`` say
    (``set_instruction``, ``add_system_message``; not ``set_instruction_context``)."""
    template: bool
    """It fills a text (``format``, ``render``): its keyword arguments are the text's placeholders, not sinks."""
    role: str | None
    """For a message class (its name's last word in ``message_words``), the role its name gives (``user`` for
    ``UserMsg``, ``ai`` for ``AIMessage``), or ``""`` when it takes one (``Message``, ``ChatMessage``); else None."""
    reader: bool
    """It returns what is stored at the location it is given: its first word is a verb of ``reader_verbs``
    (``Config.load(log_dir)``, ``open(path)``, ``path.read_text()``)."""


@dataclass(frozen=True)
class Vocabulary:
    """The names that make a sink, per framework. Users extend it in ``pyproject.toml`` under
    ``[tool.agentcache.lint]`` (:func:`agentcache.lint.config.load`), each key adding to the set of its name."""

    system_keywords: frozenset[str] = frozenset(
        {"system", "system_prompt", "system_message", "instructions"}  # OpenAI/Anthropic, LangChain, autogen, agents
        | {"system_template", "backstory", "custom_instructions"}  # CrewAI, open-interpreter
        | {"instruction", "global_instruction", "static_instruction"}  # mcp-agent, fast-agent, google-adk
        | {"system_instruction"}  # Gemini (google-genai, Vertex AI)
    )
    """Keyword arguments that take a system prompt (``Agent(instructions=...)``), but not a template's placeholders
    (``PROMPT.format(instruction=task)``: the filled text is checked where it is sent)."""
    task_keywords: frozenset[str] = frozenset({"instruction"})
    """System keywords that also name one request's task (a GUI agent's grounding query,
    ``predict_click(instruction=desc)``): no sink when the called name starts with a verb of ``task_verbs``."""
    task_verbs: frozenset[str] = frozenset(
        {"predict", "locate", "ground", "detect", "point", "click", "act", "step", "solve", "answer", "ask", "query"}
    )
    """Verbs that start the name of a call acting on one request (see ``task_keywords``)."""
    task_methods: frozenset[str] = frozenset(
        {"operate", "chat", "communicate", "run", "invoke", "execute", "perform", "interpret", "respond"}
    )
    """Verbs that start the name of an agent's method running one task, whose ``task_keywords`` are that task
    (``branch.operate(instruction=...)``, a user's message): a method call only, since a function so named may
    configure the agent it runs (``run_agent(instruction=...)``)."""
    model_names: frozenset[str] = frozenset({"llm", "lm", "model"})
    """Last words of the name of a model object that a call of it runs one request with (``self.llm(instruction=
    ...)``, ``chat_model(...)``): its ``task_keywords`` are that request's prompt. Not a class made
    (``LLM(instruction=...)``), nor a function whose name starts with a verb of ``model_makers``
    (``create_model(instruction=...)``): those configure one."""
    model_makers: frozenset[str] = frozenset(
        {"create", "make", "build", "get", "load", "init", "new", "setup", "instantiate", "configure"}
    )
    """Verbs that start the name of a function making a model (see ``model_names``)."""
    clock_words: frozenset[str] = frozenset({"date", "time", "datetime", "timestamp", "clock"})
    """Words of a flag's name that say it asks for the clock (see ``prompt_words``)."""
    prompt_words: frozenset[str] = frozenset({"system", "prompt", "instruction", "instructions", "context"})
    """A keyword argument given ``True`` whose name has a word of ``clock_words`` and one of ``prompt_words`` asks
    the library to stamp the clock into the system prompt (``Agent(add_datetime_to_context=True)``,
    ``Branch(system_datetime=True)``): the code that reads the clock is the framework's, the choice is the
    caller's, so it is reported at the flag. Not when the name says it times or logs (``log_prompt_time``,
    ``measure_verbs``), nor ``system`` with ``time`` or ``clock`` alone (``system_time``: CPU time)."""
    policy_words: frozenset[str] = frozenset(
        {"allow", "allowed", "deny", "denied", "disallowed", "block", "blocked", "blocklist", "allowlist", "denylist"}
        | {"exclude", "excluded", "disabled", "whitelist", "blacklist", "permitted", "forbidden"}
    )
    """Words that say a list of tool names is a policy over which tools may run, not tool definitions sent: in a
    name (``allowed_tools``, ``disallowed_tools``), or as a key of the dict given as tools (``"tools": {"allow":
    [...], "deny": [...]}``), as are ``policy_keys``. A policy is applied by membership, so its order reaches no
    request."""
    policy_keys: frozenset[str] = frozenset({"include", "enabled"})
    """Keys that make the dict given as tools a policy too (``{"include": [...]}``), but not a name: ``enabled_tools``
    often holds the definitions sent."""
    store_words: frozenset[str] = frozenset({"db", "database", "store", "storage", "repo", "repository", "dao"})
    """Words of a receiver's name that say it persists what a setter is given (``session_db.update_system_prompt(
    session_id, prompt)``, an SQL update keyed by the id), not send it: its setters are no sink."""
    measure_verbs: frozenset[str] = frozenset({"estimate", "count", "measure", "num", "tally"})
    """Verbs that start the name of a call that measures a request rather than sends it
    (``estimate_request_tokens(history, system_prompt=..., tools=...)``, ``count_tokens``): none of its keywords
    is a sink."""
    recorders: frozenset[str] = frozenset({"logger", "tracer", "telemetry", "recorder", "span"})
    """Last words of an object's name that say it records what happens (``tracer.start_session(system_prompt=...)``,
    ``self.run_logger.log(tools=...)``): what its methods are given by keyword is written to a log or a trace,
    never sent to a model, so none of their keywords is a sink (a setter or a binder called on it still is)."""
    tools_keywords: frozenset[str] = frozenset({"tools", "functions"})
    """Keyword arguments that take a tool list."""
    system_messages: frozenset[str] = frozenset(
        {"SystemMessage", "SystemMessagePromptTemplate", "SystemPromptPart", "ChatMessage.system"}
        | {"ChatMessage.from_system"}  # Haystack
    )
    """Calls whose first argument (or ``content=``/``template=``) is a system prompt; ``Class.method`` for a
    factory method."""
    system_setters: frozenset[str] = frozenset({"set", "update", "with", "add", "append"})
    """Verbs that, before a name of ``system_keywords`` or ending as ``system_names`` say, make a method whose first
    argument is a system prompt (``set_instruction``, ``with_instructions``, ``add_system_message``)."""
    message_words: frozenset[str] = frozenset({"message", "msg"})
    """Last words of a message class's name. Without ``role=``, its first argument is the role when it is one
    (``Message("system", text)``, then the content); a class named for another role (``HumanMessage``,
    ``UserMsg``) makes a message of that role."""
    other_roles: frozenset[str] = frozenset({"user", "assistant", "human", "ai", "tool", "function"})
    """Roles of the other messages: what a message of one of them holds is never a system prompt or a tool list,
    whatever list it is then put in."""
    tool_binders: frozenset[str] = frozenset({"bind_tools", "bind_functions"} | {"with_structured_output"})
    """Methods whose first argument is a tool list, or an output schema the model is given as a tool (LangChain's
    ``with_structured_output``, under function calling)."""
    tool_registrars: frozenset[str] = frozenset({"add_tool", "register_tool"})
    """Methods that add one tool to those a server or an agent publishes, in the order they are called (an MCP
    server's ``add_tool``): called in a loop over a set, the tool list it publishes takes the set's order."""
    schema_keywords: frozenset[str] = frozenset(
        {"response_format", "text_format"}  # OpenAI's chat completions and responses, LiteLLM
        | {"output_type", "response_model", "output_schema"}  # pydantic-ai and the Agents SDK, instructor, ADK
    )
    """Keyword arguments that take an output schema (structured output), which is sent before the messages."""
    schema_binders: frozenset[str] = frozenset({"set_output_format"})
    """Methods whose first argument is an output schema (langroid's)."""
    agent_factories: frozenset[str] = frozenset({"create_agent", "create_react_agent"})
    """Calls taking ``(model, tools, prompt=...)``."""
    prompt_classes: tuple[str, ...] = ("Agent", "Plugin")
    """A class whose name ends so takes its system prompt as ``prompt=`` (AG2's ``Agent``, ``LiveAgent`` and
    ``Plugin``, the Agents SDK's prompt template, ControlFlow's): a constructor configures an agent, so what it is
    given is no one's turn."""
    tool_classes: tuple[str, ...] = ("Tool",)
    """A class derived from a base whose name ends so declares a tool by its class attributes (smolagents' and
    EvoAgentX's ``Tool``, LangChain's and CrewAI's ``BaseTool``): its ``tool_fields`` are what it is sent as."""
    tool_fields: frozenset[str] = frozenset({"name", "description", "inputs", "parameters", "input_schema"})
    """The class attributes of a tool class (``tool_classes``) that are its definition: ``description: str =
    f"... Today is {date.today()}"`` is evaluated once per process, so each process sends another schema."""
    compaction_words: frozenset[str] = frozenset({"compact", "compaction", "compactor", "compacted", "compacting"})
    """Words of a function's or a module's name that say it compacts a conversation (``compact``,
    ``compaction.py``, ``build_compact_view``): a system message it makes is a note inserted into the history once,
    when it is compacted, and resent as stored; not the system prompt of every call."""
    prompt_methods: frozenset[str] = frozenset({"ask", "run"})
    """Methods of an agent (a receiver whose name says agent) that take one turn's system prompt as ``prompt=``
    beside the message given first: AG2's ``agent.ask(message, prompt=[...])`` and ``agent.run(...)``."""
    system_names: tuple[str, ...] = ("system_prompt", "system_message", "system_instruction", "custom_instructions")
    """A variable or attribute whose name ends so holds a system prompt."""
    prompt_names: tuple[str, ...] = ("prompt", "prompt_template")
    """A function named by a verb of ``system_makers`` and a name ending so makes a prompt of its keyword arguments
    (``prompts.get_cached_prompt(name, inputs={"date": today})``): those a text of the package prints fill it."""
    prompt_builders: frozenset[str] = frozenset(
        {"builder", "composer", "renderer", "assembler", "formatter", "generator", "factory"}
    )
    """Last words of an object's name that, after a name ending as ``prompt_names`` or ``system_names`` say, make
    it a maker of prompts (``prompt_builder = ChatSystemPromptBuilder()``, ``self.prompt_renderer``): a method
    named by a verb of ``system_makers`` called on it makes a prompt of its keyword arguments, as a function named
    so does (:meth:`makes_prompt`)."""
    system_makers: frozenset[str] = frozenset(
        {"get", "build", "compile", "render", "make", "create", "generate", "format", "compose", "construct"}
    )
    """Verbs that start the name of a function returning a system prompt (:meth:`makes_system_prompt`)."""
    prompt_decorators: frozenset[str] = frozenset({"system_prompt", "instructions", "dynamic_instructions"})
    """Decorators, by last name, called or not, that register a function whose result is a system prompt
    (pydantic-ai's ``@agent.instructions``, ``@agent.system_prompt(dynamic=True)``)."""
    system_roles: frozenset[str] = frozenset({"system", "developer"})
    """Message roles that make the system prompt."""
    record_words: frozenset[str] = frozenset(
        {"call", "calls", "result", "results", "output", "execution", "run", "event", "record", "response"}
        | {"metric", "metrics", "log", "trace", "span", "usage", "step"}
    )
    """Words that name a record of what happened (``RunOutput``, ``ToolExecution``, ``run.tools``): its ids and
    times are bookkeeping, and its ``tools=`` are the tool calls made, not tool definitions sent."""
    prompt_part_words: frozenset[str] = frozenset(
        {"text", "texts", "prompt", "part", "parts", "message", "content", "section", "block", "fragment", "snippet"}
    )
    """Words of a class's name that say its objects are parts of a prompt, rendered whenever it is sent
    (architext's ``Texts``, ``PromptSection``): a function of no parameters given to one is called then."""
    schema_words: frozenset[str] = frozenset({"format", "schema"})
    """Last words of a name that say it describes the shape of a record, not one (``OAIResponseFormatSchema``,
    ``OutputSchema``): a schema to send, whatever :attr:`record_words` it has before."""
    snapshot_words: frozenset[str] = frozenset({"state", "snapshot", "checkpoint"})
    """Last words of a called class's name that, after the word ``agent``, say it keeps a snapshot of an agent
    (memgpt's ``AgentState(tools=..., system=...)``, saved with the agent): its ``tools=`` are the names of the tools
    it has, not definitions sent."""
    report_keys: frozenset[str] = frozenset(
        {"error", "failed", "running", "status", "cwd", "branch", "version", "api_calls", "final_response"}
        | {"input_tokens", "output_tokens", "prompt_tokens", "completion_tokens", "total_tokens", "elapsed"}
    )
    """Keys that only a report holds, never a request (a run's result, a session's status panel), as do keys that
    end in ``_count`` or ``_at`` (``tool_count``, ``generated_at``): a dict display with one is shown, logged or
    returned as a record, so its ``tools`` and ``system_prompt`` are no sink."""
    report_words: frozenset[str] = frozenset({"breakdown", "stats", "statistics", "report", "summary", "insights"})
    """Words of a function's name that say it returns a report: a local named ``tools`` it returns is a usage
    table (``tools = self._compute_tool_breakdown(usage)``), not tool definitions."""
    reply_readers: tuple[str, ...] = ("Parser", "StreamingInterface")
    """A class whose name ends so reads the model's reply (LangChain's ``PydanticToolsParser``, a streaming
    interface that decodes the chunks): the ``tools=`` it is given are matched against the reply, not sent."""
    reader_verbs: frozenset[str] = frozenset({"load", "read", "open"})
    """Verbs that start the name of a call returning what is stored at a location (``Config.load(log_dir)``,
    ``open(path)``, ``path.read_text()``): the location's id or time is where it reads, not what it returns."""
    location_words: frozenset[str] = frozenset(
        {"path", "dir", "directory", "folder", "file", "filename", "filepath", "dirname", "logdir", "workdir"}
    )
    """Words that say a name holds a location (``log_dir``, ``config_path``, ``logdir``)."""
    wait_words: frozenset[str] = frozenset({"timeout", "deadline", "remaining", "delay", "backoff"})
    """Words that say a parameter holds how long a call waits (``_read_frame(self, timeout)``, given the time left
    before a deadline): a recursive call, not followed, returns what it reads again, not how long it waits."""
    completion_calls: tuple[str, ...] = (
        *("completion", "acompletion", "text_completion", "atext_completion"),  # LiteLLM
        *("completions.create", "responses.create", "messages.create"),  # OpenAI, Anthropic
        *("generate_content", "generate_content_async"),  # Gemini
    )
    """Calls, by the end of their dotted name, that send a request to a model and return its reply: the reply
    holds none of the ids and times of what was sent (a synthetic tool call's id), so it carries none."""
    tool_decorators: frozenset[str] = frozenset({"tool", "function_tool", "tool_plain", "ai_function"})
    """Decorators (by last name, called or not) that make a function a tool: its parameters' annotations
    (``Annotated[list[str], Field(json_schema_extra=...)]``) are written into the tool schema."""
    clock_calls: frozenset[str] = CLOCK_CALLS
    """Dotted names of calls that read the clock (add your project's ``myapp.utils.now``)."""
    id_calls: frozenset[str] = ID_CALLS
    """Dotted names of calls that make a fresh id."""

    system_factories: frozenset[str] = field(init=False, repr=False, compare=False)
    """Methods that may make a system message (:meth:`is_system_message`), from ``system_messages``: asked of
    every method call."""
    completion_methods: frozenset[str] = field(init=False, repr=False, compare=False)
    """The last names of ``completion_calls``: asked of every call not followed before its dotted name is."""
    sink_keywords: frozenset[str] = field(init=False, repr=False, compare=False)
    """The keywords that are sinks (:meth:`sends`): asked of every keyword argument."""
    callees: dict[str, Callee] = field(init=False, repr=False, compare=False, default_factory=dict)
    """Called name -> what :meth:`callee` says of it, worked out once per name: asked of every call."""

    def __post_init__(self) -> None:
        methods = {name.rpartition(".")[2] for name in self.system_messages if "." in name}
        object.__setattr__(self, "system_factories", frozenset({*methods, "from_template"}))
        last = frozenset(name.rpartition(".")[2] for name in self.completion_calls)
        object.__setattr__(self, "completion_methods", last)
        object.__setattr__(self, "sink_keywords", self.system_keywords | self.tools_keywords | self.schema_keywords)

    def is_bookkeeping(self, keyword: str, prompt: bool = False, context: bool = False) -> bool:
        """Whether a constructor's keyword argument is a record's id or time (``id=``, ``run_id=``,
        ``timestamp=``, ``created_at=``): the object carries it, but what it renders does not. ``prompt``: the
        keyword is given to what makes a prompt (a prompt maker, a field of a class of the project), where the
        current time (``current_date_time=``) is what it is to say. ``context``: it is given to a class whose name
        says it holds a prompt's values (``PromptContext(date=...)``), where ``date=`` and ``time=`` are too (a
        timestamp, ``created_at=``, ``create_time=`` and an id are still the object's own)."""
        if self.is_identifier(keyword):
            return True
        timed = keyword in ("timestamp", "time", "date") or keyword.endswith(("_at", "_time"))
        return (
            timed and not (prompt and keyword.startswith("current_")) and not (context and keyword in ("date", "time"))
        )

    def holds_tools(self, name: str) -> bool:
        """Whether a table's name says it holds tools to run by name (``available_functions``, ``self.tools``)."""
        lowered = name.lower()
        return "tool" in lowered or "function" in lowered

    def is_identifier(self, name: str) -> bool:
        """Whether a keyword or a function's name says an id (``run_id=``, ``generate_group_id(tool)``): a record's
        key, not text for a prompt."""
        return name in ("id", "uuid") or name.endswith(("_id", "_uuid"))

    def makes_system_prompt(self, function: str) -> bool:
        """Whether a function's name says it returns a system prompt: a verb of ``system_makers``, then a name that
        ends as ``system_names`` say, before what it is made from, for or with and an ``_async``
        (``compile_system_message_async``, ``get_system_message_from_compiled_memory``). Other verbs take one
        (``is_system_message``, ``log_system_prompt``)."""
        return _makes(function, self.system_makers, self.system_names)

    def makes_prompt(self, function: str) -> bool:
        """Whether a function's name says it makes a prompt of what it is given (``get_cached_prompt``,
        ``build_prompt``), as :meth:`makes_system_prompt` reads names."""
        return _makes(function, self.system_makers, self.prompt_names)

    def builder_makes_prompt(self, name: str, method: str) -> bool:
        """Whether ``name.method(...)`` makes a prompt of its keyword arguments: the object's name (a variable's, a
        field's, its class's: ``ChatSystemPromptBuilder``) says it makes prompts (:attr:`prompt_builders`) and a
        verb of ``system_makers`` starts the method's."""
        if method.lstrip("_").partition("_")[0] not in self.system_makers:
            return False
        made, _, last = _snake(name).rpartition("_")
        return last in self.prompt_builders and made.endswith((*self.prompt_names, *self.system_names))

    def is_system_message(self, owner: str | None, method: str) -> bool:
        """Whether ``owner.method(...)`` makes a system message: a factory method of ``system_messages``
        (``ChatMessage.from_system``), or ``from_template`` of one (``SystemMessagePromptTemplate``)."""
        if owner is None:
            return False
        if method == "from_template":
            return owner in self.system_messages
        return f"{owner}.{method}" in self.system_messages

    def callee(self, name: str) -> Callee:
        """What a called name says (:class:`Callee`)."""
        known = self.callees.get(name)
        if known is None:
            verb, _, rest = name.partition("_")
            sink = None
            if name in self.system_messages:
                sink = MESSAGE
            elif name in self.system_factories:
                sink = FACTORY
            elif name in self.tool_binders:
                sink = BINDER
            elif name in self.schema_binders:
                sink = SCHEMA
            elif name in self.agent_factories:
                sink = AGENT
            elif verb in self.system_setters and (rest in self.system_keywords or rest.endswith(self.system_names)):
                sink = SETTER
            role = None
            words = _word_list(name)
            if name[:1].isupper() and words and words[-1] in self.message_words:
                role = words[0] if words[0] in self.other_roles else ""
            reader = name.lstrip("_").partition("_")[0] in self.reader_verbs
            known = self.callees[name] = Callee(sink, name in TEXT_METHODS, role, reader)
        return known

    def takes_prompt(self, node: ast.Call, name: str) -> bool:
        """Whether ``prompt=`` of this call (its called name ``name``) is a system prompt: that of a constructor of
        ``prompt_classes``, or of a method of ``prompt_methods`` called on an agent with the message first."""
        if name[:1].isupper():
            return name.endswith(self.prompt_classes)
        func = node.func
        return (
            name in self.prompt_methods
            and bool(node.args)
            and isinstance(func, ast.Attribute)
            and "agent" in _words(last_name(func.value) or "")
        )

    def role_named(self, name: str) -> str | None:
        """The role a name says a message has: :data:`SYSTEM` when it says system (``self.system_message_role``,
        ``Role.SYSTEM``), a role of ``other_roles`` it names (``Role.USER``, ``Message.USER_ROLE``), else None."""
        if "system" in name.lower():
            return SYSTEM
        return next(iter(self.other_roles.intersection(_words(name))), None)

    def role_text(self, text: str) -> str | None:
        """The role a role's text says: :data:`SYSTEM` for one of ``system_roles``, one of ``other_roles``, else
        None."""
        return SYSTEM if text in self.system_roles else text if text in self.other_roles else None

    def compacts(self, name: str) -> bool:
        """Whether a function's or a module's name says it compacts a conversation (:attr:`compaction_words`)."""
        return not self.compaction_words.isdisjoint(_words(name))

    def is_tool_class(self, base: ast.expr) -> bool:
        """Whether a base class declares a tool by its subclasses' class attributes (:attr:`tool_classes`):
        ``Tool``, ``BaseTool[ArgsModel]``."""
        named = base.value if isinstance(base, ast.Subscript) else base
        return (last_name(named) or "").endswith(self.tool_classes)

    def is_prompt_part(self, name: str) -> bool:
        """Whether a class's name says its objects are parts of a prompt (:attr:`prompt_part_words`), not a tool's
        (``TextTool``: :attr:`tool_classes`)."""
        return not name.endswith(self.tool_classes) and not self.prompt_part_words.isdisjoint(_words(name))

    def lists_tools(self, annotation: ast.expr | None) -> bool:
        """Whether a function's return annotation says it returns a list of tools (``list[Tool]``,
        ``Optional[Sequence[BaseTool]]``, ``"list[Tool]"``: an element class named as :attr:`tool_classes` say):
        what it returns is a tool list in the order its caller gives it on, whoever that is."""
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            annotation = _annotation(annotation.value)
        if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
            return self.lists_tools(annotation.left) or self.lists_tools(annotation.right)
        if not isinstance(annotation, ast.Subscript):
            return False
        outer = last_name(annotation.value)
        elements = annotation.slice.elts if isinstance(annotation.slice, ast.Tuple) else [annotation.slice]
        if outer in ("Optional", "Union"):
            return any(self.lists_tools(element) for element in elements)
        if outer not in _SEQUENCES or not elements:
            return False
        element = elements[0]
        named = element.value if isinstance(element, ast.Constant) else last_name(element)
        return isinstance(named, str) and named.endswith(self.tool_classes)

    def builds_prompt(self, function: str) -> bool:
        """Whether a function's name says it builds a prompt (``prompt_timeinfo``, ``get_prompt``)."""
        return "prompt" in _words(function)

    def names_a_wait(self, name: str) -> bool:
        """Whether a parameter's name says it holds how long to wait (:attr:`wait_words`)."""
        return not self.wait_words.isdisjoint(_words(name))

    def names_a_location(self, name: str | None) -> bool:
        """Whether a name says it holds a location (:attr:`location_words`)."""
        return name is not None and not self.location_words.isdisjoint(_words(name))

    def sends(self, keyword: str) -> bool:
        """Whether a keyword argument is a sink: a system prompt, a tool list or an output schema."""
        return keyword in self.sink_keywords

    def lists(self, keyword: str) -> bool:
        """Whether a keyword argument takes a tool list or an output schema, what is sent before the messages."""
        return keyword in self.tools_keywords or keyword in self.schema_keywords

    def binds(self, method: str) -> bool:
        """Whether a method's first argument is a tool list or an output schema (``bind_tools``)."""
        return method in self.tool_binders or method in self.schema_binders

    def is_task(self, keyword: str, called: str, method: bool) -> bool:
        """Whether a system keyword given to ``called`` (a ``method`` or not) is one request's task, not a system
        prompt (:attr:`task_keywords`): a task verb's, a model's called (:attr:`model_names`), or a name's that
        says another role (``other_roles``: ``SampleUserInstructionThought(instruction=...)``, a user's
        instruction)."""
        if keyword not in self.task_keywords:
            return False
        words = _word_list(called)
        if called.lstrip("_")[
            :1
        ].isupper():  # a class made keeps the instruction it configures, unless named for another role
            return not self.other_roles.isdisjoint(words)
        verb = words[0] if words else ""  # predict_click, predictClick
        return (
            verb in self.task_verbs
            or (method and verb in self.task_methods)
            or (bool(words) and words[-1] in self.model_names and verb not in self.model_makers)
            or not self.other_roles.isdisjoint(words)
        )

    def asks_for_clock(self, keyword: str) -> bool:
        """Whether a flag's name asks for the clock in the system prompt (:attr:`prompt_words`)."""
        words = _words(keyword)
        clock, prompt = words & self.clock_words, words & self.prompt_words
        if not clock or not prompt or not words.isdisjoint(_TIMING_WORDS) or not words.isdisjoint(self.measure_verbs):
            return False
        return prompt != {"system"} or not clock <= {"time", "clock"}

    def is_policy(self, name: str, node: ast.expr | None) -> bool:
        """Whether tools bound to ``name`` (or given as ``node``) are a policy over tools (:attr:`policy_words`)."""
        if isinstance(node, ast.Dict) and any(
            constant(key) in self.policy_words or constant(key) in self.policy_keys for key in node.keys
        ):
            return True
        return not self.policy_words.isdisjoint(_words(name))

    def is_store(self, name: str | None) -> bool:
        """Whether a receiver's name says it is a store (:attr:`store_words`)."""
        return name is not None and not self.store_words.isdisjoint(_words(name))

    def reports(self, node: ast.expr | None) -> bool:
        """Whether an expression is a report, not a request: a dict display with a key of :attr:`report_keys`, or
        a call of a function whose name has a word of :attr:`report_words`."""
        if isinstance(node, ast.Dict):
            return any(
                isinstance(key, ast.Constant)
                and isinstance(key.value, str)
                and (key.value in self.report_keys or key.value.endswith(_REPORT_ENDINGS))
                for key in node.keys
            )
        if isinstance(node, ast.Call):
            called = last_name(node.func)
            return called is not None and not self.report_words.isdisjoint(_words(called))
        return False

    def measures(self, called: str) -> bool:
        """Whether a call measures what it is given (a token count) rather than sends it (:attr:`measure_verbs`):
        what it returns is a number, whatever time what it measures holds."""
        return called.lstrip("_").partition("_")[0] in self.measure_verbs

    def records_events(self, name: str | None) -> bool:
        """Whether an object's name says it records what happens (:attr:`recorders`): ``tracer``, ``self._logger``,
        ``run_telemetry``."""
        return name is not None and _snake(name).rpartition("_")[2] in self.recorders

    def replies(self, called: str | None) -> bool:
        """Whether a call, by its dotted name, returns a model's reply (:attr:`completion_calls`)."""
        return (
            called is not None
            and called.rpartition(".")[2] in self.completion_methods
            and any(called == name or called.endswith(f".{name}") for name in self.completion_calls)
        )

    def is_record(self, name: str) -> bool:
        """Whether an identifier names a record (``RunOutput``, ``tool_call``), by its words; not one that names a
        schema (``ResponseFormat``: :attr:`schema_words`)."""
        words = _word_list(name)
        return bool(words) and words[-1] not in self.schema_words and not self.record_words.isdisjoint(words)

    def snapshots(self, name: str) -> bool:
        """Whether a called class's name says it keeps a snapshot of an agent (:attr:`snapshot_words`)."""
        words = _word_list(name)
        return name[:1].isupper() and len(words) > 1 and words[-1] in self.snapshot_words and "agent" in words[:-1]

    def reads_reply(self, name: str) -> bool:
        """Whether a called class's name says it reads the model's reply (:attr:`reply_readers`)."""
        return name.endswith(self.reply_readers)

    def returns_tool_calls(self, function: str) -> bool:
        """Whether a function's name says it returns the tool calls a model made (``get_tool_messages``,
        ``parse_tool_calls``): what it returns is read from a reply, whatever order or ids went into finding them.
        A function that returns tool definitions says tools, schemas or specs."""
        words = _words(function)
        return (
            "tool" in words
            and not words.isdisjoint(("call", "calls", "message", "messages"))
            and words.isdisjoint(_DEFINITION_WORDS)
        )

    def extend(self, extra: dict[str, list[str]]) -> Vocabulary:
        """This vocabulary with more names; ``extra`` maps a field (``-`` or ``_`` between words) to names."""
        changes: dict[str, frozenset[str] | tuple[str, ...]] = {}
        for key, names in extra.items():
            name = key.replace("-", "_")
            current = getattr(self, name)
            changes[name] = (*current, *names) if isinstance(current, tuple) else current | set(names)
        return replace(self, **changes)  # type: ignore[arg-type]


_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")


@lru_cache(maxsize=1 << 16)
def _words(name: str) -> frozenset[str]:
    """The words of an identifier, lowercased: asked of every class and method called, most of them many times."""
    return frozenset(_word_list(name))


@lru_cache(maxsize=1 << 10)
def _annotation(text: str) -> ast.expr | None:
    """A string annotation (``"list[Tool]"``) parsed, once per text: asked at every ``return`` of its function."""
    try:
        return ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError):
        return None


@lru_cache(maxsize=1 << 14)
def _word_list(name: str) -> tuple[str, ...]:
    """The words of an identifier in order, lowercased (``AIMessage``: ``ai``, ``message``)."""
    return tuple(word.lower() for word in _WORD.findall(name))


#: Generic sequences a function's return annotation may name (``list[Tool]``).
_SEQUENCES = frozenset({"list", "List", "Sequence", "tuple", "Tuple"})
#: Where a function's name goes on from what it makes to what it is made of (``_from_memory``, ``_async``).
_MADE_OF = re.compile(r"_(?:from|for|with|async)(?:_|$)")


@lru_cache(maxsize=1 << 14)
def _makes(function: str, verbs: frozenset[str], names: tuple[str, ...]) -> bool:
    """:meth:`Vocabulary.makes_system_prompt`, once per name: asked of every call."""
    verb, _, made = function.lstrip("_").lower().partition("_")
    return verb in verbs and _MADE_OF.split(made, maxsplit=1)[0].endswith(names)


#: Where a class's CamelCase name starts a new word (``SystemPromptBuilder``: system_prompt_builder).
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


@lru_cache(maxsize=1 << 12)
def _snake(name: str) -> str:
    """An object's name in snake case, lowercased (``ChatSystemPromptBuilder``: ``chat_system_prompt_builder``):
    asked of the receiver of every method call given a sink keyword."""
    return _CAMEL.sub("_", name.lstrip("_")).lower()


#: Words that say a function makes tool definitions, even when it names tool calls (``tool_call_schema``).
_DEFINITION_WORDS = frozenset({"schema", "schemas", "spec", "specs", "definition", "definitions", "param", "params"})

VOCABULARY = Vocabulary()
FIELDS = frozenset(item.name for item in fields(Vocabulary) if item.init)

#: Builtins whose result does not depend on the order of their iterable, or carries none of it.
ORDER_FREE = frozenset({"sorted", "min", "max", "sum", "any", "all"})
OPAQUE = frozenset({"len", "isinstance", "issubclass", "hasattr", "callable", "id", "type", "bool", "hash"})
#: Words of a flag's name that say it times or logs what it names (``log_prompt_time``), not that it asks for the
#: clock in the prompt (:meth:`Vocabulary.asks_for_clock`).
_TIMING_WORDS = frozenset(
    {"log", "trace", "metric", "metrics", "span", "track", "elapsed", "latency", "duration", "cpu"}
)
#: How the keys that only a report holds end (:attr:`Vocabulary.report_keys`): a count, a time something happened.
_REPORT_ENDINGS = ("_count", "_at")
#: The builtin set types, called (``set(...)``, a ``defaultdict`` factory) by these names.
SET_TYPES = frozenset({"set", "frozenset"})
#: Annotations of a set, by last name: the builtins and the ``typing`` and ``collections.abc`` aliases.
SET_ANNOTATIONS = SET_TYPES | {"Set", "FrozenSet", "AbstractSet", "MutableSet"}
#: Calls that keep nothing of an argument's order (builtins that sort, count or test it; a set's methods, a
#: ``Counter``): a list given to one does not leave a function as it is (:func:`~.syntax.escaping`).
ORDER_CONSUMERS = (
    ORDER_FREE
    | OPAQUE
    | SET_TYPES
    | {"Counter", "update", "union", "intersection", "difference", "symmetric_difference"}
    | {"issubset", "issuperset", "isdisjoint", "difference_update", "intersection_update"}
)
#: Builtins that return a part of what they are given (``getattr(tools, name)``): the object itself does not leave.
PART_READERS = frozenset({"getattr"})
#: Builtin classes subscripted to a generic alias and called as themselves (``set[str]()``).
GENERIC_BUILTINS = SET_TYPES | {"list", "tuple", "dict"}
#: Builtins that turn an iterable into a sequence in its iteration order.
SEQUENCERS = frozenset(
    {"list", "tuple", "enumerate", "iter", "reversed", "next", "map", "filter", "zip", "str", "repr"}
)
#: Text transformations that keep the layout AC105 reads (prompts are often dedented triple-quoted strings).
LAYOUT_KEEPING = frozenset({"textwrap.dedent", "inspect.cleandoc"})
LAYOUT_KEEPING_METHODS = frozenset({"strip", "lstrip", "rstrip"})
#: Methods that fill a text with their arguments, keyword ones too (templates of str, string.Template, LangChain).
TEXT_METHODS = frozenset(
    {"format", "format_map", "substitute", "safe_substitute", "format_messages", "format_prompt", "partial"}
    | {"replace", "join", "from_template", "from_messages", "render", "render_async"}  # and Jinja's
)
#: A LangChain runnable's methods (a LangGraph graph's) that take a run's config, and the position it is given at
#: when not by keyword: its ``configurable`` ids name the thread the run keeps state under.
RUN_CONFIG_POSITIONS = {
    **dict.fromkeys(("invoke", "ainvoke", "stream", "astream", "batch", "abatch", "astream_events"), 1),
    **dict.fromkeys(("get_state", "aget_state", "get_state_history", "aget_state_history"), 0),
}
#: Decorators that make a method a property: reading it runs it.
PROPERTIES = frozenset({"property", "cached_property"})


def is_property(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether a method is a property's getter (``@property``, ``@cached_property``): reading the name runs it."""
    return any(last_name(decorator) in PROPERTIES for decorator in node.decorator_list)


#: Methods that fill a text with their arguments where it asks for them: a placeholder, a template's variable.
PLACEHOLDER_FILLERS = frozenset({"replace", "format", "format_map", "substitute", "safe_substitute", "render"})
#: Methods that fill a template's placeholders by name: a keyword argument is printed only where the text names it.
FILLERS = frozenset(
    {"format", "substitute", "safe_substitute", "format_messages", "format_prompt", "partial", "render", "render_async"}
)
#: Calls that make a template from a text or a file's (:meth:`Interpreter.template_source`), and the methods that
#: render one.
TEMPLATE_SOURCES = frozenset({"from_string", "get_template", "jinja2.Template", "jinja2.environment.Template"})
RENDERERS = frozenset({"render", "render_async"})
#: Calls that make a template of the text they are given first (Jinja's, string.Template's, LangChain's).
TEMPLATE_MAKERS = frozenset({"from_string", "Template", "PromptTemplate", "from_template"})
#: The class (:attr:`~agentcache.lint.python.values.Value.cls`) of a template a template source made from a text or
#: a file the analysis cannot read.
TEMPLATE = "jinja2.Template"
#: The class of a dict whose values are sets (``defaultdict(set)``, ``by_tag: dict[str, set[str]] = {}``): an item
#: read of it is a set, iterated in hash order.
SETS = "builtins.dict[set]"
#: The class of a dict that holds records by key (``sessions[session_id] = {"id": session_id, "agent": agent}``):
#: its entries are what each key of its records holds, so an item read of it by key is a record with those entries
#: (the id a session's record keeps does not reach the agent stored beside it).
TABLE = "builtins.dict[record]"
#: Annotations of a mapping, by last name: ``dict[str, set[str]]`` says its values are sets.
MAPPING_ANNOTATIONS = frozenset({"dict", "Dict", "defaultdict", "DefaultDict", "Mapping", "MutableMapping"})
#: Calls that return a copy of their argument: a dict of variables copied keeps its entries.
COPIES = frozenset({"copy.copy", "copy.deepcopy"})
#: Calls that run the function given first on a worker thread and return what it returns (``await
#: asyncio.to_thread(build_block, cwd)`` is ``build_block(cwd)``), by dotted name -> whether they hand it their
#: keyword arguments too. ``loop.run_in_executor(executor, f, *args)``, by its method name, gives none.
THREAD_RUNNERS = {
    "asyncio.to_thread": True,
    "anyio.to_thread.run_sync": False,
    "starlette.concurrency.run_in_threadpool": True,
    "fastapi.concurrency.run_in_threadpool": True,
}
RUNNER_NAMES = frozenset(name.rpartition(".")[2] for name in THREAD_RUNNERS)
#: Calls that yield the tasks they are given as they finish: iterated, in an order that differs from call to call.
AS_FINISHED = frozenset({"asyncio.as_completed", "concurrent.futures.as_completed"})
#: Methods that make an object of a dict, its fields the dict's items (pydantic's): a field read is that item, by
#: its name or its camel-case alias. The class (:attr:`~agentcache.lint.python.values.Value.cls`) of such an object.
RECORD_LOADERS = frozenset({"model_validate", "parse_obj"})
RECORD = "pydantic.BaseModel[dict]"
#: Calls that copy a record with some fields given anew (``dataclasses.replace(obj, field=value)``): a field read of
#: the copy is what it was given, not what the other fields were.
RECORD_COPIES = frozenset({"dataclasses.replace", "copy.replace"})
#: Keyword arguments that give a factory called once per object made (dataclasses, pydantic, attrs).
FACTORY_KEYWORDS = frozenset({"default_factory", "factory"})
DUMPS = frozenset({"json.dumps", "json.dump", "orjson.dumps"})
MUTATORS = frozenset({"append", "extend", "insert", "add", "update", "appendleft", "extendleft", "setdefault"})
#: The mutators that add to a sequence, in the order they are called: its last argument is what they add.
SEQUENCE_MUTATORS = frozenset({"append", "extend", "insert", "appendleft", "extendleft"})
SET_ALGEBRA = frozenset({"union", "intersection", "difference", "symmetric_difference", "copy"})
#: Operators that make a set of two sets (``a | b``); on anything else they combine like any operator.
SET_OPERATORS = (ast.BitOr, ast.BitAnd, ast.Sub, ast.BitXor)


def source_kind(name: str, given: int, words: Vocabulary = VOCABULARY) -> str | None:
    """The origin kind of a call to the imported ``name`` with ``given`` arguments: a clock read, a random draw, a
    fresh id or a value of the running process (its id); None for any other call."""
    if name in words.clock_calls or (name in CLOCK_UNLESS_GIVEN and given < CLOCK_UNLESS_GIVEN[name]):
        return CLOCK
    if name in words.id_calls:
        return FRESH_ID
    if name in PROCESS_CALLS:
        return PROCESS
    if name == "os.urandom" or (name.startswith(("random.", "secrets.")) and name not in NOT_DRAWS):
        return None if name == "random.Random" and given else RANDOM  # seeded: the same draws on every run
    return None
