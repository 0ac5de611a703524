"""A state machine over registrations and disposals in the global layer and nested scopes: the registry always
matches a simple model, assemblies see exactly the nearest entries, and disposing everything restores the start."""

from __future__ import annotations

from dataclasses import dataclass, field

import anyio
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, invariant, precondition, rule

from dsh.runtime.kernel import Context, Disposer
from dsh.runtime.prompt import (
    SYSTEM_PROMPT,
    AssembleContext,
    DuplicatePromptNameError,
    PromptSection,
    ToolSchema,
    ToolSet,
    plugin,
)

SCOPES = ("", "a", "a/child", "b")  # "" is the global layer
NAMES = ("alpha", "beta", "gamma")


@dataclass
class Registration:
    where: str
    kind: str  # "section" | "variable" | "tools" | "suppress"
    name: str
    disposer: Disposer = field(repr=False)
    order: int = 0  # a section's


class PromptLifecycle(RuleBasedStateMachine):
    registrations = Bundle("registrations")

    def __init__(self) -> None:
        super().__init__()
        self.root = Context()
        self.root.plugin(plugin, {"persona": "p"})
        a = self.root.scoped("a")
        self.contexts = {"": self.root, "a": a, "a/child": a.scoped("child"), "b": self.root.scoped("b")}
        self.sp = self.root.get(SYSTEM_PROMPT)
        self.initial = self.sp.describe()
        self.live: list[Registration] = []

    def _taken(self, where: str, kind: str, name: str) -> bool:
        return any(r.where == where and r.kind == kind and r.name == name for r in self.live)

    @rule(
        target=registrations,
        where=st.sampled_from(SCOPES),
        name=st.sampled_from(NAMES),
        order=st.integers(1, 9),
    )
    def section(self, where: str, name: str, order: int) -> Registration | None:
        view = self.contexts[where].get(SYSTEM_PROMPT)
        # The order is in the text, so an assembly served from a stale merge (same name, old order) shows.
        section = PromptSection(name, order, f"{name} from {where or 'global'} at {order}")
        if self._taken(where, "section", name):
            before = self.sp.describe()
            try:
                view.section(section)
            except DuplicatePromptNameError:
                assert self.sp.describe() == before
                return None
            raise AssertionError("a duplicate section was accepted")
        registration = Registration(where, "section", name, view.section(section), order)
        self.live.append(registration)
        return registration

    @rule(target=registrations, where=st.sampled_from(SCOPES), name=st.sampled_from(NAMES))
    def variable(self, where: str, name: str) -> Registration | None:
        view = self.contexts[where].get(SYSTEM_PROMPT)
        value = f"{name}@{where or 'global'}"
        if self._taken(where, "variable", name):
            try:
                view.variable(name, lambda context: value)
            except DuplicatePromptNameError:
                return None
            raise AssertionError("a duplicate variable was accepted")
        registration = Registration(where, "variable", name, view.variable(name, lambda context: value))
        self.live.append(registration)
        return registration

    @rule(target=registrations, where=st.sampled_from(SCOPES), name=st.sampled_from(NAMES))
    def tools(self, where: str, name: str) -> Registration:
        schemas = (ToolSchema(f"{name}_{where.replace('/', '_') or 'global'}", "a tool"),)
        disposer = self.contexts[where].get(SYSTEM_PROMPT).tools(lambda context: ToolSet(schemas))
        registration = Registration(where, "tools", schemas[0].name, disposer)
        self.live.append(registration)
        return registration

    @rule(registration=consumes(registrations))
    def dispose(self, registration: Registration | None) -> None:
        if registration is None:
            return
        registration.disposer()
        registration.disposer()  # idempotent
        self.live = [r for r in self.live if r is not registration]

    @precondition(lambda self: bool(self.live))
    @rule(data=st.data())
    def dispose_scope(self, data: st.DataObject) -> None:
        # Disposing a scope context removes its registrations (and its descendants'); re-create it afterwards.
        where = data.draw(st.sampled_from([s for s in SCOPES if s]))
        gone = [s for s in SCOPES if s and (s == where or s.startswith(f"{where}/"))]
        self.contexts[where].dispose()
        parent = self.contexts[where.rpartition("/")[0]]
        for scope in gone:
            key = scope.rpartition("/")[2]
            base = parent if scope == where else self.contexts[scope.rpartition("/")[0]]
            self.contexts[scope] = base.scoped(key)
        self.live = [r for r in self.live if r.where not in gone]

    @invariant()
    def registry_matches_the_model(self) -> None:
        described = self.sp.describe()
        for where in SCOPES:
            layer = described.get(where)
            sections = sorted(r.name for r in self.live if r.where == where and r.kind == "section")
            variables = sorted(r.name for r in self.live if r.where == where and r.kind == "variable")
            tools = sum(1 for r in self.live if r.where == where and r.kind == "tools")
            if where == "":
                sections = sorted([*sections, "harness:identity", "deployment:persona"])
            if layer is None:
                assert (sections, variables, tools) == ([], [], 0), where
                continue
            assert sorted(name for name, _, _ in layer["sections"]) == sections
            assert sorted(layer["variables"]) == variables
            assert layer["tools"] == tools

    @invariant()
    def assemblies_see_the_nearest_entries(self) -> None:
        for where in SCOPES:
            chain = (
                [""] + ["/".join(where.split("/")[: i + 1]) for i in range(len(where.split("/")))]
                if where
                else [""]
            )
            expected_sections: dict[str, str] = {}
            expected_variables: dict[str, str] = {}
            expected_tools: list[str] = []
            for layer in chain:
                for r in self.live:
                    if r.where != layer:
                        continue
                    if r.kind == "section":
                        expected_sections[r.name] = f"{r.name} from {layer or 'global'} at {r.order}"
                    elif r.kind == "variable":
                        expected_variables[r.name] = f"{r.name}@{layer or 'global'}"
                    else:
                        expected_tools.append(r.name)
            assembly = anyio.run(self.sp.assemble, AssembleContext(ctx=self.contexts[where]))
            sections = {s.name: s.text for s in assembly.sections}
            assert {k: v for k, v in sections.items() if k in NAMES} == expected_sections
            orders = [int(s.text.rpartition(" at ")[2]) for s in assembly.sections if s.name in NAMES]
            assert orders == sorted(orders)
            assert assembly.variables == expected_variables
            assert [t.name for t in assembly.tools] == sorted(expected_tools)

    def teardown(self) -> None:
        for registration in reversed(self.live):
            registration.disposer()
        for where in ("a/child", "a", "b"):
            self.contexts[where].dispose()
        assert self.sp.describe() == self.initial


TestPromptLifecycle = PromptLifecycle.TestCase
# Twenty steps reach every interleaving that matters here (four layers, three names); the profile sets the examples.
TestPromptLifecycle.settings = settings(stateful_step_count=20)
