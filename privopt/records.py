"""Frozen records: dataclasses whose methods are shared, not generated per class (issue 23, goal 1).

``@dataclass(frozen=True)`` in Python 3.11 writes each class's ``__init__``, ``__repr__``,
``__eq__``, ``__hash__``, ``__setattr__`` and ``__delattr__`` as source text and compiles it
with ``exec``: about half a millisecond a class, and a solve imports more than a hundred of them
(the syntax tree's, the constraint sets', the model's), about as long as importing numpy's core.

A subclass of ``Record`` (a value: equal and hashed by its fields) or of ``Identity`` (equal
only to itself) is the same class as ``@dataclass(frozen=True)`` or ``@dataclass(frozen=True,
eq=False)`` makes, with the methods inherited from ``Record``, which reads the class's fields
(``dataclasses.fields``) once, when its first instance is made. What a caller sees is the same:
the constructor's positional and keyword arguments, defaults and default factories,
``__post_init__``; the repr ``Name(field=value, ...)`` (fields with ``repr=False`` left out);
``==`` and ``hash`` over the fields with ``compare=True`` (the same tuple a dataclass
compares), an instance of another class never equal; assigning or deleting a field raises
``dataclasses.FrozenInstanceError``. ``dataclasses.fields``, ``replace`` and ``asdict`` work on
them, as they are dataclasses. The class itself is made in microseconds; each instance costs
about a microsecond more to build, which is why ``Span`` (one per token) stays a generated
dataclass.
"""

from __future__ import annotations

import dataclasses
import reprlib
from dataclasses import MISSING, FrozenInstanceError

_light = dataclasses.dataclass(init=False, repr=False, eq=False)  # fields and __match_args__; no code generated


class _Shape:
    """What ``Record``'s methods need of one class, read from its fields once."""

    __slots__ = ("names", "slots", "defaults", "late", "shown", "compared", "hashed", "post_init")

    def __init__(self, cls: type) -> None:
        fields = dataclasses.fields(cls)
        init = [f for f in fields if f.init]
        self.names = tuple(f.name for f in init)
        self.slots = frozenset(self.names)
        self.defaults = {f.name: f for f in init if f.default is not MISSING or f.default_factory is not MISSING}
        self.late = tuple(  # not arguments, but set to their default by __init__ as a dataclass does
            f for f in fields if not f.init and (f.default is not MISSING or f.default_factory is not MISSING)
        )
        self.shown = tuple(f.name for f in fields if f.repr)
        self.compared = tuple(f.name for f in fields if f.compare)
        self.hashed = tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash))
        self.post_init = hasattr(cls, "__post_init__")


def _default(f: dataclasses.Field):
    return f.default if f.default is not MISSING else f.default_factory()


class Record:
    """A frozen dataclass whose methods are written once: every subclass is made a dataclass
    (``dataclasses.dataclass(init=False, repr=False, eq=False)``: its fields, no code) when it
    is defined, and is equal and hashed by its fields (see the module's docstring)."""

    __slots__ = ()

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("__hash__", 0) is None and "__eq__" in cls.__dict__:
            cls.__hash__ = Record.__hash__  # an __eq__ of its own, hashed by the fields, as a frozen dataclass is
        undocumented = cls.__dict__.get("__doc__") is None
        if undocumented:
            cls.__doc__ = ""  # else dataclass writes one from inspect.signature, slowly
        _light(cls)
        if undocumented:
            cls.__doc__ = f"{cls.__name__}({', '.join(f.name for f in dataclasses.fields(cls) if f.init)})"

    @classmethod
    def _shape(cls) -> _Shape:
        shape = cls.__dict__.get("_record_shape")
        if shape is None:
            shape = _Shape(cls)
            type.__setattr__(cls, "_record_shape", shape)
        return shape

    def __init__(self, *args, **kwargs) -> None:
        shape = self._shape()
        if kwargs or len(args) != len(shape.names):
            args = self._arguments(shape, args, kwargs)
        self.__dict__.update(zip(shape.names, args))  # in the fields' order, as a dataclass's __init__ sets them
        for f in shape.late:
            self.__dict__[f.name] = _default(f)
        if shape.post_init:
            self.__post_init__()

    @classmethod
    def _arguments(cls, shape: _Shape, args: tuple, kwargs: dict) -> list:
        """Every init field's value, in order, from positional and keyword arguments and the
        defaults; a ``TypeError`` as a dataclass's ``__init__`` raises for a wrong call."""
        names = shape.names
        if len(args) > len(names):
            raise TypeError(f"{cls.__qualname__}() takes {len(names)} positional arguments but {len(args)} were given")
        values = dict(zip(names, args))
        for key in kwargs:
            if key in values:
                raise TypeError(f"{cls.__qualname__}() got multiple values for argument {key!r}")
            if key not in shape.slots:
                raise TypeError(f"{cls.__qualname__}() got an unexpected keyword argument {key!r}")
        values.update(kwargs)
        missing = [n for n in names if n not in values and n not in shape.defaults]
        if missing:
            raise TypeError(f"{cls.__qualname__}() missing required arguments: {', '.join(missing)}")
        return [values[n] if n in values else _default(shape.defaults[n]) for n in names]

    @reprlib.recursive_repr()
    def __repr__(self) -> str:
        shown = ", ".join(f"{n}={getattr(self, n)!r}" for n in self._shape().shown)
        return f"{type(self).__qualname__}({shown})"

    def __eq__(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        names = self._shape().compared
        return tuple(getattr(self, n) for n in names) == tuple(getattr(other, n) for n in names)

    def __hash__(self) -> int:
        return hash(tuple(getattr(self, n) for n in self._shape().hashed))

    def __setattr__(self, name, value):
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name):
        raise FrozenInstanceError(f"cannot delete field {name!r}")


class Identity(Record):
    """A record equal only to itself, hashed by its identity (``@dataclass(frozen=True,
    eq=False)``)."""

    __slots__ = ()
    __eq__ = object.__eq__
    __hash__ = object.__hash__
