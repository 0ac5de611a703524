"""The strict renderer, rule by rule (spec/prompt-and-subagents.md §1.10, §1.8), with the exact messages."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.runtime.kernel import DshError
from dsh.runtime.prompt import (
    CONTEXT_SNAPSHOT_HEADER,
    AssembledText,
    PromptAssembly,
    PromptError,
    PromptRenderError,
    interpolate,
    render_context_sections,
    render_context_snapshot,
    render_prompt,
)

VARS: dict[str, str | None] = {"model": "deepseek-v4-flash", "cwd": None}


def render_error(text: str, variables: dict[str, str | None] = VARS, section: str = "s") -> PromptRenderError:
    with pytest.raises(PromptRenderError) as caught:
        interpolate(text, variables, section=section)
    return caught.value


def test_substitutes_a_registered_variable() -> None:
    assert (
        interpolate("powered by the {{model}} model", VARS, section="s")
        == "powered by the deepseek-v4-flash model"
    )


def test_unknown_variable_names_the_section_and_lists_registered_variables_in_insertion_order() -> None:
    error = render_error("powered by {{modle}}", section="deployment:persona")
    assert str(error) == (
        'unknown prompt variable "{{modle}}" in section "deployment:persona"; registered variables: model, cwd'
    )
    assert error.section == "deployment:persona"
    assert error.variable == "modle"


def test_unknown_variable_with_no_variables_says_none() -> None:
    assert str(render_error("{{model}}", {})) == (
        'unknown prompt variable "{{model}}" in section "s"; registered variables: (none)'
    )


@pytest.mark.parametrize("name", ["get", "items", "keys", "copy", "setdefault"])
def test_lookup_is_own_keys_only_never_attributes(name: str) -> None:
    assert str(render_error(f"{{{{{name}}}}}")).startswith(f'unknown prompt variable "{{{{{name}}}}}"')


def test_valueless_variable_raises() -> None:
    error = render_error("in {{cwd}}")
    assert str(error) == 'prompt variable "{{cwd}}" has no value for this assembly (section "s")'
    assert error.variable == "cwd"


def test_valueless_variable_never_referenced_is_harmless() -> None:
    assert interpolate("{{model}} only", VARS, section="s") == "deepseek-v4-flash only"


@pytest.mark.parametrize(
    "name",
    ["", " model", "model ", " model ", "Model", "MODEL", "1a", "_a", "a-b", "a.b", "é", "a\nb", "mödel"],
)
def test_malformed_name_in_a_complete_group(name: str) -> None:
    assert render_error(f"x {{{{{name}}}}} y").variable is None  # not a name: nothing to route on
    assert str(render_error(f"x {{{{{name}}}}} y")) == (
        f'malformed prompt variable reference "{{{{{name}}}}}" in section "s" (variable names match '
        "/^[a-z][a-z0-9_]*$/)"
    )


@pytest.mark.parametrize(
    ("text", "excerpt"),
    [
        ("{{{model}}}", "{{{model}}}"),
        ("a {{a{b}} c", "{{a{b}} c"),
        ("{{model}x}}", "{{model}x}}"),
        ("see {{ this is a long run {x}} here", "{{ this is a lon"),
    ],
)
def test_opener_without_a_complete_group_but_a_closer_after_it_is_malformed(text: str, excerpt: str) -> None:
    assert str(render_error(text)) == (
        f'malformed prompt variable reference at "{excerpt}…" in section "s" (references are complete simple '
        "{{name}} groups)"
    )


def test_lone_opener_with_no_closer_after_it_is_prose() -> None:
    assert interpolate("use {{ to open", VARS, section="s") == "use {{ to open"
    assert interpolate("{{", {}, section="s") == "{{"
    assert interpolate("{{{", {}, section="s") == "{{{"


def test_lone_opener_after_a_valid_group_is_prose() -> None:
    assert interpolate("{{model}} then {{", VARS, section="s") == "deepseek-v4-flash then {{"


def test_closer_without_an_opener_is_prose() -> None:
    assert interpolate("a }} b {{model}} }}", VARS, section="s") == "a }} b deepseek-v4-flash }}"


def test_first_problem_from_the_left_is_the_one_raised() -> None:
    assert str(render_error("{{Bad}} {{unknown}}")).startswith(
        'malformed prompt variable reference "{{Bad}}"'
    )
    assert str(render_error("{{unknown}} {{Bad}}")).startswith('unknown prompt variable "{{unknown}}"')
    assert str(render_error("{{cwd}} {{Bad}}")).startswith('prompt variable "{{cwd}}" has no value')


def test_substituted_values_are_never_rescanned() -> None:
    variables: dict[str, str | None] = {"a": "{{b}} and {{", "b": "B"}
    assert interpolate("[{{a}}] {{b}}", variables, section="s") == "[{{b}} and {{] B"


def test_a_value_that_is_not_a_string_is_a_type_error() -> None:
    with pytest.raises(TypeError, match=r'prompt variable "\{\{n\}\}" must be a string or None, got int'):
        interpolate("{{n}}", {"n": 3}, section="s")  # type: ignore[dict-item]  # the wrong type is the point


def test_render_error_is_a_value_error_in_the_dsh_tree() -> None:
    error = render_error("{{nope}}")
    assert isinstance(error, ValueError)
    assert isinstance(error, PromptError)
    assert isinstance(error, DshError)


def assembly(*sections: tuple[str, str], variables: dict[str, str | None] | None = None) -> PromptAssembly:
    return PromptAssembly(
        sections=[AssembledText(name, text) for name, text in sections],
        variables=dict(VARS if variables is None else variables),
    )


def test_render_prompt_joins_by_a_blank_line_without_resorting() -> None:
    rendered = render_prompt(assembly(("z", "last? no, first"), ("a", "on {{model}}")))
    assert rendered == "last? no, first\n\non deepseek-v4-flash"


def test_render_prompt_drops_empty_sections_and_keeps_whitespace_only_ones() -> None:
    rendered = render_prompt(assembly(("a", "A"), ("empty", ""), ("space", " "), ("b", "B")))
    assert rendered == "A\n\n \n\nB"


def test_render_prompt_of_nothing_is_empty() -> None:
    assert render_prompt(assembly()) == ""
    assert render_prompt(assembly(("a", ""), ("b", ""))) == ""


def test_render_prompt_interpolates_each_section_on_its_own() -> None:
    # The "{{" of one section and the "}}" of the next never pair up.
    assert render_prompt(assembly(("a", "open {{"), ("b", "model}} close"))) == "open {{\n\nmodel}} close"


def test_render_prompt_names_the_failing_section() -> None:
    with pytest.raises(PromptRenderError) as caught:
        render_prompt(assembly(("ok", "{{model}}"), ("tool:bash", "{{cwdd}}")))
    assert str(caught.value) == (
        'unknown prompt variable "{{cwdd}}" in section "tool:bash"; registered variables: model, cwd'
    )
    assert caught.value.section == "tool:bash"


def context_assembly(*contexts: tuple[str, str]) -> PromptAssembly:
    return PromptAssembly(
        contexts=[AssembledText(name, text) for name, text in contexts], variables=dict(VARS)
    )


def test_context_errors_say_context() -> None:
    with pytest.raises(PromptRenderError) as caught:
        render_context_sections(context_assembly(("sandbox", "in {{cwd}}")))
    assert str(caught.value) == 'prompt variable "{{cwd}}" has no value for this assembly (context "sandbox")'
    assert caught.value.section == "sandbox"


def test_context_snapshot() -> None:
    assert render_context_snapshot(context_assembly()) == ""
    assert render_context_snapshot(context_assembly(("a", ""))) == ""
    snapshot = render_context_snapshot(context_assembly(("a", "A on {{model}}"), ("b", ""), ("c", "C")))
    assert snapshot == f"{CONTEXT_SNAPSHOT_HEADER}\n\nA on deepseek-v4-flash\n\nC"
    assert CONTEXT_SNAPSHOT_HEADER == (
        "Current runtime context. This snapshot supersedes earlier runtime-context snapshots."
    )


# -- properties --------------------------------------------------------------------------------------------

names = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)


@given(
    text=st.text().filter(lambda text: "{{" not in text),
    variables=st.dictionaries(names, st.text() | st.none()),
)
def test_text_without_an_opener_renders_unchanged(text: str, variables: dict[str, str | None]) -> None:
    assert interpolate(text, variables, section="s") == text


prose = st.text(alphabet=st.characters(blacklist_characters="{}"))


@given(
    data=st.data(),
    values=st.dictionaries(names, st.text(), min_size=1),
    pieces=st.lists(st.tuples(prose, st.booleans()), max_size=8),
)
def test_values_come_out_verbatim_never_rescanned(
    data: st.DataObject, values: dict[str, str], pieces: list[tuple[str, bool]]
) -> None:
    template, expected = [], []
    for text, with_reference in pieces:
        template.append(text)
        expected.append(text)
        if with_reference:
            name = data.draw(st.sampled_from(sorted(values)))
            template.append(f"{{{{{name}}}}}")
            expected.append(values[name])
    variables: dict[str, str | None] = dict(values)
    assert interpolate("".join(template), variables, section="s") == "".join(expected)


@given(value=st.text(), name=names)
def test_a_value_holding_a_reference_comes_out_verbatim(value: str, name: str) -> None:
    variables: dict[str, str | None] = {name: f"{{{{{name}}}}}{value}{{{{nope}}}}"}
    assert interpolate(f"<{{{{{name}}}}}>", variables, section="s") == f"<{{{{{name}}}}}{value}{{{{nope}}}}>"


def test_a_section_text_that_is_not_a_string_is_a_type_error() -> None:
    # A waterfall listener can put anything into an assembly; the renderer says which section is wrong.
    broken = PromptAssembly(sections=[AssembledText("tool:x", None)])  # type: ignore[arg-type]  # the point
    with pytest.raises(TypeError, match='section "tool:x" text must be a string, got NoneType'):
        render_prompt(broken)


def _spec_scan(text: str, variables: dict[str, str | None], section: str) -> str:
    """Spec §1.10's scan, step by step and with no precompiling: the oracle the renderer must agree with."""
    where = f'section "{section}"'
    out: list[str] = []
    last = 0
    while (opener := text.find("{{", last)) >= 0:
        group = re.match(r"\{\{([^{}]*)\}\}", text[opener:])
        if group is None:
            if "}}" in text[opener + 2 :]:
                raise PromptRenderError(
                    f'malformed prompt variable reference at "{text[opener : opener + 16]}…" in {where} '
                    "(references are complete simple {{name}} groups)",
                    section=section,
                )
            out.append(text[last : opener + 2])
            last = opener + 2
            continue
        name = group.group(1)
        if re.fullmatch(r"[a-z][a-z0-9_]*", name) is None:
            raise PromptRenderError(
                f'malformed prompt variable reference "{{{{{name}}}}}" in {where} '
                "(variable names match /^[a-z][a-z0-9_]*$/)",
                section=section,
            )
        if name not in variables:
            registered = ", ".join(variables) or "(none)"
            raise PromptRenderError(
                f'unknown prompt variable "{{{{{name}}}}}" in {where}; registered variables: {registered}',
                section=section,
                variable=name,
            )
        value = variables[name]
        if value is None:
            raise PromptRenderError(
                f'prompt variable "{{{{{name}}}}}" has no value for this assembly ({where})',
                section=section,
                variable=name,
            )
        out.append(text[last:opener] + value)
        last = opener + len(group.group(0))
    return "".join(out) + text[last:]


# Texts dense in openers, closers and near-names, so every branch of the scan (and its order) is drawn often.
fragments = st.lists(
    st.sampled_from(
        [
            *("{{", "}}", "{", "}", "model", "cwd", " ", "x", "Model", "\n", "é", "_"),
            *("{{model}}", "{{cwd}}", "{{x}}", "{{nope}}", "{{ model}}", "{{}}"),
        ]
    ),
    max_size=14,
).map("".join)


@settings(max_examples=500)  # cheap examples; the rarer orderings (a group, then a malformed one) need many
@given(
    text=fragments,
    variables=st.dictionaries(
        st.sampled_from(["model", "cwd", "x"]), st.sampled_from(["V", "{{model}}", None])
    ),
)
def test_the_renderer_agrees_with_the_spec_scan_on_results_and_errors(
    text: str, variables: dict[str, str | None]
) -> None:
    for _ in range(2):  # the second pass renders from the compiled text
        try:
            expected: str | PromptRenderError = _spec_scan(text, variables, "s")
        except PromptRenderError as error:
            expected = error
        try:
            actual: str | PromptRenderError = interpolate(text, variables, section="s")
        except PromptRenderError as error:
            actual = error
        if isinstance(expected, PromptRenderError):
            assert isinstance(actual, PromptRenderError)
            assert (str(actual), actual.section, actual.variable) == (
                str(expected),
                expected.section,
                expected.variable,
            )
        else:
            assert actual == expected


# -- reuse of the last render --------------------------------------------------------------------------------


def _reference(sections: list[AssembledText], variables: dict[str, str | None]) -> str:
    rendered = [interpolate(s.text, variables, section=s.name) for s in sections]
    return "\n\n".join(text for text in rendered if text)


def test_an_equal_input_renders_the_same_and_any_change_is_seen() -> None:
    sections = [AssembledText("a", "on {{model}}"), AssembledText("b", "static"), AssembledText("c", "")]
    assembly = PromptAssembly(sections=list(sections), variables={"model": "m1"})
    assert render_prompt(assembly) == "on m1\n\nstatic"
    assert render_prompt(assembly) == "on m1\n\nstatic"
    assembly.variables["model"] = "m2"  # the caller may change the assembly it rendered
    assert render_prompt(assembly) == "on m2\n\nstatic"
    assembly.sections[1] = AssembledText("b", "edited")
    assert render_prompt(assembly) == "on m2\n\nedited"
    copies = [AssembledText(s.name, s.text) for s in assembly.sections]  # equal, not identical
    assert render_prompt(PromptAssembly(sections=copies, variables={"model": "m2"})) == "on m2\n\nedited"
    assembly.sections.pop()
    assembly.sections.append(AssembledText("c", "last"))
    assert render_prompt(assembly) == "on m2\n\nedited\n\nlast"


def test_a_failed_render_is_never_reused() -> None:
    assembly = PromptAssembly(sections=[AssembledText("a", "on {{model}}")], variables={"model": None})
    for _ in range(2):
        with pytest.raises(PromptRenderError, match="has no value"):
            render_prompt(assembly)
    assembly.variables["model"] = "m"
    assert render_prompt(assembly) == "on m"
    assembly.variables["model"] = None
    with pytest.raises(PromptRenderError, match="has no value"):
        render_prompt(assembly)


def test_prompt_and_context_renders_do_not_share_their_last_result() -> None:
    texts = [AssembledText("x", "{{model}}")]
    assembly = PromptAssembly(sections=list(texts), contexts=list(texts), variables={"model": "m"})
    assert render_prompt(assembly) == "m"
    assert render_context_sections(assembly) == ["m"]
    assembly.contexts = [AssembledText("x", "{{cwd}}")]
    with pytest.raises(PromptRenderError, match='in context "x"'):
        render_context_sections(assembly)


def _each(sections: list[AssembledText], variables: dict[str, Any]) -> list[str]:
    return [text for s in sections if (text := interpolate(s.text, variables, section=s.name))]


def _outcome(render: Callable[..., object], *args: Any) -> object:
    try:
        return render(*args)
    except (PromptRenderError, TypeError) as error:
        return (type(error), str(error))


@settings(max_examples=300)
@given(
    steps=st.lists(
        st.tuples(
            st.lists(
                st.sampled_from(
                    [
                        "",
                        "static",
                        "on {{model}}",
                        "{{model}} in {{cwd}}",
                        "{{cwd}}",
                        "a {{ bad }}",
                        "lone {{",
                        "{x}",
                    ]
                ),
                max_size=4,
            ),
            st.sampled_from(["a", "b", "", None]),
            st.sampled_from(["/w", "", None, 3]),
            st.booleans(),
        ),
        max_size=10,
    )
)
def test_a_run_of_renders_always_agrees_with_rendering_afresh(
    steps: list[tuple[list[str], str | None, object, bool]],
) -> None:
    # Renders in a row, as the loop does them: the same texts (identical or equal copies) with the same or other
    # values, and other texts; each must give what rendering that input afresh gives, errors included.
    previous: list[AssembledText] = []
    for texts, model, cwd, reuse in steps:
        sections = [AssembledText(f"s{i}", text) for i, text in enumerate(texts)]
        if reuse and previous:
            sections = previous
        previous = sections
        variables: dict[str, Any] = {"model": model, "cwd": cwd}
        assembly = PromptAssembly(sections=list(sections), contexts=list(sections), variables=variables)
        assert _outcome(render_prompt, assembly) == _outcome(_reference, sections, variables)
        expected_contexts = _outcome(_each, sections, variables)
        actual_contexts = _outcome(render_context_sections, assembly)
        if isinstance(expected_contexts, tuple):  # the same failure, said of a context
            assert isinstance(actual_contexts, tuple)
            assert actual_contexts[0] is expected_contexts[0]
            assert actual_contexts[1] == expected_contexts[1].replace('section "', 'context "')
        else:
            assert actual_contexts == expected_contexts
