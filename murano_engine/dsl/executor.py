"""The executor: objects, method calls, properties and frames of one run.

An :class:`Executor` owns everything per run: the object store, static
property values, method locks and the active frames. Classes are shared
between executors; nothing here is global.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping

from yaql.language.utils import FrozenDict

from murano_engine.dsl import boundary, concurrency, errors, model, values
from murano_engine.dsl.budget import Budget
from murano_engine.dsl.classes import WRITABLE_USAGES, MethodSpec, MuranoClass, PropertySpec
from murano_engine.dsl.contexts import DslContext
from murano_engine.dsl.contracts import ContractScope
from murano_engine.dsl.errors import MuranoPlException, StackFrame
from murano_engine.dsl.instructions import BREAK, CONTINUE, ConstantData
from murano_engine.dsl.objects import MuranoObject, real_object
from murano_engine.dsl.packages import PackageLoader
from murano_engine.dsl.values import LITERAL_NULL

TYPE_CHECKING = False  # typing's own flag, without importing typing at run time
if TYPE_CHECKING:
    from typing import Any

#: How deep MuranoPL calls may nest. CPython 3.13 alone counts C-level recursion against
#: a fixed limit (about 10,000, whatever sys.setrecursionlimit says; 3.14 measures the
#: stack instead), and a MuranoPL call takes about six of it: there the limit is lower,
#: so that runaway recursion ends in this error rather than in Python's.
MAX_CALL_DEPTH = 1400 if sys.version_info[:2] == (3, 13) else 2000
SYNCHRONIZE = "io.murano.metadata.engine.Synchronize"


class Frame:
    """One running method (or an object-level evaluation such as a Default)."""

    __slots__ = ("executor", "method", "this", "murano_class", "caller", "position",
                 "context", "depth", "init_writes")

    def __init__(self, executor: Executor, method: MethodSpec | None, this: Any,
                 murano_class: MuranoClass, caller: Frame | None,
                 init_writes: bool = False) -> None:
        self.executor = executor
        self.method = method
        self.this = this
        self.murano_class = murano_class
        self.caller = caller
        self.position = method.position if method is not None else murano_class.position
        self.depth = caller.depth + 1 if caller is not None else 1
        self.init_writes = init_writes or (caller.init_writes if caller is not None else False)
        root = murano_class.package.root_context or executor.root_context(murano_class.package)
        self.context = DslContext(root, self)

    def stack(self) -> list[StackFrame]:
        """The MuranoPL stack, outermost call first."""
        frames = []
        frame: Frame | None = self
        while frame is not None:
            if frame.method is not None:
                cls = frame.method.declaring_class
                frames.append(StackFrame(cls.package.name, cls.name, frame.method.name,
                                         frame.position))
            frame = frame.caller
        frames.reverse()
        return frames


class _Lock:
    """A method lock: its owner (a green thread), how many calls of that owner hold it,
    and the threads waiting for it (None until one waits). Made by :func:`_new_lock`:
    taken once per method call, it has no ``__init__`` to run."""

    __slots__ = ("owner", "count", "waiters")
    owner: Any
    count: int
    waiters: list[tuple[Any, concurrency.Event]] | None


_new_lock = object.__new__


class Executor:
    """Runs MuranoPL: creates objects, calls methods, enforces the rules."""

    def __init__(self, loader: PackageLoader, services: Mapping[str, Any] | None = None,
                 budget: Budget | None = None, outside: boundary.Outside | None = None) -> None:
        self.loader = loader
        self._outside = outside
        self.budget = budget if budget is not None else Budget()
        self.runtime = loader.interpreter.runtime
        self.services = dict(services or {})
        self.objects: dict[str, MuranoObject] = {}
        self.statics: dict[tuple[MuranoClass, str], Any] = {}
        self.roots: list[MuranoObject] = []
        self.active_frames: set[Frame] = set()
        self._locks: dict[Any, _Lock] = {}
        self._class_frames: dict[MuranoClass, Frame] = {}
        self._load: _Load | None = None
        self.mocks: dict[tuple[str, str], Any] = {}
        self.doomed: set[int] = set()
        #: why each destruction that failed did (logged, never raised: Murano's rule;
        #: an environment's deletion fails on them, see engine.tasks)
        self.destruction_failures: list[str] = []
        self.meta_cache: dict[Any, list[MuranoObject]] = {}
        self._class_configs: dict[MuranoClass, Mapping[str, Any]] = {}
        #: each class's all_properties(), read at every property access
        self._declared: dict[MuranoClass, dict[str, list[PropertySpec]]] = {}
        #: each class's model.settable_names(), read for every object a model makes
        self._settable: dict[MuranoClass, frozenset[str]] = {}

    @property
    def outside(self) -> boundary.Outside:
        """This run's boundary (its journal), or the process's live one."""
        return self._outside if self._outside is not None else boundary.outside()

    # -- contexts ------------------------------------------------------------
    def root_context(self, package: Any) -> Any:
        root = package.root_context
        if root is None:
            root = package.root_context = self.runtime.root_context(package.legacy)
        return root

    def class_frame(self, cls: MuranoClass) -> Frame:
        """A frame for evaluating class-level code (static defaults, contracts)."""
        frame = self._class_frames.get(cls)
        if frame is None:
            frame = self._class_frames[cls] = Frame(self, None, cls.ref, cls, None)
        return frame

    # -- calling -------------------------------------------------------------
    def call(self, receiver: Any, name: str, args: list | tuple = (),
             kwargs: Mapping[str, Any] | None = None, caller: Frame | None = None,
             public_only: bool = False) -> Any:
        """Call a method by name from Python (CLI, API, natives)."""
        cls = receiver.murano_class
        method = cls.find_method(name)
        if method is None:
            raise errors.NoMethodFound(f"method {name!r} is not found in {cls.name}")
        if public_only and not method.is_public:
            raise errors.MethodNotExposed(f"method {name!r} of {cls.name} is not an action")
        return self.invoke(method, receiver, list(args), dict(kwargs or {}), caller)

    def invoke(self, method: MethodSpec, receiver: Any, args: list, kwargs: dict,
               caller: Frame | None, mocked: bool = True) -> Any:
        obj = receiver if type(receiver) is MuranoObject else real_object(receiver)
        if obj is not None and obj.destroyed:
            raise errors.ObjectDestroyedError(
                f"cannot call {method.name} of destroyed object {obj.id}")
        if self.mocks and mocked:
            mock = self.mocks.get((method.declaring_class.name, method.name))
            if mock is None and obj is not None:
                mock = self.mocks.get((obj.murano_class.name, method.name))
            if mock is not None:
                args, kwargs = _plain_arguments(args, kwargs)
                return mock(self, method, receiver, args, kwargs, caller)
        if method.usage in _STATIC_USAGES:  # method.is_static, without a property call
            this: Any = method.declaring_class.ref
        else:
            if obj is None:
                raise errors.NoMethodFound(
                    f"method {method.name} of {method.declaring_class.name} is not static")
            this = obj
        frame = Frame(self, method, this, method.declaring_class, caller)
        if frame.depth > MAX_CALL_DEPTH:
            raise errors.CallDepthExceededError(
                f"MuranoPL call depth exceeded {MAX_CALL_DEPTH} (runaway recursion?)")
        sync = method.synchronize
        if sync is not None and not sync[1]:  # the common case, without a method call
            lock_key: Any = (this, method) if sync[0] else None
        else:
            lock_key = self._lock_key(method, this, args, kwargs)
        self.active_frames.add(frame)
        if lock_key is not None:
            lock = self._locks.get(lock_key)
            if lock is None:  # the common case, inline: a free lock
                lock = self._locks[lock_key] = _new_lock(_Lock)
                lock.owner = concurrency.current()
                lock.count = 1
                lock.waiters = None
            else:
                self._acquire(lock)
        try:
            if method.native is not None:
                from murano_engine.dsl.natives import NativeCall
                if LITERAL_NULL in args or kwargs and LITERAL_NULL in kwargs.values():
                    args, kwargs = _plain_arguments(args, kwargs)
                return values.freeze(method.native(
                    NativeCall(self, frame, receiver), *args, **kwargs))
            binding = method.binding
            if type(binding) is tuple and not kwargs and len(args) == len(binding):
                # bind_arguments' common case, inline: arguments by position that their
                # contracts keep as they are
                context = frame.context
                data = context._data
                data["$1"] = this
                data["$this"] = this
                for (key, kept, apply, path), value in zip(binding, args, strict=False):
                    if type(value) in kept:
                        data[key] = value
                    elif value is LITERAL_NULL:  # null as it is (see bind_arguments)
                        data[key] = None
                    else:
                        data[key] = apply(values.freeze(value),
                                          ContractScope(frame, this, None, path))
            else:
                self.bind_arguments(method, frame, args, kwargs)
                context = frame.context
            signal = (method._block or method.block())(context)
        except Exception as exc:
            errors.add_call_stack(exc, frame.stack)
            raise
        finally:
            if lock_key is not None:
                lock.count -= 1
                if not lock.count:
                    if lock.waiters:
                        self._hand_over(lock)
                    else:
                        del self._locks[lock_key]
            self.active_frames.discard(frame)
        if signal is None:
            return None
        if signal is BREAK or signal is CONTINUE:  # at the Break's line (the frame's last)
            exc = errors.DslInvalidOperationError(
                "Break and Continue cannot be used on method level")
            errors.add_call_stack(exc, frame.stack)
            raise exc
        return signal.value

    def bind_arguments(self, method: MethodSpec, frame: Frame, args: list,
                        kwargs: dict) -> None:
        data = frame.context._data
        this = frame.this
        data["$1"] = this
        data["$this"] = this
        binding = method.binding
        if binding is None:
            binding = method.binding = _positional_binding(method)
        if binding is not False and not kwargs and len(args) == len(binding):
            # every argument Standard and given by position: the common call
            freeze = values.freeze
            for (key, kept, apply, path), value in zip(binding, args, strict=False):
                if type(value) in kept:
                    data[key] = value
                elif value is LITERAL_NULL:
                    data[key] = None
                else:
                    data[key] = apply(freeze(value), ContractScope(frame, this, None, path))
            return
        where = f"{method.declaring_class.name}::{method.name}"
        position = 0
        remaining = dict(kwargs) if kwargs else {}
        for spec in method.arguments:
            if spec.usage == "Standard":
                if position < len(args):
                    if spec.name in remaining:
                        raise errors.NoMatchingMethodException(
                            f"{where}: argument {spec.name!r} given twice")
                    value = args[position]
                    position += 1
                elif spec.name in remaining:
                    value = remaining.pop(spec.name)
                else:
                    value = _default_of(spec)(frame.context) if spec.has_default else None
                data["$" + spec.name] = self._check_argument(spec, value, frame, where)
            elif spec.usage == "VarArgs":
                if spec.name in remaining:
                    raise errors.NoMatchingMethodException(
                        f"{where}: VarArgs argument {spec.name!r} cannot be given by name")
                data["$" + spec.name] = tuple(
                    self._check_argument(spec, v, frame, where) for v in args[position:])
                position = len(args)
            else:
                data["$" + spec.name] = FrozenDict({
                    k: self._check_argument(spec, v, frame, where) for k, v in remaining.items()})
                remaining = {}
        if position < len(args):
            raise errors.NoMatchingMethodException(
                f"{where}: takes {position} positional arguments but {len(args)} were given")
        if remaining:
            raise errors.NoMatchingMethodException(
                f"{where}: unexpected keyword arguments {sorted(remaining)}")

    def _check_argument(self, spec: Any, value: Any, frame: Frame, where: str) -> Any:
        """``value`` through the argument's contract; a literal ``null`` of the call
        (:data:`~murano_engine.dsl.values.LITERAL_NULL`) is null, its contract not
        applied, as in Murano: packages pass ``null`` to arguments whose contract says
        ``notNull()`` and rely on it. Any other null goes through the contract."""
        if value is LITERAL_NULL:
            return None
        scope = ContractScope(frame, frame.this, None, f"{where}({spec.name})")
        return spec.compiled_contract().apply(values.freeze(value), scope)

    # -- locks -----------------------------------------------------------------
    def _lock_key(self, method: MethodSpec, this: Any, args: list, kwargs: dict) -> Any:
        sync = method.synchronize
        if sync is None:
            sync = method.synchronize = _synchronize_options(method)
        on_this, on_args = sync
        if on_args:
            names = [a.name for a in method.arguments]
            picked = []
            for name in on_args:
                index = names.index(name) if name in names else -1
                value = args[index] if 0 <= index < len(args) else kwargs.get(name)
                picked.append(_identity(None if value is LITERAL_NULL else value))
            return (method, this if on_this else None, tuple(picked))
        if not on_this:
            return None
        # One lock per object and declaration: overrides of one name (psuper) run
        # side by side.
        return (this, method)

    def _acquire(self, lock: _Lock) -> None:
        """Take a lock that is held: again by its owner, else once it is handed over."""
        me = concurrency.current()
        if lock.owner == me:
            lock.count += 1
            return
        event = concurrency.Event()
        if lock.waiters is None:
            lock.waiters = []
        lock.waiters.append((me, event))
        event.wait()

    def _hand_over(self, lock: _Lock) -> None:
        """A lock no call holds any more, to its first waiter."""
        assert lock.waiters
        owner, event = lock.waiters.pop(0)
        lock.owner = owner
        lock.count = 1
        event.send()

    # -- properties ------------------------------------------------------------
    def get_property(self, receiver: Any, name: str, frame: Frame | None,
                     lenient: bool = False) -> Any:
        obj = receiver if type(receiver) is MuranoObject else real_object(receiver)
        if obj is None:
            raise errors.NoPropertyFound(f"cannot read property {name!r} of {receiver!r}")
        declared = self._declared.get(obj.murano_class)
        if declared is None:
            declared = self._declared[obj.murano_class] = obj.murano_class.all_properties()
        specs = declared.get(name)
        if specs is None:
            caller_cls = frame.murano_class if frame is not None else None
            key = (caller_cls, name)
            if key in obj.private:
                return obj.private[key]
            if lenient:
                return None
            if caller_cls is not None and obj.murano_class.is_compatible(caller_cls):
                raise errors.UninitializedPropertyAccessError(
                    f"access to uninitialized property {name!r} of {obj.murano_class.name} "
                    f"is forbidden")
            raise errors.PropertyReadError(
                f"property {name!r} of {obj.murano_class.name} cannot be read")
        spec = specs[0]
        if spec.usage == "Static":
            return self.get_static(spec.declaring_class, name, frame)
        try:
            return obj.props[name]
        except KeyError:
            if lenient:
                return None
            raise errors.UninitializedPropertyAccessError(
                f"access to uninitialized property {name!r} of {obj.murano_class.name} "
                f"is forbidden") from None

    def set_property(self, receiver: Any, name: str, value: Any, frame: Frame | None,
                     dry_run: bool = False) -> None:
        obj = receiver if type(receiver) is MuranoObject else real_object(receiver)
        if obj is None:
            raise errors.PropertyWriteError(f"cannot write property {name!r} of {receiver!r}")
        declared = self._declared.get(obj.murano_class)
        if declared is None:
            declared = self._declared[obj.murano_class] = obj.murano_class.all_properties()
        specs = declared.get(name)
        caller_cls = frame.murano_class if frame is not None else None
        if specs is None:
            if caller_cls is None or not obj.murano_class.is_compatible(caller_cls):
                raise errors.PropertyWriteError(
                    f"property {name!r} of {obj.murano_class.name} cannot be written")
            obj.private[(caller_cls, name)] = values.freeze(value)
            return
        spec = specs[0]
        if spec.usage == "Static":
            self.set_static(spec.declaring_class, name, value, frame)
            return
        if not (frame is None or frame.init_writes or (
                spec.usage in WRITABLE_USAGES and (obj.murano_class is caller_cls
                                                   or obj.murano_class.is_compatible(caller_cls)))):
            raise errors.NoWriteAccessError(
                f"property {name!r} of {obj.murano_class.name} ({spec.usage}) cannot be "
                f"written from {caller_cls.name if caller_cls else 'outside'}")
        obj.props[name] = self.check_property(obj, specs, value, dry_run)

    def check_property(self, obj: MuranoObject, specs: list[PropertySpec], value: Any,
                        dry_run: bool = False) -> Any:
        """The value as the most derived declaration makes it; the others then check
        that result without making anything (a template() stays the dict it is)."""
        spec = specs[0]
        try:
            contract = spec.compiled_contract()
            if type(value) in contract.kept and len(specs) == 1:
                return value
            if not contract.makes_objects:  # (which takes model data unfrozen)
                value = values.freeze(value)
                if contract.quick is not None and len(specs) == 1 and contract.quick(value):
                    return value
            scope = ContractScope(self.class_frame(spec.declaring_class), obj, obj, spec.path,
                                  dry_run)
            result = contract.apply(value, scope)
            for spec in specs[1:]:
                scope = ContractScope(self.class_frame(spec.declaring_class), obj, obj,
                                      spec.path, True, True)
                spec.compiled_contract().apply(result, scope)
        except Exception as exc:
            errors.add_property_frame(exc, StackFrame(
                spec.declaring_class.package.name, spec.declaring_class.name,
                f"{spec.name} (property contract)", spec.position))
            raise
        return result

    def get_static(self, cls: MuranoClass, name: str, frame: Frame | None) -> Any:
        spec = cls.find_property(name)
        if spec is None or spec.usage != "Static":
            raise errors.NoPropertyFound(f"{cls.name} has no static property {name!r}")
        key = (spec.declaring_class, name)
        try:
            return self.statics[key]
        except KeyError:
            pass
        owner = spec.declaring_class
        frame_ = self.class_frame(owner)
        value = _default_of(spec)(self._object_context(owner.ref, frame_)) \
            if spec.has_default else None
        scope = ContractScope(frame_, owner.ref, None, f"{owner.name}.{name}")
        value = spec.compiled_contract().apply(values.freeze(value), scope)
        self.statics[key] = value
        return value

    def set_static(self, cls: MuranoClass, name: str, value: Any, frame: Frame | None) -> None:
        spec = cls.find_property(name)
        if spec is None or spec.usage != "Static":
            raise errors.NoPropertyFound(f"{cls.name} has no static property {name!r}")
        owner = spec.declaring_class
        scope = ContractScope(self.class_frame(owner), owner.ref, None, f"{owner.name}.{name}")
        self.statics[(owner, name)] = spec.compiled_contract().apply(values.freeze(value), scope)

    def _object_context(self, this: Any, frame: Frame) -> DslContext:
        ctx = DslContext(frame.context, frame)
        data = ctx._data
        data["$1"] = this
        data["$this"] = this
        return ctx

    # -- objects ---------------------------------------------------------------
    def new_object(self, cls: MuranoClass, owner: MuranoObject | None = None,
                   props: Mapping[str, Any] | None = None, object_id: str | None = None,
                   name: str | None = None, caller: Frame | None = None,
                   native_args: Mapping[str, Any] | None = None,
                   dry_run: bool = False, designer: Mapping[str, Any] | None = None
                   ) -> MuranoObject:
        """Create and initialize an object (``new()``, natives).

        As in Murano, this is a load of its own: objects its properties' dicts
        make get fresh ids and may refer to each other by their ids there, and
        every ``.init`` (children first) runs once all of them exist.
        """
        obj = self.shell(cls, owner, object_id, name, register=not dry_run)
        if designer:
            obj.designer = dict(designer)
        if dry_run or self._load is not None:
            self.initialize(obj, props, caller, native_args, dry_run)
            return obj
        index: dict[str, Mapping] = {}
        for value in (props or {}).values():
            if type(value) not in _SCALARS:
                model.index_objects(value, index)
        load = _Load(index, False)
        saved, self._load = self._load, load
        try:
            self.initialize(obj, props, caller, native_args)
        finally:
            self._load = saved
        self.finish_load(load)
        return obj

    def shell(self, cls: MuranoClass, owner: MuranoObject | None, object_id: str | None,
               name: str | None, register: bool = True) -> MuranoObject:
        obj = MuranoObject(cls, object_id or self.outside.new_id(), owner, self, name)
        if register:
            self.objects[obj.id] = obj
        return obj

    def new_id(self) -> str:
        return self.outside.new_id()

    def loading_begin(self, index: dict[str, Mapping], keep_ids: bool = True) -> Any:
        """Start loading a model whose object dicts ``index`` holds by id: references
        to objects defined further on resolve, and ``.init`` calls wait until
        :meth:`loading_end`. Without ``keep_ids`` the objects get fresh ids (the
        model's ids still name them inside it). Returns the enclosing load, for
        :meth:`loading_end`."""
        saved, self._load = self._load, _Load(index, keep_ids)
        return saved

    def loading_removed(self) -> None:
        """What the current load makes from now on are objects the model removed."""
        assert self._load is not None
        self._load.removed = True

    def loading_end(self, saved: Any) -> _Load:
        """End the current load; :meth:`finish_load` then runs what it left to do."""
        load, self._load = self._load, saved
        assert load is not None
        return load

    def finish_load(self, load: _Load) -> None:
        """Destruction subscriptions written in the model, then the ``.init`` calls."""
        if load.index:
            model.restore_subscriptions(self, load)
        for obj, props, caller, native_args in load.pending:
            self.finish_init(obj, props, caller, native_args)

    def initialize(self, obj: MuranoObject, props: Mapping[str, Any] | None,
                   caller: Frame | None, native_args: Mapping[str, Any] | None = None,
                   dry_run: bool = False, skip: set[str] | frozenset = frozenset()) -> None:
        """Set properties (Defaults, contracts), build the native part, run ``.init``."""
        props = props or {}
        self._init_properties(obj, props, caller, dry_run, skip)
        if dry_run:
            return
        if self._load is not None:
            self._load.pending.append((obj, props, caller, native_args))
            return
        self.finish_init(obj, props, caller, native_args)

    def finish_init(self, obj: MuranoObject, props: Mapping[str, Any] | None,
                    caller: Frame | None = None,
                    native_args: Mapping[str, Any] | None = None) -> None:
        if obj.initialized:
            return
        obj.initialized = True
        for cls in obj.murano_class.init_order():
            if cls.native is not None and obj.native is None:
                from murano_engine.dsl.natives import construct_native
                construct_native(self, obj, cls, native_args or {},
                                 Frame(self, None, obj, cls, caller))
        for cls in obj.murano_class.init_calls():
            init = cls.methods[".init"]
            kwargs = {a.name: props[a.name] for a in init.arguments if a.name in (props or {})}
            init_frame = Frame(self, None, obj, cls, caller, init_writes=True)
            self.invoke(init, obj, [], kwargs, init_frame)

    def _init_properties(self, obj: MuranoObject, props: Mapping[str, Any],
                         caller: Frame | None, dry_run: bool, skip: set[str] | frozenset) -> None:
        entries = obj.murano_class.initialized_properties()
        pending = [e for e in entries if e[0] not in skip] if skip else list(entries)
        configured = self.class_config(obj.murano_class)
        # Defaults evaluate in a frame of the declaring class (made when one is needed).
        frames: dict[MuranoClass, Frame] = {}
        while pending:
            deferred = []
            last_error: Exception | None = None
            for entry in pending:
                name, specs, default_spec = entry
                spec = specs[0]
                try:
                    if spec.usage not in ("Runtime", "Config") and name in props:
                        value = props[name]
                    elif name in configured:
                        value = configured[name]
                    elif default_spec is not None:
                        default = _default_of(default_spec)
                        if type(default) is ConstantData:  # no context to make
                            value = default.value
                        else:
                            owner = spec.declaring_class
                            frame = frames.get(owner)
                            if frame is None:
                                frame = frames[owner] = Frame(self, None, obj, owner, caller,
                                                              init_writes=True)
                            value = default(self._object_context(obj, frame))
                    else:
                        value = None
                    obj.props[name] = self.check_property(obj, specs, value, dry_run)
                except errors.UninitializedPropertyAccessError as exc:
                    deferred.append(entry)
                    last_error = exc
                except errors.ContractViolationException:
                    if spec.usage == "Runtime":
                        continue
                    raise
            if len(deferred) == len(pending):
                raise errors.CircularExpressionDependenciesError(
                    f"{obj.murano_class.name}: properties {[e[0] for e in deferred]} depend on "
                    f"each other ({last_error})")
            pending = deferred

    def class_config(self, cls: MuranoClass) -> Mapping[str, Any]:
        """Configured property values of a class (the ``class_configs`` service's)."""
        try:
            return self._class_configs[cls]
        except KeyError:
            pass
        source = self.services.get("class_configs")
        values_ = source(cls) if source is not None else {}
        self._class_configs[cls] = values_
        return values_

    def object_by_id(self, object_id: str) -> MuranoObject | None:
        """An object by id; while a model loads, one defined later in it is made now."""
        load = self._load
        if load is None or object_id not in load.index:
            return self.objects.get(object_id)
        found = self.objects.get(load.loaded_id(object_id, self))
        if found is None:
            found = self.object_from_contract(load.index[object_id], None, None)
            load.adoptable.add(found.id)
        return found

    def model_type(self, type_value: Any, package: Any = None, version: Any = None
                   ) -> MuranoClass:
        """The class a model's ``type`` names (see :func:`model.resolve_type`); while a
        model loads, each name is looked up once."""
        load = self._load
        key = (type_value, package, version)
        if load is None or not _NAMES.issuperset(map(type, key)):
            return model.resolve_type(self, type_value, package, version)
        cls = load.types.get(key)
        if cls is None:
            cls = load.types[key] = model.resolve_type(self, type_value, package, version)
        return cls

    def object_from_contract(self, value: Mapping, default_cls: MuranoClass | None,
                             owner: MuranoObject | None, dry_run: bool = False) -> MuranoObject:
        """The object a ``class()`` contract makes of a dict.

        Outside a model load the dict is loaded as a model of its own: its
        objects get fresh ids and may refer to each other by their ids in it.
        """
        load = self._load
        if load is None and not dry_run:
            return model.load_objects(self, value, owner, default_cls)
        spec = model.parse_object(value, self, default_cls)
        object_id = spec.object_id
        if object_id and load is not None:
            object_id = load.loaded_id(object_id, self)
        if object_id and object_id in self.objects:
            existing = self.objects[object_id]
            if load is not None and object_id in load.adoptable and owner is not None:
                # Referenced by id before its definition was reached: the
                # definition's holder owns it.
                load.adoptable.discard(object_id)
                existing.owner = owner
            return existing
        if owner is not None and _nesting(owner) >= values.MAX_DEPTH:
            # (a contract takes object dicts unfrozen: freezing counted no levels of them)
            raise errors.ValueLimitExceededError(
                f"objects are nested more than {values.MAX_DEPTH} levels deep")
        obj = self.shell(spec.cls, owner, object_id, spec.name, register=not dry_run)
        model.apply_header(obj, spec)
        if not dry_run and (load is None or not load.removed):
            known = self._settable.get(spec.cls)
            if known is None:
                known = self._settable[spec.cls] = model.settable_names(spec.cls)
            if not known.issuperset(spec.props):
                self.warn(model.unknown_keys(spec, known), object_id)
        self.initialize(obj, spec.props, None, dry_run=dry_run)
        return obj

    def warn(self, text: str, entity_id: str | None = None) -> None:
        """A warning about the run: a status report of level warning where the run
        reports (a deployment: the CLI prints it among the others, the API counts it in
        the result), else a logged warning (the CLI prints it on stderr)."""
        reporter = self.services.get("reporter")
        if reporter is not None:
            from murano_engine.dsl import reports
            reports.report(reporter, self.services.get("environment_id"), entity_id, text,
                           level="warning")
        else:
            import logging  # here: a run that warns of nothing does without it
            logging.getLogger("murano_engine.dsl.model").warning("%s", text)

    def check_template(self, value: Mapping, default_cls: MuranoClass, cls: MuranoClass,
                       excluded: Any, scope: ContractScope) -> Any:
        return model.check_template(self, value, default_cls, cls, excluded, scope)

    def dump_template(self, obj: MuranoObject, excluded: Any) -> Any:
        from murano_engine.dsl import serializer
        return values.freeze(serializer.without(serializer.dump(obj, serializer.MIXED),
                                                 excluded))

    # -- exceptions ------------------------------------------------------------
    def to_murano_exception(self, exc: BaseException, frame: Frame) -> MuranoPlException:
        if isinstance(exc, MuranoPlException):
            return exc
        errors.add_call_stack(exc, frame.stack)
        return MuranoPlException.wrap(exc, errors.stack_of(exc))

    def exception_object(self, exc: MuranoPlException, matched: str | None = None
                         ) -> MuranoObject:
        """The ``io.murano.Exception`` object a ``Catch ... As`` binds."""
        trace = self.new_object(self.loader.find_class("io.murano.StackTrace"))
        self.set_property(trace, "frames", [
            {"instruction": f.instruction, "location": str(f.position) if f.position else None,
             "methodName": f.method, "typeName": f.class_name, "packageName": f.package}
            for f in exc.murano_stack], None)
        obj = self.new_object(self.loader.find_class("io.murano.Exception"))
        for name, value in (("name", matched or (exc.names[0] if exc.names else None)),
                            ("names", exc.names), ("message", exc.message),
                            ("stackTrace", trace), ("extra", exc.extra),
                            ("nativeException", exc.native or exc)):
            self.set_property(obj, name, value, None)
        obj.native = exc
        return obj

    def exception_of(self, value: Any) -> MuranoPlException | None:
        obj = real_object(value)
        if obj is not None and isinstance(obj.native, MuranoPlException):
            return obj.native
        return None


_SCALARS = frozenset({str, int, float, bool, type(None)})
_NAMES = frozenset({str, type(None)})
_STATIC_USAGES = frozenset({"Static", "Extension"})


class _Load:
    """A model being loaded: its object dicts by id, the ids its objects got, the
    ``.init`` calls due at its end, and objects made early by a reference."""

    __slots__ = ("index", "renames", "pending", "adoptable", "types", "removed")

    def __init__(self, index: dict[str, Mapping], keep_ids: bool) -> None:
        self.index = index
        #: classes by the (type, package, version) the model names them with
        self.types: dict[tuple[str, str | None, str | None], MuranoClass] = {}
        self.renames: dict[str, str] | None = None if keep_ids else {}
        self.pending: list[tuple[MuranoObject, Mapping | None, Frame | None,
                                 Mapping[str, Any] | None]] = []
        self.adoptable: set[str] = set()
        #: making the objects only the previous model had (ObjectsCopy)
        self.removed = False

    def loaded_id(self, model_id: str, executor: Executor) -> str:
        """The id of the object the model calls ``model_id``."""
        if self.renames is None or model_id not in self.index:
            return model_id
        new_id = self.renames.get(model_id)
        if new_id is None:
            new_id = self.renames[model_id] = executor.new_id()
        return new_id


def _positional_binding(method: MethodSpec) -> tuple[tuple[str, Any, Any, str], ...] | bool:
    """(variable, types the contract keeps, contract, contract path) per argument when
    every argument is Standard (False otherwise): what binding arguments given by
    position needs."""
    if any(spec.usage != "Standard" for spec in method.arguments):
        return False
    where = f"{method.declaring_class.name}::{method.name}"
    return tuple(("$" + spec.name, spec.compiled_contract().kept,
                  spec.compiled_contract().apply, f"{where}({spec.name})")
                 for spec in method.arguments)


def _plain_arguments(args: list, kwargs: dict) -> tuple[list, dict]:
    """The arguments with null for :data:`~murano_engine.dsl.values.LITERAL_NULL`, for
    callees that apply no contract (natives, mocks)."""
    return ([None if a is LITERAL_NULL else a for a in args],
            {k: None if v is LITERAL_NULL else v for k, v in kwargs.items()})


def _nesting(obj: MuranoObject) -> int:
    """How many objects own ``obj``, it included (its owner, that one's, ...)."""
    depth = 0
    while obj is not None:
        depth += 1
        obj = obj.owner
    return depth


def _default_of(spec: Any) -> Any:
    return spec.compiled_default()


def _identity(value: Any) -> Any:
    obj = real_object(value)
    if obj is not None:
        return ("object", id(obj))
    try:
        hash(value)
    except TypeError:
        return ("value", repr(value))
    return value


def _synchronize_options(method: MethodSpec) -> tuple[bool, tuple[str, ...]]:
    """(lock on the receiver, argument names to lock on) from the Synchronize meta: the
    method's own, else (the meta class is ``Inherited``) that of the nearest declaration
    it overrides, as :func:`murano_engine.dsl.meta.method_meta` gathers them; by default
    a call locks its receiver."""
    pending, seen = [method.declaring_class], set()
    while pending:
        cls = pending.pop(0)
        if cls in seen:
            continue
        seen.add(cls)
        declared = cls.methods.get(method.name)
        found = _synchronize_entry(declared) if declared is not None else None
        if found is not None:
            return found
        pending.extend(cls.parents)
    return True, ()


def _synchronize_entry(method: MethodSpec) -> tuple[bool, tuple[str, ...]] | None:
    """The options of the Synchronize meta of this declaration (None without one)."""
    for entry in _meta_entries(method.meta):
        type_name, props = entry
        try:
            full = method.declaring_class.resolve_name(type_name)
        except errors.NoClassFound:
            continue
        if full == SYNCHRONIZE:
            on_args = props.get("onArgs") or ()
            if isinstance(on_args, str):
                on_args = (on_args,)
            return bool(props.get("onThis", True)), tuple(str(a) for a in on_args)
    return None


def _meta_entries(meta: Any) -> list[tuple[str, Mapping]]:
    if meta is None:
        return []
    items = meta if isinstance(meta, list) else [meta]
    out = []
    for item in items:
        if isinstance(item, str):
            out.append((item, {}))
        elif isinstance(item, Mapping):
            for key, props in item.items():
                out.append((str(key), props if isinstance(props, Mapping) else {}))
    return out

