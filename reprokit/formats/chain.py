"""A format's history and the chain of steps that brings any stored version of it to the current one.

asv keeps an `api_version` in every results file and reads old ones through `update_to_N` steps; this
is the same. `Format.history[N]` says what version N added and when; `Format.steps[N]` turns a
document of version N-1 into one of version N. Every step is small and only adds or restructures what
its era changed; the chain runs them in order, so a reader meets one shape: the current one.

`stamped_from`: the first version that kits stamped in the files they wrote. Kits before it wrote 1
whatever their era (the run record went through five eras stamped 1), so a document stamped 1 may be
of any version below `stamped_from`: each step below it keeps what a document already has and adds
only what is absent. From `stamped_from` on, a version is what it says.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from dataclasses import dataclass, field

from reprokit.errors import UserError

Step = Callable[[dict], dict]


@dataclass(frozen=True)
class Format:
    name: str
    history: dict[int, str]  # version -> what it added, with the kit commit and date
    steps: dict[int, Step] = field(default_factory=dict)  # N -> to_N (version N-1 -> N)
    stamped_from: int = 1

    @property
    def current(self) -> int:
        return max(self.history)

    def __post_init__(self) -> None:
        missing = [n for n in range(2, self.current + 1) if n not in self.steps]
        if sorted(self.history) != list(range(1, self.current + 1)) or missing or \
                set(self.steps) - set(range(2, self.current + 1)):
            raise ValueError(f"format {self.name}: versions 1..{self.current} each need a history line "
                             f"and versions 2..{self.current} a step (missing steps: {missing})")


class NewerFormat(UserError):
    """A stored document written by a newer kit than this one."""


def refuse_newer(fmt: Format, found: int, where: str) -> None:
    """A UserError naming both versions when `found` is newer than this kit knows."""
    if found > fmt.current:
        raise NewerFormat(f"{where} is a {fmt.name} file of format version {found}, written by a newer "
                          f"kit: this kit reads {fmt.name} versions 1 to {fmt.current}; read it with "
                          "the reprokit that wrote it or a newer one (its run.json `kit` names it)")


def upgrade_with(fmt: Format, doc: object, where: str) -> object:
    """`doc` brought to `fmt`'s current version (see the module doc); refused when newer."""
    if not isinstance(doc, dict):
        return doc
    found = doc.get("schema_version")
    if isinstance(found, bool) or not isinstance(found, int) or found < 1:
        return doc  # the schema names it
    refuse_newer(fmt, found, where)
    if found == fmt.current:
        return doc
    out = pickle.loads(pickle.dumps(doc, pickle.HIGHEST_PROTOCOL))  # a deep copy, 3x deepcopy's speed
    for n in range(found + 1, fmt.current + 1):
        out = fmt.steps[n](out)
        out["schema_version"] = n
    return out
