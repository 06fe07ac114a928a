"""The object model: reading object dicts and loading a whole model.

An object dict has a ``?`` header (``id``, ``type``, ``name``, ``metadata``,
designer keys starting with ``_``) plus property values, or, inside MuranoPL,
the inline form ``{ns:Type: {props}, id: .., name: ..}``. Dicts nested in
properties are objects owned by the enclosing one; strings holding another
object's id are references.
"""

from __future__ import annotations

from collections.abc import Mapping

from yaql.language.utils import FrozenDict

from murano_engine.dsl import errors, values
from murano_engine.dsl.classes import MuranoClass
from murano_engine.dsl.objects import MuranoObject, TypeRef
from murano_engine.dsl.values import is_mapping, plain_dict

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from typing import Any

    from murano_engine.dsl.contracts import ContractScope
    from murano_engine.dsl.executor import Executor


class ObjectSpec:
    """What an object dict says about the object to build (its header's values frozen)."""

    __slots__ = ("cls", "object_id", "name", "props", "metadata", "designer", "destroyed",
                 "dependencies")

    def __init__(self, cls: MuranoClass, object_id: str | None, name: str | None,
                 props: Mapping[str, Any], metadata: Any = None,
                 designer: dict[str, Any] | None = None, destroyed: bool = False,
                 dependencies: Any = None) -> None:
        self.cls = cls
        self.object_id = object_id
        self.name = name
        self.props = props
        self.metadata = metadata
        self.designer = designer if designer is not None else {}
        self.destroyed = destroyed
        self.dependencies = dependencies


_ID_TYPES = (str, type(None))


def is_object_dict(value: Any) -> bool:
    if not isinstance(value, Mapping):
        return False
    header = value.get("?")
    if isinstance(header, Mapping) and "type" in header:
        return True
    return any(isinstance(k, TypeRef) for k in value)


def parse_object(value: Mapping, executor: Executor,
                 default_cls: MuranoClass | None = None) -> ObjectSpec:
    if not is_mapping(value):
        raise errors.ContractViolationException(
            f"an object must be a dict, not {type(value).__name__} {str(value)[:60]!r}")
    value = plain_dict(value)
    header = value.get("?")
    if is_mapping(header):
        header = plain_dict(header)
        type_value = header.get("type")
        cls = executor.model_type(type_value, header.get("package"),
                                  header.get("classVersion")) if type_value else default_cls
        if cls is None:
            raise errors.NoClassFound(f"object {header.get('id')!r} has no type")
        props = {k: v for k, v in value.items() if isinstance(k, str) and k != "?"}
        if not isinstance(header.get("id"), _ID_TYPES):
            raise errors.ContractViolationException(
                f"object id {str(header.get('id'))[:60]!r} is not a string")
        # The header's values as objects keep them: frozen (the dict may be the JSON's).
        freeze = values.freeze
        return ObjectSpec(cls, header.get("id"), freeze(header.get("name")), props,
                          freeze(header.get("metadata")),
                          {k: freeze(v) for k, v in header.items()
                           if isinstance(k, str) and k.startswith("_")},
                          bool(header.get("destroyed")), header.get("dependencies"))
    for key, props in value.items():
        if isinstance(key, TypeRef):
            extra = {k: v for k, v in value.items() if k is not key}
            return ObjectSpec(key.murano_class, extra.get("id"), extra.get("name"),
                              props or {}, extra.get("metadata"))
    if default_cls is None:
        raise errors.NoClassFound("object dict names no type")
    return ObjectSpec(default_cls, None, None,
                      {k: v for k, v in value.items() if isinstance(k, str)})


def resolve_type(executor: Executor, type_value: Any, package: Any = None,
                 version: Any = None) -> MuranoClass:
    """A class from a model ``type``: a TypeRef or ``name[/version][@package]``."""
    if isinstance(type_value, TypeRef):
        return type_value.murano_class
    text = str(type_value)
    if "@" in text:
        text, _, package = text.partition("@")
    if "/" in text:
        text, _, version = text.partition("/")
    loader = executor.loader
    if package:
        found = loader.find_package(str(package), version or "*")
        if text in found.class_files:
            return found.load_class(text)
    return loader.find_class(text)


def settable_names(cls: MuranoClass) -> frozenset[str]:
    """The keys a model may give an object of ``cls``: the properties it and its parents
    declare, and the arguments of their ``.init`` methods (which take model values)."""
    names = set(cls.all_properties())
    for each in cls.init_order():
        init = each.methods.get(".init")
        if init is not None:
            names.update(a.name for a in init.arguments)
    return frozenset(names)


#: the settable names an unknown key's warning lists at most
_LISTED = 40


def unknown_keys(spec: ObjectSpec, known: frozenset[str]) -> str:
    """The warning for the keys of ``spec``'s dict that ``known`` lacks (a typo such as
    ``greting``, which Murano ignores without a word): the object, its class, each such
    key and the names the class does take."""
    unknown = sorted(repr(k) for k in spec.props if k not in known)
    listed = sorted(known)
    names = ", ".join(listed[:_LISTED]) + (", ..." if len(listed) > _LISTED else "")
    what = f"object {spec.object_id}" if spec.object_id else "an object"
    return (f"{what} of class {spec.cls.name}: the model sets {', '.join(unknown)}, which "
            f"neither {spec.cls.name} nor its parents declare (ignored); its properties "
            f"and .init arguments: {names or 'none'}")


def apply_header(obj: MuranoObject, spec: ObjectSpec) -> None:
    obj.metadata = spec.metadata
    obj.designer = dict(spec.designer)
    obj.destroyed = spec.destroyed


def load_model(executor: Executor, model: Mapping) -> MuranoObject | None:
    """Load ``Objects``, ``ObjectsCopy`` and ``Attributes``; returns the root object.

    Objects come into being when a ``class()`` contract takes their dict, so
    the holding object owns them; a reference by id to an object defined
    further on makes it at once. Every ``.init`` runs after the whole model is
    loaded. Objects only in ``ObjectsCopy`` were removed by the user: they are
    made too, and the garbage collection that follows destroys them.
    """
    if not isinstance(model, Mapping):
        raise errors.ContractViolationException(
            f"a model must be a dict, not {type(model).__name__}")
    objects = model.get("Objects")
    copy = model.get("ObjectsCopy")
    attributes = model.get("Attributes") or ()
    if not isinstance(attributes, list | tuple) or not all(
            isinstance(a, list | tuple) and len(a) == 4 for a in attributes):
        raise errors.ContractViolationException(
            "a model's Attributes must be a list of [object id, class, name, value]")
    index: dict[str, Mapping] = {}
    index_objects(objects, index)
    live_ids = set(index)
    index_objects(copy, index)
    saved = executor.loading_begin(index)
    try:
        root = executor.object_from_contract(objects, None, None) if objects else None
        if copy:
            executor.loading_removed()  # (what they set was warned about when they were live)
            _load_removed(executor, copy, None, live_ids)
    finally:
        load = executor.loading_end(saved)
    for object_id, owner_class, name, value in attributes:
        if not all(isinstance(part, str) for part in (object_id, owner_class, name)):
            raise errors.ContractViolationException(
                f"a model attribute's object id, class and name must be strings: "
                f"{str([object_id, owner_class, name])[:80]}")
        obj = executor.objects.get(object_id)
        if obj is not None:
            obj.attributes[(owner_class, name)] = values.freeze(value)
    executor.finish_load(load)
    if root is not None:
        executor.roots = [root]
    return root


def load_objects(executor: Executor, value: Mapping, owner: MuranoObject | None,
                 default_cls: MuranoClass | None = None) -> MuranoObject:
    """``new(model)`` and dicts given to ``class()`` contracts: the objects of an object
    dict, with fresh ids. They may refer to each other by their ids in the dict, in
    any order; ``.init`` runs once all of them are made."""
    index: dict[str, Mapping] = {}
    index_objects(value, index)
    saved = executor.loading_begin(index, keep_ids=False)
    try:
        root = executor.object_from_contract(value, default_cls, owner)
    finally:
        load = executor.loading_end(saved)
    executor.finish_load(load)
    return root


def restore_subscriptions(executor: Executor, load: Any) -> None:
    """Destruction subscriptions written in headers (``dependencies.onDestruction``)."""
    for model_id, data in load.index.items():
        header = data.get("?")
        dependencies = header.get("dependencies") if is_mapping(header) else None
        if dependencies is None or not is_mapping(dependencies):
            continue
        obj = executor.objects.get(load.loaded_id(model_id, executor))
        if obj is None:
            continue
        for entry in dependencies.get("onDestruction") or ():
            if not isinstance(entry, Mapping):
                continue
            subscriber = executor.objects.get(load.loaded_id(str(entry.get("subscriber")),
                                                             executor))
            handler = entry.get("handler")
            if subscriber is not None and (subscriber, handler) not in obj.dependencies:
                obj.dependencies.append((subscriber, handler))


_SCALARS = frozenset({str, int, float, bool, type(None)})
#: keys of text only: a dict without a TypeRef key
_TEXT = frozenset({str})


def index_objects(value: Any, index: dict[str, Mapping]) -> None:
    """Add every object dict with an id under ``value`` to ``index``: a ``?`` header
    with id and type, or the inline form ``{ns:Type: {...}, id: ..}``."""
    kind = type(value)
    if kind in _SCALARS:
        return
    scalars = _SCALARS
    if kind is dict or kind is FrozenDict or isinstance(value, Mapping):
        fields = value._d if kind is FrozenDict else value  # plain_dict(), inline
        header = fields.get("?")
        if header is not None and is_mapping(header) and header.get("id") \
                and "type" in header:
            index.setdefault(str(header["id"]), value)
        elif fields.get("id") and not _TEXT.issuperset(map(type, fields)) \
                and any(isinstance(k, TypeRef) for k in fields):
            index.setdefault(str(fields["id"]), value)
        for item in fields.values():
            if type(item) not in scalars:  # most values: not worth a call
                index_objects(item, index)
    elif kind is list or kind is tuple or isinstance(value, (list, tuple)):
        for item in value:
            if type(item) not in scalars:
                index_objects(item, index)


def _load_removed(executor: Executor, value: Any, owner: MuranoObject | None,
                  live_ids: set[str]) -> None:
    """Make the objects of the previous model that the new one no longer has.

    A removed object is made through the contracts of the object holding it, as
    Murano loads a model: its ``class()`` properties become objects (the removed
    subtree), a ``template()`` stays data (a server template is no server).
    """
    if isinstance(value, Mapping):
        if is_object_dict(value):
            spec = parse_object(value, executor)
            obj = executor.objects.get(spec.object_id) if spec.object_id else None
            if obj is None:
                if spec.object_id not in live_ids:
                    executor.object_from_contract(value, None, owner)
            elif spec.object_id in live_ids:
                _load_removed_properties(executor, obj, spec.props, live_ids)
            return
        for item in value.values():
            _load_removed(executor, item, owner, live_ids)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _load_removed(executor, item, owner, live_ids)


def _load_removed_properties(executor: Executor, obj: MuranoObject, props: Mapping[str, Any],
                             live_ids: set[str]) -> None:
    """The removed objects under a live object: its previous property values put
    through its property contracts (which make what they hold as objects), then
    the live objects among those values searched in turn."""
    declared = {name: specs for name, specs, _ in obj.murano_class.initialized_properties()}
    for name, old in props.items():
        specs = declared.get(name)
        if specs is None or specs[0].usage in ("Runtime", "Config"):
            continue
        try:
            executor.check_property(obj, specs, old)
        except errors.ContractViolationException:
            # A value the class no longer takes: its objects are made as they are
            # written, so that they are destroyed all the same.
            _load_removed(executor, old, obj, live_ids)
            continue
        _search_live(executor, old, live_ids)


def _search_live(executor: Executor, value: Any, live_ids: set[str]) -> None:
    """Search the live objects written in ``value`` for removed objects."""
    if type(value) in _SCALARS:
        return
    if isinstance(value, Mapping):
        if is_object_dict(value):
            spec = parse_object(value, executor)
            obj = executor.objects.get(spec.object_id) if spec.object_id else None
            if obj is not None and spec.object_id in live_ids:
                _load_removed_properties(executor, obj, spec.props, live_ids)
            return
        for item in value.values():
            _search_live(executor, item, live_ids)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _search_live(executor, item, live_ids)


def check_template(executor: Executor, value: Mapping, default_cls: MuranoClass,
                   cls: MuranoClass, excluded: Any, scope: ContractScope) -> Any:
    """A ``template()`` dict, checked by building its object in a dry run.

    The result is that object written in Mixed form, so the class's contracts
    have transformed the values (and Defaults filled the gaps); excluded
    properties are neither checked nor written. ``new()`` takes the result.
    """
    from murano_engine.dsl import serializer
    spec = parse_object(value, executor, default_cls)
    if not spec.cls.is_compatible(cls):
        raise scope.violation(f"template of {spec.cls.name} is not a {cls.name}")
    skip = {str(p) for p in (excluded or ())}
    props = {k: v for k, v in spec.props.items() if k not in skip}
    obj = executor.shell(spec.cls, scope.owner, spec.object_id, spec.name, register=False)
    apply_header(obj, spec)
    executor.initialize(obj, props, None, dry_run=True, skip=skip)
    return values.freeze(serializer.without(serializer.dump(obj, serializer.MIXED), skip))
