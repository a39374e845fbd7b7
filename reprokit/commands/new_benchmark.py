"""`reproduce.py new-benchmark ID --title T --stack S [--framework F] [--suite NAME]`: scaffold a new
published source (reprokit/catalog/scaffold.py; docs/adding-a-benchmark.md walks through the files).

Writes six files, each with "TODO: ..." where the source's facts go, and names them; refuses (exit 2)
an ID, suite or workload that exists, or a stack the kit lacks. Nothing is written unless all six can be.
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
    if not scaffold.ID_RE.match(src):
        raise UserError(f"source id {src!r} is not 3-12 lower-case letters or digits; choose one like 005")
    if src in suites.load_sources():
        raise UserError(f"source {src} exists in reprokit/data/sources.yaml; choose a new id "
                        "(`reproduce.py check-benchmark " + src + "` checks the existing one)")
    stacks = suites.load_stacks()
    if args.stack not in stacks:
        raise UserError(f"unknown stack {args.stack!r}; choose one of reprokit/data/stacks.yaml: "
                        + ", ".join(sorted(stacks)))
    framework = args.framework or str(stacks[args.stack].get("framework") or "")
    if not scaffold.FRAMEWORK_RE.match(framework):
        raise UserError(f"framework {framework!r} cannot name a workload module; give --framework, "
                        "e.g. torch")
    suite_name = args.suite or f"source-{src}"
    if not scaffold.SUITE_RE.match(suite_name):
        raise UserError(f"suite name {suite_name!r}: lower-case letters, digits and '-' only")
    title = args.title.replace('"', "'")
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
    for path, text in new.items():
        files.write_text_atomic(path, text)
        print(f"wrote {path.relative_to(files.REPO)}")
    print(f"next: fill in the TODOs (docs/adding-a-benchmark.md), then `reproduce.py check-benchmark {src}` "
          f"and `reproduce.py run --suite {suite_name} --quick --runner local`")
    return 0
