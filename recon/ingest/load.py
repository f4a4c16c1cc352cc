"""Land every file of an input folder into DuckDB `raw` tables, or quarantine it with a reason.

Each input record ends in exactly one place: a raw table, `raw.quarantine` (with file, locator,
reason and the record itself), or is counted as `skipped` with a reason (watch BOOKMARKs, the
simulator's ground truth, config files). `raw.files` keeps the per-file accounting.
Reloading a file replaces its rows (idempotent); an unchanged file (same sha256) is skipped.

The readers: `reader.py` (Python, every format, the reference for routing and reasons),
`jsonl.py` (big JSON Lines files through DuckDB), `lists.py` (big Kubernetes Lists through DuckDB).
`recon.warehouse.load_folder` drives them.
"""

from __future__ import annotations

from .jsonl import (  # noqa: F401
    FAST_CHUNK,
    FAST_MIN_BYTES,
    LENIENT_RES,
    LENIENT_SQL,
    land_jsonl,
    row_group_parts,
)
from .lists import LIST_MIN_BYTES, land_list, prepare_list  # noqa: F401
from .lists import is_candidate as is_list_candidate  # noqa: F401
from .reader import (  # noqa: F401
    AMOUNT_KEYS,
    COMMON,
    TABLES,
    TS_CHECKED,
    TS_OPTIONAL,
    FileResult,
    arrow_bad,
    arrow_query,
    arrow_rows,
    read_file,
    sha256_of,
    ts_ok_sql,
)
