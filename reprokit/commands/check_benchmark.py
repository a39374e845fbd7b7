"""`reproduce.py check-benchmark ID`: is source ID wired in completely? (reprokit/analysis/benchmark_lint.py)

Prints one line per problem (what is wrong and the fix), then the notes grouped by their fix (allowed,
but said). Exit status 0 when there is no problem, 2 when there is one (the source's data needs
fixing) or the source is unknown.
"""

from __future__ import annotations

from reprokit.errors import UserError


def add_arguments(p) -> None:
    p.add_argument("source", help="the source's id, as in reprokit/data/sources.yaml (e.g. 004)")
    p.add_argument("--notes", action="store_true", help="list every note, not one line per kind")


def run(args) -> int:
    from reprokit.analysis import benchmark_lint
    from reprokit.catalog import suites

    if args.source not in suites.load_sources():
        raise UserError(f"source {args.source!r} is not in reprokit/data/sources.yaml; `reproduce.py "
                        "new-benchmark` writes an entry to fill in")
    found = benchmark_lint.lint(args.source)
    problems = [f for f in found if f.kind == benchmark_lint.PROBLEM]
    notes = [f for f in found if f.kind == benchmark_lint.NOTE]
    for f in problems:
        print(f.line())
    if args.notes:
        for f in notes:
            print(f.line())
    else:
        by_fix: dict[str, list] = {}
        for f in notes:
            by_fix.setdefault(f.fix, []).append(f)
        for fix, group in by_fix.items():
            more = f" (and {len(group) - 1} like it; --notes lists them)" if len(group) > 1 else ""
            print(f"note: {group[0].what}{more} (fix: {fix})")
    print(f"source {args.source}: {len(problems)} problem(s), {len(notes)} note(s)"
          + ("" if problems else "; wired in completely"))
    return 2 if problems else 0
