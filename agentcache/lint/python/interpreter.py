"""The abstract interpreter: each expression evaluates to a :class:`~agentcache.lint.python.values.Value`; calls
are read by the name they import (clock, randomness, ids), by what the builtins do with order, or by running the
module's own function with the arguments' values. Statements are in :class:`Statements`."""

from __future__ import annotations

import ast
import re
import string
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import reduce
from typing import Any, ClassVar

from agentcache.lint.python.arrival import arrivals
from agentcache.lint.python.project import Reading, Sent, Summary
from agentcache.lint.python.sinks import TOOL_LIST, is_call_record, is_tool_call, sorts_keys
from agentcache.lint.python.statements import MAX_CALL_DEPTH, Memo, Statements, declares_set, set_fields
from agentcache.lint.python.syntax import (
    Function,
    SelfUses,
    bases_of,
    bound_names,
    callable_without_arguments,
    calls_super,
    constant,
    definitions,
    dotted,
    held_reads,
    imports,
    last_name,
    of_self,
    returns_own_class,
    returns_text,
    role_default,
    self_field,
    self_uses,
    starred,
    takes_arguments,
    targets_of,
    top_level_bindings,
    unread_parameters,
)
from agentcache.lint.python.templates import TemplateFiles, reads
from agentcache.lint.python.values import (
    ARRIVAL,
    CLEAN,
    KEY_ORDER,
    MAX_ITEMS,
    ORDER,
    PARAM,
    SHUFFLE,
    Origin,
    Scope,
    Value,
    arrival,
    combine,
    concat,
    element,
    export_kind,
    given_by_caller,
    is_part,
    join,
    keyed,
    made_set,
    meet,
    merged,
    order_free,
    ordered,
    orders,
    read_export,
    sequence_order,
    unattributed,
    under,
    unkeyed,
    volatile,
    with_entry,
)
from agentcache.lint.python.vocabulary import (
    AGENT,
    AS_FINISHED,
    COPIES,
    DUMPS,
    FACTORY_KEYWORDS,
    FILLERS,
    GENERIC_BUILTINS,
    LAYOUT_KEEPING,
    LAYOUT_KEEPING_METHODS,
    MUTATORS,
    OPAQUE,
    ORDER_FREE,
    PLACEHOLDER_FILLERS,
    PROPERTIES,
    RECORD,
    RECORD_COPIES,
    RECORD_LOADERS,
    RENDERERS,
    RUN_CONFIG_POSITIONS,
    RUNNER_NAMES,
    SEQUENCE_MUTATORS,
    SEQUENCERS,
    SET_ALGEBRA,
    SET_OPERATORS,
    SET_TYPES,
    SETS,
    TABLE,
    TEMPLATE,
    TEMPLATE_MAKERS,
    TEMPLATE_SOURCES,
    TEXT_METHODS,
    THREAD_RUNNERS,
    VOCABULARY,
    Vocabulary,
    is_property,
    source_kind,
)

#: Where the parameters of a run that looks for those sent (:meth:`Interpreter.parameters_sent`) are numbered from:
#: apart from a summary's, so that neither finds the other's calls in the memo.
SENDING = 1 << 16
#: How deep such a run follows calls: a helper that sends what it is given does it itself or through one more. A
#: function whose nearest system prompt is deeper is not run.
SENDING_REACH = 2

ExpressionHandler = Callable[["Interpreter", Any, Scope], Value]


class Interpreter(Statements):
    """One module's analysis: ``Interpreter(tree).run()``, then read ``sinks.results()``."""

    def __init__(
        self,
        tree: ast.Module,
        words: Vocabulary = VOCABULARY,
        package: str = "",
        learned: Reading | None = None,
        scope: Scope | None = None,
        templates: TemplateFiles | None = None,
        module: str = "",
        starting: frozenset[int] | None = None,
    ) -> None:
        """``package`` resolves relative imports; ``learned`` holds what other modules export
        (:class:`~agentcache.lint.python.project.Project`): ``mod.f()`` for a helper, ``mod.NAME`` for a constant.
        ``scope``: the module-level names an earlier part of the same module bound. ``templates``: the template
        files and modules of the module's package, that a template rendered by name or class is read from.
        ``module``: the module's dotted name, that its classes are known by. ``starting``: the lines of its text that
        start tasks (:func:`~agentcache.lint.python.arrival.starting_lines`; None: any may), where what they fill
        in finishing order is looked for."""
        super().__init__(tree, words)
        self.module = module
        self.sinks.compaction = words.compacts(module.rpartition(".")[2])
        if scope is not None:
            self.globals = scope
        self.templates = templates if templates is not None else TemplateFiles()
        self.data_keys = self.templates.keys()
        """The last keys of the strings in the package's data files (:meth:`data_text`)."""
        self.imports = imports(self.nodes, package)
        self.arrivals = arrivals(tree, starting)
        self.functions, self.methods = definitions(self.nodes)
        self.learned = learned if learned is not None else Reading({})
        self.typed: dict[int, dict[str, tuple[str, ...]]] = {}
        """Function (by id) -> its parameters annotated with an imported class -> that class's dotted name, alone
        in a tuple (:meth:`classes_of`)."""
        self.classes = {node.name for node in tree.body if isinstance(node, ast.ClassDef)}
        self.class_nodes = {node.name: node for node in self.nodes if isinstance(node, ast.ClassDef)}
        self.class_nodes.update((node.name, node) for node in tree.body if isinstance(node, ast.ClassDef))
        """The module's classes by name (a top-level one before a nested one of the same name)."""
        self.roles: dict[str, str | None] = {}
        """Class (by dotted name) -> the role it gives its objects when not given one (:meth:`class_role`)."""
        self.local_classes = {f"{module}.{name}": name for name in self.classes}
        """The module's classes by dotted name (:attr:`Value.cls`) -> their name here."""
        self.self_uses: dict[int, SelfUses] = {}
        """Method (by id) -> how it uses ``self`` (:meth:`uses`), once asked: kept with the module's analysis, not
        beyond it, so that no module's trees outlive its check."""
        self.self_reads: dict[int, frozenset[str]] = {}
        """Method (by id) -> the fields of ``self`` it reads, itself or through the methods it calls on ``self``
        (:meth:`reads_on_self`)."""
        self.method_classes: dict[int, ast.ClassDef] | None = None
        """Method (by id) -> the module's class that defines it (:meth:`own_method`), made once asked."""
        self.resolved: dict[tuple[int, str], Function | None] = {}
        """(class by id, method name) -> what ``self.name(...)`` calls in its methods (:meth:`own_method`)."""
        self.declared_fields: dict[int, dict[str, tuple[str, ...]]] = {}
        """Class (by id) -> its fields declared with one class, and that class (:meth:`field_classes`)."""
        self.relayed: dict[int, ast.Call] = {}
        """A thread runner's call (by id) -> the call it makes of the function it is given (:meth:`relayed_call`)."""
        self.package_top = module.partition(".")[0] + "."
        """The module's top-level package, as the prefix of its names: summaries are looked up there."""
        self.dispatch: dict[str, dict[str, ast.Lambda | Function]] | None = None
        """The module's dispatch tables (:meth:`tables`), once asked."""
        self.unread_sinks: dict[str, frozenset[str]] | None = None
        """The sink-named parameters the module's top-level functions never read (:meth:`unread_by`), once asked."""
        self.held: frozenset[tuple[int, int]] | None = None
        """Where the module's functions read what their objects and the module hold (:meth:`held_order`), once
        asked."""
        self.set_sinks: dict[str, frozenset[str]] | None = None
        """The fields the module's top-level classes declare as sets (:meth:`sets_by`), once asked."""
        self.worth: dict[str, str] = {}
        """The module's classes -> why an object of one is known by its class (:meth:`class_made`): a field that
        differs (:data:`_FIELDS`), a method returning its own id or time (:data:`_STAMPS`), or not ("")."""
        self.factories: dict[int, bool] = {}
        """Function (by id) -> whether it returns a class it defines (:meth:`makes_a_class`)."""
        self.given_to: dict[str, str] = {}
        """The module's classes -> their dotted name when the project's modules give their constructors anything
        (:meth:`given`), else an empty string."""
        self.gives: dict[str, Value] = {}
        """What the module gives the constructors of the project's classes, when it differs or is set-ordered:
        ``pkg.mod.Config(schema=)`` -> the values given that keyword, ``pkg.mod.Config(=)`` -> all of them."""
        self.offering: _Offers | None = None
        """In a run for a summary: the variables the function adds on its own to templates whose text its caller
        gives (:attr:`~agentcache.lint.python.project.Summary.offers`)."""
        self.templated: set[int] = set()
        """The lines where the module makes or renders a Jinja template (``env.from_string(text)``,
        ``template.render(...)``): the functions and classes around them are summed up for the modules that call
        them (:meth:`summaries`)."""

    def exports(self) -> dict[str, Value]:
        """After :meth:`run`: what each top-level function that takes no arguments returns (``name()``), each
        module-level name, each field a top-level class sets (``Class().field``, a property too) and what each of
        its methods that take no arguments returns (``Class().method()``; a static or class method's, called on the
        class: ``Clock.today()``), for the modules that import them."""
        found = {name: value for name, value in self.globals.vars.items() if "." not in name}
        for node in self.tree.body:
            if (
                isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                and self.functions.get(node.name) is node
                and callable_without_arguments(node)
            ):  # as get_today_str()
                found[f"{node.name}()"] = self.invoke(node, {})
            elif isinstance(node, ast.ClassDef):
                for item in node.body:
                    if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        continue
                    decorators = {last_name(decorator) for decorator in item.decorator_list}
                    if decorators.isdisjoint(("staticmethod", "classmethod")):
                        if callable_without_arguments(item, 1):
                            call = "()" if decorators.isdisjoint(PROPERTIES) else ""
                            found[f"{node.name}().{item.name}{call}"] = self.invoke(item, {})
                    elif callable_without_arguments(item, _bound(item)) and not _makes_own_object(item):
                        found[f"{node.name}.{item.name}()"] = self.invoke(item, {})
        for name, fields in self.instance_fields.items():  # Agent().name: a field of every Agent made
            found.update((f"{name}().{key[5:]}", value) for key, value in fields.items())
        for name, helpers in self.tables().items():  # date_time_func[format_date](): a dispatch table's helper
            found.update(
                (f"{name}[{key}]()", self.table_entry(helper, None, [], {})) for key, helper in helpers.items()
            )
        return found

    def instances(self) -> dict[str, str]:
        """The class of each module-level object made of a class of the module (``tool_manager = ToolManager()``:
        ``tool_manager(of)``), for the modules that import the object and call its methods."""
        found: dict[str, str] = {}
        for name, made in top_level_bindings(self.tree):
            found.pop(f"{name}(of)", None)  # rebound: what it holds last, if an object of a known class
            if isinstance(made, ast.Call) and isinstance(made.func, ast.Name):
                owner = self.constructed(made.func, self.globals)
                if owner and owner.startswith(self.package_top):
                    found[f"{name}(of)"] = owner
        return found

    def unread(self) -> dict[str, str]:
        """What no call's keyword sends, for the modules that call them: the parameters named as sinks
        (``system_prompt``, ``tools``) that each top-level function defined once takes and never reads
        (``get_prompt(unread)``: :meth:`unread_by`)."""
        return {f"{name}(unread)": ",".join(sorted(unread)) for name, unread in self.unread_by().items()}

    def unread_by(self) -> dict[str, frozenset[str]]:
        """The sink-named parameters each top-level function defined once never reads
        (:func:`~agentcache.lint.python.syntax.unread_parameters`), by name, made once. Not a method's: an override
        of another class may read what this one leaves. Not a decorated function's: the decorator's wrapper is
        what a call gives them to (``@prompt_template("... {system_prompt}")``)."""
        if self.unread_sinks is None:
            self.unread_sinks = {}
            for name, function, top in self.defined_once():
                if function is top and not function.decorator_list:
                    unread = unread_parameters(function, self.words.sink_keywords)
                    if unread:
                        self.unread_sinks[name] = unread
        return self.unread_sinks

    def set_fields(self) -> dict[str, str]:
        """What a constructor's keywords give a set, for the modules that call them: the fields each top-level
        class declares as sets (``tools: set[str] | None = None``: ``Config(sets)``)."""
        return {f"{name}(sets)": ",".join(sorted(fields)) for name, fields in self.sets_by().items()}

    def sets_by(self) -> dict[str, frozenset[str]]:
        """The fields each top-level class of the module declares to hold the sets it is given
        (:func:`~agentcache.lint.python.statements.set_fields`), by class name, made once."""
        if self.set_sinks is None:
            self.set_sinks = {}
            for node in self.tree.body:
                if isinstance(node, ast.ClassDef) and (fields := frozenset(set_fields(node))):
                    self.set_sinks[node.name] = fields
        return self.set_sinks

    def dropped(self, func: ast.expr, name: str | None, node: ast.Call, scope: Scope) -> frozenset[str]:
        """The sink keywords a call gives parameters the called function never reads (:meth:`unread`)."""
        return self.declared(func, name, node, scope, self.unread_by(), "unread")

    def kept_as_sets(self, func: ast.expr, name: str | None, node: ast.Call, scope: Scope) -> frozenset[str]:
        """The sink keywords a constructor call gives fields its class declares as sets (:meth:`set_fields`): the
        object keeps a set whatever order it is given in, and is read as one where it is iterated."""
        return self.declared(func, name, node, scope, self.sets_by(), "sets")

    def declared(
        self,
        func: ast.expr,
        name: str | None,
        node: ast.Call,
        scope: Scope,
        local: dict[str, frozenset[str]],
        suffix: str,
    ) -> frozenset[str]:
        """The sink keywords of a call that ``local`` (of a top-level function or class of the module that no
        variable or import hides) or what another module of the package exports as ``called(suffix)`` names."""
        if not any(keyword.arg and self.words.sends(keyword.arg) for keyword in node.keywords):
            return frozenset()
        if isinstance(func, ast.Name) and func.id not in self.imports and scope.lookup(func.id) is None:
            return local.get(func.id, frozenset())
        learned = self.learned.get(f"{name}({suffix})") if name and name.startswith(self.package_top) else None
        return frozenset(learned.split(",")) if learned else frozenset()

    def own_returns(self) -> dict[str, Value]:
        """Last of all (its runs give parameters values of their own, and keep only what every call reaches): what
        each top-level function and method defined once that takes arguments returns on its own, whatever it is
        given (``date_of(tz)``, ``Builder().build(tools)``: :meth:`own`), for the modules that call them; a call
        adds it to what it gives (:meth:`own_kind`). The runs share one memo, and leave the module's names and
        stored tuples as they found them."""
        found: dict[str, Value] = {}
        names, tuples = dict(self.globals.vars), dict(self.tuples)
        must_memo: Memo = {}
        for name, function, top in self.defined_once():
            bound = 0 if function is top else _bound(function)
            if _makes_own_object(function):  # PromptContext.from_environment(cwd): called on the class
                value = self.own(function, bound, must_memo)
                if value.origins:
                    on_class = name.replace("().", ".")
                    found[f"{on_class}(~)"] = value
                    if callable_without_arguments(function, bound):
                        found[f"{on_class}()"] = value
                continue
            if function.name.startswith("__"):
                continue  # __init__ and the like are not called by name
            if _decorated(function, "staticmethod", "classmethod"):
                name = name.replace("().", ".")  # Clock.stamp(fmt): called on the class
            if not takes_arguments(function, bound):
                continue
            if not callable_without_arguments(function, bound):
                value = self.own(function, bound, must_memo)
                if value.origins:
                    found[f"{name}(~)"] = value
                    continue
                if _returns_a_set(function):  # -> set[str]: a new set, iterated in its hash order
                    found[f"{name}(~)"] = Value(unordered=Origin(function.lineno, 0, ORDER, function.name))
                    continue
            held = self.held_order(function)  # list_action_ids(tags=None) given tags walks what it holds too
            if held is not None:
                found[f"{name}(~)"] = held
        self.globals.vars, self.tuples = names, tuples
        return found

    def held_order(self, function: Function) -> Value | None:
        """The hash order a function that takes arguments returns items in when it iterates a set its object or its
        module holds (``[i for i in self._by_tag[tag]]``, ``[t for t in TOOLS if t in names]``), whatever it is
        given; None when it returns none, or makes the system prompt (that is reported in it). Not a set it makes of
        what it is given or of a call, nor one item picked by a test: which items, and whether they come from a set,
        are then most often the caller's."""
        taken = orders(self.invoke(function, {}), taken=True)
        if not taken or self.makes_system_prompt(function):
            return None  # none, or reported in it, once
        if self.held is None:
            self.held = held_reads(self.tree)
        taken = frozenset(origin for origin in taken if (origin.line, origin.column) in self.held)
        return Value(taken) if taken else None

    def own(
        self,
        function: Function,
        bound: int,
        must_memo: Memo,
    ) -> Value:
        """What a function that takes arguments returns whatever it is given: the clocks, draws and ids of its run
        with none given (which :meth:`run` made already) that a run keeping only what every call reaches still
        returns, each parameter a value of its own: the branches of an ``if``, a ``match``, a loop (run or not), a
        ``try``'s handlers, the sides of a conditional expression and the operands of ``and``/``or`` keep what they
        all hold, and a function what all its ``return`` statements do (``if add_date: parts.append(today())`` and
        ``if not add_date: return prompt`` depend on the caller); a text a parameter gives whole fills none of its
        placeholders (``prompt.replace("__DATE__", today())``: the caller's text may hold none). Of a function
        that returns text only (:func:`~agentcache.lint.python.syntax.returns_text`: an object or a record keeps a
        time among other values; a list of texts only where the function's name says prompt, as a prompt's parts
        sent whole, not the system and user texts of ``system, user = build_messages(q)``), or of a class method
        that returns the object its ``cls(...)`` makes (an alternate constructor, whose keywords were sifted as a
        constructor's: a record's ids and times are not kept), not named for an id
        (``generate_group_id(tool)``: a record's key), not one that makes the system prompt (that is reported in
        it, once), and of a tuple only when every part differs (``return system_prompt, user_prompt_with_the_date``).
        Not a set's order: which items, and whether they come from a set, are most often the caller's
        (``next(spec for spec in get_tools() if spec.name == name)``)."""
        result = self.invoke(function, {})
        if (
            not volatile(result.origins)
            or self.makes_system_prompt(function)
            or self.words.is_identifier(function.name)
            or not (returns_text(function, self.words.builds_prompt(function.name)) or _makes_own_object(function))
        ):
            return CLEAN
        _, bindings = _own_parameters(function, bound)
        memo, self.memo, self.must = self.memo, must_memo, True
        try:
            result = self.invoke(function, bindings)
        finally:
            self.memo, self.must = memo, False
        if result.items is not None and not all(volatile(item.origins) for item in result.items):
            return CLEAN
        return Value(volatile(result.origins))

    def roles_given(self) -> dict[str, str]:
        """After :meth:`run`: the role each top-level class gives its objects when not given one
        (``Class(role)``: :meth:`class_role`), for the modules that make them and for its subclasses."""
        found = {}
        for node in self.tree.body:
            if isinstance(node, ast.ClassDef):
                role = self.class_role(node.name)
                if role is not None:
                    found[f"{node.name}(role)"] = role
        return found

    def summaries(self) -> dict[str, str]:
        """After :meth:`run`: what each top-level function and each method of a top-level class that makes or
        renders a Jinja template returns of the arguments it is given (``render(*)``, ``Budget().render(*)``:
        :class:`~agentcache.lint.python.project.Summary`), for the modules that call them: a template's variables
        it does not print are what such a call drops. So are the class's factories (its class and static
        methods: ``Budget.for_model(model, handler)``), which make the object its methods are then called on.
        Any other call is taken to return what it is given: running every function once more would cost as much
        as the analysis."""
        found: dict[str, str] = {}
        for name, function, top in self.defined_once() if self.templated else ():
            if not self._templates_in(top):
                continue
            if function is top:
                if takes_arguments(function):
                    found[f"{name}(*)"] = self.summary(function, 0, 1)
                continue
            decorators = {last_name(decorator) for decorator in function.decorator_list}
            factory = not decorators.isdisjoint(("staticmethod", "classmethod"))
            bound = _bound(function)
            if (factory or self._templates_in(function)) and takes_arguments(function, bound):
                found[f"{name}(*)"] = self.summary(function, bound, 2 if factory else 1)
        return found

    def defined_once(self) -> Iterator[tuple[str, Function, ast.stmt]]:
        """Each top-level function defined once, and each method defined once in a top-level class, with the name
        other modules know it by (``render``, ``Budget().render``) and the top-level statement it is in."""
        for node in self.tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and self.functions.get(node.name) is node:
                yield node.name, node, node
            elif isinstance(node, ast.ClassDef):
                methods = [item for item in node.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))]
                names = [method.name for method in methods]
                yield from ((f"{node.name}().{m.name}", m, node) for m in methods if names.count(m.name) == 1)

    def sending(self) -> dict[str, str]:
        """After :meth:`run`: which parameters of each top-level function, and each method of a top-level class,
        reach a system prompt it sends (``chat(sent)``, ``Client().ask(sent)``:
        :class:`~agentcache.lint.python.project.Sent`), for the modules that call them (``llm.chat(system, user)``
        of an ``llm`` module): what they give those parameters is reported there. Only the functions whose run
        reached such a sink, in their body or one call deep, are run again, each parameter given a value of its
        own."""
        found = {
            f"{name}(sent)": self.parameters_sent(function, 0 if function is top else _bound(function))
            for name, function, top in self.defined_once()
        }
        return {name: text for name, text in found.items() if text}

    def parameters_sent(self, function: Function, bound: int) -> str:
        """:meth:`sending` of one function ("" when none of its parameters is sent)."""
        near = self.sinks.reaching.get(id(function), SENDING_REACH) < SENDING_REACH
        if not near or not takes_arguments(function, bound):
            return ""
        positional, bindings = _own_parameters(function, bound, SENDING)
        found: set[str] = set()
        self.sinks.parameters = found
        self.reach = SENDING_REACH
        try:
            self.invoke(function, bindings)
        finally:
            self.sinks.parameters, self.reach = None, MAX_CALL_DEPTH
        if not found:
            return ""
        return Sent(positional, _name(function.args.vararg), frozenset(found)).encode()

    def given_to_sent(self, key: str, node: ast.Call, args: list[Value], kwargs: dict[str, Value]) -> None:
        """What a call gives the parameters a function of another module sends as the system prompt
        (:meth:`sending`), reported here: of what it gives, the values this function makes itself (or a helper of
        another module it calls makes there), and those a caller made and gave a parameter it hands on as it came
        (:meth:`made_here`). A value made elsewhere came through fields and objects, which the analysis follows
        loosely (an object's fields all in one, a branch not told apart by ``isinstance``): that is reported where
        it is sent in this module, if it is."""
        text = self.learned.get(key)
        if text:
            for argument, value in Sent.decode(text).arguments(node, args, kwargs):
                self.sinks.system_sink(argument, self.made_here(value, argument), taken=True)

    def _templates_in(self, node: ast.stmt) -> bool:
        end = node.end_lineno or node.lineno
        return any(node.lineno <= line <= end for line in self.templated)

    def summary(self, function: Function, bound: int, reach: int) -> str:
        """``function`` run with each parameter (but its ``bound`` first ones: ``self``) given a value of its own
        (:data:`~agentcache.lint.python.values.PARAM`): those that reach what it returns pass their arguments. Calls
        are followed ``reach`` deep (each parameter's value is new to the memo, so every call it reaches runs again):
        a function that renders a template does it itself, a factory makes the object through another one
        (``cls.for_model(...)``); a call cut short passes all it is given."""
        spec = function.args
        positional, bindings = _own_parameters(function, bound)
        self.reach, self.offering = reach, _Offers()
        try:
            result = self.invoke(function, bindings)
            offers = self.offers(function, bindings, result)
        finally:
            self.reach, self.offering = MAX_CALL_DEPTH, None
        passing = frozenset(origin.label for origin in result.origins if origin.kind == PARAM)
        templated, offered = offers or ("", frozenset[str]())
        return Summary(
            positional, _name(spec.vararg), _name(spec.kwarg), passing, export_kind(result) or "", templated, offered
        ).encode()

    def offers(
        self, function: Function, bindings: dict[str, Value], result: Value
    ) -> tuple[str, frozenset[str]] | None:
        """(the parameter, the variables) when all that a function run for its summary returns on its own comes
        through the variables it adds to a template whose text that parameter gives, whole (else None): the
        function is run once more with those variables held back, and must then return nothing of its own."""
        offering = self.offering
        assert offering is not None
        if not offering.valid or len(offering.sources) != 1 or not offering.names:
            return None
        if all(origin.kind == PARAM for origin in result.origins):
            return None
        memo, self.memo, offering.holding = self.memo, {}, True
        try:
            held = self.invoke(function, bindings)
        finally:
            self.memo, offering.holding = memo, False
        if any(origin.kind != PARAM for origin in held.origins):
            return None  # it returns them by another way too (``f"Generated at {now}" + body``)
        return next(iter(offering.sources)), frozenset(offering.names)

    def expr(self, node: ast.expr | None, scope: Scope) -> Value:
        """What ``node`` evaluates to in ``scope``; an expression it does not model (a lambda) is CLEAN."""
        if node is None:
            return CLEAN
        handler = self.EXPRESSIONS.get(type(node))
        return handler(self, node, scope) if handler is not None else CLEAN

    def literal(self, node: ast.Constant, scope: Scope) -> Value:
        return Value(text=node.value) if isinstance(node.value, str) else CLEAN

    def variable(self, node: ast.Name, scope: Scope) -> Value:
        known = scope.lookup(node.id)
        if known is not None:
            return known
        imported = self.imports.get(node.id)
        if imported is None:
            return CLEAN
        kind, cls = self.learned.get(imported), self.learned.get(f"{imported}(of)")
        value = read_export(kind, node) if kind else CLEAN
        return Value(value.origins, value.unordered, cls=cls) if cls else value

    def attribute(self, node: ast.Attribute, scope: Scope) -> Value:
        key = dotted(node)
        known = scope.lookup(key) if key else None
        if known is not None:
            return known
        if isinstance(node.value, ast.Name) and node.value.id == "self" and self.stack:
            owner = self.owners.get(id(self.stack[-1]))
            given = self.given(owner, node) if owner else None
            if given is not None:
                return given
            read = self.property_read(owner, node.attr)
            if read is not None:
                return read
        receiver = self.part_of_parameter(self.expr(node.value, scope))
        typed = receiver.cls or type(node.value) is ast.Name or of_self(node.value)
        owners = self.owners_of(node.value, receiver, scope) if typed else ()
        if owners and isinstance(node.value, ast.Name) and node.value.id == "self" and self.stack:
            own = self.owners.get(id(self.stack[-1]))  # a field its class binds again: not an imported base's
            if own is not None and f"self.{node.attr}" in self.shadowed.get(own, ()):
                owners = ()
        # another object's id or time field (exp.created_at) is the record's, kept with it: the object may have been
        # loaded with its own, and what its class's default stamps is when it was made, not when it is read
        record = self.words.is_bookkeeping(node.attr)
        for owner in owners:
            local = self.local_classes.get(owner)  # a field its class sets, in this module or another
            if local is not None:
                field = None if record else self.instance_fields.get(local, {}).get(f"self.{node.attr}")
                if field is None:
                    field = self.property_read(local, node.attr)
                if field is None and self.defines_method(local, node.attr):
                    return CLEAN  # tools=[tracker.fact]: a function its class's code defines, whatever the object holds
            else:
                kind = None if record else self.learned.get(f"{owner}().{node.attr}")
                field = read_export(kind, node) if kind else None
            if field is not None:
                return Value(receiver.origins | field.origins, field.unordered) if receiver.origins else field
        if receiver.cls == RECORD:  # a field of an object made of a dict (model_validate(payload).choices)
            field_key = _field_key(node.attr)
            alias = next((name for name, _ in receiver.entries or () if _field_key(name) == field_key), node.attr)
            return under(receiver, alias)
        read = self.field(receiver, node.attr)
        return self.data_text(node, read) if node.attr in self.data_keys else read

    def field(self, receiver: Value, name: str) -> Value:
        """A field read of an object not known by its class: what the object holds whole, and what a function set
        under that field where the object was made (:meth:`field_set`); of a parameter, in a run for a summary,
        also that field of what the caller gives (``config[branch_prefix]``, as a dict's item)."""
        whole = combine(receiver)
        if self.sinks.parameters is None and given_by_caller(receiver.origins):
            return join(whole, under(receiver, name))
        held = next((value for key, value in receiver.entries or () if key == name), None)
        return join(whole, held) if held is not None else whole

    def part_of_parameter(self, value: Value) -> Value:
        """In a run that looks for the parameters sent (:attr:`Sinks.parameters`), an object a field or item is read
        of (``agent.system``, ``agent["system"]``): its parameters' values marked as parts, so that reaching a
        system prompt does not make the parameter sent (the object a caller gives carries all its fields)."""
        if self.sinks.parameters is None or not value.origins:
            return value
        origins = frozenset(map(_part_of, value.origins))
        if origins == value.origins:
            return value
        return Value(origins, value.unordered, entries=value.entries, cls=value.cls)

    def defines_method(self, owner: str, attribute: str) -> bool:
        """Whether a class of the module defines ``attribute`` as a plain method in its body (undecorated, or a
        static or class method; not a property, nor what another decorator makes): read without a call, it is a
        function whose name, docstring and signature (all a tool made of it is sent as) are the class's code."""
        node = self.class_nodes.get(owner)
        return node is not None and any(
            isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
            and item.name == attribute
            and {last_name(decorator) for decorator in item.decorator_list} <= {"staticmethod", "classmethod"}
            for item in node.body
        )

    def property_read(self, owner: str | None, attribute: str) -> Value | None:
        """What reading a property of a class of the module returns (``self.system_prompt``, ``agent.prompt``:
        its getter run, as a method called on the object); None when ``attribute`` names no property of ``owner``
        (of any class of the module, when the class is not known)."""
        getter = self.methods.get(attribute)
        if getter is None or (owner is not None and self.owners.get(id(getter)) != owner):
            return None
        return self.invoke(getter, {}) if is_property(getter) else None

    def owners_of(self, node: ast.expr, value: Value, scope: Scope) -> tuple[str, ...]:
        """The classes whose fields and methods an object read as ``node`` has: the class it was made of
        (:attr:`Value.cls`), else those of the name (:meth:`classes_of`), else the class whose constructor ``node``
        calls (``EnvInfo(config).render_prompt()``)."""
        if value.cls:
            return (value.cls,)
        if type(node) is ast.Call and type(node.func) is ast.Name:
            owner = self.constructed(node.func, scope)
            return (owner,) if owner and _capitalized(node.func.id) else ()
        if isinstance(node, ast.Attribute) and of_self(node):
            return self.field_classes(node.attr)
        return self.classes_of(node.id) if type(node) is ast.Name else ()

    def field_classes(self, attribute: str) -> tuple[str, ...]:
        """The class a field of the running method's class is declared with (``registry: Registry`` in its body,
        ``self.registry: Registry = ...``), or that ``__init__`` binds it to a parameter annotated with
        (``self.registry = registry`` of ``registry: Registry``): ``self.registry.tools`` reads that class's field."""
        cls = self.running_class()
        if cls is None:
            return ()
        if id(cls) not in self.declared_fields:
            self.declared_fields[id(cls)] = self.declared_classes(cls)
        return self.declared_fields[id(cls)].get(attribute, ())

    def declared_classes(self, cls: ast.ClassDef) -> dict[str, tuple[str, ...]]:
        """Each field of ``cls`` declared with exactly one class of the project (see :meth:`field_classes`), read
        in one walk of the class: a method's fields are asked for at every ``self.x.y`` it reads."""
        init = next((item for item in cls.body if isinstance(item, ast.FunctionDef) and item.name == "__init__"), None)
        parameters = {arg.arg: arg.annotation for arg in (init.args.args if init else ()) if arg.annotation}
        annotations: dict[str, list[ast.expr]] = {}
        for item in cls.body:
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                annotations.setdefault(item.target.id, []).append(item.annotation)
        for statement in ast.walk(init) if init is not None else ():
            if isinstance(statement, ast.AnnAssign) and (field := self_field(statement.target)):
                annotations.setdefault(field, []).append(statement.annotation)
            elif isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Name):
                annotation = parameters.get(statement.value.id)
                for field in map(self_field, statement.targets):
                    if field and annotation is not None:
                        annotations.setdefault(field, []).append(annotation)
        declared: dict[str, tuple[str, ...]] = {}
        for field, written in annotations.items():
            owners = {owner for annotation in written if (owner := self.annotated(_class_named(annotation)))}
            if len(owners) == 1:
                declared[field] = (owners.pop(),)
        return declared

    def own_method(self, name: str) -> Function | None:
        """The method ``self.name(...)`` calls in a method: the module's only method of that name, else, where
        several classes of the module define it, the running method's class's own, or that of the module's class it
        derives from alone, as far up as each has one base (``_render_prompt`` of a base whose subclass overrides
        ``_gather_prompt_context`` calling ``super()``). None where Python's order of bases could find another
        (several bases, a base from another module), or where a subclass of the module overrides it without
        calling ``super()``: its objects run the override."""
        return self.method_of(self.running_class(), name)

    def method_of(self, cls: ast.ClassDef | None, name: str) -> Function | None:
        """The method ``self.name(...)`` runs in a method of ``cls`` (:meth:`own_method`)."""
        found = self.methods.get(name)
        if found is not None or cls is None:
            return found
        key = (id(cls), name)
        if key not in self.resolved:
            self.resolved[key] = None if self.replaced(cls, name) else self.defining(cls, name)
        return self.resolved[key]

    def running_class(self) -> ast.ClassDef | None:
        """The module's class whose method is running (None: a function that is no method, or none runs)."""
        return self.class_of(self.stack[-1]) if self.stack else None

    def class_of(self, function: Function) -> ast.ClassDef | None:
        """The module's class that defines ``function`` (None: no method of one)."""
        if self.method_classes is None:
            self.method_classes = {
                id(item): node
                for node in self.class_nodes.values()
                for item in node.body
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
            }
        return self.method_classes.get(id(function))

    def uses(self, method: Function) -> SelfUses:
        """How ``method`` uses ``self`` (:func:`~.syntax.self_uses`), walked once per method."""
        known = self.self_uses.get(id(method))
        if known is None:
            known = self.self_uses[id(method)] = self_uses(method)
        return known

    def reads_on_self(self, method: Function) -> frozenset[str]:
        """The fields of ``self`` ``method`` reads, itself or through the methods it calls on ``self``
        (``self._format_files()``, its class's or a base's, :meth:`method_of`): those of the state it is given
        (:meth:`state`) it may use."""
        known = self.self_reads.get(id(method))
        if known is None:
            self.self_reads[id(method)] = frozenset()  # a method it calls that calls it back
            cls = self.class_of(method)
            uses = self.uses(method)
            read = uses.read
            for name in uses.called:
                called = self.method_of(cls, name)
                if called is not None:
                    read |= self.reads_on_self(called)
            known = self.self_reads[id(method)] = read
        return known

    def made_by_cls(self, func: ast.expr, scope: Scope) -> str | None:
        """The class ``cls(...)`` makes an object of in a class method of the module's class (an alternate
        constructor: ``from_environment``), by its name: the class it was called on (:meth:`factory_method`), else
        the one that defines it (None: not such a call)."""
        if not (type(func) is ast.Name and func.id == "cls" and self.stack):
            return None
        cls = self.running_class()
        if cls is None or not _decorated(self.stack[-1], "classmethod"):
            return None
        called_on = scope.lookup("cls")
        return self.local_classes.get(called_on.cls or "", cls.name) if called_on is not None else cls.name

    def factory_method(self, func: ast.Attribute, scope: Scope) -> Function | None:
        """The class or static method ``Class.name(...)`` calls on a class of the module, that no variable hides
        (``PromptContext.from_environment(cwd)``): run where it is called, with what it is given."""
        owner = func.value
        if not (type(owner) is ast.Name and owner.id in self.class_nodes and scope.lookup(owner.id) is None):
            return None
        found = self.defining(self.class_nodes[owner.id], func.attr)
        return found if found is not None and _decorated(found, "classmethod", "staticmethod") else None

    def defining(self, cls: ast.ClassDef, name: str) -> Function | None:
        """Method ``name`` of the module's class ``cls``, or of the class it derives from alone, as far up as
        each has one base of the module (None: not found so, or defined twice there)."""
        seen: set[str] = set()
        while cls.name not in seen:
            seen.add(cls.name)
            methods = (item for item in cls.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)))
            defined = [method for method in methods if method.name == name]
            if defined:
                return defined[0] if len(defined) == 1 else None
            base = cls.bases[0] if len(cls.bases) == 1 else None
            if not (isinstance(base, ast.Name) and base.id in self.class_nodes):
                return None
            cls = self.class_nodes[base.id]
        return None

    def replaced(self, cls: ast.ClassDef, name: str) -> bool:
        """Whether a class of the module derived from ``cls`` defines method ``name`` without calling
        ``super().name(...)`` (:meth:`own_method`)."""
        for other in self.class_nodes.values():
            if other is not cls and cls.name in bases_of(other, self.class_nodes):
                for item in other.body:
                    if (
                        isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
                        and item.name == name
                        and not calls_super(item, name)
                    ):
                        return True
        return False

    def fills_text(self, func: ast.expr, receiver: Value, scope: Scope) -> bool:
        """Whether a call of a placeholder filler's name is a text's or a template's method (``text.format``,
        ``super().format``, ``template.render``), which fills each placeholder by its name: not a function, nor a
        method of the project's objects, whose body may list what it is given (``render(**fields)``)."""
        return (
            isinstance(func, ast.Attribute)
            and not (isinstance(func.value, ast.Name) and func.value.id in ("self", "cls"))
            and not self.of_project(func, receiver, scope)
        )

    def of_project(self, func: ast.expr, receiver: Value, scope: Scope) -> bool:
        """Whether a call names a class, or a method of an object of a class, of the project: its body says what
        it does with what it is given, whatever its name says (a vocabulary's ``Agent(prompt=...)`` may be a
        project's own agent given its task)."""
        if isinstance(func, ast.Attribute) and not _capitalized(func.attr):
            owners = self.owners_of(func.value, receiver, scope)
        else:
            owners = (self.constructed(func, scope) or "",)
        return any(owner.startswith(self.package_top) for owner in owners)

    def constructed(self, func: ast.expr, scope: Scope) -> str | None:
        """The dotted name of the class a constructor call's ``func`` names: the module's own, unless a variable
        hides it, else the imported one (None: neither)."""
        if type(func) is ast.Name and func.id in self.classes and scope.lookup(func.id) is None:
            return f"{self.module}.{func.id}"
        return self.qualname(func, scope)

    def data_text(self, node: ast.Attribute | ast.Subscript, read: Value) -> Value:
        """``read``, or, when it is stable and nothing in the code gives its text, the string of the package's
        data files under the key path ``node`` reads (``get_settings().review_prompt.system``): a template found
        there prints only what its text names."""
        if read.origins or read.text is not None:
            return read
        path = _key_path(node, self.data_keys)
        text = self.templates.keyed(path) if path else None
        return Value(text=text) if text is not None else read

    def given(self, owner: str, node: ast.Attribute) -> Value | None:
        """``self.x`` in a method of the module's class ``owner``, as what the project's modules give its
        constructor as ``x=`` (None: nothing that differs or is set-ordered)."""
        given = self.given_to.get(owner)
        if given is None:  # asked of most self.x a method reads: whether anything is given the class, once
            name = f"{self.module}.{owner}"
            given = self.given_to[owner] = name if self.learned.get(f"{name}(=)") else ""
        kind = self.learned.get(f"{given}({node.attr}=)") if given else None
        return read_export(kind, node) if kind else None

    def give(self, func: ast.expr, kwargs: dict[str, Value], scope: Scope) -> None:
        """Record the keyword arguments a constructor call gives a class of the project (imported or the
        module's), those that differ or are set-ordered, but for a record's ids and times (the current time,
        ``current_date_time=``, is the class's to say) and for a sink's keyword (``tools=``): what is given there
        is reported at the call, not again where the class sends it."""
        given = [
            (keyword, value)
            for keyword, value in kwargs.items()
            if (value.origins or value.unordered is not None)
            and not (self.words.is_bookkeeping(keyword, prompt=True) or self.words.sends(keyword))
        ]
        if not given:
            return
        owner = self.constructed(func, scope)
        if owner is None:
            return
        for keyword, value in given:
            for name in (f"{owner}({keyword}=)", f"{owner}(=)"):
                known = self.gives.get(name)
                self.gives[name] = value if known is None else join(known, value)

    def classes_of(self, name: str) -> tuple[str, ...]:
        """The imported classes whose fields and methods a name of the running function reads: the bases of
        ``self``'s class, or the class a parameter is annotated with (``agent: Agent``, ``"Agent"``,
        ``Agent | None``, ``Optional[Agent]``)."""
        if not self.stack:
            return ()
        function = self.stack[-1]
        if name == "self":
            return self.bases.get(id(function), ())
        typed = self.typed.get(id(function))
        if typed is None:
            spec = function.args
            typed = self.typed[id(function)] = {
                arg.arg: (owner,)
                for arg in (*spec.posonlyargs, *spec.args, *spec.kwonlyargs)
                if arg.annotation is not None and (owner := self.annotated(_class_named(arg.annotation)))
            }
        return typed.get(name, ())

    def annotated(self, named: ast.expr) -> str | None:
        """The dotted name of the class an annotation names: a top-level class of the module, or an imported one."""
        if type(named) is ast.Name and named.id in self.classes and named.id not in self.imports:
            return f"{self.module}.{named.id}"
        return self.imported(named)

    def imported(self, node: ast.expr) -> str | None:
        return self.qualname(node, self.globals)

    def fstring(self, node: ast.JoinedStr, scope: Scope) -> Value:
        parts = []
        for part in node.values:
            if isinstance(part, ast.FormattedValue):
                value = ordered(self.expr(part.value, scope), part.value)
                spec = self.expr(part.format_spec, scope)
                parts.append(combine(value, spec) if spec.origins else value)
            else:
                parts.append(self.expr(part, scope))
        return concat(parts)

    def binop(self, node: ast.BinOp, scope: Scope) -> Value:
        left, right = self.expr(node.left, scope), self.expr(node.right, scope)
        if isinstance(node.op, ast.Add):
            return concat([left, right])
        if isinstance(node.op, SET_OPERATORS) and (left.unordered or right.unordered):
            return Value(left.origins | right.origins, left.unordered or right.unordered)
        if isinstance(node.op, ast.BitOr) and (left.entries or right.entries):  # dicts: base | {"date": today}
            return Value(left.origins | right.origins, entries=merged(left, right))
        if isinstance(node.op, ast.Mod) and left.text is not None:
            return combine(left, ordered(right, node.right))
        return combine(left, right)

    def boolop(self, node: ast.BoolOp, scope: Scope) -> Value:
        values = [self.expr(value, scope) for value in node.values]
        return meet(*values) if self.must else reduce(join, values)

    def conditional(self, node: ast.IfExp, scope: Scope) -> Value:
        test = self.expr(node.test, scope)
        sides = [self.expr(node.body, scope), self.expr(node.orelse, scope)]
        chosen = meet(*sides) if self.must else join(*sides)  # must: what both sides hold
        return Value(chosen.origins | test.origins) if test.origins else chosen

    def compare(self, node: ast.Compare, scope: Scope) -> Value:
        for test, compared in zip(node.ops, node.comparators, strict=True):
            if isinstance(test, (ast.Is, ast.IsNot)) and isinstance(compared, ast.Name):
                self.sinks.sentinels.add(compared.id)
        left = self.expr(node.left, scope)
        if len(node.ops) != 1:
            return combine(left, *(self.expr(c, scope) for c in node.comparators))
        op, right_node = node.ops[0], node.comparators[0]
        right = self.expr(right_node, scope)
        if isinstance(op, (ast.In, ast.NotIn)):  # "x" in names: the same answer in any order of the container
            return combine(left, Value(order_free(right.origins)))
        if (
            isinstance(op, (ast.Is, ast.IsNot))
            and isinstance(right_node, ast.Constant)
            and right_node.value is None
            and isinstance(node.left, (ast.Name, ast.Attribute))
        ):
            return Value(order_free(left.origins))  # tracker is not None: whatever order built what it holds
        return combine(left, right)

    def unary(self, node: ast.UnaryOp, scope: Scope) -> Value:
        return combine(self.expr(node.operand, scope))

    def sequence(self, node: ast.List | ast.Tuple, scope: Scope) -> Value:
        items = []
        for item in node.elts:
            if isinstance(item, ast.Starred):
                items.append(ordered(self.expr(item.value, scope), item.value))
            else:
                items.append(self.expr(item, scope))
        if isinstance(node, ast.Tuple) and len(node.elts) == 2 and constant(node.elts[0]) in self.words.system_roles:
            self.sinks.system_tuple(node, items[1])
        if isinstance(node, ast.Tuple) and len(items) <= MAX_ITEMS and not starred(node.elts):
            return Value(combine(*items).origins, items=tuple(items))
        return combine(*items)

    def set_display(self, node: ast.Set, scope: Scope) -> Value:
        items = [self.expr(item, scope) for item in node.elts]
        if all(isinstance(item, ast.Constant) and type(item.value) in (int, bool) for item in node.elts):
            return combine(*items)  # ints hash to themselves: their order is fixed (str, bytes, None do not)
        return Value(combine(*items).origins, Origin.at(node, ORDER))

    def mapping(self, node: ast.Dict, scope: Scope) -> Value:
        """A dict display: what it holds, and its entries under constant keys (``{**base, "date": today}``)."""
        keys = [self.expr(key, scope) for key in node.keys]
        values = [self.expr(value, scope) for value in node.values]
        if self.sinks.dict_sinks(node, values) or is_tool_call(node):
            return CLEAN  # a user's or an assistant's message, a tool call
        held = combine(*keys, *values)
        if not held.origins and not any(value.unordered for value in values):
            return held
        parts = []
        for key, value in zip(node.keys, values, strict=True):
            name = constant(key)
            if key is None:
                parts.append(value)
            elif isinstance(name, str):
                parts.append(Value(entries=with_entry(CLEAN, name, value)))
        return Value(held.origins, entries=merged(*parts))

    def run_ids(self, callee: str, node: ast.Call, args: list[Value], kwargs: dict[str, Value]) -> frozenset[Origin]:
        """The ids by which a LangChain runnable's method (a LangGraph graph's ``invoke``, ``get_state``) is given
        the thread its run keeps state under (``{"configurable": {"thread_id": str(uuid4())}}``): what it returns is
        that state, not made of them. Not what the config holds under other keys too (a prompt the graph reads, a
        date), nor what it holds under keys no entry names; the config itself still holds them."""
        position = RUN_CONFIG_POSITIONS[callee]
        config = kwargs.get("config")
        if config is None and len(node.args) > position and not starred(node.args):
            config = args[position]
        configurable = dict(config.entries or ()).get("configurable") if config is not None else None
        if configurable is None:
            return frozenset()
        ids: frozenset[Origin] = frozenset()
        others = unattributed(configurable).origins
        for key, value in configurable.entries or ():
            if self.words.is_identifier(key):
                ids |= value.origins
            else:
                others |= value.origins
        return ids - others

    def comprehension(self, node: ast.ListComp | ast.GeneratorExp | ast.SetComp | ast.DictComp, scope: Scope) -> Value:
        if self.must:  # its elements are made only for the items there are
            return CLEAN
        inner = Scope(scope)
        found: frozenset[Origin] = frozenset()
        items: frozenset[str] = frozenset()
        for generator in node.generators:
            iterable = self.expr(generator.iter, inner)
            order = sequence_order(iterable, generator.iter)
            if order:
                found, items = found | order, items | bound_names(generator.target)
            self.assign(generator.target, self.element_of(iterable, generator.iter, inner), inner, None)
            for condition in generator.ifs:
                self.expr(condition, inner)
        if isinstance(node, ast.DictComp):
            result = combine(self.expr(node.key, inner), self.expr(node.value, inner))
            found = keyed(found)  # the order of its keys
        else:
            result = self.expr(node.elt, inner)
            if found and not isinstance(node, ast.SetComp):
                self.sinks.ordered_messages(node, found, items)
        if isinstance(node, ast.SetComp):
            return made_set(node, result)
        return Value(result.origins | found)

    def subscript(self, node: ast.Subscript, scope: Scope) -> Value:
        """An item: of a dict whose entries are known, the one under a constant key (``variables["date"]``); of a
        tuple whose elements are known, the one at a constant index (``result[4]`` of ``return name, ..., tools``);
        of a dict of sets, a set."""
        container, key = self.expr(node.value, scope), self.expr(node.slice, scope)
        if container.cls == SETS:
            return made_set(node, container, key)
        if container.cls == TABLE:  # sessions[session_id]: a record, with the items its records hold
            return Value(combine(container, key).origins, entries=container.entries)
        items = container.items
        index = _index(node.slice) if items is not None else None
        if items is not None and index is not None and -len(items) <= index < len(items):
            return items[index]
        if isinstance(key.text, str):
            container = self.part_of_parameter(container)
            if container.entries:
                return under(container, key.text)
            if key.text in self.data_keys:
                return self.data_text(node, combine(container))
        return combine(container, key)

    def inner(self, node: ast.Await | ast.Starred, scope: Scope) -> Value:
        return self.expr(node.value, scope)

    def sent(self, node: ast.Yield | ast.YieldFrom, scope: Scope) -> Value:
        """``reply = yield message``: what the caller sends in, not known; the message is checked for sinks."""
        self.yielded(node, scope)
        return CLEAN

    def walrus(self, node: ast.NamedExpr, scope: Scope) -> Value:
        value = self.expr(node.value, scope)
        self.assign(node.target, value, scope, node.value)
        return value

    def bounds(self, node: ast.Slice, scope: Scope) -> Value:
        return combine(*(self.expr(part, scope) for part in (node.lower, node.upper, node.step)))

    def relayed_call(self, node: ast.Call, scope: Scope) -> ast.Call | None:
        """The call a thread runner makes of the function it is given (:data:`THREAD_RUNNERS`,
        ``loop.run_in_executor(None, build_block, cwd)``), whose value it returns: ``build_block(cwd)``, made once
        per runner call (its node is kept: findings and memos know nodes by id)."""
        func = node.func
        if type(func) is ast.Attribute:  # asked of every call: the cheap tests first
            if func.attr == "run_in_executor":
                if of_self(func):  # the class's own method of that name
                    return None
                first, keywords = 1, False
            elif func.attr in RUNNER_NAMES:
                runner = THREAD_RUNNERS.get(self.qualname(func, scope) or "")
                if runner is None:
                    return None
                first, keywords = 0, runner
            else:
                return None
        elif type(func) is ast.Name and self.imports.get(func.id) in THREAD_RUNNERS and scope.lookup(func.id) is None:
            first, keywords = 0, THREAD_RUNNERS[self.imports[func.id]]  # to_thread, or an alias of it
        else:
            return None
        if len(node.args) <= first or isinstance(node.args[first], ast.Starred):
            return None
        made = self.relayed.get(id(node))
        if made is None:
            made = ast.Call(node.args[first], node.args[first + 1 :], node.keywords if keywords else [])
            self.relayed[id(node)] = ast.copy_location(made, node)
        return made

    def call(self, node: ast.Call, scope: Scope) -> Value:
        marks = self.arrivals.by_call.get(id(node)) if self.arrivals.by_call else None
        if marks is not None:  # started at once with others: what it fills is in the order they finish
            for place, origin in marks:
                before = scope.lookup(place) or CLEAN
                if before.unordered is None:  # (a set's order is its hash order, whoever adds to it)
                    scope.update(place, replace(before, unordered=origin))
        relayed = self.relayed_call(node, scope)
        if relayed is not None:
            return self.call(relayed, scope)
        func, keywords = node.func, node.keywords
        args = [self.expr(arg, scope) for arg in node.args] if node.args else []
        kwargs = {kw.arg: self.expr(kw.value, scope) for kw in keywords if kw.arg is not None} if keywords else {}
        spread = [self.expr(kw.value, scope) for kw in keywords if kw.arg is None] if keywords else []
        # a field's default_factory: the value is what calling it makes, one per object
        factories = [self.made_by(kw.value, scope) for kw in keywords if kw.arg in FACTORY_KEYWORDS] if keywords else []
        receiver = self.expr(func.value, scope) if isinstance(func, ast.Attribute) else CLEAN
        name = self.qualname(func, scope)
        callee = last_name(func) or ""
        if callee == "get" and node.args and isinstance(constant(node.args[0]), str):
            receiver = self.part_of_parameter(receiver)  # state.get("case"): an item of it, as state["case"] is
        called = self.words.callee(callee)
        if spread and callee in PLACEHOLDER_FILLERS and self.fills_text(func, receiver, scope):
            spread = [replace(value, origins=unkeyed(value).origins) for value in spread]  # each placeholder by name
        if self.must and callee in PLACEHOLDER_FILLERS and isinstance(func, ast.Attribute):
            held = self.held_placeholders(func, receiver, node, args, kwargs)
            if held is not None:
                return held
        default = self.called_role(func, name) if _capitalized(callee) else None
        dropped = self.dropped(func, name, node, scope)
        sets = self.kept_as_sets(func, name, node, scope)
        sent = {  # a set given to a field declared a set: the object's, read as a set where the field is read
            key: Value(value.origins) if key in sets and value.unordered is not None else value
            for key, value in kwargs.items()
        }
        prompt = any(kw.arg in ("prompt", None) for kw in keywords) and (
            called.sink == AGENT
            or (self.words.takes_prompt(node, callee) and not self.of_project(func, receiver, scope))
        )
        if self.sinks.call_sinks(node, callee, called, args, sent, spread, default, dropped, prompt):
            return CLEAN  # a user's or an assistant's message
        if self.words.measures(callee):
            return CLEAN  # _estimate_tokens(history): a budget, the same whatever time the history holds
        if name is not None:
            kind = source_kind(name, len(node.args) + len(keywords), self.words)
            if kind is not None:
                return Value(frozenset({Origin.at(node, kind)}))
            kind = self.learned.get(f"{name}()")
            if kind is not None:
                return read_export(kind, node)
            if name in DUMPS:
                return dump(node, name, args)
            if name in AS_FINISHED:
                return Value(combine(*args).origins, Origin.at(node, ARRIVAL))
            if (
                name == "asyncio.gather" and len(args) <= MAX_ITEMS and not starred(node.args)
            ):  # each result where its awaitable was given
                return Value(combine(*args).origins, items=tuple(args))
            if name == "random.shuffle" and node.args:
                key = dotted(node.args[0])
                if key:
                    self.mutate(key, Value(args[0].origins | {Origin.at(node, SHUFFLE)}), node, scope)
                return CLEAN
            if (name in LAYOUT_KEEPING or name in COPIES) and len(args) == 1:
                return args[0]
            if name in RECORD_COPIES and len(args) == 1 and args[0].cls in (None, RECORD) and not spread:
                # replace(loaded, branches=branches, active_tools=tools): each field what it was given
                named = [Value(entries=with_entry(CLEAN, key, value)) for key, value in kwargs.items()]
                return Value(combine(args[0], *kwargs.values()).origins, entries=merged(args[0], *named), cls=RECORD)
        if (callee in TEMPLATE_SOURCES and isinstance(func, ast.Attribute) and not _class_of(func)) or (
            name in TEMPLATE_SOURCES
        ):  # an environment's env.from_string(text), env.get_template(name); jinja2.Template(text)
            self.templated.add(node.lineno)
            template = self.template_source(callee, node, receiver, args)
            if template is not None:
                return template
        elif callee in RENDERERS and isinstance(func, ast.Attribute):
            if receiver.text is not None or receiver.cls == TEMPLATE:
                self.templated.add(node.lineno)
            rendered = self.rendered(func.value, node, receiver, [*args, *spread], kwargs, scope)
            if rendered is not None:
                return rendered
        # What an unknown call returns depends on its receiver and positional arguments. Keyword arguments count
        # where they fill a text (``template.format(date=...)``), a constructor's fields or a system prompt that a
        # helper's name says it makes (``compile_system_message(last_edit=...)``), but for the ids and times a
        # record keeps (``run_id=``, ``timestamp=``): an id passed to a method configures the call, by keyword or
        # as a variable that says so (``toolkit.clone_for_session(new_session_id)``), and so does a location given
        # to a call that reads what is stored there (``Config.load(log_dir)``); an id given to a constructor is what
        # the object keeps (``Stash(storage, agent.session_id)``).
        alternate = self.made_by_cls(func, scope)  # cls(...) in a class method
        made = callee if _capitalized(callee) else _class_of(func) or alternate  # Tool(...), Tool.from_function(...)
        if made and self.words.is_record(made):
            return CLEAN  # a record's ids and times are its bookkeeping (see Vocabulary.record_words)
        cls = None
        if made:
            cls = self.class_made(
                func.value if isinstance(func, ast.Attribute) and made != callee else func, scope, node
            )
        if kwargs and made == callee:
            self.give(func, kwargs, scope)
        if not made and self.words.returns_tool_calls(callee) and not self.makes_a_class(func):
            return CLEAN  # the model's tool calls, parsed from its reply: not the definitions sent
        system = self.words.makes_system_prompt(callee)
        reads = called.reader
        if callee in FILLERS and isinstance(func, ast.Attribute) and name != "functools.partial":
            filled = self.printed(func.value, kwargs)
        elif callee in TEXT_METHODS or callee in ("dict", "partial"):
            filled = list(kwargs.values())
        elif made or system:
            context = made is not None and self.words.builds_prompt(made)
            filled = [
                value
                for key, value in kwargs.items()
                if not self.words.is_bookkeeping(key, prompt=not made, context=context)
                and not (reads and self.words.names_a_location(key))
            ]
        elif self.words.makes_prompt(callee) or (
            isinstance(func, ast.Attribute)
            and kwargs
            and self.words.builder_makes_prompt(_object_name(func.value), callee)
        ):  # build_prompt(name, date=today), prompt_builder.build(conversation_started=today)
            filled = self.variables(kwargs)
        else:
            filled = []
        given = args
        ids = (made or (isinstance(func, ast.Attribute) and name is None)) and callee not in TEXT_METHODS
        if ids or reads:
            given = [value for arg, value in zip(node.args, args, strict=True) if not self._configures(arg, ids, reads)]
        if reads and isinstance(func, ast.Attribute) and self._configures(func.value, False, True):
            receiver = CLEAN  # file_path.read_text(): what is stored there, not where (a session's folder)
        if made and self.words.is_prompt_part(made):
            # a prompt part given a provider it calls when rendered (Texts(lambda: datetime.now().strftime(...)));
            # not a command's handler, a timer's callback, a tool's function
            factories += [self.made_by(arg, scope) for arg in node.args if _provides(arg)]
        everything = combine(receiver, *given, *filled, *spread, *factories)
        if callee in RUN_CONFIG_POSITIONS and isinstance(func, ast.Attribute):  # graph.invoke(state, config)
            threads = self.run_ids(callee, node, args, kwargs)  # the state, not the thread's id
            everything = Value(everything.origins - threads) if threads else everything
        if alternate and everything.origins:
            # what an alternate constructor adds on its own (the clock it reads) is what its object says; which of
            # its parameters a field keeps, and which field its caller reads, is not known (a budget for a prompt,
            # given the prompt's variables): they do not pass
            everything = Value(frozenset(origin for origin in everything.origins if origin.kind != PARAM))
        result: Value | None = None
        if name == "collections.defaultdict" and node.args and _makes_a_set(node.args[0]):
            return Value(everything.origins, cls=SETS)
        builtin_name = _builtin_called(func)
        if builtin_name is not None and scope.lookup(builtin_name) is None and builtin_name not in self.imports:
            result = builtin(builtin_name, node, args)
            if builtin_name == "dict":  # a dict of these items: dict(base, date=today)
                named = [Value(entries=with_entry(CLEAN, key, value)) for key, value in kwargs.items()]
                result = Value(everything.origins, entries=merged(*args, *spread, *named))
            function = self.functions.get(builtin_name)
            if result is None and function is not None:
                result = self.inline(function, node, args, kwargs, skip_self=False, spread=spread)
        elif isinstance(func, ast.Attribute):
            result = self.method(func, node, receiver, args, kwargs, spread, scope)
        elif isinstance(func, ast.Subscript):
            result = self.dispatched(func, node, args, kwargs, scope)
        if result is None and self.words.replies(dotted(func)):
            return CLEAN  # the model's reply: what it says is not what it was sent
        if result is None:
            summed = None
            if name and (node.args or keywords) and name.startswith(self.package_top):
                summed = self.summed(func, name, node, args, kwargs, scope)
                self.given_to_sent(f"{name}(sent)", node, args, kwargs)
            result = everything if summed is None else summed
            own = self.own_kind(func, name, receiver, scope) if summed is None and (node.args or keywords) else None
            if own:
                returned = read_export(own, node)
                result = Value(combine(result, returned).origins, returned.unordered)
            if system:  # a helper not followed but by its summary: what it returns is the system prompt, wherever put
                self.sinks.system_sink(node, result)
        return Value(result.origins, result.unordered, cls=cls) if cls else result

    def method(
        self,
        func: ast.Attribute,
        node: ast.Call,
        receiver: Value,
        args: list[Value],
        kwargs: dict[str, Value],
        spread: list[Value],
        scope: Scope,
    ) -> Value | None:
        """A method call's value when the method is known (None: the caller combines its inputs). ``spread``: the
        dicts it is given as ``**mapping``."""
        attr = func.attr
        if (attr in LAYOUT_KEEPING_METHODS or attr == "copy") and not args:
            if attr != "copy" and isinstance(receiver.text, str) and not receiver.origins:
                return Value(text=getattr(receiver.text, attr)())  # a known string stays known, as it is now
            return receiver
        if attr in ("format", "format_map") and receiver.text is not None:
            if attr == "format_map":
                return format_call(receiver.text, node, [], {}, args[:1])
            return format_call(receiver.text, node, args, kwargs, spread)
        if attr == "join" and receiver.text is not None and len(node.args) == 1:
            return self.join_text(receiver.text, node, args[0], scope)
        if attr in ("values", "items") and receiver.cls == SETS and not node.args:
            return receiver  # each value a set: see Statements.element_of
        if attr in ("values", "items", "keys") and not node.args and arrival(receiver) is not None:
            return Value(receiver.origins, receiver.unordered)  # filled as tasks finished: its views in that order
        if attr in ("get", "pop", "setdefault") and receiver.cls == SETS and node.args:
            # by_tag.get(tag, set()) of a defaultdict(set): what a dict of sets holds under a key is a set
            return made_set(node, receiver, args[0])
        if attr in RECORD_LOADERS and len(node.args) == 1 and args[0].entries and not node.keywords:
            return replace(args[0], cls=RECORD)  # Model.model_validate(payload): its fields are the dict's items
        if attr == "get" and 1 <= len(node.args) <= 2:
            if receiver.cls == TABLE:  # sessions.get(session_id, {}): a record, with the items its records hold
                return Value(combine(receiver, *args).origins, entries=receiver.entries)
            if receiver.entries and isinstance(constant(node.args[0]), str):
                return reduce(join, args[1:], under(receiver, str(constant(node.args[0]))))  # d.get("date", default)
            if orders(receiver, taken=True):
                # one value looked up by its key: the order its keys were added in does not reach it, the order of
                # a value it holds under a key does (``{"full": list(TOOLS)}``)
                held = [value for _, value in receiver.entries or ()]
                return combine(Value(order_free(unattributed(receiver).origins)), *held, *args)
        key = dotted(func.value)
        if key and attr in MUTATORS:
            # a set holds the same items whatever order they come in (a loop's too); text a branch decided by the
            # clock adds is there only at some times
            given = combine(*(self.decided_text(arg, value, True) for arg, value in zip(node.args, args, strict=False)))
            added = element(given).origins if receiver.unordered else given.origins | self.order
            entries = _updated(receiver, attr, node, args, kwargs) if attr in ("setdefault", "update") else None
            changed = Value(receiver.origins | added, receiver.unordered, entries=entries)
            if attr in SEQUENCE_MUTATORS and node.args and is_call_record(node.args[-1]):
                scope.update(key, changed)  # process_tools.append({"tool": name, "timestamp": now}): a log of calls
            else:
                self.mutate(key, changed, node, scope)
            if self.order and attr in SEQUENCE_MUTATORS and node.args:
                self.sinks.ordered_messages(node.args[-1], self.order, self.items)
        elif key and attr == "sort":
            scope.update(key, Value(order_free(receiver.origins)))
        if self.order and attr in self.words.tool_registrars:  # server.add_tool(...) once per item of a set
            self.sinks.order_sink(node, self.order, TOOL_LIST)
        if attr in SET_ALGEBRA and receiver.unordered:
            return Value(combine(receiver, *args).origins, receiver.unordered)
        if (
            isinstance(func.value, ast.Name)
            and func.value.id in ("self", "cls")
            and not self.words.binds(attr)
            and (own := self.own_method(attr)) is not None
        ):  # a binder's body (the framework's own) is how what it is given is sent: reported at the call
            return self.inline(own, node, args, kwargs, skip_self=True, spread=spread, state=self.state(scope, own))
        if (factory := self.factory_method(func, scope)) is not None and not self.words.binds(attr):
            called_on = Value(cls=f"{self.module}.{func.value.id}") if isinstance(func.value, ast.Name) else None
            return self.inline(factory, node, args, kwargs, skip_self=True, spread=spread, owner=called_on)
        if not (node.args or node.keywords):  # a method of a class in another module
            kind = self.learned_of(self.owners_of(func.value, receiver, scope), f".{attr}()")
            return read_export(kind, node) if kind else None
        if receiver.cls or (type(func.value) is ast.Name and func.value.id != "self") or of_self(func.value):
            owners = self.owners_of(func.value, receiver, scope)
            for owner in owners:
                self.given_to_sent(f"{owner}().{attr}(sent)", node, args, kwargs)
            summary = self.learned_of(owners, f".{attr}(*)")
            returned = self.summed_up(Summary.decode(summary), node, args, kwargs) if summary else None
            return combine(receiver, returned) if returned is not None else None
        return None

    def learned_of(self, owners: tuple[str, ...], member: str) -> str | None:
        """What the project learned of ``member`` (``.render()``, ``.build(*)``) of an object of ``owners``: the
        first class that has it, as :meth:`owners_of` orders them."""
        return next(filter(None, (self.learned.get(f"{owner}(){member}") for owner in owners)), None)

    def held_placeholders(
        self, func: ast.Attribute, receiver: Value, node: ast.Call, args: list[Value], kwargs: dict[str, Value]
    ) -> Value | None:
        """In :meth:`own`'s run, a fill of a text that is a parameter's, whole (``prompt.replace("__DATE__",
        today)``; ``chevron.render(template=template, partials_ext=...)`` of an imported engine): only what the
        caller gives, since the text may hold no placeholder. None for a text the function knows, makes or adds to
        (``DATE_PROMPT.format(today)``, ``f"{prompt} Today is {today}".replace(...)``)."""
        text = receiver
        if not given_by_caller(receiver.origins) and isinstance(func.value, ast.Name) and func.value.id in self.imports:
            text = kwargs.get("template", args[0] if args else CLEAN)  # a template engine's function
        if text.text is not None or text.shape is not None or not text.origins:
            return None
        if any(origin.kind != PARAM for origin in text.origins):
            return None
        given = (receiver, *args, *kwargs.values())
        return Value(frozenset(origin for value in given for origin in value.origins if origin.kind == PARAM))

    def dispatched(
        self, func: ast.Subscript, node: ast.Call, args: list[Value], kwargs: dict[str, Value], scope: Scope
    ) -> Value | None:
        """A call of a helper kept under a literal key in a module-level dict of callables, a dispatch table
        (``date_time_func["format_date"]()`` of ``date_time_func = {"format_date": lambda: datetime.now()...}``,
        the module's or another's: :meth:`tables`): what it returns. None: not such a call."""
        key = constant(func.slice)
        if not isinstance(key, str) or not isinstance(func.value, ast.Name):
            return None
        name = func.value.id
        if name in self.tables() and scope.binder(name) in (None, self.globals):  # not a parameter or a local
            helper = self.tables()[name].get(key)
            return self.table_entry(helper, node, args, kwargs) if helper is not None else None
        imported = self.imports.get(name) if scope.lookup(name) is None else None
        kind = self.learned.get(f"{imported}[{key}]()") if imported else None
        return read_export(kind, node) if kind else None

    def tables(self) -> dict[str, dict[str, ast.Lambda | Function]]:
        """The module's dispatch tables: each module-level name bound to a dict display whose literal keys hold
        lambdas or the module's functions, by key (asked of every call by subscript: made once)."""
        if self.dispatch is None:
            self.dispatch = {}
            for name, value in top_level_bindings(self.tree):
                if not isinstance(value, ast.Dict):
                    continue
                helpers: dict[str, ast.Lambda | Function] = {}
                for key, entry in zip(value.keys, value.values, strict=True):
                    if isinstance(key, ast.Constant) and isinstance(key.value, str):
                        if isinstance(entry, ast.Lambda):
                            helpers[key.value] = entry
                        elif isinstance(entry, ast.Name) and entry.id in self.functions:
                            helpers[key.value] = self.functions[entry.id]
                if helpers:
                    self.dispatch[name] = helpers
        return self.dispatch

    def table_entry(
        self, helper: ast.Lambda | Function, node: ast.Call | None, args: list[Value], kwargs: dict[str, Value]
    ) -> Value:
        """What a dispatch table's helper returns: a lambda's body, its parameters not known; a function run."""
        if isinstance(helper, ast.Lambda):
            inner = Scope(self.globals)
            spec = helper.args
            for arg in (*spec.posonlyargs, *spec.args, *spec.kwonlyargs, spec.vararg, spec.kwarg):
                if arg is not None:
                    inner.vars[arg.arg] = CLEAN
            return self.expr(helper.body, inner)
        inlined = self.inline(helper, node, args, kwargs, skip_self=False) if node is not None else None
        return inlined if inlined is not None else self.invoke(helper, {})

    def own_kind(self, func: ast.expr, name: str | None, receiver: Value, scope: Scope) -> str | None:
        """What a function or method of another module that a call gives arguments returns on its own, whatever
        it is given (``date_of(tz)`` returns the clock: :meth:`own_returns`), as an export's kind (None: nothing)."""
        if name and name.startswith(self.package_top):
            kind = self.learned.get(f"{name}(~)")
            if kind:
                return kind
        if isinstance(func, ast.Attribute) and (receiver.cls or type(func.value) is ast.Name or of_self(func.value)):
            return self.learned_of(self.owners_of(func.value, receiver, scope), f".{func.attr}(~)")
        return None

    def summed(
        self, func: ast.expr, name: str, node: ast.Call, args: list[Value], kwargs: dict[str, Value], scope: Scope
    ) -> Value | None:
        """What a function of another module of the package (``render(...)``), or a class's method called on the
        class (``Budget.for_model(...)``), returns of the arguments given, by its summary (None: none known). Only
        asked of the module's own top-level package: most calls are the standard library's and other packages'."""
        summary = self.learned.get(f"{name}(*)")
        if summary is None and isinstance(func, ast.Attribute):
            owner = self.qualname(func.value, scope)
            summary = self.learned.get(f"{owner}().{func.attr}(*)") if owner else None
        return self.summed_up(Summary.decode(summary), node, args, kwargs) if summary else None

    def summed_up(self, summary: Summary, node: ast.Call, args: list[Value], kwargs: dict[str, Value]) -> Value | None:
        """What a call returns by its summary. A template file of the package named by a literal given the
        parameter whose text the function renders (``load_and_render_prompt("builtin://generic_ask.jinja2",
        context)``) that prints none of the variables it adds on its own
        (:attr:`~agentcache.lint.python.project.Summary.offers`), nor do the templates it brings, drops what it
        returns on its own."""
        argument = summary.argument(node) if summary.offers else None
        name = constant(argument) if argument is not None else None
        printed = self.templates.variables(name) if isinstance(name, str) else None
        if printed is not None:
            return summary.returned(node, args, kwargs, own=not printed.isdisjoint(summary.offers))
        return summary.returned(node, args, kwargs)

    def called_role(self, func: ast.expr, name: str | None) -> str | None:
        """The role a called class gives its objects when not given ``role=``, as
        :meth:`~agentcache.lint.python.sinks.Sinks.call_sinks` takes it: of a class of the module (``name`` None)
        by :meth:`class_role`, of an imported one by what its module exports (``Class(role)``). None: it sets
        none, or ``func`` names no class known."""
        if name is None:
            return self.class_role(func.id) if isinstance(func, ast.Name) and func.id in self.class_nodes else None
        if name not in self.roles:
            self.roles[name] = self.learned.get(f"{name}(role)")
        return self.roles[name]

    def class_role(self, cls: str) -> str | None:
        """The role the module's class ``cls`` gives its objects when not given one, learned from its body
        (:func:`~agentcache.lint.python.syntax.role_default`), else from its first base that gives one:
        :data:`~agentcache.lint.python.vocabulary.SYSTEM`, another of ``other_roles``, ``""`` for a role of its
        own; None when it gives none."""
        key = f"{self.module}.{cls}"
        if key in self.roles:
            return self.roles[key]
        self.roles[key] = None  # a class that derives from itself, through others, gives none
        node = self.class_nodes[cls]
        written = role_default(node)
        found: str | None = None
        if written is not None:  # a constant, or a name that says a role (Role.SYSTEM); else not known
            text = constant(written)
            if isinstance(text, str):
                found = self.words.role_text(text) or ""
            else:
                found = self.words.role_named(last_name(written) or "")
        else:
            for base in node.bases:
                if isinstance(base, ast.Name) and base.id in self.class_nodes:
                    found = self.class_role(base.id)
                else:
                    imported = self.imported(base)
                    found = self.learned.get(f"{imported}(role)") if imported else None
                if found is not None:
                    break
        self.roles[key] = found
        return found

    def class_made(self, made: ast.expr, scope: Scope, call: ast.Call | None = None) -> str | None:
        """The class of the project an object is made of (``_SchemaSpec(...)``, ``Budget.for_model(...)``: ``made``
        is the class), when it is worth knowing: a class of the module that sets a field that differs, but for its
        ids and times (an object known by its class is a memo key of its own, and a class that stamps its objects
        is common) unless a method of its own returns them (``get_prompt()`` printing ``self.id``) and ``call``
        gives it nothing (an id given or loaded, ``Actor(id=stored)``, ``Actor(**row)``, is no fresh one), or a
        class of another module whose methods are summed up (:class:`Summary`) or send a parameter as the system
        prompt (:class:`Sent`)."""
        if isinstance(made, ast.Name) and made.id in self.classes and scope.lookup(made.id) is None:
            known = self.worth.get(made.id)
            if known is None and made.id in self.instance_fields:  # its __init__ has run: asked once per class
                fields = self.instance_fields[made.id]
                known = self.worth[made.id] = (
                    _FIELDS
                    if any(not self.words.is_bookkeeping(field[5:]) for field in fields)
                    else _STAMPS
                    if self.returns_own(made.id)
                    else ""
                )
            if known == _STAMPS and call is not None and _gives(call, self.words):
                return None
            return f"{self.module}.{made.id}" if known else None
        name = self.qualname(made, scope)
        return name if name and name.startswith(self.package_top) and self.learned.get(f"{name}(.)") else None

    def returns_own(self, owner: str) -> bool:
        """Whether a method of the module's class ``owner``, called without arguments, returns what differs on
        its own (as the project learned it)."""
        node = self.class_nodes.get(owner)
        return node is not None and any(
            isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
            and self.learned.get(f"{self.module}.{owner}().{item.name}()") is not None
            for item in node.body
        )

    def template_source(self, callee: str, node: ast.Call, receiver: Value, args: list[Value]) -> Value | None:
        """A template made from a text (``env.from_string(TEXT)``, ``jinja2.Template(TEXT)``) or loaded by a
        literal name from the package (``env.get_template("agent.jinja")``): its value is its text, which
        :meth:`rendered` reads; a template of a text not known is a :data:`TEMPLATE` (None: no argument)."""
        if not args:
            return None
        if callee == "get_template":
            name = constant(node.args[0])
            text = self.templates.named(name) if isinstance(name, str) else None
            if text is not None:
                return Value(text=text)
        elif args[0].text is not None:
            return args[0]
        return Value(combine(receiver, *args).origins, shape=args[0].shape, cls=TEMPLATE)  # shape: a text built

    def rendered(
        self, made: ast.expr, node: ast.Call, receiver: Value, bags: list[Value], kwargs: dict[str, Value], scope: Scope
    ) -> Value | None:
        """``template.render(agent=...)`` of a template whose text is known (``receiver.text``, or the file its
        class names when ``made`` constructs one, ``AgentTemplate(agent=self)``): of each variable, what the text
        prints or iterates of it (``{{ agent.name }}`` reads ``self.name``, a field a class sets), iterated in
        its order; of a dict of variables given whole (``bags``: ``render(variables)``, ``render(**variables)``),
        the keys it prints. A template whose text is not known prints none of a dict given whole: its text is
        the user's (configuration, a file chosen at run time), and offering a value is no sign it is printed;
        what it is given by keyword is (unless the text comes from a caller whose summary is being learned:
        then all of it counts). None when the variables are not known: the call combines its inputs."""
        text, given = receiver.text, node.keywords
        if text is None and isinstance(made, ast.Call):
            if any(keyword.arg is None for keyword in made.keywords):
                return None
            text, given = self.class_template(made.func, scope), [*made.keywords, *node.keywords]
        if text is None:
            if self.offering is not None and given_by_caller(receiver.origins):
                held = self.offer(receiver, bags, kwargs)
                if held is not None:
                    return held
            if not bags or receiver.cls != TEMPLATE or given_by_caller(receiver.origins):
                return None
            return combine(receiver, *self.printed(made, kwargs))
        found = reads(text)
        if found is None:
            return None
        parts = [receiver] if receiver.text is not None else []
        named = {keyword.arg: keyword for keyword in given if keyword.arg}
        for variable, attributes in found.items():
            keyword = named.get(variable)
            if keyword is None:
                parts.extend(ordered(under(bag, variable), ast.copy_location(ast.Name(variable), node)) for bag in bags)
                continue
            for attribute in attributes:
                read: ast.expr = keyword.value
                site: ast.expr = ast.Name(variable)
                if attribute is not None:
                    read = ast.copy_location(ast.Attribute(read, attribute, ast.Load()), read)
                    site = ast.Attribute(site, attribute, ast.Load())
                parts.append(ordered(self.expr(read, scope), ast.copy_location(site, node)))
        return combine(*parts)

    def offer(self, template: Value, bags: list[Value], kwargs: dict[str, Value]) -> Value | None:
        """In a run for a summary, a template whose text its caller gives is rendered: note the variables the
        function adds on its own (not from its parameters), by keyword or as an entry of a dict given whole, and
        the parameter the text comes from. A text built of more (``caller_text + footer``), or of several
        parameters, leaves no variable offered. When the variables are held back (:meth:`offers`), the rendering
        is what the parameters give."""
        offering = self.offering
        assert offering is not None
        sources = {origin.label.rstrip(".") for origin in template.origins if origin.kind == PARAM}
        offering.sources |= sources
        if template.shape is not None or template.cls != TEMPLATE:
            offering.valid = False
        for name, value in [*kwargs.items(), *(entry for bag in bags for entry in bag.entries or ())]:
            if name.isidentifier() and any(origin.kind != PARAM for origin in value.origins):
                offering.names.add(name)
        if not offering.holding:
            return None
        given = combine(*kwargs.values(), *(value for bag in bags for _, value in bag.entries or ()))
        parameters = Value(frozenset(origin for origin in given.origins if origin.kind == PARAM))
        return combine(template, parameters, *(unattributed(bag) for bag in bags))  # but the variables it offers

    def printed(self, template: ast.expr, kwargs: dict[str, Value]) -> list[Value]:
        """Of the keyword arguments a template whose text is not known is filled with, those it may print. A
        template that is a field of the object (``self.system_prompt.format(date=today)``) is set by whoever
        configures it: a name no text of the package holds as a placeholder
        (:meth:`~agentcache.lint.python.templates.TemplateFiles.placeholders`) is offered to templates the user
        writes, and prints in none the package ships. Any other template (a parameter, one looked up by a key) is
        chosen where it is filled, and what it is given by name is taken as printed."""
        if not _a_field(template):
            return list(kwargs.values())
        return [value for key, value in kwargs.items() if self.named_in_texts(key)]

    def variables(self, kwargs: dict[str, Value]) -> list[Value]:
        """What a call that makes a prompt by name prints of its keyword arguments (``get_cached_prompt(name,
        inputs={"date": today})``, ``build_prompt(name, date=today)``): the variables, given by keyword or in a
        dict, named by a placeholder of a text of the package (every one, when the module is in none)."""
        found = []
        for key, value in kwargs.items():
            if value.entries:  # a dict of variables: each entry by its key, and what no entry holds
                found += [entry for name, entry in value.entries if self.named_in_texts(name)]
                found.append(unattributed(value))
            elif not self.words.is_bookkeeping(key, prompt=True) and self.named_in_texts(key):
                found.append(value)
        return found

    def named_in_texts(self, variable: str) -> bool:
        """Whether a placeholder of a text of the module's package names ``variable`` (True when the module is in
        no package: its texts are not known)."""
        names = self.templates.placeholders()
        return names is None or variable in names

    def class_template(self, made: ast.expr, scope: Scope) -> str | None:
        """The template text of the class ``made`` names, defined in this module or imported."""
        if isinstance(made, ast.Name) and scope.lookup(made.id) is None and made.id not in self.imports:
            return self.templates.class_template(made.id, self.tree)
        name = self.qualname(made, scope)
        return self.templates.class_template(name) if name else None

    def join_text(self, separator: str, node: ast.Call, iterable: Value, scope: Scope) -> Value:
        """``SEP.join([...])`` of a literal list is laid out like concatenation; of anything else, a whole."""
        site = node.args[0]
        if isinstance(site, (ast.List, ast.Tuple)) and not starred(site.elts):
            parts: list[Value] = []
            for index, item in enumerate(site.elts):
                if index:
                    parts.append(Value(text=separator))
                parts.append(self.expr(item, scope))
            return concat(parts)
        return combine(ordered(iterable, node))

    def made_by(self, factory: ast.expr, scope: Scope) -> Value:
        """What calling ``factory`` with no arguments returns (``uuid4``, ``lambda: datetime.now()``)."""
        if isinstance(factory, ast.Lambda):
            return self.expr(factory.body, Scope(scope))
        return self.expr(ast.copy_location(ast.Call(func=factory, args=[], keywords=[]), factory), scope)

    def makes_a_class(self, func: ast.expr) -> bool:
        """Whether ``func`` is a function of the module (or a method of ``self``) that returns a class it defines:
        what such a factory returns is a type, a definition whatever its name says (``get_tool_message_type``)."""
        if isinstance(func, ast.Name):
            function = self.functions.get(func.id)
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in ("self", "cls"):
            function = self.methods.get(func.attr)
        else:
            return False
        if function is None:
            return False
        made = self.factories.get(id(function))
        if made is None:
            made = self.factories[id(function)] = returns_own_class(function)
        return made

    def _configures(self, node: ast.expr, ids: bool, locations: bool) -> bool:
        """Whether a positional argument's name says it configures the call: an id (``session_id``), when
        ``ids``; a location (``log_dir``), when ``locations``."""
        name = last_name(node)
        if name is None:
            return False
        return (ids and (name in ("id", "uuid") or name.endswith("_id"))) or (
            locations and self.words.names_a_location(name)
        )

    def mutate(self, key: str, value: Value, node: ast.expr, scope: Scope) -> None:
        """An in-place change (``append``, ``shuffle``) to the object bound to ``key``: a rebinding, for sinks too."""
        scope.update(key, value)
        owner, _, name = key.rpartition(".")
        self.sinks.named_sink(name, node, value, owner.rpartition(".")[2] or None, local=not owner)

    def inline(
        self,
        function: Function,
        node: ast.Call,
        args: list[Value],
        kwargs: dict[str, Value],
        skip_self: bool,
        spread: Sequence[Value] = (),
        owner: Value | None = None,
        state: dict[str, Value] | None = None,
    ) -> Value | None:
        """The return value of a module function called with these values (None: calls it cannot follow, which
        unpack a sequence into its positional parameters). The dicts unpacked into its keywords (``spread``:
        ``**options``) fill the parameters their entries name, and its ``**kwargs`` holds them with the keywords
        no parameter is named by (``self._gather(context, **kwargs)`` that returns ``dict(kwargs)``). ``owner``:
        what the first parameter it skips is bound to (a class method's ``cls``, the class it is called on).
        ``state``: the fields of ``self`` the calling method set (:meth:`state`), which the method called reads."""
        if starred(node.args) or len(spread) != sum(kw.arg is None for kw in node.keywords):
            return None
        spec = function.args
        static = skip_self and any(last_name(decorator) == "staticmethod" for decorator in function.decorator_list)
        positional = [arg.arg for arg in (*spec.posonlyargs, *spec.args)][1 if skip_self and not static else 0 :]
        named = {arg.arg for arg in (*spec.args, *spec.kwonlyargs)}
        bindings = {**(state or {}), **dict(zip(positional, args, strict=False))}
        if owner is not None and skip_self and not static and spec.args:
            bindings[spec.args[0].arg] = owner
        for mapping in spread:
            bindings.update((key, value) for key, value in mapping.entries or () if key in named)
        bindings.update((key, value) for key, value in kwargs.items() if key in named)
        if spec.kwarg is not None:
            rest = [
                *(_without(mapping, named) for mapping in spread),
                *(Value(entries=with_entry(CLEAN, key, value)) for key, value in kwargs.items() if key not in named),
            ]
            if any(value.origins or value.entries for value in rest):
                bindings[spec.kwarg.arg] = Value(combine(*rest).origins, entries=merged(*rest))
        return self.invoke(function, bindings)

    def state(self, scope: Scope, method: Function) -> dict[str, Value]:
        """The fields of ``self`` the running method bound (:meth:`uses`), or was given so bound, to
        something else than its class's (``self.files = self._find_files()`` before ``self._build_prompt()``): what
        its own methods it then calls read of them, those ``method``, the one called, reads (:meth:`reads_on_self`)."""
        if not self.stack:
            return {}
        fields = self.fields.get(id(self.stack[-1]), {})
        found: dict[str, Value] = {}
        current: Scope | None = scope
        while current is not None and current is not self.globals:
            for key, value in current.vars.items():
                if key not in found and value is not fields.get(key) and key.startswith("self."):
                    found[key] = value  # (a field not bound again is what the class's fields hold, as it is)
            current = current.parent
        if not found:
            return found
        bound, read = self.uses(self.stack[-1]).bound | self.given_fields[-1], self.reads_on_self(method)
        return {
            key: value
            for key, value in found.items()
            if key in bound and key[5:] in read and value != fields.get(key, CLEAN)
        }

    def qualname(self, node: ast.expr, scope: Scope) -> str | None:
        """The imported name a call target refers to (``dt.datetime.now`` -> ``datetime.datetime.now``)."""
        if isinstance(node, ast.Name):
            return self.imports.get(node.id) if scope.lookup(node.id) is None else None
        if isinstance(node, ast.Attribute):
            base = self.qualname(node.value, scope)
            return f"{base}.{node.attr}" if base else None
        return None

    EXPRESSIONS: ClassVar[dict[type[ast.expr], ExpressionHandler]] = {
        ast.Constant: literal,
        ast.Name: variable,
        ast.Attribute: attribute,
        ast.JoinedStr: fstring,
        ast.BinOp: binop,
        ast.BoolOp: boolop,
        ast.IfExp: conditional,
        ast.Compare: compare,
        ast.UnaryOp: unary,
        ast.Call: call,
        ast.List: sequence,
        ast.Tuple: sequence,
        ast.Set: set_display,
        ast.Dict: mapping,
        **dict.fromkeys((ast.ListComp, ast.GeneratorExp, ast.SetComp, ast.DictComp), comprehension),
        ast.Subscript: subscript,
        ast.Await: inner,
        ast.Yield: sent,
        ast.YieldFrom: sent,
        ast.Starred: inner,
        ast.NamedExpr: walrus,
        ast.Slice: bounds,
    }


def builtin(name: str, node: ast.Call, args: list[Value]) -> Value | None:
    """The value of a call to a builtin that matters for order (None: not one of them)."""
    if name in OPAQUE:
        return CLEAN
    if name in ORDER_FREE:
        return Value(order_free(combine(*args).origins))
    if name in SET_TYPES:  # a set holds the same items whatever order they came in (as a set display)
        if len(node.args) == 1 and isinstance(node.args[0], ast.Call) and _builtin_called(node.args[0].func) == "range":
            return combine(*args)  # set(range(n)): ints hash to themselves, their order is fixed
        return made_set(node, *args)
    if name == "next" and node.args and _looked_up(node.args[0]):
        return Value(order_free(combine(*args).origins))
    if name in SEQUENCERS:
        items = [ordered(arg, node) for arg in args]
        if name in ("str", "repr") and len(args) == 1 and args[0].unordered is None:
            return args[0]
        return combine(*items)
    return None


def _looked_up(iterable: ast.expr) -> bool:
    """Whether ``next`` is given the items equal to a value (``next(t for t in tools if t.name == name)``): the one
    a key names, in whatever order they are tried. Not a test of a part of the item that several may share
    (``len(t) == 5``, ``t[0] == "s"``)."""
    if not isinstance(iterable, ast.GeneratorExp):
        return False
    for generator in iterable.generators:
        names = bound_names(generator.target)
        for test in generator.ifs:
            if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq):
                left, right = test.left, test.comparators[0]
                if (_names_item(left, names) and not _mentions(right, names)) or (
                    _names_item(right, names) and not _mentions(left, names)
                ):
                    return True
    return False


def _names_item(node: ast.expr, names: frozenset[str]) -> bool:
    """Whether ``node`` is an item a loop binds, or a field of it (``t``, ``t.name``, ``t.spec.name``)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name) and node.id in names


def _mentions(node: ast.expr, names: frozenset[str]) -> bool:
    """Whether ``node`` reads one of ``names`` anywhere in it (``len(t)``, ``t[0]``)."""
    return any(isinstance(part, ast.Name) and part.id in names for part in ast.walk(node))


def _returns_a_set(function: Function) -> bool:
    """Whether ``function`` is annotated to return a set whose order differs between processes (``-> set[str]``,
    ``-> Set[str]``, ``-> frozenset``: :func:`~agentcache.lint.python.statements.declares_set`)."""
    return function.returns is not None and declares_set(function.returns, optional=False)


def _makes_a_set(factory: ast.expr) -> bool:
    """Whether a ``defaultdict`` factory makes sets: ``set``, ``frozenset``, ``lambda: set()``."""
    if isinstance(factory, ast.Lambda):
        factory = factory.body.func if isinstance(factory.body, ast.Call) and not factory.body.args else factory.body
    return isinstance(factory, ast.Name) and factory.id in SET_TYPES


def _index(node: ast.expr) -> int | None:
    """The constant index a subscript reads (``result[4]``, ``result[-2]``), None for any other key."""
    negative = isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)
    value = constant(node.operand if isinstance(node, ast.UnaryOp) and negative else node)
    if type(value) is not int:
        return None
    return -value if negative else value


def _builtin_called(func: ast.expr) -> str | None:
    """The name a call may call a builtin by: ``set(...)``, and ``set[str]()``, a generic alias of one."""
    if isinstance(func, ast.Subscript) and isinstance(func.value, ast.Name) and func.value.id in GENERIC_BUILTINS:
        return func.value.id
    return func.id if isinstance(func, ast.Name) else None


def _updated(
    mapping: Value, method: str, node: ast.Call, args: list[Value], kwargs: dict[str, Value]
) -> tuple[tuple[str, Value], ...] | None:
    """A dict's entries once ``d.setdefault(key, value)`` or ``d.update(other, key=value)`` changed it."""
    if method == "setdefault" and len(node.args) == 2:
        key = constant(node.args[0])
        if isinstance(key, str) and all(name != key for name, _ in mapping.entries or ()):
            return with_entry(mapping, key, args[1])
    elif method == "update":
        named = [Value(entries=with_entry(CLEAN, key, value)) for key, value in kwargs.items()]
        return merged(mapping, *args, *named)
    return mapping.entries


def _field_key(name: str) -> str:
    """A field's name as its dict key may spell it (``created_at`` of ``createdAt``, pydantic's camel-case alias)."""
    return name.replace("_", "").lower()


def _key_path(node: ast.Attribute | ast.Subscript, keys: frozenset[str]) -> tuple[str, ...] | None:
    """The key path an attribute or item read follows from where it starts, when its last key is one of ``keys``:
    ``get_settings().review_prompt.system`` and ``config["review_prompt"]["system"]`` follow
    ``review_prompt``, ``system``, from a call and from a name; ``self.config.system_template`` follows ``config``,
    ``system_template``."""
    path: list[str] = []
    current: ast.expr = node
    while True:
        if isinstance(current, ast.Attribute):
            key = current.attr
        elif isinstance(current, ast.Subscript) and isinstance(constant(current.slice), str):
            key = str(constant(current.slice))
        else:
            break
        if not path and key not in keys:
            return None
        path.append(key)
        current = current.value
    if not path:
        return None
    if isinstance(current, ast.Name) and current.id not in ("self", "cls"):
        path.append(current.id)
    return tuple(reversed(path))


def _without(mapping: Value, keys: set[str]) -> Value:
    """A dict unpacked into a call's keywords, less the items the parameters named ``keys`` take."""
    if not mapping.entries or all(key not in keys for key, _ in mapping.entries):
        return mapping
    kept = tuple((key, value) for key, value in mapping.entries if key not in keys)
    return Value(combine(unattributed(mapping), *(value for _, value in kept)).origins, entries=kept or None)


def _class_named(annotation: ast.expr) -> ast.expr:
    """The class an annotation names, unquoted and without ``None``: ``"Agent"``, ``"pkg.Agent | None"``,
    ``Agent | None`` and ``Optional[Agent]`` name ``Agent``. A quoted annotation is read without parsing it (a
    module has hundreds): only a dotted name, with or without ``| None``."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        quoted = _QUOTED_CLASS.fullmatch(annotation.value)
        if quoted is None:
            return annotation
        first, *rest = quoted.group(1).split(".")
        named: ast.expr = ast.Name(first)
        for part in rest:
            named = ast.Attribute(named, part)
        return named
    if (
        isinstance(annotation, ast.BinOp)
        and isinstance(annotation.op, ast.BitOr)
        and isinstance(annotation.right, ast.Constant)
        and annotation.right.value is None
    ):
        return _class_named(annotation.left)
    if isinstance(annotation, ast.Subscript) and last_name(annotation.value) == "Optional":
        return _class_named(annotation.slice)
    return annotation


#: A quoted annotation that names a class: ``"Agent"``, ``"pkg.Agent | None"``.
_QUOTED_CLASS = re.compile(r"\s*([A-Za-z_][\w.]*)\s*(?:\|\s*None\s*)?")


def _a_field(template: ast.expr) -> bool:
    """Whether a template is a field of the object, or made of one (``self.system_prompt``,
    ``Environment().from_string(self.template)``, ``Template(self.text)``)."""
    while isinstance(template, ast.Call) and template.args and last_name(template.func) in TEMPLATE_MAKERS:
        template = template.args[0]
    owner = template.value if isinstance(template, ast.Attribute) else None
    return isinstance(owner, ast.Name) and owner.id in ("self", "cls")


def _class_of(func: ast.expr) -> str | None:
    """The class a call makes an object of through a factory method (``StructuredTool.from_function``,
    ``_BranchPath.from_string``)."""
    if isinstance(func, ast.Attribute):
        owner = last_name(func.value)
        if owner and _capitalized(owner) and not owner.isupper():
            return owner
    return None


#: Why a class of the module is known by its objects (:attr:`Interpreter.worth`).
_FIELDS, _STAMPS = "fields", "stamps"


def _gives(call: ast.Call, words: Vocabulary) -> bool:
    """Whether a constructor call gives what may be an object's id or time: a positional argument, a spread
    mapping, or a keyword that names one (``Actor("planner", stored_id)``, ``Actor(**row)``, ``Actor(id=...)``)."""
    return bool(call.args) or any(kw.arg is None or words.is_bookkeeping(kw.arg) for kw in call.keywords)


def _object_name(node: ast.expr) -> str:
    """The name an object is known by: its variable's or field's (``prompt_builder``), else its class's where it is
    made in place (``ChatSystemPromptBuilder()``)."""
    if isinstance(node, ast.Call):
        node = node.func
    return last_name(node) or ""


def _provides(node: ast.expr) -> bool:
    """Whether an argument is a function of no parameters written in place (``lambda: platform.platform()``)."""
    if not isinstance(node, ast.Lambda):
        return False
    spec = node.args
    return not (spec.posonlyargs or spec.args or spec.kwonlyargs or spec.vararg or spec.kwarg)


def _capitalized(name: str) -> bool:
    """Whether a name is written as a class's, private or not (``Tool``, ``_SchemaSpec``)."""
    return name.lstrip("_")[:1].isupper()


def dump(node: ast.Call, name: str, args: list[Value]) -> Value:
    """``json.dumps(data)``: the text of ``data``. When a set ordered some of it and the keys are not sorted, its
    order becomes a key-order origin (AC104: ``sort_keys=True`` is the fix)."""
    if sorts_keys(node, name):
        return combine(*(ordered(unkeyed(arg), node) for arg in args))
    dumped = combine(*(ordered(arg, node) for arg in args))
    if orders(dumped):
        return Value(volatile(dumped.origins) | {Origin.at(node, KEY_ORDER)})
    return dumped


def format_call(
    template: str, node: ast.Call, args: list[Value], kwargs: dict[str, Value], bags: list[Value]
) -> Value | None:
    """``TEMPLATE.format(...)`` laid out field by field, so AC105 sees where each value lands. ``bags``: the dicts
    it is given whole (``format(**variables)``, ``format_map(variables)``), of which each field reads its key."""
    if starred(node.args):
        return None
    parts: list[Value] = []
    automatic = 0
    try:
        fields = list(string.Formatter().parse(template))
    except ValueError:
        return None
    for literal, field_name, _, _ in fields:
        parts.append(Value(text=literal))
        if field_name is None:
            continue
        key = re.split(r"[.\[]", field_name, maxsplit=1)[0]
        if key == "":
            key, automatic = str(automatic), automatic + 1
        if key.isdecimal() and key.isascii():
            value = args[int(key)] if int(key) < len(args) else CLEAN
        else:
            value = kwargs.get(key) or reduce(join, (under(bag, key) for bag in bags), CLEAN)
        parts.append(ordered(value, node))
    return concat(parts)


@dataclass
class _Offers:
    """What a run for a summary learns of the templates whose text its caller gives (:meth:`Interpreter.offer`)."""

    names: set[str] = field(default_factory=set)
    """The variables the function adds to them on its own."""
    sources: set[str] = field(default_factory=set)
    """The parameters their texts come from."""
    valid: bool = True
    """False when a text is built of more than a parameter's."""
    holding: bool = False
    """Whether the run holds those variables back (:meth:`Interpreter.offers`)."""


def _own_parameters(function: Function, bound: int, run: int = 0) -> tuple[tuple[str, ...], dict[str, Value]]:
    """A function's positional parameters (but its ``bound`` first ones: ``self``), and every parameter bound to
    a value of its own (:data:`~agentcache.lint.python.values.PARAM`), to see where each goes; ``run`` tells the
    values of one kind of run from another's (:data:`SENDING`), whose calls are not those the memo holds."""
    spec = function.args
    positional = tuple(arg.arg for arg in (*spec.posonlyargs, *spec.args))[bound:]
    extra = [arg.arg for arg in (spec.vararg, spec.kwarg) if arg is not None]
    names = [*positional, *(arg.arg for arg in spec.kwonlyargs), *extra]
    line = function.lineno
    return positional, {
        name: Value(frozenset({Origin(line, run + index, PARAM, name)})) for index, name in enumerate(names)
    }


def _part_of(origin: Origin) -> Origin:
    """A parameter's origin as that of a part read of it (:meth:`Interpreter.part_of_parameter`)."""
    return replace(origin, label=f"{origin.label}.") if origin.kind == PARAM and not is_part(origin) else origin


def _decorated(function: Function, *names: str) -> bool:
    """Whether ``function`` has a decorator of one of these last names (``staticmethod``, ``classmethod``)."""
    return any(last_name(decorator) in names for decorator in function.decorator_list)


def _makes_own_object(function: Function) -> bool:
    """Whether a class method returns an object its ``cls(...)`` makes (an alternate constructor), directly or by
    a name bound to one: what it gives that object is what the object says, as a constructor's arguments are."""
    if not _decorated(function, "classmethod"):
        return False
    made = {
        target.id
        for node in ast.walk(function)
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and _calls_cls(node.value)
        for target in targets_of(node)
        if isinstance(target, ast.Name)
    }
    return any(
        isinstance(node, ast.Return)
        and node.value is not None
        and (_calls_cls(node.value) or (isinstance(node.value, ast.Name) and node.value.id in made))
        for node in ast.walk(function)
    )


def _calls_cls(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "cls"


def _bound(method: Function) -> int:
    """How many first parameters a method's call binds: ``self`` or ``cls``, none for a static method."""
    return 0 if _decorated(method, "staticmethod") else 1


def _name(parameter: ast.arg | None) -> str:
    return parameter.arg if parameter is not None else ""
