"""What `recon simulate` wrote into its folder, so that `--force` clears exactly that.

A simulation records every file it wrote, with its sha256, in `OUT/.recon-simulate.json` (a dot
file: the loader skips it). Clearing deletes those files only, and only when nothing else is in
the folder: a file the simulator did not write, or one changed since (a user's edit, a landed
export moved in), makes it refuse and delete nothing. A command never destroys data it did not
create, and a folder without the record cannot be told apart from a user's landing area.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

MANIFEST = ".recon-simulate.json"


def _sha256(p: Path) -> str:
    h = hashlib.sha256()
    with open(p, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def snapshot(out: Path) -> dict[str, int]:
    """Every file under `out` (relative path) and its mtime, before a simulation writes."""
    return {str(p.relative_to(out)): p.stat().st_mtime_ns
            for p in out.rglob("*") if p.is_file()} if out.is_dir() else {}


def write_manifest(out: Path, before: dict[str, int]) -> None:
    """Record the files written since `before` (new, or rewritten: another mtime)."""
    files = {}
    for p in sorted(out.rglob("*")):
        rel = str(p.relative_to(out))
        if p.is_file() and rel != MANIFEST and before.get(rel) != p.stat().st_mtime_ns:
            files[rel] = _sha256(p)
    (out / MANIFEST).write_text(json.dumps({"written_by": "recon simulate", "files": files},
                                           indent=1, sort_keys=True) + "\n", encoding="utf-8")


def is_empty(out: Path) -> bool:
    return not out.exists() or (out.is_dir() and not any(out.iterdir()))


def clear(out: Path) -> int:
    """Delete an earlier simulation's files from `out` (and the folders they leave empty);
    returns how many. Raises ValueError, deleting nothing, when `out` holds anything else."""
    record = out / MANIFEST
    if not record.is_file():
        raise ValueError(f"{out} is not empty and holds no record of a simulation ({MANIFEST}): "
                         "recon simulate deletes only files it wrote; nothing was deleted. "
                         "Choose an empty or new --out folder")
    try:
        files = json.loads(record.read_text(encoding="utf-8"))["files"]
    except (ValueError, KeyError, TypeError):
        raise ValueError(f"{record} is not a record recon simulate wrote; nothing was "
                         "deleted") from None
    foreign = [str(p.relative_to(out)) for p in sorted(out.rglob("*")) if p.is_file()
               and p != record and files.get(str(p.relative_to(out))) != _sha256(p)]
    if foreign:
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5
                                           else "")
        raise ValueError(f"{out} holds {len(foreign)} file(s) recon simulate did not write or "
                         f"that changed since it did: {shown}; nothing was deleted. Move them "
                         "away, or choose another --out folder")
    gone = 0
    for rel in files:
        p = out / rel
        if p.is_file():
            p.unlink()
            gone += 1
    record.unlink()
    for d in sorted((p for p in out.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
        if not any(d.iterdir()):
            d.rmdir()
    return gone
