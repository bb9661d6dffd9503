"""The documents of one input, a List's items one at a time, so memory follows what is kept.

``kubectl get ... -o yaml`` of a large cluster is one ``kind: List`` document of hundreds of megabytes,
most of it ``metadata.managedFields``. Parsing it whole holds its text, its node graph and its objects at
once, several times the file's size. Here each item of a top-level ``items`` sequence is composed from
libyaml's events (or decoded by ``json``), built, checked, handed to ``keep`` (which drops what is never
read) and yielded before the next one is read.

:func:`documents` yields tuples:

- ``(ITEM, i, obj)``: item ``i`` of the current document's ``items``, before the document itself;
- ``(DOC, i, obj)``: document ``i``; when its items were streamed, ``obj["items"]`` is an empty
  :class:`Streamed` (the document's ``kind`` may only come after its items, as kubectl sorts keys);
- ``(REITEMS,)``: the document repeats ``items``: the items yielded for it so far do not count;
- ``(RESTART,)``: the input looked like JSON but is not: what was yielded for it does not count, its YAML
  documents follow.

The outcome is the whole-text parse's (:func:`optisched.model.documents.load_documents`): the same
objects and the same first error. Syntax errors anywhere in a document come before errors building it
(an over-long integer), those before the alias limits (:func:`optisched.model.bounded.check_tree`,
checked per item against the input's budget), which the loader's own errors follow.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import yaml
from yaml.events import (
    AliasEvent,
    CollectionStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from ..errors import InputError
from .bounded import Input, _BoundedLoader, budget_for, check_tree
from .stream_json import DOC, ITEM, REITEMS, RESTART, Streamed, json_documents

__all__ = ["DOC", "ITEM", "REITEMS", "RESTART", "Streamed", "documents", "yaml_error"]

_STR = "tag:yaml.org,2002:str"
_OPEN = object()  # a mapping's key waiting for its value
_DEPTH = {MappingStartEvent: 1, SequenceStartEvent: 1, MappingEndEvent: -1, SequenceEndEvent: -1}


def yaml_error(e: yaml.YAMLError, source: str) -> InputError:
    mark = getattr(e, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    problem = getattr(e, "problem", None) or str(e).splitlines()[0]
    return InputError(f"invalid YAML{where}: {problem}", source=source)


class _Composer(_BoundedLoader):
    """libyaml's events composed into nodes one value at a time, iteratively (the C composer only
    composes whole documents), then built by the bounded safe constructor."""

    def __init__(self, inp: Input) -> None:
        super().__init__(inp.text())
        self.source = inp.name
        self.budget = budget_for(inp.chars)
        self.expanded = 0
        self.anchors: dict[str, Node] = {}
        self.aliased = False
        self.build_error: yaml.YAMLError | None = None  # raised at the document's end
        self.tree_error: InputError | None = None  # raised at the input's end

    def _anchor(self, anchor: str | None, node: Node, mark: Any) -> None:
        if anchor is None:
            return
        if anchor in self.anchors:
            raise yaml.composer.ComposerError("found duplicate anchor; first occurrence",
                                              self.anchors[anchor].start_mark, "second occurrence", mark)
        self.anchors[anchor] = node

    def _start(self, ev: Any) -> Node:
        kind = SequenceNode if isinstance(ev, SequenceStartEvent) else MappingNode
        tag = ev.tag if ev.tag not in (None, "!") else self.resolve(kind, None, ev.implicit)
        node = kind(tag, [], ev.start_mark, None, flow_style=ev.flow_style)
        self._anchor(ev.anchor, node, ev.start_mark)
        return node

    def node(self, ev: Any = None, meta: bool = False) -> Node:
        """The next value's node (starting at ``ev`` when given), as PyYAML's composer builds it; an
        object's ``metadata.managedFields`` is skipped, not composed (``meta``: this value is the
        metadata)."""
        stack: list[list[Any]] = []
        at = 1 if meta else 2
        while True:
            ev = ev or self.get_event()
            if isinstance(ev, AliasEvent):
                if ev.anchor not in self.anchors:
                    raise yaml.composer.ComposerError(None, None, "found undefined alias", ev.start_mark)
                self.aliased = True
                node = self.anchors[ev.anchor]
            elif isinstance(ev, ScalarEvent):
                tag = ev.tag if ev.tag not in (None, "!") else self.resolve(ScalarNode, ev.value, ev.implicit)
                node = ScalarNode(tag, ev.value, ev.start_mark, ev.end_mark, style=ev.style)
                self._anchor(ev.anchor, node, ev.start_mark)
            elif isinstance(ev, CollectionStartEvent):
                stack.append([self._start(ev), _OPEN])
                ev = None
                continue
            else:  # the end of a collection
                node = stack.pop()[0]
                node.end_mark = ev.end_mark
            ev = None
            if not stack:
                return node
            top = stack[-1]
            if isinstance(top[0], SequenceNode):
                top[0].value.append(node)
            elif top[1] is not _OPEN:
                top[0].value.append((top[1], node))
                top[1] = _OPEN
            elif len(stack) == at and _named(node, "managedFields") and (meta or _named(stack[0][1], "metadata")):
                self._skip()
            else:
                top[1] = node

    def _skip(self) -> None:
        """Consume the next value without building it, but for what carries an anchor (a later alias may
        name it) and the check that each alias names an anchor."""
        depth = 0
        get = self.get_event
        while True:
            ev = get()
            step = _DEPTH.get(type(ev), 0)
            if step < 0:
                depth -= 1
            elif ev.anchor is None:
                depth += step
            elif type(ev) is AliasEvent:
                if ev.anchor not in self.anchors:
                    raise yaml.composer.ComposerError(None, None, "found undefined alias", ev.start_mark)
            else:
                self.node(ev)
            if depth == 0:
                return

    @property
    def failed(self) -> bool:
        return self.build_error is not None or self.tree_error is not None

    def build(self, node: Node, aliased: bool) -> Any:
        """The node's object, checked against the alias budget when aliases made it; None after an error
        (the rest of the input is still composed, for its syntax errors)."""
        if self.build_error is not None:
            return None
        try:
            obj = self.construct_document(node)
        except yaml.YAMLError as e:
            self.build_error = e
            return None
        if aliased and self.tree_error is None:
            try:
                self.expanded += check_tree(obj, self.budget - self.expanded, self.source)
            except InputError as e:
                self.tree_error = e
        return obj

    def next_node(self, meta: bool = False) -> tuple[Node, bool]:
        self.aliased = False
        node = self.node(meta=meta)
        return node, self.aliased


def _named(node: Any, name: str) -> bool:
    return isinstance(node, ScalarNode) and node.tag == _STR and node.value == name


def _items_start(loader: _Composer, key: Node) -> bool:
    if not _named(key, "items"):
        return False
    ev = loader.peek_event()
    return isinstance(ev, SequenceStartEvent) and ev.anchor is None and ev.tag is None


def _mapping(loader: _Composer, keep: Callable[[Any], Any], index: int) -> Iterator[tuple]:
    """A top-level mapping whose ``items`` sequence is built and yielded item by item."""
    start = loader.get_event()
    pairs: list[tuple[Node, Node]] = []
    aliased = streamed = False
    while not loader.check_event(MappingEndEvent):
        key, key_aliased = loader.next_node()
        is_items = _items_start(loader, key)
        if streamed and _named(key, "items"):
            yield (REITEMS,)  # a repeated key: the last one counts
            streamed = False
        if is_items:
            streamed = True
            loader.get_event()
            i = 0
            while not loader.check_event(SequenceEndEvent):
                item = loader.build(*loader.next_node())
                if not loader.failed:
                    yield (ITEM, i, keep(item))
                i += 1
            loader.get_event()
            continue
        value, value_aliased = loader.next_node(meta=_named(key, "metadata"))
        aliased |= key_aliased or value_aliased
        pairs.append((key, value))
    end = loader.get_event()
    tag = loader.resolve(MappingNode, None, start.implicit)
    doc = loader.build(MappingNode(tag, pairs, start.start_mark, end.end_mark, flow_style=start.flow_style), aliased)
    if streamed and isinstance(doc, dict):
        doc["items"] = Streamed()
    if not loader.failed:
        yield (DOC, index, keep(doc))


def _yaml_documents(inp: Input, keep: Callable[[Any], Any]) -> Iterator[tuple]:
    loader = _Composer(inp)
    try:
        loader.get_event()  # the stream's start
        index = 0
        while not loader.check_event(StreamEndEvent):
            loader.get_event()  # the document's start
            ev = loader.peek_event()
            if isinstance(ev, MappingStartEvent) and ev.anchor is None and ev.tag is None:
                yield from _mapping(loader, keep, index)
            else:
                doc = loader.build(*loader.next_node())
                if not loader.failed:
                    yield (DOC, index, keep(doc))
            loader.get_event()  # the document's end
            loader.anchors = {}
            if loader.build_error is not None:
                raise loader.build_error
            index += 1
        if loader.tree_error is not None:
            raise loader.tree_error
    except yaml.YAMLError as e:
        raise yaml_error(e, inp.name) from None
    finally:
        loader.dispose()


def documents(inp: Input, keep: Callable[[Any], Any]) -> Iterator[tuple]:
    """The documents of ``inp``: JSON when it starts like JSON and parses as JSON, else (multi-document)
    YAML, as tuples (see the module's docstring); ``keep`` trims each object before it is yielded."""
    if inp.first in ("{", "["):
        try:
            yield from json_documents(inp, keep)
            return
        except json.JSONDecodeError:
            yield (RESTART,)  # YAML flow style also starts with '{'
    yield from _yaml_documents(inp, keep)
