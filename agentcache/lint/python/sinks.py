"""Sinks: the parts of a request that form its cached prefix (system prompts, tool lists, output schemas). The
interpreter hands each one the value that reaches it; :class:`Sinks` keeps what breaks a rule."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from agentcache.lint.core import Rule
from agentcache.lint.python.rules import (
    MIN_STABLE_TAIL,
    SET_ORDER,
    UNSORTED_SCHEMA_DUMP,
    VOLATILE_BEFORE_STABLE,
    VOLATILE_SYSTEM_PROMPT,
    VOLATILE_TOOLS,
    Report,
    message,
)
from agentcache.lint.python.syntax import Function, constant, entry_at, escaping, last_name, unsent_messages
from agentcache.lint.python.values import (
    CLOCK,
    KEY_ORDER,
    PARAM,
    Origin,
    Value,
    changing,
    is_part,
    orders,
    stable_tail,
    volatile,
)
from agentcache.lint.python.vocabulary import (
    AGENT,
    BINDER,
    FACTORY,
    MESSAGE,
    ORDER_CONSUMERS,
    PART_READERS,
    SCHEMA,
    SETTER,
    SYSTEM,
    Callee,
    Vocabulary,
)

#: The fields of a system message that are sent as part of it: its text, and its name (OpenAI's ``name``).
MESSAGE_FIELDS = ("content", "name")
#: How the name of a setter's argument that says which record to set ends (``session_id``, ``cache_key``).
_KEYS = ("_id", "_key", "session", "_uuid")
#: What the findings call the sinks sent before the messages.
TOOL_LIST, TOOL_SCHEMA, OUTPUT_SCHEMA = "the tool list", "the tool schema", "the output schema"


class Sinks:
    """The reports of one module, keyed by rule and position so a sink reached twice is one report."""

    def __init__(self, words: Vocabulary, stack: list[Function], tree: ast.Module) -> None:
        self.words = words
        self.stack = stack
        """The functions being run, innermost last (the interpreter's call stack)."""
        self.tree = tree
        self.unsent: frozenset[int] | None = None
        """The message dicts (by id) only given to a tool run or measured (:func:`~.syntax.unsent_messages`), worked
        out when the module's first system message is met."""
        self.reports: dict[tuple[str, int, int], Report] = {}
        self.definitions: dict[tuple[str, int, int], Report] = {}
        """Reports at a tool's definition (:meth:`definition_sink`): kept only for what no tool sink reports."""
        self.bound: dict[tuple[int, int], str] = {}
        """Position of a value bound at module level to a name that says system prompt or tools -> that name."""
        self.escaping: dict[int, frozenset[str]] = {}
        """Function or script block (by id) -> the names whose object leaves it as it is (:meth:`leaves`)."""
        self.script: ast.If | None = None
        """The module's ``if __name__ == "__main__":`` block while it runs: its names are a script's locals, but
        for those the module's functions read (``globals_read``)."""
        self.globals_read: frozenset[str] | None = None
        """Worked out when the module's ``__main__`` block first runs (:func:`~.syntax.read_as_globals`)."""
        self.recorded: set[tuple[int, str]] = set()
        """(function by id, 0 at module level; name) of the names bound to a report (:meth:`Vocabulary.reports`:
        a run's result, a status panel, a usage table): :meth:`records`."""
        self.sentinels: set[str] = set()
        """Names compared by identity (``if prompt is DEFAULT_PROMPT``): a module-level one is a marker for "not
        given", replaced before anything is sent, so what it is bound to is no sink."""
        self.flag_items: dict[tuple[int, int], str] = {}
        """Clock flags given as a dict's items, by position: their keys (:meth:`clock_flag`)."""
        self.compaction = False
        """Whether the module's name says it compacts a conversation (:meth:`compacts`)."""
        self.system_messages: set[int] = set()
        """The nodes (by id) that made a system message: :meth:`ordered_messages` asks of the messages a collection
        is made of."""
        self.named_messages: dict[tuple[int, str], ast.expr] = {}
        """(function by id, variable) -> the system message last bound to it (``message = SystemMessage(...)``),
        then added to a collection by name (:meth:`bind`)."""
        self.reaching: dict[int, int] = {}
        """Function (by id) whose run reached a system prompt sink -> how many calls deep the nearest was (0: in its
        own body): those whose parameters may be sent as one (:meth:`~.interpreter.Interpreter.sending`)."""
        self.parameters: set[str] | None = None
        """While a function is run with parameters of their own: those that reached a system prompt."""

    def bind(self, name: str, source: ast.expr | None) -> None:
        """A name of the running function bound to ``source``: from now on a report (:meth:`records`) or not, and
        a system message (for :meth:`ordered_messages`) or not."""
        key = (id(self.stack[-1]) if self.stack else 0, name)
        (self.recorded.add if self.words.reports(source) else self.recorded.discard)(key)
        if source is not None and id(source) in self.system_messages:
            self.named_messages[key] = source
        elif self.named_messages:
            self.named_messages.pop(key, None)

    def records(self, name: str) -> bool:
        """Whether a name of the running function holds a report: an item stored in it (``info["system_prompt"]
        = ...`` of a status panel) or taken from it into a dict (``{"tools": tools}`` of a usage table) is no
        sink."""
        return (id(self.stack[-1]) if self.stack else 0, name) in self.recorded

    def call_sinks(
        self,
        node: ast.Call,
        name: str,
        called: Callee,
        args: list[Value],
        kwargs: dict[str, Value],
        spread: list[Value],
        default: str | None = None,
        dropped: frozenset[str] = frozenset(),
        prompt: bool = False,
    ) -> bool:
        """The sinks among a call's arguments: ``system=``, ``tools=``, ``SystemMessage(...)``, ``bind_tools``,
        ``set_instruction(...)``, ``Message(role="system", content=...)``, ``Message("system", text)``... Returns
        whether the call makes a message of another role (``role="user"``, ``HumanMessage(...)``): what that holds
        is never a system prompt or a tool list, so the interpreter drops it, wherever the message is then put. A
        flag that asks for the clock (``add_datetime_to_context=True``: :meth:`Vocabulary.asks_for_clock`) is the
        current time in the system prompt.
        ``name``: the called name, ``called``: what the vocabulary says of it; ``spread``: the dicts given as
        ``**kwargs``, whose entries are keyword arguments too. ``default``: the role the called class gives its
        objects when not given ``role=`` (:data:`SYSTEM`, another of ``other_roles``, ``""`` for one of its own),
        read from its body: it says what the class makes, whatever its name says. ``dropped``: the keywords the
        called function never reads (what it is given there goes nowhere). ``prompt``: its ``prompt=`` is a system
        prompt (an agent factory's, or :meth:`Vocabulary.takes_prompt` of a class or method not the project's). The
        keywords given to a method of an object that records what happens (:meth:`Vocabulary.records_events`:
        ``tracer.start_session(system_prompt=...)``) are written to a trace, not sent."""
        func = node.func
        method = isinstance(func, ast.Attribute)
        words = self.words
        recorded = (  # asked only of a method given keywords: every call passes here
            isinstance(func, ast.Attribute) and bool(node.keywords) and words.records_events(last_name(func.value))
        )
        role: ast.keyword | None = None
        unpacked = 0
        for keyword in node.keywords:
            if keyword.arg is None:
                for key, value in spread[unpacked].entries or ():
                    if (key in words.sink_keywords and not recorded) or (key == "prompt" and prompt):
                        item = entry_at(keyword.value, key) if isinstance(keyword.value, ast.Dict) else None
                        given = item or keyword.value  # **{"tools": {...}}: that item
                        if key == "prompt" and prompt:
                            self.system_sink(given, value)
                        else:
                            self.keyword_argument(key, given, value, name, called, method)
                unpacked += 1
            elif keyword.arg == "role":
                role = keyword
            elif keyword.arg == "prompt" and prompt:
                self.system_sink(keyword.value, kwargs[keyword.arg])
            elif keyword.arg in words.sink_keywords and keyword.arg not in dropped and not recorded:
                self.keyword_argument(keyword.arg, keyword.value, kwargs[keyword.arg], name, called, method)
            elif not words.measures(name):
                self.clock_flag(keyword.arg, keyword.value)
        sink = called.sink
        if sink == FACTORY and not (
            isinstance(func, ast.Attribute) and words.is_system_message(last_name(func.value), name)
        ):
            sink = None
        if default is not None and role is None:
            if default != SYSTEM:
                return bool(default)
            sink = MESSAGE
        if sink in (MESSAGE, FACTORY):
            self.system_messages.add(id(node))
            if node.args:
                self.system_sink(node.args[0], args[0])
            self.message_sinks(node, kwargs, "template", "prompt")
        elif sink == BINDER and node.args:
            self.tools_sink(node.args[0], args[0])
        elif sink == SCHEMA and node.args:
            self.tools_sink(node.args[0], args[0], sink=OUTPUT_SCHEMA)
        elif sink == AGENT and len(node.args) > 1:
            self.tools_sink(node.args[1], args[1])
        elif sink == SETTER and node.args and not any(kw.arg in words.system_keywords for kw in node.keywords):
            if not (isinstance(func, ast.Attribute) and words.is_store(last_name(func.value))):
                index = self.setter_prompt(node.args)  # by keyword, it is not first: (chat_ctx, instructions=)
                self.system_sink(node.args[index], args[index])
        elif role is not None or called.role is not None:
            return self.role_sinks(node, role, called.role, args, kwargs)
        return False

    def setter_prompt(self, given: list[ast.expr]) -> int:
        """Which positional argument of a setter is the prompt: the only one; of several (``update_system_prompt(
        session_id, prompt)``), the last that a name says is a prompt, else the last not named as an id or key."""
        if len(given) == 1:
            return 0
        names = [last_name(arg) or "" for arg in given]
        prompts = [index for index, name in enumerate(names) if "prompt" in name or "instruction" in name]
        if prompts:
            return prompts[-1]
        keys = [index for index, name in enumerate(names) if name not in ("id", "key") and not name.endswith(_KEYS)]
        return keys[-1] if keys else len(given) - 1

    def role_sinks(
        self, node: ast.Call, role: ast.keyword | None, named: str | None, args: list[Value], kwargs: dict[str, Value]
    ) -> bool:
        """A message given its role. By ``role=``: the content is ``content=`` or the first argument
        (griptape's and LangChain's ``Message(text, role=...)``). Else by the name of its class (``named``,
        :attr:`Callee.role`: ``user`` for ``HumanMessage``), else as the first argument of a message class:
        ``Message("system", text)``, the content second, is a system prompt only where a function whose name says
        prompt builds it (``prompt_timeinfo``), since frameworks that take the role first also send tool output
        and notices as system messages (gptme). A system message's content and name are sinks; True for another
        role's message."""
        content = 0
        if role is not None:
            found = self.role(role.value, kwargs["role"])
        else:
            found = named
            if found == "" and node.args:
                found, content = self.role(node.args[0], args[0]), 1
                if found == SYSTEM and not (self.stack and self.words.builds_prompt(self.stack[-1].name)):
                    return False
        if found == SYSTEM:
            self.system_messages.add(id(node))
            if len(node.args) > content:
                self.system_sink(node.args[content], args[content])
            self.message_sinks(node, kwargs)
        return bool(found) and found != SYSTEM

    def dict_sinks(self, node: ast.Dict, values: list[Value]) -> bool:
        """A message dict (``{"role": "system", "content": ...}``): a system message's content and name are sinks;
        True for another role's message, as :meth:`call_sinks`."""
        fields = {constant(key): index for index, key in enumerate(node.keys) if key is not None}
        for field, at in fields.items():
            if isinstance(field, str):
                self.clock_flag(field, node.values[at], item=True)
        index = fields.get("role")
        role = self.role(node.values[index], values[index]) if index is not None else None
        if role == SYSTEM:
            if self.unsent is None:
                self.unsent = unsent_messages(self.tree, self.words.holds_tools, self.words.measures)
            if id(node) in self.unsent:
                return False  # a tool's argument or a measure's, not a request's system prompt
            self.system_messages.add(id(node))
            for field in MESSAGE_FIELDS:
                if field in fields:
                    self.system_sink(node.values[fields[field]], values[fields[field]])
        return bool(role) and role != SYSTEM

    def system_tuple(self, node: ast.Tuple, content: Value) -> None:
        """LangChain's ``("system", text)`` message tuple."""
        self.system_messages.add(id(node))
        self.system_sink(node.elts[1], content)

    def ordered_messages(self, node: ast.expr | None, order: frozenset[Origin], items: frozenset[str]) -> None:
        """Messages made one per item of a set, or in a shuffled order, into one collection (``node``: a
        comprehension's element, what a loop appends, extends with or yields, a message or a variable bound to
        one; ``items``: the names the loops bind to each item): the order of the system messages among them is
        part of the system prompt, as a set's order is when it is joined into one message. Reported at each
        system message's construction that reads an item (the same message added once per item is the same
        whatever the order); a user's or an assistant's message is conversation."""
        if isinstance(node, (ast.List, ast.Tuple)):
            made = node.elts
        elif isinstance(node, (ast.ListComp, ast.GeneratorExp)):
            made = [node.elt]
        else:
            made = [node] if node is not None else []
        function = id(self.stack[-1]) if self.stack else 0
        for item in made:
            if isinstance(item, ast.Name):
                item = self.named_messages.get((function, item.id), item)
            if id(item) in self.system_messages and any(
                isinstance(part, ast.Name) and part.id in items for part in ast.walk(item)
            ):
                self.system_sink(item, Value(order), taken=True)

    def mapping_sinks(self, node: ast.Dict, value: Value) -> None:
        """A dict display bound to a name or returned, whose items under the keyword of a tool list or an output
        schema differ (``return {"response_format": schema}``, ``payload = {"tools": tools}``): such a dict is the
        keyword arguments of a call (``**kwargs``) or a request's body, unless a key says it is a report (a run's
        result, a status panel: :meth:`Vocabulary.reports`). A dict written as an argument is the called
        function's (a record logged, a payload dumped), not followed; and the system keywords are too common as a
        record's fields (``{"instructions": ...}`` of an artifact) to say so of a dict. A tool's definition is
        checked too (:meth:`definition_sink`)."""
        if self.words.reports(node):
            return
        self.definition_sink(node, value)
        if not value.entries:
            return
        entries = dict(value.entries)
        for key, item in zip(node.keys, node.values, strict=True):
            name = constant(key)
            if (
                isinstance(name, str)
                and name in entries
                and self.words.lists(name)
                and not (isinstance(item, ast.Name) and self.records(item.id))
            ):
                self.keyword_sink(name, item, entries[name])

    def item_sink(self, key: str, node: ast.expr | None, value: Value) -> None:
        """An item stored in a dict under a constant key: under the keyword of a tool list or an output schema, as
        in a dict display (``kwargs["response_format"] = schema``: :meth:`mapping_sinks`), else as a name that
        says system prompt or tools (``state["system_prompt"]``)."""
        if node is not None and self.words.lists(key):
            self.keyword_sink(key, node, value)
        else:
            self.named_sink(key, node, value)
        if node is not None:
            self.clock_flag(key, node, item=True)

    def clock_flag(self, name: str, node: ast.expr, item: bool = False) -> None:
        """A flag that asks a framework to stamp the clock into the system prompt (:meth:`Vocabulary.asks_for_clock`)
        given ``True``: as a call's keyword argument (``Agent(add_datetime_to_context=True)``) or as a dict's
        ``item``, made to be spread into such a call (``args = {"add_datetime_to_context": True}``, the caller's
        ``Agent(**args)`` often out of sight). The clock is read by the framework; the choice is made here, so it
        is reported here. An item is kept in :attr:`flag_items`: a project that reads the key itself
        implements the flag, and its clock read is judged where it is made."""
        if constant(node) is True and self.words.asks_for_clock(name):
            stamp = Origin(node.lineno, node.col_offset, CLOCK, f"{name}=True")
            self.system_sink(node, Value(frozenset({stamp})))
            if item:
                self.flag_items[node.lineno, node.col_offset] = name

    def keyword_argument(
        self, keyword: str, node: ast.expr, value: Value, name: str, called: Callee, method: bool
    ) -> None:
        """A call's keyword argument, when it is a sink: a system keyword but a template's placeholder
        (``PROMPT.format(instruction=task)``) or one request's task (``predict_click(instruction=desc)``,
        ``branch.operate(instruction=...)``: ``method`` says the call is a method's), a tool list or output schema
        but a record's, a reply reader's or an agent's snapshot's (``AgentState(tools=...)``); none of a call that
        measures a request (``estimate_tokens(history, system_prompt=...)``)."""
        words = self.words
        if words.measures(name):
            return
        if (keyword in words.system_keywords and not called.template and not words.is_task(keyword, name, method)) or (
            words.lists(keyword)
            and not (words.is_record(name) or words.reads_reply(name))
            and not (keyword in words.tools_keywords and words.snapshots(name))
        ):
            self.keyword_sink(keyword, node, value)

    def keyword_sink(self, keyword: str, node: ast.expr, value: Value) -> None:
        """What a sink's keyword is given (``system=``, ``tools=``, ``response_format=``), as a call's keyword
        argument or as a dict's key: such a dict is the keyword arguments of a call (``**kwargs``) or a request's
        body. Tools given as a policy (``{"allow": [...], "deny": [...]}``) are none."""
        if keyword in self.words.system_keywords:
            self.system_sink(node, value)
        elif keyword not in self.words.tools_keywords:
            self.tools_sink(node, value, sink=OUTPUT_SCHEMA)  # a schema's keys are its own, never a policy's
        elif not self.words.is_policy(keyword, node):
            self.tools_sink(node, value, sink=TOOL_LIST)

    def message_sinks(self, node: ast.Call, kwargs: dict[str, Value], *extra: str) -> None:
        """A system message's ``content=`` and ``name=`` (and ``extra`` keywords: a template's ``template=``, or the
        ``prompt=`` of LangChain's ``SystemMessagePromptTemplate``)."""
        for keyword in node.keywords:
            if keyword.arg in MESSAGE_FIELDS or keyword.arg in extra:
                self.system_sink(keyword.value, kwargs[keyword.arg])

    def named_sink(
        self, name: str, node: ast.expr | None, value: Value, owner: str | None = None, local: bool = False
    ) -> None:
        """A binding whose name says system prompt or tools is a sink of its own, but for tool calls the model
        made: the tools of a record (``run.tools``), and those bound in a function that parses the reply's tool
        calls (``candidate_tools`` in ``get_tool_message``). A set bound there is not yet an order: it becomes one
        where it is iterated (a set kept for membership tests never is). A function's own variable (``local``)
        is a tool list only if it leaves the function as it is (:func:`~agentcache.lint.python.syntax.escaping`):
        tools are sent as a whole, and one only iterated or tested there (``requested_tools & SUPPORTED``, the
        commands an artifact goes to) is not; what it holds is reported where it reaches a sink. So is a name bound
        in the module's ``__main__`` block (a demo that prints what a toolset resolves to). A policy over tools
        (``allowed_tools``) is no tool list."""
        if node is None:
            return
        if not self.stack:
            self.bound[node.lineno, node.col_offset] = name
        lowered = name.lower()
        if lowered.endswith(self.words.system_names):
            self.system_sink(node, value, taken=True)
        elif lowered == "tools" or lowered.endswith("_tools"):
            if (
                (owner and self.words.is_record(owner))
                or self.words.is_policy(name, node)  # allowed_tools, {"allow": [...]}: which tools may run
                or (self.stack and self.words.returns_tool_calls(self.stack[-1].name))
                or not (volatile(value.origins) or orders(value, taken=True))  # nothing to report: spare the walk
                or (local and (self.stack or self.script) and not self.leaves(name))
                or (local and self.words.reports(node))  # tools = self._compute_tool_breakdown(usage)
            ):
                return
            self.tools_sink(node, value, taken=True)

    def compacts(self) -> bool:
        """Whether the running code compacts a conversation, by its module's name or a running function's
        (:meth:`~agentcache.lint.python.vocabulary.Vocabulary.compacts`): a system message made there is a note
        inserted into the history once (clawsoul's compaction summary, stamped with its date), resent as stored
        and never made again for a call, so nothing in it is reported."""
        return self.compaction or any(self.words.compacts(function.name) for function in self.stack)

    def leaves(self, name: str) -> bool:
        """Whether the running function's (or script block's) variable ``name`` leaves it as it is: asked of a
        variable named like tools, whose escaping names are worked out once per function."""
        body = self.stack[-1] if self.stack else self.script
        if body is None or (body is self.script and name in (self.globals_read or ())):
            return True  # a module's own name: its functions or other modules may read it
        found = self.escaping.get(id(body))
        if found is None:
            found = self.escaping[id(body)] = escaping(body, self.consumes)
        return name in found

    def consumes(self, node: ast.expr) -> bool:
        """Whether a call or a dict display keeps nothing of what it is given as it is: a call that measures it (a
        token estimate), keeps nothing of its order (``sorted``, ``all_tools.update(tools)``) or reads a part of it
        (``getattr(tools, name)``), a report, a record's constructor (``ResponseConfigOverview(active_tools=...)``,
        what a dashboard shows); or whether a place a value is stored in (an assignment's target, a dict's key)
        holds a policy over tools, applied by membership (``profile["allowed_tools"] = tools``)."""
        if isinstance(node, (ast.Subscript, ast.Attribute, ast.Constant)):
            if isinstance(node, ast.Subscript):
                place = constant(node.slice)  # profile["allowed_tools"]
            elif isinstance(node, ast.Attribute):
                place = node.attr  # profile.allowed_tools
            else:
                place = constant(node)  # a dict's key
            return isinstance(place, str) and self.words.is_policy(place, None)
        if self.words.reports(node):
            return True
        called = last_name(node.func) if isinstance(node, ast.Call) else None
        return called is not None and (
            called in ORDER_CONSUMERS
            or called in PART_READERS
            or self.words.measures(called)
            or (called[:1].isupper() and self.words.is_record(called))
        )

    def system_sink(self, node: ast.expr, value: Value, taken: bool = False) -> None:
        self.reached(value)
        if self.compacts():
            return
        differs = changing(value, taken)
        if differs:
            tail = stable_tail(value)
            if tail is not None and tail[2] >= MIN_STABLE_TAIL and tail[2] > tail[1]:
                report = self.report(VOLATILE_BEFORE_STABLE, node, differs, "the system prompt")
                report.first, report.stable_after = tail[0], tail[2]
            else:
                self.report(VOLATILE_SYSTEM_PROMPT, node, differs, "the system prompt")
        self.order_sink(node, orders(value, taken), "the system prompt")

    def tools_sink(self, node: ast.expr, value: Value, taken: bool = False, sink: str = TOOL_LIST) -> None:
        """A tool list, or an output schema (``response_format=``): both are sent before the messages."""
        differs = changing(value, taken)
        if differs:
            self.report(VOLATILE_TOOLS, node, differs, sink)
        self.order_sink(node, orders(value, taken), sink)

    def definition_sink(self, node: ast.expr, value: Value, declared: bool = False) -> None:
        """A dict display bound or returned that has the shape of a tool's definition (a function's ``name``,
        ``description`` and ``parameters``, ``input_schema`` or ``inputSchema``; ``{"type": "function",
        "function": ...}``): only ever made to be sent as a tool, even where the code that sends it is not seen
        (a tool file a framework reads and runs, a schema given to a wrapper). What differs in it is reported
        here when no tool sink reports any of it (one written into a system prompt is reported there too): a
        clock read, a draw or an id. Not a set's order, which the analysis keeps through what makes it moot when
        the schema is built for a sink it does not see (a set of one type picked by ``next(iter(...))``, the types
        of a union sorted by name). ``declared``: ``node`` is a class attribute of a tool class that is its
        definition (:attr:`~agentcache.lint.python.vocabulary.Vocabulary.tool_fields`), whatever its shape, made
        once where the class is defined: a set's order it took there is the schema's too."""
        changing = volatile(value.origins)
        if changing and (declared or (isinstance(node, ast.Dict) and _defines_tool(node))):
            self.report(VOLATILE_TOOLS, node, changing, TOOL_SCHEMA, defined=True)
        if declared:
            self.order_sink(node, orders(value, taken=True), TOOL_SCHEMA)

    def reached(self, value: Value) -> None:
        """Note that the running functions reach a system prompt, and which of their parameters ``value`` holds."""
        self.reach_from(0)
        if self.parameters is not None:
            for origin in value.origins:
                if origin.kind == PARAM and not is_part(origin):  # not a field read of it: the object is sent
                    self.parameters.add(origin.label.partition("[")[0])

    def reach_from(self, depth: int) -> None:
        """Note that the running function reaches a system prompt ``depth`` calls deep, and its callers deeper."""
        reaching = self.reaching
        for calls, function in enumerate(reversed(self.stack), depth):
            if reaching.get(id(function), calls + 1) > calls:
                reaching[id(function)] = calls

    def order_sink(self, node: ast.expr, found: frozenset[Origin], sink: str) -> None:
        """Set order reaching a sink: through ``json.dumps`` without sorted keys (AC104), or directly (AC103)."""
        dumps = frozenset(origin for origin in found if origin.kind == KEY_ORDER)
        if dumps:
            self.report(UNSORTED_SCHEMA_DUMP, node, dumps, sink)
        if found - dumps:
            self.report(SET_ORDER, node, found - dumps, sink)

    def role(self, node: ast.expr, value: Value) -> str | None:
        """A message's role: :data:`SYSTEM` for the system's, another of ``other_roles``, None when not known. A
        constant says it, also as a value (``role = "system"``, a helper's parameter), else a name does
        (:meth:`Vocabulary.role_named`: ``self.system_message_role``, ``Role.USER``)."""
        if value.text is not None:
            return self.words.role_text(value.text)
        found = last_name(node)
        return self.words.role_named(found) if found is not None else None

    def report(
        self, rule: Rule, node: ast.expr, origins: frozenset[Origin], sink: str, defined: bool = False
    ) -> Report:
        reports = self.definitions if defined else self.reports
        key = (rule.code, node.lineno, node.col_offset)
        report = reports.get(key)
        if report is None:
            report = reports[key] = Report(rule, node, sink)
        report.origins |= origins
        return report

    def results(self) -> Iterator[tuple[Rule, ast.expr, str]]:
        """(rule, node, message) per finding. Each source is reported once per problem, at the first sink it
        reaches, so a prompt assigned to ``SYSTEM_PROMPT`` and then sent is one finding, not two; at a tool's
        definition only when it reaches no sink."""
        seen: dict[str, set[Origin]] = {}
        for key in sorted(self.reports, key=lambda key: (key[1], key[2], key[0])):
            report = self.reports[key]
            if self.bound.get(key[1:]) in self.sentinels:
                continue
            rule = VOLATILE_SYSTEM_PROMPT if report.rule is VOLATILE_BEFORE_STABLE else report.rule
            group = seen.setdefault(rule.code, set())
            if report.origins <= group:
                continue
            group |= report.origins
            yield report.rule, report.node, message(report)
        sent = seen.setdefault(VOLATILE_TOOLS.code, set())  # a definition a tool sink reports is reported there
        for key in sorted(self.definitions, key=lambda key: (key[1], key[2], key[0])):
            report = self.definitions[key]
            if report.origins.isdisjoint(sent):
                sent |= report.origins
                yield report.rule, report.node, message(report)


#: The keys under which a tool's definition holds its parameters' schema: OpenAI's, Anthropic's, MCP's.
_PARAMETER_KEYS = frozenset({"parameters", "input_schema", "inputSchema"})
#: Keys only a tool's definition holds, of those a record of a call never does.
_DEFINITION_KEYS = _PARAMETER_KEYS | {"description", "function"}


def _defines_tool(node: ast.Dict) -> bool:
    """Whether a dict display is a tool's definition (:meth:`Sinks.definition_sink`): a function's name and
    description with a parameters' schema written out (``{"type": "object", "properties": ...}``), or that wrapped
    as ``{"type": "function", "function": ...}``. Not a tool call, nor a ``tool_choice``, which wrap a name with an
    id or the arguments, or alone; not a record or a run's config that names what it describes (an id, a time, a
    value given as the parameters)."""
    keys = _keys(node)
    if not keys.isdisjoint(_CALL_KEYS):
        return False
    if {"name", "description"} <= keys:
        schema = next((entry_at(node, key) for key in _PARAMETER_KEYS if key in keys), None)
        return isinstance(schema, ast.Dict) and not _keys(schema).isdisjoint(("type", "properties"))
    kind, function = entry_at(node, "type"), entry_at(node, "function")
    if kind is None or constant(kind) != "function" or function is None:
        return False
    return isinstance(function, ast.Name) or (isinstance(function, ast.Dict) and _defines_tool(function))


def is_tool_call(node: ast.Dict) -> bool:
    """Whether a dict display is a tool call with its id (``{"id": ..., "function": {"name": ..., "arguments":
    ...}}``, or the arguments beside the id): the model's, or a record of one, whose id is no tool definition's,
    wherever it is put (npcpy's ``detected_tools.append(...)``). Only those keys: a dict that holds anything else
    (a description, a time, a context) is not one."""
    keys = _keys(node)
    if not keys <= _TOOL_CALL_KEYS or keys.isdisjoint(("id", "call_id")):
        return False
    function = entry_at(node, "function")
    return "arguments" in keys or (isinstance(function, ast.Dict) and "arguments" in _keys(function))


def is_call_record(node: ast.expr) -> bool:
    """Whether an expression is a dict display that records a call (an id, the arguments, a time among its keys:
    ``{"tool": name, "observation": text, "timestamp": now}``) and holds nothing of a tool's definition (a
    description, a function, a parameters' schema): a list of them, whatever its name, is a log of the tools
    called, not tools sent."""
    if not isinstance(node, ast.Dict):
        return False
    keys = _keys(node)
    return not keys.isdisjoint(_CALL_KEYS) and keys.isdisjoint(_DEFINITION_KEYS)


def _keys(node: ast.Dict) -> set[object]:
    return {constant(key) for key in node.keys if key is not None}


#: Keys only a tool call or a record holds (an id, the arguments, a time), never a tool's definition.
_CALL_KEYS = frozenset({"id", "call_id", "tool_call_id", "arguments", "index", "created_at", "timestamp"})
#: The keys a tool call is made of, as the chat APIs return it: all of a dict's keys must be among them.
_TOOL_CALL_KEYS = frozenset({"id", "call_id", "type", "index", "name", "arguments", "function"})


def sorts_keys(node: ast.Call, name: str) -> bool:
    """Whether a ``json.dumps``/``orjson.dumps`` call sorts the keys it writes."""
    if name == "orjson.dumps":
        option = next((kw.value for kw in node.keywords if kw.arg == "option"), None)
        if option is None and len(node.args) > 2:
            option = node.args[2]
        return option is not None and not _only_orjson_flags(option, without="OPT_SORT_KEYS")
    flag = next((kw.value for kw in node.keywords if kw.arg == "sort_keys"), None)
    return flag is not None and not (isinstance(flag, ast.Constant) and not flag.value)


def _only_orjson_flags(node: ast.expr, without: str) -> bool:
    """Whether ``node`` is built only from ``OPT_*`` flags, none of them ``without`` (else: cannot tell)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _only_orjson_flags(node.left, without) and _only_orjson_flags(node.right, without)
    name = last_name(node)
    return name is not None and name.startswith("OPT_") and name != without
