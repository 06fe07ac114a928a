"""Writing objects as data: the object model after a run, ``dump()``, results.

An object is written in full - a header plus its In/Out/InOut/Const
properties - at most once per output: where its owner holds it, or, for an
object nothing in the output owns, at the first place that refers to it.
Every other occurrence is its id. Three forms, as in Murano:

* ``Serializable``: the header's type is ``name/version@package`` (JSON-safe);
* ``Mixed``: the header's type is a type reference (data that stays in MuranoPL);
* ``Inline``: ``{Type: properties, id: .., name: .., metadata: ..}``.
"""

from __future__ import annotations

from collections.abc import Mapping

from yaql.language.utils import FrozenDict

from murano_common.plain import copy_tree
from murano_engine.dsl.classes import MODEL_USAGES, MuranoClass
from murano_engine.dsl.objects import MuranoObject, TypeRef, real_object
from murano_engine.dsl.values import items_of

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from typing import Any

SERIALIZABLE = "Serializable"
MIXED = "Mixed"
INLINE = "Inline"
FORMS = (SERIALIZABLE, MIXED, INLINE)
SERIALIZE_META = "io.murano.metadata.engine.Serialize"
_TITLES = {"io.murano.metadata.Title": "title", "io.murano.metadata.Description": "description",
           "io.murano.metadata.HelpText": "helpText"}
_SCALARS = (str, int, float, bool, type(None), bytes)
_SCALAR_TYPES = frozenset(_SCALARS)


def type_string(cls: MuranoClass) -> str:
    return f"{cls.name}/{cls.package.version_string}@{cls.package.name}"


class _Ref:
    """An object not written in full at this place (yet)."""

    __slots__ = ("obj",)

    def __init__(self, obj: MuranoObject) -> None:
        self.obj = obj


class _Writer:
    """One output: which objects it holds in full, and how it writes values.

    The first pass writes each object where its owner holds it and leaves a
    :class:`_Ref` elsewhere, noting where (in the order of the output). Later
    passes go through the references still there, in that order, and write in full,
    at its first reference, each object that is still missing (with ``refs``, only
    objects without an owner: the others stay ids); the references an object so
    written holds take its place in the order. Finally references become ids;
    without ``refs`` those to objects not in the output are left out. (Going through
    the references alone, not the whole output again, keeps a chain of objects that
    each refer to the next linear: 10,000 of them took minutes.)
    """

    def __init__(self, form: str = SERIALIZABLE, refs: bool = True, *, actions: bool = False,
                 dependencies: bool = False) -> None:
        self.form = form
        self.refs = refs
        self.actions = actions
        self.dependencies = dependencies
        self.written: dict[int, MuranoObject] = {}
        #: where the value being written holds references: (container, key), in the
        #: order of the output
        self._found: list[tuple[Any, Any]] = []
        self._types: dict[MuranoClass, str] = {}
        #: per class, its properties a model holds: (name, whether its Meta may make it a
        #: reference)
        self._model_properties: dict[MuranoClass, tuple[tuple[str, Any], ...]] = {}
        #: public methods by the class of the objects written (``obj.murano_class``)
        self._public: dict[MuranoClass, dict[str, Any]] = {}

    def write(self, value: Any) -> Any:
        root = real_object(value)
        parent = root.owner if root is not None else None
        holder = [self._value(value, parent)]
        if type(holder[0]) is _Ref:
            self._found.append((holder, 0))
        pending, referred = self._found, bool(self._found)
        while pending:
            kept: list[tuple[Any, Any]] = []
            moved = False
            for place in pending:
                container, key = place
                obj = container[key].obj
                if not self._movable(obj, parent):
                    kept.append(place)
                    continue
                self._found = kept  # what the object holds takes its place in the order
                container[key] = self._object(obj, obj.murano_class)
                moved = True
            pending = kept if moved else []
        return self._settle(holder[0]) if referred else holder[0]

    def _value(self, value: Any, parent: MuranoObject | None) -> Any:
        kind = type(value)
        if kind in _SCALAR_TYPES:
            return value
        if kind is MuranoObject:  # (as real_object() below, without the call)
            return self._placed(value, value.murano_class, parent)
        if kind is tuple or kind is list:
            return self._items(value, parent)
        if kind is dict or kind is FrozenDict:
            return self._mapping(value, parent)
        if isinstance(value, _SCALARS):
            return value
        obj = real_object(value)
        if obj is not None:
            return self._placed(obj, value.murano_class, parent)
        if isinstance(value, TypeRef):
            return type_string(value.murano_class)
        if isinstance(value, Mapping):
            return self._mapping(value, parent)
        if isinstance(value, (tuple, list, set, frozenset)):
            return self._items(value, parent)
        return value

    def _items(self, value: Any, parent: MuranoObject | None) -> list[Any]:
        items: list[Any] = []
        for item in value:
            if type(item) in _SCALAR_TYPES:
                items.append(item)
                continue
            written = self._value(item, parent)
            if type(written) is _Ref:
                self._found.append((items, len(items)))
            items.append(written)
        return items

    def _mapping(self, value: Mapping, parent: MuranoObject | None) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        for key, item in items_of(value):
            if type(key) is not str and isinstance(key, TypeRef) and self.form == SERIALIZABLE:
                key = type_string(key.murano_class)
            if type(item) in _SCALAR_TYPES:
                out[key] = item
                continue
            if key == "type" and isinstance(item, TypeRef) and self.form == MIXED:
                out[key] = item
                continue
            written = out[key] = self._value(item, parent)
            if type(written) is _Ref:
                self._found.append((out, key))
        return out

    def _movable(self, obj: MuranoObject, parent: MuranoObject | None) -> bool:
        if id(obj) in self.written:
            return False
        if self.refs and obj.owner is not None:
            return _within(parent, obj.owner) and id(obj.owner) in self.written
        return True

    def _placed(self, obj: MuranoObject, cls: MuranoClass, parent: MuranoObject | None
                ) -> Any:
        """``obj`` (seen as ``cls``) met under ``parent``: written in full here if
        ``parent`` owns it and it is not written yet, else a reference for now."""
        if obj.owner is not parent or id(obj) in self.written:
            return _Ref(obj)
        return self._object(obj, cls)

    def _object(self, obj: MuranoObject, cls: MuranoClass) -> dict[Any, Any]:
        self.written[id(obj)] = obj
        return self._mapping(self._fields(obj, cls), obj)

    def _fields(self, obj: MuranoObject, cls: MuranoClass) -> dict[Any, Any]:
        """The object as a dict whose values are still engine values."""
        props: dict[Any, Any] = {}
        declared = self._model_properties.get(cls)
        if declared is None:
            declared = self._model_properties[cls] = tuple(
                (name, specs[0] if specs[0].meta is not None else None)
                for name, specs in cls.all_properties().items()
                if specs[0].usage in MODEL_USAGES)
        held = obj.props
        for name, meta_spec in declared:
            if name not in held:
                continue
            value = held[name]
            if meta_spec is not None and self.refs and type(value) not in _SCALAR_TYPES:
                target = real_object(value)
                if target is not None and _by_reference(obj, meta_spec):
                    value = target.id
            props[name] = value
        if self.form == INLINE:
            header: dict[Any, Any] = {"id": obj.id, "name": obj.name, "metadata": obj.metadata}
        else:
            header = {"type": self._type_string(cls) if self.form == SERIALIZABLE else cls.ref,
                      "id": obj.id}
            if obj.name:
                header["name"] = obj.name
            if obj.metadata is not None:
                header["metadata"] = obj.metadata
        header.update(obj.designer)
        if self.actions:
            methods = self._public.get(obj.murano_class)
            if methods is None:
                methods = self._public[obj.murano_class] = obj.murano_class.public_methods()
            header["_actions"] = _actions(obj, methods) if methods else {}
        if obj.destroyed:
            header["destroyed"] = True
        if self.dependencies:
            subscribers = [{"subscriber": subscriber.id, "handler": handler}
                           for subscriber, handler in obj.dependencies
                           if not subscriber.destroyed
                           and id(subscriber) not in obj.executor.doomed]
            if subscribers:
                header["dependencies"] = {"onDestruction": subscribers}
        if self.form == INLINE:
            return {cls.ref: props, **header}
        return {"?": header, **props}

    def _type_string(self, cls: MuranoClass) -> str:
        text = self._types.get(cls)
        if text is None:
            text = self._types[cls] = type_string(cls)
        return text

    def _settle(self, value: Any) -> Any:
        """References as ids; without ``refs``, those to objects not written dropped."""
        if isinstance(value, dict):
            out = {}
            for key, item in value.items():
                kind = type(item)
                if kind in _SCALAR_TYPES:
                    out[key] = item
                elif kind is _Ref:
                    if not self._kept(item):
                        continue
                    out[key] = item.obj.id
                else:
                    out[key] = self._settle(item)
            return out
        if isinstance(value, list):
            return [item if type(item) in _SCALAR_TYPES else
                    item.obj.id if type(item) is _Ref else self._settle(item)
                    for item in value if type(item) is not _Ref or self._kept(item)]
        return value

    def _kept(self, ref: _Ref) -> bool:
        return self.refs or id(ref.obj) in self.written


def _within(obj: MuranoObject | None, ancestor: MuranoObject) -> bool:
    """Whether ``obj`` is ``ancestor`` or owned by it, directly or not."""
    while obj is not None:
        if obj is ancestor:
            return True
        obj = obj.owner
    return False


def _by_reference(obj: MuranoObject, spec: Any) -> bool:
    """Whether the property's ``Serialize`` meta says ``as: reference``."""
    if spec.meta is None:
        return False
    from murano_engine.dsl import meta
    for item in meta.property_meta(obj.executor, spec.declaring_class, spec.name):
        if item.murano_class.name == SERIALIZE_META:
            return item.props.get("as") == "reference"
    return False


def dump(value: Any, form: str = SERIALIZABLE, refs: bool = True) -> Any:
    """``dump()``: an object (or a cast: only that class's properties) and what it owns.

    With ``refs`` an object owned elsewhere is written as its id; without, it is
    written in full where it is first referred to, as in the object model.
    """
    return _Writer(form, refs).write(value)


def serialize_model(root: MuranoObject | None) -> dict[str, Any]:
    """The model after a run: ``root``, what it owns and what that refers to."""
    if root is None:
        return {"Objects": None, "ObjectsCopy": None, "Attributes": []}
    writer = _Writer(SERIALIZABLE, refs=False, actions=True, dependencies=True)
    objects = writer.write(root)
    attributes = [[obj.id, owner, name, _plain(value)]
                  for obj in writer.written.values()
                  for (owner, name), value in sorted(obj.attributes.items())]
    return {"Objects": objects, "ObjectsCopy": copy_tree(objects), "Attributes": attributes}


def _plain(value: Any) -> Any:
    obj = real_object(value)
    if obj is not None:
        return obj.id
    if isinstance(value, TypeRef):
        return type_string(value.murano_class)
    if isinstance(value, Mapping):
        return {_key(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (tuple, list, set, frozenset)):
        return [_plain(v) for v in value]
    return value


def _key(key: Any) -> Any:
    if isinstance(key, TypeRef):
        return type_string(key.murano_class)
    return key


def _actions(obj: MuranoObject, methods: dict[str, Any]) -> dict[str, Any]:
    """The object's actions (its class's public methods, ``methods``), with titles from
    their metadata."""
    from murano_engine.dsl import meta
    previous = obj.designer.get("_actions") or {}
    out = {}
    for name, method in methods.items():
        key = f"{obj.id}_{name}"
        entry = dict(previous.get(key) or {})
        entry.setdefault("enabled", True)
        entry["name"] = name
        entry["title"] = name
        for item in meta.method_meta(obj.executor, method.declaring_class, name):
            field = _TITLES.get(item.murano_class.name)
            if field is not None:
                entry[field] = item.props.get("text")
        out[key] = entry
    return out


def without(dumped: dict[str, Any], paths: Any) -> dict[str, Any]:
    """``dumped`` less the (dotted) property paths given, as templates exclude them."""
    for path in paths or ():
        *parents, last = str(path).split(".")
        node: Any = dumped
        for part in parents:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(last, None)
    return dumped


def serialize_value(value: Any) -> Any:
    """An action result or a ``run`` result as plain JSON data."""
    obj = real_object(value)
    if obj is not None:
        return dump(obj)
    if isinstance(value, TypeRef):
        return type_string(value.murano_class)
    if isinstance(value, Mapping):
        return {_key(k): serialize_value(v) for k, v in value.items()}
    if isinstance(value, (tuple, list, set, frozenset)):
        return [serialize_value(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value
