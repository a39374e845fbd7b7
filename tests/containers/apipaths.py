"""Which framework names a workload uses on one stack's code path, and whether each exists there.

The GPU images run old frameworks (TensorFlow 1.2.1/1.8.0/2.0.0, Keras 2.1.6, torch 0.1.12/1.3.0,
Theano 0.9.0, MXNet 1.2.0) that cannot be imported here, so this is static:

* the code path: from the workload's `run`, every statement reachable for the stack's framework
  versions and the cell's variant. `at_least(M, 1, 13)` and `available("keras")` of
  bench/workloads/_versions.py, `variant == "..."` (ctx.variant, or a name `variant`), `not`,
  `and`, `or` are decided; every other test leaves both branches on the path. A branch that ends in
  `return`/`raise` ends its block. Module-level functions and classes named on the path are on it,
  nested ones too.
* the names: `import M as x`, `from M import y` and `x = <framework name>` bind names to framework
  paths (one meaning per name on a path, else a problem); every attribute chain on such a name, and
  every call of one, is a use. Keywords of a call are checked where the API list gives `params`.
* the API list: reprokit/data/framework_apis.yaml (schema framework_apis.schema.json), per framework
  version the names that exist, each with the URL of its source or docs at that version. A use
  exists when its path is listed, or runs through a listed name that is not a namespace (an
  attribute of a value is not checked). For a framework whose version is the one installed here
  (the modern image), the installed module itself answers.

Uses of a framework the stack does not have (e.g. `import tf_keras` on TF 1.8) are problems too.
Helper modules of bench/workloads a workload imports (`from workloads import _jax_lstm as jl`) are
followed into.

Not checked: methods and attributes of framework OBJECTS (`model.compile(...)`,
`layer.params_size()`, `loss.data[0]`), only names reached through a module; the result types of
calls; positional arguments. A feature probe (`hasattr`, `getattr(x, "y", None)`, try/except
ImportError) is no version switch: both of its branches stay on the path.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from dataclasses import dataclass, field

from reprokit import files, kitdata

BENCH = files.BENCH / "workloads"
ROOTS = {"tensorflow", "keras", "tf_keras", "torch", "theano", "mxnet", "jax", "jaxlib", "pygpu",
         "optax", "flax"}
UNKNOWN = None


@dataclass
class Use:
    path: str
    line: int
    keywords: list[str] = field(default_factory=list)
    call: bool = False
    file: str = ""


@dataclass
class PathReport:
    stack: str
    workload: str
    variant: str | None
    versions: dict[str, str]
    uses: list[Use] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


# -- the API lists -------------------------------------------------------------------------------
class ListedAPI:
    """Names of one framework version, from framework_apis.yaml."""

    def __init__(self, root: str, version: str, doc: dict):
        self.root, self.version = root, version
        self.entries = {e["name"]: e for e in doc["names"]}
        self.source = doc.get("source")
        children: set[str] = set()
        for name in self.entries:
            parts = name.split(".")
            children.update(".".join(parts[:i]) for i in range(1, len(parts)))
        self.namespaces = children

    def kind(self, path: str) -> str:
        """'namespace' (has listed members), 'leaf' (listed, members not checked) or 'missing'."""
        if path == self.root or path in self.namespaces:
            return "namespace"
        return "leaf" if path in self.entries else "missing"

    def params(self, path: str) -> list[str] | None:
        entry = self.entries.get(path)
        return None if entry is None else entry.get("params")


class LiveAPI:
    """The installed framework itself (its version equals the image's)."""

    def __init__(self, root: str, version: str):
        self.root, self.version = root, version
        self._cache: dict[str, object] = {}

    def _get(self, path: str):
        if path in self._cache:
            return self._cache[path]
        parts = path.split(".")
        try:
            obj = importlib.import_module(parts[0])
            for i, p in enumerate(parts[1:], 1):
                try:
                    obj = getattr(obj, p)
                except AttributeError:
                    obj = importlib.import_module(".".join(parts[:i + 1]))
        except Exception:  # noqa: BLE001 - missing, whatever the reason
            obj = _MISSING
        self._cache[path] = obj
        return obj

    def kind(self, path: str) -> str:
        obj = self._get(path)
        if obj is _MISSING:
            return "missing"
        return "namespace" if inspect.ismodule(obj) else "leaf"

    def params(self, path: str) -> list[str] | None:
        obj = self._get(path)
        try:
            sig = inspect.signature(obj)
        except (TypeError, ValueError):
            return None
        names = [p.name for p in sig.parameters.values()]
        if any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values()):
            names.append("**")
        return names


_MISSING = object()


def installed_version(root: str) -> str | None:
    try:
        return str(importlib.import_module(root).__version__)
    except Exception:  # noqa: BLE001
        return None


def load_apis() -> dict:
    return kitdata.load("framework_apis")


def api_for(root: str, version: str, apis: dict | None = None):
    apis = apis if apis is not None else load_apis()
    doc = ((apis.get("frameworks") or {}).get(root) or {}).get(version)
    if doc is not None:
        return ListedAPI(root, version, doc)
    installed = installed_version(root)
    if installed is not None and version_tuple(installed) == version_tuple(version):
        return LiveAPI(root, version)  # e.g. torch 2.13.0+cpu here for the image's 2.13.0
    return None


# -- version predicates --------------------------------------------------------------------------
def version_tuple(text: str) -> tuple[int, ...]:
    """The leading numbers of a version: "0.1.12_2" -> (0, 1, 12), "1.3.0+cu100" -> (1, 3, 0)."""
    m = re.match(r"\d+(?:\.\d+)*", str(text))
    return tuple(int(x) for x in m.group(0).split(".")) if m else (0,)


def _at_least(version: str, wanted: tuple[int, ...]) -> bool:
    have = version_tuple(version)
    have = have + (0,) * (len(wanted) - len(have))
    return have[:len(wanted)] >= wanted


# -- the walk ------------------------------------------------------------------------------------
def _helper_aliases(tree: ast.Module) -> dict[str, str]:
    """`from workloads import _x as y` / `import _x as y` at module level: alias -> helper module."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "workloads":
            out.update({a.asname or a.name: a.name for a in node.names if a.name.startswith("_")})
        elif isinstance(node, ast.Import):
            out.update({a.asname or a.name: a.name for a in node.names
                        if a.name.startswith("_") and (BENCH / f"{a.name}.py").is_file()})
    return out


class _Path:
    def __init__(self, tree: ast.Module, versions: dict[str, str], variant: str | None,
                 file: str = ""):
        self.versions, self.variant = versions, variant
        self.file = file
        self.helpers = {alias: mod for alias, mod in _helper_aliases(tree).items()
                        if mod != "_versions" and (BENCH / f"{mod}.py").is_file()}
        self.helper_defs: dict[str, dict] = {}
        self.defs = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        self.assigns = {t.id: n for n in tree.body if isinstance(n, ast.Assign)
                        for t in n.targets if isinstance(t, ast.Name)}
        self.bindings: dict[str, set[str]] = {}
        self.uses: list[Use] = []
        self.problems: list[str] = []
        self.seen: set[int] = set()
        self.methods: dict[str, list] = {}    # methods of classes on the path, walked when named
        self.attributes: set[str] = set()     # attribute names on the path

    # bindings ---------------------------------------------------------------------------------
    def bound(self, name: str) -> str | None:
        paths = self.bindings.get(name) or set()
        return next(iter(paths)) if len(paths) == 1 else None

    def chain(self, node) -> list[str] | None:
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name):
            return [node.id] + parts[::-1]
        return None

    def resolve(self, node) -> str | None:
        parts = self.chain(node)
        if not parts:
            return None
        base = self.bound(parts[0])
        return ".".join([base] + parts[1:]) if base else None

    def bind(self, name: str, path: str, line: int) -> None:
        self.bindings.setdefault(name, set()).add(path)
        if len(self.bindings[name]) > 1:
            meanings = " and ".join(sorted(self.bindings[name]))
            self.problems.append(f"{self.file}:{line}: `{name}` means {meanings} on this path; give "
                                 "each its own name")

    # conditions -------------------------------------------------------------------------------
    def decide(self, node) -> bool | None:
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            v = self.decide(node.operand)
            return None if v is None else not v
        if isinstance(node, ast.BoolOp):
            vals = [self.decide(v) for v in node.values]
            if isinstance(node.op, ast.And):
                return False if False in vals else (True if all(v is True for v in vals) else None)
            return True if True in vals else (False if all(v is False for v in vals) else None)
        if isinstance(node, ast.Call):
            fname = node.func.attr if isinstance(node.func, ast.Attribute) else \
                node.func.id if isinstance(node.func, ast.Name) else None
            if fname == "at_least" and node.args and isinstance(node.args[0], ast.Name):
                root = self.bound(node.args[0].id)
                wanted = tuple(a.value for a in node.args[1:] if isinstance(a, ast.Constant))
                if root in self.versions and len(wanted) == len(node.args) - 1:
                    return _at_least(self.versions[root], wanted)
                if root is not None and root not in self.versions:
                    self.problems.append(f"{self.file}:{node.lineno}: at_least({node.args[0].id}, ...) on a "
                                         f"stack without {root}")
                return None
            if fname == "available" and node.args and isinstance(node.args[0], ast.Constant):
                return node.args[0].value in self.versions
            body = self._body(node.func)
            if body is not None and len(body) == 1 and isinstance(body[0], ast.Return) \
                    and body[0].value is not None:  # a predicate function: `return <test>`
                return self.decide(body[0].value)
            return None
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and self.variant is not None:
            left, right = node.left, node.comparators[0]
            is_variant = (isinstance(left, ast.Attribute) and left.attr == "variant") or \
                (isinstance(left, ast.Name) and left.id == "variant")
            if is_variant:
                op = node.ops[0]
                if isinstance(right, ast.Constant) and isinstance(op, (ast.Eq, ast.NotEq)):
                    same = self.variant == right.value
                    return same if isinstance(op, ast.Eq) else not same
                if isinstance(right, (ast.Tuple, ast.List)) and isinstance(op, (ast.In, ast.NotIn)):
                    inside = self.variant in [e.value for e in right.elts if isinstance(e, ast.Constant)]
                    return inside if isinstance(op, ast.In) else not inside
        return None

    def _body(self, func):
        """The statements of a module-level function named by func (docstring dropped), or None."""
        if not isinstance(func, ast.Name) or not isinstance(self.defs.get(func.id), ast.FunctionDef):
            return None
        body = list(self.defs[func.id].body)
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]
        return body

    def returned(self, stmts) -> str | None:
        """The framework path a function returns on this path, when its returns are decidable."""
        for st in stmts:
            if isinstance(st, ast.Return):
                return self.resolve(st.value) if isinstance(st.value, (ast.Name, ast.Attribute)) \
                    else None
            if isinstance(st, ast.If):
                v = self.decide(st.test)
                if v is None:
                    return None
                found = self.returned(st.body if v else st.orelse)
                if found is not None:
                    return found
        return None

    # statements -------------------------------------------------------------------------------
    def block(self, stmts) -> bool:
        """Walk statements; True when the block certainly ends (return/raise)."""
        for s in stmts:
            if self.stmt(s):
                return True
        return False

    def stmt(self, s) -> bool:
        if isinstance(s, (ast.Return, ast.Raise)):
            self.expr(s)
            return True
        if isinstance(s, ast.If):
            v = self.decide(s.test)
            self.expr(s.test)
            if v is True:
                return self.block(s.body)
            if v is False:
                return self.block(s.orelse)
            a, b = self.block(s.body), self.block(s.orelse)
            return a and b and bool(s.orelse)
        if isinstance(s, ast.Try):
            ends = self.block(s.body)
            handlers = [self.block(h.body) for h in s.handlers]
            self.block(s.orelse)
            self.block(s.finalbody)
            return ends and all(handlers)
        if isinstance(s, (ast.FunctionDef, ast.ClassDef)):
            self.function(s)
            return False
        if isinstance(s, ast.Import):
            for a in s.names:
                self.import_(a.name, a.asname or a.name.split(".")[0], a.name if a.asname else
                             a.name.split(".")[0], s.lineno)
            return False
        if isinstance(s, ast.ImportFrom):
            if s.level == 0 and s.module:
                for a in s.names:
                    self.import_(s.module, a.asname or a.name, f"{s.module}.{a.name}", s.lineno)
            return False
        if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
            target = self.resolve(s.value) if isinstance(s.value, (ast.Attribute, ast.Name)) else None
            if target is None and isinstance(s.value, ast.Call) and isinstance(s.value.func, ast.Name) \
                    and s.value.func.id == "getattr" and len(s.value.args) >= 2 \
                    and isinstance(s.value.args[1], ast.Constant):
                base = self.resolve(s.value.args[0])
                target = f"{base}.{s.value.args[1].value}" if base else None
            if target is None and isinstance(s.value, ast.Call) and not s.value.keywords:
                body = self._body(s.value.func)  # x = helper(tf) returning a framework name
                target = self.returned(body) if body is not None else None
            if target is not None:
                self.bind(s.targets[0].id, target, s.lineno)
        if isinstance(s, (ast.With, ast.For, ast.While)):
            for field_name in ("items", "target", "iter", "test"):
                value = getattr(s, field_name, None)
                for node in (value if isinstance(value, list) else [value]):
                    if node is not None:
                        self.expr(node)
            ends = self.block(s.body)
            self.block(getattr(s, "orelse", []))
            return ends and isinstance(s, ast.With)
        self.expr(s)
        return False

    def import_(self, module: str, name: str, path: str, line: int) -> None:
        root = module.split(".")[0]
        if root not in ROOTS:
            return
        if root not in self.versions:
            self.problems.append(f"{self.file}:{line}: imports {module}, which this stack does not have")
            return
        self.bind(name, path, line)
        self.use(path, line)

    def helper(self, alias: str, name: str):
        """A function of a helper module of bench/workloads (e.g. _jax_lstm.setup), or None."""
        mod = self.helpers[alias]
        if mod not in self.helper_defs:
            tree = ast.parse((BENCH / f"{mod}.py").read_text())
            self.helper_defs[mod] = {n.name: n for n in tree.body
                                     if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
            for n in self.helper_defs[mod].values():
                n._reprokit_file = f"{mod}.py"
        return self.helper_defs[mod].get(name)

    def function(self, node) -> None:
        if id(node) in self.seen:
            return
        self.seen.add(id(node))
        outer = self.file
        self.file = getattr(node, "_reprokit_file", self.file)
        try:
            self._function(node)
        finally:
            self.file = outer

    def _function(self, node) -> None:
        for d in getattr(node, "decorator_list", []):
            self.expr(d)
        if isinstance(node, ast.FunctionDef):
            for d in node.args.defaults + node.args.kw_defaults:
                if d is not None:
                    self.expr(d)
            self.block(node.body)
            return
        for b in node.bases:
            self.expr(b)
        for item in node.body:  # a method is on the path once something names it
            if isinstance(item, ast.FunctionDef) and not (item.name.startswith("__") or
                                                          item.decorator_list):
                self.methods.setdefault(item.name, []).append(item)
                if item.name in self.attributes:
                    self.function(item)
            else:
                self.stmt(item)

    # expressions ------------------------------------------------------------------------------
    def expr(self, node) -> None:
        todo = [node]
        while todo:
            n = todo.pop()
            if isinstance(n, ast.IfExp):
                v = self.decide(n.test)
                todo.append(n.test)
                todo += [n.body] if v is True else [n.orelse] if v is False else [n.body, n.orelse]
                continue
            if isinstance(n, ast.BoolOp):
                for value in n.values:  # short-circuit: after a decided False (and) / True (or)
                    todo.append(value)
                    v = self.decide(value)
                    if (isinstance(n.op, ast.And) and v is False) or (isinstance(n.op, ast.Or) and v):
                        break
                continue
            if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.Lambda)):
                if isinstance(n, ast.Lambda):
                    todo.append(n.body)
                else:
                    self.function(n)
                continue
            if isinstance(n, ast.Call):
                path = self.resolve(n.func)
                if path is not None:
                    self.use(path, n.lineno, [k.arg for k in n.keywords if k.arg], call=True)
                    todo += n.args + [k.value for k in n.keywords]
                    base = n.func.value if isinstance(n.func, ast.Attribute) else None
                    while isinstance(base, ast.Attribute):
                        base = base.value
                    continue
            if isinstance(n, ast.Compare) and all(isinstance(o, (ast.In, ast.NotIn)) for o in n.ops):
                # `variant in BUILDERS`: a membership test does not call what the table holds
                todo.append(n.left)
                todo += [c for c in n.comparators
                         if not (isinstance(c, ast.Name) and c.id in self.assigns)]
                continue
            if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) \
                    and n.value.id in self.assigns and self.variant is not None \
                    and isinstance(self.assigns[n.value.id].value, ast.Dict) \
                    and ((isinstance(n.slice, ast.Name) and n.slice.id == "variant")
                         or (isinstance(n.slice, ast.Attribute) and n.slice.attr == "variant")):
                table = self.assigns[n.value.id].value  # BUILDERS[variant]: only that entry
                for key, value in zip(table.keys, table.values):
                    if isinstance(key, ast.Constant) and key.value == self.variant:
                        todo.append(value)
                continue
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) \
                    and n.value.id in self.helpers and not self.bound(n.value.id):
                target = self.helper(n.value.id, n.attr)
                if target is not None:
                    self.function(target)
                continue
            if isinstance(n, ast.Attribute):
                path = self.resolve(n)
                if path is not None:
                    self.use(path, n.lineno)
                    continue
                self.attributes.add(n.attr)
                for method in self.methods.get(n.attr, []):
                    self.function(method)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                if n.id in self.defs:
                    self.function(self.defs[n.id])
                elif n.id in self.assigns and id(self.assigns[n.id]) not in self.seen:
                    self.seen.add(id(self.assigns[n.id]))
                    todo.append(self.assigns[n.id].value)
                elif self.bound(n.id):
                    self.use(self.bound(n.id), n.lineno)
            todo += list(ast.iter_child_nodes(n))

    def use(self, path: str, line: int, keywords: list[str] | None = None, call: bool = False) -> None:
        self.uses.append(Use(path, line, list(keywords or []), call, self.file))


def _bindings_pass(tree, versions, variant) -> dict[str, set[str]]:
    walker = _Path(tree, versions, variant)
    walker.function(walker.defs["run"])
    return walker.bindings


def code_path(source: str, versions: dict[str, str], variant: str | None, file: str = "") -> _Path:
    """Walk `run` of a workload for these framework versions and this variant (two passes: the
    second one knows every binding the first one found). Helper modules of bench/workloads that
    the workload imports (`from workloads import _jax_lstm as jl`) are followed into."""
    tree = ast.parse(source)
    first = _Path(tree, versions, variant, file)
    if "run" not in first.defs:
        raise ValueError("the workload has no run(ctx)")
    first.function(first.defs["run"])
    second = _Path(tree, versions, variant, file)
    second.bindings = {k: set(v) for k, v in first.bindings.items()}
    second.function(second.defs["run"])
    second.problems = sorted(set(first.problems + second.problems))
    return second


def check(workload: str, stack: str, versions: dict[str, str], variant: str | None,
          apis: dict | None = None, source: str | None = None) -> PathReport:
    """Every framework name the workload uses on this stack's path, and the ones that do not exist."""
    apis = apis if apis is not None else load_apis()
    text = source if source is not None else (BENCH / f"{workload}.py").read_text()
    walk = code_path(text, versions, variant, f"{workload}.py")
    report = PathReport(stack, workload, variant, dict(versions), walk.uses, list(walk.problems))
    lists = {root: api_for(root, v, apis) for root, v in versions.items()}
    missing = set()
    for use in walk.uses:
        root = use.path.split(".")[0]
        api = lists.get(root)
        if api is None:
            report.problems.append(f"no API list for {root} {versions.get(root)} (framework_apis.yaml)")
            continue
        where = _where(api, use.path)
        if where is not None:
            key = (where, use.file, use.line)
            if key not in missing:
                missing.add(key)
                report.problems.append(f"{use.file}:{use.line}: {where} does not exist in {root} "
                                       f"{api.version}")
            continue
        if use.call and use.keywords and api.kind(use.path) != "missing":
            params = api.params(use.path)
            if params is not None and "**" not in params:
                bad = [k for k in use.keywords if k not in params]
                if bad:
                    report.problems.append(f"{use.file}:{use.line}: {use.path}() has no keyword "
                                           f"{', '.join(bad)} in {root} {api.version}")
    report.problems = list(dict.fromkeys(report.problems))
    return report


def _where(api, path: str) -> str | None:
    """The first part of path that does not exist, or None (exists, or a value's attribute)."""
    parts = path.split(".")
    for i in range(2, len(parts) + 1):
        prefix = ".".join(parts[:i])
        kind = api.kind(prefix)
        if kind == "missing":
            return prefix
        if kind == "leaf":
            return None
    return None
