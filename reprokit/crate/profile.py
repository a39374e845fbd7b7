"""Does a crate's metadata follow RO-Crate 1.1 and the Process Run Crate profile 0.5?

`roc_validator(path)` runs roc-validator (PyPI `roc-validator`, the profiles' reference validator)
offline on the crate at its REQUIRED level, where it is installed; `own_checks(meta)` are the kit's
checks of the same rules its crates rely on, used where roc-validator is not installed (and always:
they are cheap). Offline, roc-validator cannot fetch the RO-Crate JSON-LD context
(https://w3id.org/ro/crate/1.1/context) unless its cache holds it (`rocrate-validator cache warm`,
run once online); those two checks are then reported as not made, never as passed.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from reprokit.crate import METADATA, PROCESS_RUN_CRATE, RO_CRATE, WFRUN_TERMS

PROFILE_ID = "process-run-crate-0.5"
_CONTEXT_UNREACHABLE = "Unable to retrieve the JSON-LD context"
STATUSES = {f"http://schema.org/{s}" for s in ("CompletedActionStatus", "FailedActionStatus",
                                               "ActiveActionStatus", "PotentialActionStatus")}


def _ids(value: Any) -> list[str]:
    """The @ids a property refers to (a reference or a list of them)."""
    items = value if isinstance(value, list) else [value] if value is not None else []
    return [i["@id"] for i in items if isinstance(i, dict) and isinstance(i.get("@id"), str)]


def _types(entity: dict) -> list[str]:
    t = entity.get("@type")
    return t if isinstance(t, list) else [t]


def _iso(text: Any) -> bool:
    try:
        dt.datetime.fromisoformat(str(text).replace("Z", "+00:00"))
        return True
    except ValueError:
        return False


def _action_checks(e: dict, by_id: dict, root: dict) -> list[str]:
    """Process Run Crate's rules for one CreateAction `e`."""
    out: list[str] = []
    name = e["@id"]
    if not _ids(e.get("instrument")):
        out.append(f"action {name} has no instrument")
    for key in ("instrument", "object", "result", "containerImage"):
        out += [f"action {name} {key} {i} is not an entity of the crate"
                for i in _ids(e.get(key)) if i not in by_id]
    for key in ("startTime", "endTime"):
        if key in e and not _iso(e[key]):
            out.append(f"action {name} {key} {e[key]!r} is not an ISO 8601 time")
    status = _ids(e.get("actionStatus"))
    if status and status[0] not in STATUSES:
        out.append(f"action {name} actionStatus {status[0]} is not a schema.org ActionStatusType")
    if status and status[0].endswith("FailedActionStatus") and not e.get("error"):
        out.append(f"action {name} failed but has no error")
    if name not in _ids(root.get("mentions")):
        out.append(f"action {name} is not in the root dataset's mentions")
    return out


def _root_checks(root: dict, graph: list[dict]) -> list[str]:
    """RO-Crate's rules for the root dataset and the files it must list."""
    out = [f"the root dataset has no {key}" for key in ("name", "description", "datePublished")
           if not root.get(key)]
    if PROCESS_RUN_CRATE not in _ids(root.get("conformsTo")):
        out.append(f"the root dataset does not conform to {PROCESS_RUN_CRATE}")
    parts = set(_ids(root.get("hasPart")))
    return out + [f"file {e['@id']} is not in the root dataset's hasPart" for e in graph
                  if "File" in _types(e) and e["@id"] not in parts]


def own_checks(meta: dict) -> list[str]:
    """The rules of RO-Crate 1.1 and Process Run Crate 0.5 a reprokit crate must meet, as one line
    per violation (empty: none)."""
    out: list[str] = []
    ctx = meta.get("@context")
    ctxs = ctx if isinstance(ctx, list) else [ctx]
    if f"{RO_CRATE}/context" not in ctxs:
        out.append(f"@context does not name the RO-Crate 1.1 context ({RO_CRATE}/context)")
    graph = meta.get("@graph")
    if not isinstance(graph, list) or not all(isinstance(e, dict) and "@id" in e for e in graph):
        return out + ["@graph is not a list of entities with an @id"]
    by_id = {e["@id"]: e for e in graph}
    desc = by_id.get(METADATA) or {}
    if _ids(desc.get("about")) != ["./"] or RO_CRATE not in _ids(desc.get("conformsTo")):
        out.append(f"the metadata descriptor {METADATA} must be about ./ and conform to {RO_CRATE}")
    root = by_id.get("./") or {}
    if "Dataset" not in _types(root):
        return out + ["no root dataset ./"]
    out += _root_checks(root, graph)
    for e in graph:
        if "CreateAction" in _types(e):
            out += _action_checks(e, by_id, root)
    out += [f"container image {e['@id']} has no name or sha256" for e in graph
            if "ContainerImage" in _types(e) and not (e.get("name") and e.get("sha256"))]
    if any("ContainerImage" in _types(e) for e in graph) and f"{WFRUN_TERMS}/context" not in ctxs:
        out.append(f"ContainerImage is used but @context does not name {WFRUN_TERMS}/context")
    return out


def roc_validator(crate: Path) -> dict | None:
    """roc-validator's verdict on the crate file at its REQUIRED level, offline: {"failures": [lines],
    "not_checked": [lines]}; None when roc-validator is not installed."""
    try:
        from rocrate_validator import models, services
    except ImportError:
        return None
    # a path, made absolute, never a string the validator would parse as a URL: a relative name
    # holding `]` ('c]1.zip') was read as an IPv6 host (ValueError: Invalid IPv6 URL, exit 3)
    settings = services.ValidationSettings(rocrate_uri=Path(crate).absolute(),
                                           profile_identifier=PROFILE_ID,
                                           requirement_severity=models.Severity.REQUIRED, offline=True)
    import logging

    term = logging.getLogger("rdflib.term")  # 'file:///a b/... does not look like a valid URI' per use
    level = term.level
    term.setLevel(logging.ERROR)
    try:
        result = services.validate(settings)
    finally:
        term.setLevel(level)
        _quiet()
    failures, context = [], []
    for issue in result.get_issues():
        ident = getattr(issue.check, "identifier", str(issue.check))
        msg = " ".join(str(issue.message).split())
        if _CONTEXT_UNREACHABLE in msg:
            if ident not in context:
                context.append(ident)
        else:
            failures.append(f"{ident}: {msg}")
    not_checked = [f"{', '.join(context)}: the JSON-LD context could not be fetched offline (fill "
                   "roc-validator's cache once online: `rocrate-validator cache warm`)"] if context else []
    return {"failures": failures, "not_checked": not_checked}


def _quiet() -> None:
    """roc-validator prints the warnings it logged when the process exits; the kit reports them as
    its own lines instead, so they are dropped here."""
    try:
        from rocrate_validator.utils import log
        stream = getattr(log, "__log_stream__", None)
        if stream is not None and not stream.closed:
            stream.seek(0)
            stream.truncate()
    except ImportError:
        pass
