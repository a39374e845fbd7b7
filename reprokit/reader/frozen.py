"""Read-only JSON values: what the model of a run keeps of the records the kit does not type field by field.

A fingerprint, a metric's samples or a runner's record is kept as it was stored, but frozen:
`FrozenDict` and `FrozenList` are a dict and a list that refuse every change (TypeError), so nothing
that reads a run can edit it for the next reader. They stay a dict and a list for everything that
only reads (json.dumps, jsonschema, Jinja, pandas), and `thaw` gives a mutable deep copy where a
caller builds a new document from one.
"""

from __future__ import annotations

from typing import Any, NoReturn


def _refuse(self: object, *args: object, **kwargs: object) -> NoReturn:
    raise TypeError(f"a run's stored {type(self).__name__[6:].lower()} is read-only; thaw() it to change "
                    "a copy")


class FrozenDict(dict):
    """A dict that cannot be changed after it is built."""

    __slots__ = ()
    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = __ior__ = _refuse

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(sorted(self.items(), key=repr)))

    def __reduce__(self) -> tuple:
        return (FrozenDict, (dict(self),))


class FrozenList(list):
    """A list that cannot be changed after it is built."""

    __slots__ = ()
    __setitem__ = __delitem__ = append = extend = insert = pop = remove = clear = sort = reverse = _refuse
    __iadd__ = __imul__ = _refuse

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(self))

    def __reduce__(self) -> tuple:
        return (FrozenList, (list(self),))


EMPTY = FrozenDict()
NONE: FrozenList = FrozenList()


def freeze(value: Any) -> Any:
    """`value` (parsed JSON) with every dict and list in it frozen; other values as they are."""
    if isinstance(value, FrozenDict | FrozenList):
        return value
    if isinstance(value, dict):
        return FrozenDict((k, freeze(v)) for k, v in value.items())
    if isinstance(value, list | tuple):
        return FrozenList(freeze(v) for v in value)
    return value


def mapping(value: Any) -> FrozenDict:
    """`value` frozen when it is a dict, else an empty FrozenDict (a record the document does not have)."""
    return freeze(value) if isinstance(value, dict) else EMPTY


def items(value: Any) -> FrozenList:
    """`value` frozen when it is a list, else an empty FrozenList."""
    return freeze(value) if isinstance(value, list) else NONE


def thaw(value: Any) -> Any:
    """A plain, mutable deep copy of a frozen value."""
    if isinstance(value, dict):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [thaw(v) for v in value]
    return value
