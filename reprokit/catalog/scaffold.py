"""The files of a new published source, to fill in: `reproduce.py new-benchmark ID`.

A source reusing a stack, a device and a data set the kit knows touches six files
(docs/adding-a-benchmark.md walks through them):

1. reprokit/data/published/<ID>.yaml   its published table (new; `defaults` holds what all rows share)
2. reprokit/data/sources.yaml          its entry: where the numbers come from, defects
3. reprokit/data/suites/<suite>.yaml   the cells that re-measure them (new)
4. reprokit/data/flops.yaml            the FLOP model that bounds them (plausibility)
5. reprokit/data/claims.yaml           its claims (orderings, speed-ups), commented out until filled
6. bench/workloads/s<ID>_<fw>.py       the workload, from bench/workloads/_template.py (new)

The texts are made here (pure); the command writes them, refusing an ID or suite that exists. What
is not known is written as "TODO: ..." so `check-benchmark` and the schema name it; nothing is
invented: the published table starts empty.

What the user gives (the id, title, suite, stack and framework) enters a YAML text only as a scalar
made by the YAML emitter (`scalar`), never pasted into the text; the identifiers are checked whole
(`fullmatch`: `$` would let a final newline through) and a title must be one line of printable text
(`title_problem`). The command then loads every text back and refuses what does not come back equal.
"""

from __future__ import annotations

import re
import unicodedata

# whole-string patterns: use them with fullmatch
ID_RE = re.compile(r"[0-9a-z]{3,12}")
FRAMEWORK_RE = re.compile(r"[a-z][a-z0-9_]{0,30}")
SUITE_RE = re.compile(r"[a-z0-9-]+")  # suite.schema.json's pattern
TITLE_MAX = 300


def title_problem(title: str) -> str | None:
    """Why `title` cannot be a source's title (one line of printable text), or None."""
    if not title.strip():
        return "is empty"
    if len(title) > TITLE_MAX:
        return f"is longer than {TITLE_MAX} characters"
    for c in title:
        if unicodedata.category(c)[0] in "CZ" and c != " ":  # controls, line/paragraph separators
            return f"holds the character U+{ord(c):04X} ({unicodedata.name(c, 'a control character')})"
    return None


def scalar(value: str) -> str:
    """`value` as one double-quoted YAML scalar, made by the YAML emitter (every special character
    escaped), for a place in a text that is otherwise the kit's own."""
    import yaml
    text = yaml.safe_dump(value, default_style='"', width=float("inf"), allow_unicode=True,
                          explicit_end=False).rstrip("\n")
    if "\n" in text:
        raise ValueError(f"{value!r} does not fit on one line of YAML")
    return text


def workload_name(source: str, framework: str) -> str:
    return f"s{source}_{framework}"


def published(source: str, title: str, framework: str) -> str:
    return f"""# Published numbers of source {source} ({title}), copied verbatim from the source
# (docs/adding-a-benchmark.md, step 1). Schema: reprokit/schemas/published.schema.json, checked with the
# `defaults` merged under every number. One entry per published figure:
#   - id: {source}-T1-1           # any id unique in the kit; table and row are a good choice
#     value: 0.51                 # the figure as printed
#     unit: ms                    # as printed (ms, s, words/s, ...)
#     metric: forward_time_per_example   # the metric of the cell that re-measures it
#     metric_as_published: "fwd (ms)"    # optional: the name as printed, where it differs
#     cell: {source}/{framework}/dense/n64     # the cell (`reproduce.py list --suite ...`)
#     provenance: {{row_label: "the row as printed"}}
#     workload: {{batch: 4, hidden: 64}}       # the published configuration
schema_version: 1
source: {scalar(source)}
imported_from: "TODO: where the numbers were read (paper, table, page or URL, commit)"
defaults:
  provenance:
    source_label: {scalar(title)}
    table: "TODO: Table N"
  workload: {{}}
  environment:
    # a GPU as published ("Tesla P100-PCIE-16GB", "2x Tesla P40"), known to reprokit/data/peaks.yaml; a
    # CPU as "none (<the CPU as published>)", known to cpus.yaml publication_cpus
    gpu: "TODO: the device as published"
    framework: {scalar(framework)}
    framework_version: "TODO: as published, or 'unstated'"
numbers: []
"""


def source_entry(source: str, title: str) -> str:
    return f"""  {scalar(source)}:
    title: {scalar(title)}
    repository: "TODO: owner/name of the code, or the paper's DOI"
    commit: "TODO: the commit the numbers came from, or 'unstated'"
    reference: "TODO: where the paper states its setup (section, page)"
    # stated_tolerance: {{value: 0.05, where: "TODO: only if the paper states its figures' spread"}}
    environment:
      host: "TODO: as published"
      timing: "TODO: what the timer covered, as published"
    defects: []
"""


def suite(source: str, suite_name: str, title: str, stack: str, framework: str) -> str:
    return f"""schema_version: 1
name: {scalar(suite_name)}
description: {scalar(f"Source {source}: {title}")}
sources: [{scalar(source)}]
defaults:
  budget: {{min_samples: 6, max_samples: 200, time_budget_s: 5, warmup: 1, rel_ci_half_width: 0.02}}
  quick_budget: {{min_samples: 6, max_samples: 20, time_budget_s: 0, warmup: 1}}
  timeout_s: 600
groups:
  # one group per published configuration family; {{name}} fields come from the group and its matrix
  - id: {scalar(source + "/{framework}/{variant}/n{n}")}
    source: {scalar(source)}
    stack: {scalar(stack)}
    framework: {scalar(framework)}
    workload: {scalar(workload_name(source, framework))}
    variant: dense
    metrics: [forward_time_per_example, train_time_per_example]
    params: {{batch: 4}}
    matrix: {{n: [32, 64]}}
"""


def flops_model(source: str, framework: str) -> str:
    return f"""  model-{source}:
    source: {scalar(source)}
    description: "TODO: the model of source {source} (this one is the template's dense layer y = W x)"
    cells: ['^{source}/']
    item: example
    item_plural: examples
    forward_flops_per_item: "2 * n * n"
    items_per_batch: "batch"
    phase_by_metric: {{forward_time_per_example: forward, train_time_per_example: train}}
    reference: "TODO: where the model's sizes come from"
    roofline:
      optional_flops_per_item: "0"
      no_input_grad_flops_per_item: "n * n"
      weights: "n * n"
      bytes_per_step:
        forward: "8 * weights + 16 * batch * n"
        train: "16 * weights + 24 * batch * n"
      notes: "TODO: what the bytes count (the template: weights, inputs, outputs as 8-byte floats)"
"""


def claim_example(source: str, framework: str) -> str:
    return f"""  # ---- {source}: its claims. Uncomment and fill in one entry per ordering or speed-up the
  # source states (kinds and fields: the comment at the top of this file; docs/adding-a-benchmark.md).
  # - id: c{source}-smaller-is-faster
  #   source: "{source}"
  #   kind: order
  #   origin: table
  #   metric: forward_time_per_example
  #   device: cpu
  #   text: "TODO: the sentence or table the claim rests on, verbatim"
  #   reference: "TODO: where it is"
  #   hardware: "TODO: where the source measured"
  #   order:
  #     - {source}/{framework}/dense/n32
  #     - {source}/{framework}/dense/n64
"""


def workload(template: str, source: str, title: str) -> str:
    """The template with its first docstring paragraph (what the template is) replaced; the title is
    escaped for the docstring (a backslash or a quote in it reads back as itself)."""
    rest = template[template.index("\n\n") + 2:]
    title = title.replace("\\", "\\\\").replace('"', '\\"')
    return (f'"""Source {source} ({title}).\nWritten from bench/workloads/_template.py: replace its model by '
            "the published one, in the published framework;\nkeep the shape.\n\n" + rest)
