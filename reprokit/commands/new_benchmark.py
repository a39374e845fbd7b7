"""`reproduce.py new-benchmark ID --title T --stack S [--framework F] [--suite NAME]`: scaffold a new
published source (reprokit/catalog/scaffold.py; docs/adding-a-benchmark.md walks through the files).

Writes six files, each with "TODO: ..." where the source's facts go, and names them; refuses (exit 2)
an ID, suite or workload that exists, a stack the kit lacks, an identifier that is not whole (a final
newline included) or a title that is not one line of printable text. Every YAML text is loaded back and
checked against its schema before anything is written, and refused unless it holds what was given:
nothing is written unless all six can be, and the kit's data always loads afterwards.
"""

from __future__ import annotations

from reprokit.errors import UserError


def add_arguments(p) -> None:
    p.add_argument("source", metavar="ID", help="the new source's id: 3-12 lower-case letters or digits")
    p.add_argument("--title", required=True, help="one line: authors/repository, what it compares, on what")
    p.add_argument("--stack", required=True,
                   help="the stack its cells run on (one of reprokit/data/stacks.yaml)")
    p.add_argument("--framework", help="the framework's name in cell ids (default: the stack's framework)")
    p.add_argument("--suite", help="the new suite's name (default: source-<ID>)")


def run(args) -> int:
    from reprokit import files, kitdata
    from reprokit.catalog import scaffold, suites

    src = args.source
    if not scaffold.ID_RE.fullmatch(src):
        raise UserError(f"source id {src!r} is not 3-12 lower-case letters or digits; choose one like 005")
    if src in suites.load_sources():
        raise UserError(f"source {src} exists in reprokit/data/sources.yaml; choose a new id "
                        "(`reproduce.py check-benchmark " + src + "` checks the existing one)")
    stacks = suites.load_stacks()
    if args.stack not in stacks:
        raise UserError(f"unknown stack {args.stack!r}; choose one of reprokit/data/stacks.yaml: "
                        + ", ".join(sorted(stacks)))
    framework = args.framework or str(stacks[args.stack].get("framework") or "")
    if not scaffold.FRAMEWORK_RE.fullmatch(framework):
        raise UserError(f"framework {framework!r} cannot name a workload module; give --framework, "
                        "e.g. torch")
    suite_name = args.suite or f"source-{src}"
    if not scaffold.SUITE_RE.fullmatch(suite_name):
        raise UserError(f"suite name {suite_name!r} is not lower-case letters, digits and '-' only; "
                        f"give --suite like source-{src}")
    title = args.title
    problem = scaffold.title_problem(title)
    if problem:
        raise UserError(f"--title {title!r} {problem}; give the title as one line of printable text")
    workload = scaffold.workload_name(src, framework)
    new = {
        kitdata.PACKAGED / "published" / f"{src}.yaml": scaffold.published(src, title, framework),
        kitdata.PACKAGED / "suites" / f"{suite_name}.yaml":
            scaffold.suite(src, suite_name, title, args.stack, framework),
        files.BENCH / "workloads" / f"{workload}.py":
            scaffold.workload((files.BENCH / "workloads" / "_template.py").read_text(), src, title),
    }
    for path in new:
        if path.exists():
            raise UserError(f"{path.relative_to(files.REPO)} exists; choose another id or --suite, "
                            "or remove it")
    appended = {
        kitdata.PACKAGED / "sources.yaml": scaffold.source_entry(src, title),
        kitdata.PACKAGED / "flops.yaml": scaffold.flops_model(src, framework),
        kitdata.PACKAGED / "claims.yaml": scaffold.claim_example(src, framework),
    }
    for path, text in appended.items():
        old = path.read_text()
        new[path] = old + ("" if old.endswith("\n") else "\n") + text
    _check_round_trip(new, src, title, suite_name, args.stack, framework)
    for path, text in new.items():
        files.write_text_atomic(path, text)
        print(f"wrote {path.relative_to(files.REPO)}")
    print(f"next: fill in the TODOs (docs/adding-a-benchmark.md), then `reproduce.py check-benchmark {src}` "
          f"and `reproduce.py run --suite {suite_name} --quick --runner local`")
    return 0


def _check_round_trip(new: dict, src: str, title: str, suite_name: str, stack: str, framework: str) -> None:
    """Each new YAML text loads, matches its schema and holds what was given; else a UserError, before
    anything is written."""
    from reprokit import kitdata, validate

    def load(path, schema):
        rel = path.relative_to(kitdata.PACKAGED).as_posix()
        try:
            doc = kitdata.parse(rel, new[path].encode(), f"reprokit/data/{rel}")
            validate.check(schema, doc, f"reprokit/data/{rel}")
        except UserError as e:
            raise UserError(f"new-benchmark refuses to write {rel}: it would not load back ({e}); "
                            "give a plainer --title") from e
        return doc

    published = load(kitdata.PACKAGED / "published" / f"{src}.yaml", "published")
    suite = load(kitdata.PACKAGED / "suites" / f"{suite_name}.yaml", "suite")
    sources = load(kitdata.PACKAGED / "sources.yaml", "sources")
    flops = load(kitdata.PACKAGED / "flops.yaml", "flops")
    load(kitdata.PACKAGED / "claims.yaml", "claims")
    group = (suite.get("groups") or [{}])[0]
    label = published.get("defaults", {}).get("provenance", {}).get("source_label")
    came_back = {
        "the published file's source": (published.get("source"), src),
        "the published file's title": (label, title),
        "the suite's name": (suite.get("name"), suite_name),
        "the suite's stack": (group.get("stack"), stack),
        "the suite's framework": (group.get("framework"), framework),
        "the source's title": ((sources.get("sources") or {}).get(src, {}).get("title"), title),
        "the FLOP model's source": ((flops.get("models") or {}).get(f"model-{src}", {}).get("source"), src),
    }
    for what, (got, want) in came_back.items():
        if got != want:
            raise UserError(f"new-benchmark refuses to write: {what} would read back as {got!r}, not "
                            f"{want!r}; give a plainer --title or id")
