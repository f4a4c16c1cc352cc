"""Which landed file a file in the landing folder is, by its content and its place in the
folder, not only its absolute path.

A byte-identical copy of a landed file (a re-sync that kept the old name too, a file copied
for safekeeping) would land every record twice: the same DUPLICATE_BILLING finding twice, the
findings' uniqueness check failed and nothing was published. It is recorded in raw.files as a
`duplicate` (its records counted as skipped, the original named), never loaded. A landing
folder moved elsewhere would land every file again under its new absolute path: a file whose
path relative to the landing root is that of a landed file that is gone from its old place,
with the same size and mtime or the same sha256, is that landed file.

Content is compared within a `cluster=<c>` folder only: the same KEDA objects or the same
List of two clusters (one Helm chart deployed in each) are byte-identical files whose rows
differ by the cluster their folder gives them, so neither is a copy of the other.
"""

from __future__ import annotations

import os
from pathlib import Path

from .reader import folder_cluster

DUPLICATE = "duplicate"


def _key(digest: str | None, name: str) -> tuple[str | None, str | None]:
    """A content's identity: its sha256 within the `cluster=` folder of the file's name."""
    return digest, folder_cluster(name)


class LandedFiles:
    """What `load_folder` knows of the landed files, by content and by relative path.

    `known`: raw.files joined with raw.file_stats by source_file: (sha256, kind, records_in,
    loaded, quarantined, skipped, bytes, mtime_ns, stat sha256, rel_path)."""

    def __init__(self, known: dict):
        self.known = known
        # the landed file holding each content (a duplicate points at one, it holds none)
        self.by_digest = {_key(v[0], k): k for k, v in sorted(known.items()) if v[1] != DUPLICATE}
        self.sizes = {v[6] for k, v in known.items() if v[1] != DUPLICATE and v[6] is not None}
        self.records_in = {k: v[2] for k, v in known.items()}
        self._gone_by_rel = None
        self._claimed: set[str] = set()

    def still_valid(self, old, display: str) -> bool:
        """A recorded duplicate stands while the content it duplicates is landed."""
        return old[1] != DUPLICATE or _key(old[0], display) in self.by_digest

    def moved(self, rel: str, size: int, mtime: int, p: Path, hash_file) -> tuple[str, str] | None:
        """(source_file, sha256) of the landed file `p` is, moved with its landing folder: the
        same path relative to the root, gone from where it was landed, and the same size and
        mtime (a move keeps them) or else the same sha256 (a copy that did not)."""
        if self._gone_by_rel is None:
            self._gone_by_rel = {}
            for src, v in sorted(self.known.items()):
                # a file named by its object's URL (recon/ingest/mirror.py) is not a local
                # path: whether it is gone is the mirror's to say, and it never moves
                if v[9] is not None and "://" not in src and not os.path.exists(src):
                    self._gone_by_rel.setdefault(v[9], src)
        src = self._gone_by_rel.get(rel)
        if src is None or src in self._claimed:
            return None
        v = self.known[src]
        if (v[6], v[7]) == (size, mtime) and v[8] == v[0]:
            digest = v[0]
        elif v[6] == size and (digest := hash_file(p)) == v[0]:
            pass
        else:
            return None
        self._claimed.add(src)
        return src, digest

    def may_be_a_copy(self, size: int) -> bool:
        """Is a landed file of this size? (Only then is a new file hashed before it is read.)"""
        return size in self.sizes

    def copy_of(self, digest: str | None, display: str) -> str | None:
        """The other landed file with this content, if any."""
        src = self.by_digest.get(_key(digest, display)) if digest else None
        return src if src is not None and src != display else None

    def landed(self, display: str, digest: str, size: int, records_in: int) -> None:
        self.by_digest.setdefault(_key(digest, display), display)
        self.sizes.add(size)
        self.records_in[display] = records_in
