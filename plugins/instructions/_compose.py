"""What the next step should be told: the baseline when none with the current settings is visible in the
conversation, and every change since (a nested file a tool touched, a file edited, added or removed), compared with
the instruction messages the conversation holds. Pure over the file system and the messages given: no log, no
clock."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dsh.runtime.llm import InstructionChange, InstructionsSource, Message, TextBlock, UserMessage

from ._config import Config, baseline_identity
from ._files import (
    GLOBAL_DIR,
    GLOBAL_FILE,
    Loaded,
    ancestor_chain,
    baseline_files,
    dirs_below,
    find_root,
    probe,
    read_bounded,
    scope_key,
    sha1,
    split_scope,
)
from ._render import Item, file_scope, render_baseline, render_changes

__all__ = ["FORM", "Composed", "Prepared", "compose"]

FORM = "instructions"


@dataclass
class Prepared:
    """What an agent's last baseline load found: under which identity, and which baseline files it could not
    represent within the budget (they are reported removed rather than re-sent as changes)."""

    identity: str
    excluded: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class Composed:
    """A message to send: its text blocks and its source."""

    content: tuple[TextBlock, ...]
    source: InstructionsSource


def _sources(messages: Iterable[Message]) -> list[InstructionsSource]:
    return [
        m.source for m in messages if isinstance(m, UserMessage) and isinstance(m.source, InstructionsSource)
    ]


def _visible_baseline(
    history: Sequence[InstructionsSource], authority: Sequence[InstructionsSource]
) -> InstructionsSource | None:
    for source in (*reversed(authority), *reversed(history)):
        if source.baseline:
            return source
    return None


def _effective(
    history: Sequence[InstructionsSource], authority: Sequence[InstructionsSource]
) -> dict[str, InstructionChange]:
    effective: dict[str, InstructionChange] = {}
    for source in (*history, *authority):
        for change in source.changes:
            effective[change.scope] = change
    return effective


def _change(action: str, scope: str, path: str, digest: str | None = None) -> InstructionChange:
    return InstructionChange(action=action, scope=scope, path=path, digest=digest)  # type: ignore[arg-type]


def _rel_scope(root: Path, directory: Path) -> str:
    relative = os.path.relpath(directory, root)
    return "." if relative in ("", ".") else relative


def _reconcile(
    config: Config,
    cwd: Path,
    root: Path,
    effective: dict[str, InstructionChange],
    *,
    include_baseline: bool,
    excluded: set[str] | None,
    touched: Sequence[str],
) -> tuple[str, list[InstructionChange]] | None:
    names = (*config.instruction_files, *config.local_instruction_files)
    baseline_scopes = [scope_key(GLOBAL_DIR, GLOBAL_FILE)]
    for folder in ancestor_chain(root, cwd):
        baseline_scopes += [scope_key(_rel_scope(root, folder), name) for name in names]
    baseline_set = set(baseline_scopes)
    scopes: dict[str, None] = {}
    if include_baseline:
        scopes.update(dict.fromkeys(baseline_scopes))
    for scope in effective:
        if not include_baseline and scope in baseline_set:
            continue
        directory, _ = split_scope(scope)
        if directory == GLOBAL_DIR:
            scopes[scope_key(GLOBAL_DIR, GLOBAL_FILE)] = None
        else:
            scopes.update(dict.fromkeys(scope_key(directory, name) for name in names))
    for path in touched:
        for folder in dirs_below(cwd, path):
            scopes.update(dict.fromkeys(scope_key(_rel_scope(root, folder), name) for name in names))

    by_directory: dict[str, list[str]] = {}
    for scope in scopes:
        by_directory.setdefault(split_scope(scope)[0], []).append(scope)
    items: list[Item] = []
    seen: set[Path] = set()

    def removal(scope: str, path: str) -> Item:
        change = _change("remove", scope, path)
        return Item(change, Loaded(Path(f"removed:{scope}"), path, ""))

    for directory, members in by_directory.items():
        start = len(items)
        added: list[Path] = []
        kept: set[str] = set()
        probed: list[str] = []
        for scope in members:
            if excluded is not None and scope in baseline_set and scope in excluded:
                previous = effective.get(scope)
                if previous is not None and previous.action != "remove":
                    items.append(removal(scope, previous.path))
            else:
                probed.append(scope)
        for scope in probed:
            previous = effective.get(scope)
            live = previous is not None and previous.action != "remove"
            _, name = split_scope(scope)
            if directory == GLOBAL_DIR:
                if not config.user_global:
                    continue
                absolute, display, bound = config.home() / name, f"{config.home_display()}/{name}", None
            else:
                absolute = (root if directory == "." else root / directory) / name
                display, bound = os.path.relpath(absolute, root), root
            found = probe(absolute, bound)
            if found is None:  # cannot be examined now: keep what the conversation has for this directory
                if not live:
                    continue
                del items[start:]
                seen.difference_update(added)
                break
            if not found:
                if live:
                    assert previous is not None
                    items.append(removal(scope, previous.path))
                continue
            if absolute in seen:
                continue
            seen.add(absolute)
            added.append(absolute)
            content = read_bounded(absolute, config.max_source_bytes)
            if content is None:
                continue
            digest, trimmed = sha1(content), sha1(content.strip())
            if trimmed in kept:  # the same text as an earlier file of this directory
                if live:
                    assert previous is not None
                    items.append(removal(scope, previous.path))
                continue
            kept.add(trimmed)
            if live and previous is not None and previous.path == display and previous.digest == digest:
                continue
            action = "replace" if live else "set"
            items.append(Item(_change(action, scope, display, digest), Loaded(absolute, display, content)))
    if not items:
        return None
    text, changes = render_changes(items, config.max_bytes)
    if not text or not changes:
        return None
    return text, changes


def compose(
    config: Config,
    cwd: Path,
    history: Sequence[Message],
    claimed: Sequence[Message],
    *,
    touched: Sequence[str] = (),
    prepared: Prepared | None = None,
) -> tuple[Composed | None, Prepared | None]:
    """The instruction message the next step needs (None: nothing new) and the agent's baseline preparation to keep.
    `history`: the conversation as the model sees it; `claimed`: input entering with this step (it counts as seen);
    `touched`: paths file tools read or edited since the last step, relative to `cwd`."""
    if config.max_bytes <= 0:
        return None, prepared
    root = find_root(cwd, config.project_root_markers)
    identity = baseline_identity(config, cwd, root)
    past, authority = _sources(history), _sources(claimed)
    visible = _visible_baseline(past, authority)
    keep = visible is not None and visible.baseline_identity == identity
    excluded = prepared.excluded if keep and prepared is not None and prepared.identity == identity else None
    blocks: list[TextBlock] = []
    changes: list[InstructionChange] = []
    is_baseline = False
    if visible is None or not keep or excluded is None:
        replacing = visible is not None and not keep
        files = baseline_files(config, cwd, root)
        text, included = (
            render_baseline(files, config.max_bytes, replacing=replacing)
            if files or replacing
            else (
                "",
                [],
            )
        )
        included_scopes = {file_scope(f.display): f for f in included}
        excluded = {file_scope(f.display) for f in files} - set(included_scopes)
        prepared = Prepared(identity, excluded)
        if not keep and text:
            baseline_changes = [
                _change("set", scope, f.display, sha1(f.content)) for scope, f in included_scopes.items()
            ]
            if replacing:
                assert visible is not None
                baseline_changes = [
                    _change("remove", c.scope, c.path)
                    for c in visible.changes
                    if c.action != "remove" and c.scope not in included_scopes
                ] + baseline_changes
            blocks.append(TextBlock(text))
            changes += baseline_changes
            authority = [
                *authority,
                InstructionsSource(
                    form=FORM, baseline=True, baseline_identity=identity, changes=tuple(baseline_changes)
                ),
            ]
            is_baseline = True
    update = _reconcile(
        config,
        cwd,
        root,
        _effective(past, authority),
        include_baseline=keep,
        excluded=excluded if keep else None,
        touched=touched,
    )
    if update is not None:
        blocks.append(TextBlock(update[0]))
        changes += update[1]
    if not blocks:
        return None, prepared
    source = InstructionsSource(
        form=FORM,
        baseline=is_baseline,
        baseline_identity=identity if is_baseline else None,
        changes=tuple(changes),
    )
    return Composed(tuple(blocks), source), prepared
