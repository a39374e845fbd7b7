"""Run one fuzz target (tests/fuzz/targets.py) under atheris, coverage-guided (libFuzzer).

    python tests/fuzz/run_fuzz.py TARGET WORK [libFuzzer options ...] [CORPUS_DIR ...]

WORK is a scratch directory (the target's copies; WORK/shared holds the seed crate, made once).
Every CORPUS_DIR that is empty gets the target's seeds first. E.g. 30 s of the cell reader:

    python tests/fuzz/run_fuzz.py cell_json /tmp/fz -max_total_time=30 -dict=tests/fuzz/json.dict \
        /tmp/fz/corpus

A finding (any exception but the kit's UserError) ends the run with libFuzzer's report, a traceback
and the input written to crash-<sha1> (-artifact_prefix=DIR/ to choose where); replay it with
`python tests/fuzz/run_fuzz.py TARGET WORK crash-<sha1>`. Store it under tests/fuzz/findings/TARGET/
with the fix: tests/core/test_fuzz.py replays every stored finding.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import atheris

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE))

# instrument the kit and the parsers it hands the input to (coverage feedback); jsonschema and PyYAML's
# constructors are left out: instrumented, they make every input several times slower
with atheris.instrument_imports(include=["reprokit", "tarfile", "zipfile", "json"]):
    import targets


def main(argv: list[str]) -> None:
    name, work = argv[1], Path(argv[2])
    shared = work / "shared"
    shared.mkdir(parents=True, exist_ok=True)
    target = targets.TARGETS[name](work / name, shared)
    for arg in argv[3:]:
        d = Path(arg)
        if not arg.startswith("-") and d.is_dir() and not any(d.iterdir()):
            for seed in target.seeds():
                (d / hashlib.sha1(seed).hexdigest()).write_bytes(seed)
    atheris.Setup([argv[0], *argv[3:]], target.one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
