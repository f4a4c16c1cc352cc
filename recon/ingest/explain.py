"""Why a file is none of the inputs, said with what would be accepted in its place."""

from __future__ import annotations

import csv
import re

from . import focus

YAML_LINE = re.compile(r"^(---|\.\.\.)?\s*$|^(- )?[A-Za-z_][\w./-]*:(\s|$)")
ACCEPTED = ("accepted: JSON or JSON Lines (Kubernetes objects, lists and watch events as "
            "kubectl -o json writes them; Runpod API responses; job records), Prometheus "
            "query_range JSON, or a FOCUS 1.2/1.3 CSV or Parquet file")


def unrecognised_text(text: str) -> str:
    """Why a text file is none of the inputs, and what would be accepted instead."""
    lines = [ln for ln in text.splitlines()[:200] if ln.strip()]
    head = [ln for ln in lines if not ln.lstrip().startswith("#")][:20]  # (YAML comments)
    if head and all(YAML_LINE.match(ln.strip()) or ln[:1] in " \t-" for ln in head) \
            and any(":" in ln for ln in head):
        return ("a YAML document (kubectl -o yaml?): YAML is not read; save it with -o json "
                "(kubectl get ... -o json, or --watch --output-watch-events -o json)")
    rows = list(csv.reader(lines[:5]))
    if len(rows) >= 2 and len(rows[0]) > 1 and all(len(r) == len(rows[0]) for r in rows):
        cols = {c.strip().lstrip("\ufeff") for c in rows[0]}
        lacks = [c for c in focus.REQUIRED if c not in cols]
        return (f"a CSV file, but not FOCUS cost-and-usage data: its header lacks the FOCUS "
                f"column(s) {', '.join(lacks)} (a FOCUS 1.2/1.3 export needs "
                f"{', '.join(focus.REQUIRED)})")
    return f"not JSON, JSON Lines or a recognised format ({ACCEPTED})"
