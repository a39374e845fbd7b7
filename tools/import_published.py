"""Convert the reference published_numbers.csv (default: the project's copy in tests/data) into
reprokit/data/published/<source>.yaml.

Run once when the reference CSV changes:  python tools/import_published.py [CSV]
(the same as `python reproduce.py generate`, which also regenerates the Dockerfiles and compose files).
The mapping of each CSV row to a cell and a metric is reprokit/catalog/published_csv.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from reprokit import files, kitdata  # noqa: E402
from reprokit.catalog import published_csv  # noqa: E402

OUT = kitdata.PACKAGED / "published"


def main(csv_path: str) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, text in published_csv.expected_files(Path(csv_path)).items():
        files.write_text_atomic(OUT / name, text)
        print(f"{name[:-5]}: {text.count(chr(10) + '- id: ')} numbers")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else str(published_csv.DEFAULT_CSV))
