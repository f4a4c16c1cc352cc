"""Big JSON Lines files landed through DuckDB (`land_jsonl`); what it cannot vouch for goes to the
Python reader (`reader.py`) line by line, with the same file, line and reason. This module reads
a file as chunks of whole lines and lands them; `jsonl_sql.py` holds the SQL of each kind of
line."""

from __future__ import annotations

import gzip
import hashlib
import os
import queue
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa

from connectors.pod_secrets import MARKERS

from .guards import DEFAULT as DEFAULT_LIMITS
from .jsonl_sql import _fast_mode, _Mode, _modes
from .raw_tables import arrow_query
from .reader import FileResult, _cluster_of, _jsonl_line

# ------------------------------------------------------------------ fast path: JSON Lines in DuckDB
#
# A JSON Lines file whose first line is a watch event, a job record or a workers snapshot is cut
# into chunks of whole lines; each chunk goes to DuckDB zero-copy (Arrow: one row per line with
# its line number), is parsed there once (`json_extract` of a list of paths, in parallel) and the
# lines that are plainly of the file's kind and plainly valid are inserted straight into the raw
# table by one INSERT. Every other line -- invalid JSON, another kind, a missing field, a
# non-string id, a BOOKMARK, a value DuckDB's parser accepts but orjson does not (NaN, Infinity,
# trailing commas, 1e999) or reads differently (integers beyond 64 bits) -- goes through the
# Python reader (reader.py), one line at a time, so it is routed, skipped or quarantined with exactly the
# same file, line and reason as before (tests/test_bench_harness.py checks both paths agree on
# mutated input). A chunk that is not valid UTF-8 goes through the Python path whole. The stored
# document is DuckDB's minified re-serialisation, as the Python path's (`json(doc)` on insert).
# Known difference: an object with duplicate keys keeps the first value here and the last one in
# orjson (RFC 8259 leaves it undefined).

# DuckDB buffers an INSERT's row groups in memory up to write_buffer_row_group_memory_limit
# (default 20 % of memory_limit per thread: 1.2 GiB without a memory_limit) and leaves them for
# the commit to write. Landing lowers it, so that landed rows are compressed and written as they
# come: uncapped, the target day's landing peaks at 1.4 GB instead of 2.2 GB and its commit takes
# 0.4 s instead of 1.3 s, for ~0.5 s more CPU while landing. Under a 1 GB memory_limit
# DuckDB's default is already 64 MB and this changes nothing.
WRITE_BUFFER = 128 << 20
FAST_CHUNK = 64 << 20  # bytes of whole lines per DuckDB batch: bounds memory on big files
FAST_MIN_BYTES = 0  # smaller files take the Python path (0: every file; tests use small ones)

_UNITS = {"bytes": 1, "kb": 1000, "kib": 1024, "mb": 1000**2, "mib": 1024**2, "gb": 1000**3,
          "gib": 1024**3, "tb": 1000**4, "tib": 1024**4}


@contextmanager
def small_write_buffer(con):
    """Lower DuckDB's write_buffer_row_group_memory_limit to WRITE_BUFFER (never raise it) for
    the block; restore it after (`reset` when it was the default, whose text is rounded)."""
    name = "write_buffer_row_group_memory_limit"
    old = con.execute(f"select current_setting('{name}')").fetchall()[0][0]
    num, _, unit = str(old).partition(" ")
    try:
        lower = float(num) * _UNITS[unit.strip().lower() or "bytes"] > WRITE_BUFFER
    except (ValueError, KeyError):
        lower = False
    if lower:
        con.execute(f"set {name} = '{WRITE_BUFFER}B'")
    try:
        yield
    finally:
        if lower:
            con.execute(f"reset {name}")
            if con.execute(f"select current_setting('{name}')").fetchall()[0][0] != old:
                con.execute(f"set {name} = '{old}'")


def _open_stream(path: Path):
    with open(path, "rb") as f:
        magic = f.read(2)
    return gzip.open(path, "rb") if magic == b"\x1f\x8b" else open(path, "rb")


class _Chunk:
    """Whole lines of a file, indexed: `data` (a view of a reading buffer), line `starts`/`ends`
    (`ends` include the newline), `n` lines, `final` (the file's last chunk), `trailing` (its last
    line has no newline), `table` (Arrow `line_no, line` over `data`, zero-copy; None: the chunk
    is not UTF-8)."""

    __slots__ = ("buf", "data", "ends", "final", "n", "starts", "table", "trailing")


_SCAN_BLOCK = 1 << 20


def _line_ends(data):
    """Offsets just past each newline of `data` (a NumPy array). A MiB at a time: the compare's
    mask stays in cache instead of a fresh 64 MiB array per chunk (13.5 against 19.6-30 ms for
    a 64 MiB chunk here; the chunk's parse waits for it)."""
    import numpy as np

    arr = np.frombuffer(data, dtype=np.uint8)
    parts = [np.flatnonzero(arr[i:i + _SCAN_BLOCK] == 10) + (i + 1)
             for i in range(0, len(arr), _SCAN_BLOCK)]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.intp)


def _index(buf: bytearray, cut: int, final: bool, no0: int, ends=None) -> _Chunk:
    import numpy as np

    c = _Chunk()
    c.buf, c.data, c.final = buf, memoryview(buf)[:cut], final
    arr = np.frombuffer(c.data, dtype=np.uint8)
    if ends is None:
        ends = _line_ends(c.data)
    c.trailing = bool(len(arr)) and arr[-1] != 10  # a last line without its newline
    if c.trailing:
        ends = np.append(ends, len(arr))
    c.ends, c.starts, c.n = ends, np.concatenate(([0], ends[:-1])), len(ends)
    utf8 = int(arr.max(initial=0)) < 128
    if not utf8:
        try:
            str(c.data, "utf-8")
            utf8 = True
        except UnicodeDecodeError:
            pass
    c.table = None
    if utf8:
        c.table = lines_table(c.data, np.concatenate(([0], ends)),
                              np.arange(no0 + 1, no0 + c.n + 1, dtype=np.int64))
    return c


def lines_table(data, offsets, line_no, split: bool = False) -> pa.Table:
    """Arrow `line_no, line` over `data` (zero-copy): line k is data[offsets[k]:offsets[k+1]],
    numbered line_no[k]; `split`: in several batches however many lines (see below).
    (pa.array/pa.table would import pandas: 0.2 s for nothing.)"""
    import numpy as np

    n = len(line_no)
    whole = pa.Table.from_arrays([
        pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(line_no)]),
        pa.LargeStringArray.from_buffers(n, pa.py_buffer(np.asarray(offsets, dtype=np.int64)),
                                         pa.py_buffer(data))],
        names=["line_no", "line"])
    # DuckDB parses one Arrow batch on one thread per row group's worth of rows (122,880): a
    # chunk of fewer than two row groups of lines as one batch is parsed by one thread, as
    # several batches (zero-copy slices) by both cores. Few, big lines (35k two-kilobyte pod
    # versions in 64 MiB): the 500-node day's pod watch files land 1.4x faster split. Short lines in small files (a collector's hourly files: the target day's jobs cut
    # into 24 files of 84k lines) land 1.0-1.8 s faster per 2 M jobs split; a
    # 64 MiB chunk of jobs (two whole row groups of lines) DuckDB already splits, and slicing
    # it costs more (measured). A big List's items
    # (Kubernetes objects: the target day's 64 MiB chunks of events.json hold 85k of ~790
    # bytes) are split however many: they land in 0.60 s instead of 0.83 s, at the same CPU
    # (the jobs and workers files, ~240 and ~560 bytes a line, land slower split; bench/README.md).
    return whole if n >= SPLIT_BELOW and not split else pa.Table.from_batches(
        whole.to_batches(max_chunksize=max(MIN_BATCH_ROWS, -(-n // BATCHES))))


# DuckDB's rows per row group. An INSERT of fewer rows appends to the table's last, partly
# filled row group; one of more writes new row groups and leaves its last one partly filled,
# and the commit's checkpoint then merges such row groups by rewriting them (vacuum): landing
# the target day's 2 M jobs in 64 MiB chunks (~283k lines: 2 full row groups and a partial
# one each) left the commit 0.8 s of recompressing job documents. A chunk of more lines than
# a row group is therefore cut after a whole number of row groups of lines (the rest, fewer
# lines than the part kept, carried to the next chunk); a line that goes to the Python path
# leaves one row group a row short, which the checkpoint does not merge.
ROW_GROUP = 122_880
SPLIT_BELOW = 2 * ROW_GROUP  # lines in a chunk: fewer, and the chunk is cut into batches (above)


def row_group_parts(n: int) -> list[tuple[int, int]]:
    """[start, stop) of the rows 0..n to insert apart: first the rest beyond whole row groups
    (fewer rows than a row group: appended to the table's last, partly filled row group), then
    the whole row groups' worth in one INSERT (new, full row groups). One INSERT of them all
    would leave both that last row group and its own last one partly filled (see ROW_GROUP)."""
    rest = n % ROW_GROUP
    return [(a, b) for a, b in ((0, rest), (rest, n)) if b > a]


# Reading buffers (RECON_READ_BUFFERS). 2 = read ahead: a thread reads and indexes the next
# chunk while DuckDB parses this one (measured when it also hashed there: the target day landed
# ~0.5-0.8 s faster and peaked ~300 MB higher, 1,880-1,940 MiB); 1 = read, then parse, with the
# hash beside the parse (bench/README.md).
BUFFERS = int(os.environ.get("RECON_READ_BUFFERS", "1"))
BATCHES = 8
MIN_BATCH_ROWS = 1024


def _buffer_size(path: Path) -> int:
    """Bytes of a reading buffer for `path`: FAST_CHUNK, or less for a smaller file.

    A fresh buffer is zeroed whole, and landing makes one per file: 64 MiB cost ~40 ms each,
    so 55 hourly files of 380 KB landed in 3.9 s against 0.25 s for the same lines in one
    file (bench/README.md). A file that grows while it is read, or a gzip file
    that inflates more than guessed, still lands whole: a full buffer yields its whole lines
    as a chunk and is read on (or replaced by a bigger one for a longer line: _produce)."""
    size = path.stat().st_size
    if _is_gzip(path):  # its decompressed size is not known ahead: JSON Lines deflate ~5-15x
        return min(FAST_CHUNK, max(GZIP_MIN_BUFFER, 16 * size))
    return max(1, min(FAST_CHUNK, size + 1))


GZIP_MIN_BUFFER = 1 << 20


def _produce(path: Path, next_buffer):
    """Yield the file's _Chunks: fill the buffer `next_buffer()` gives with whole lines (a
    partial last line is carried over to the next one), index them. The chunks' `data`, in
    order, are the file's bytes (decompressed), each byte once."""
    carry = b""  # the partial line after the last newline of the previous buffer
    no0 = 0  # lines before this chunk
    with _open_stream(path) as f:
        while True:
            buf = next_buffer()
            filled = len(carry)
            if len(buf) < 2 * filled:
                buf = bytearray(2 * filled)
            buf[:filled] = carry
            while True:
                if filled == len(buf):  # one line longer than the buffer: a bigger one
                    bigger = bytearray(2 * len(buf))
                    bigger[:filled] = buf
                    buf = bigger
                view = memoryview(buf)
                got = f.readinto(view[filled:])
                view.release()
                end = filled + got
                if not got:
                    if filled:
                        yield _index(buf, filled, True, no0)
                    return
                cut = buf.rfind(b"\n", filled, end) + 1
                if cut:
                    break
                filled = end  # no newline yet: read on
            ends = _line_ends(memoryview(buf)[:cut])
            if len(ends) >= ROW_GROUP:  # whole row groups of lines (below); the rest carried
                ends = ends[:len(ends) // ROW_GROUP * ROW_GROUP]
                cut = int(ends[-1])
            carry = bytes(buf[cut:end])
            chunk = _index(buf, cut, False, no0, ends)
            no0 += chunk.n
            yield chunk


def _chunks(path: Path, hasher=None):
    """Yield the file's _Chunks, FAST_CHUNK bytes of whole lines at a time; a chunk's views are
    valid until the next chunk is asked for. `hasher` (hashlib) gets the bytes of every chunk
    (the file's, decompressed: pass None for a gzip file, which its caller hashes).

    A reader thread fills BUFFERS buffers in turn (reused: no fresh 64 MiB allocation, page
    faults and copies per chunk); with two, it reads and indexes the next chunk while DuckDB
    parses this one. A chunk is hashed in a second thread while the consumer has it (hashlib
    lets go of the GIL; both only read the buffer, which is reused once both are done), so
    SHA-256 (~40 ms per 64 MiB chunk, ~1 s of the 500-node day) does not stop the parse. An
    error in the reader is raised here; closing the generator early stops the reader."""
    free: queue.Queue = queue.Queue()
    for _ in range(BUFFERS):
        free.put(bytearray(_buffer_size(path)))
    ready: queue.Queue = queue.Queue()  # at most BUFFERS chunks: one per buffer
    stop = threading.Event()

    def next_buffer():
        while not stop.is_set():
            try:
                return free.get(timeout=0.05)
            except queue.Empty:
                continue
        raise _Stopped

    def read():
        try:
            for c in _produce(path, next_buffer):
                ready.put(c)
            ready.put(None)
        except _Stopped:
            pass
        except BaseException as e:  # noqa: BLE001 - re-raised by the consumer
            ready.put(e)

    reader = threading.Thread(target=read, name=f"recon-read {path.name}", daemon=True)
    reader.start()
    hashing = None if hasher is None else ThreadPoolExecutor(1, f"recon-hash {path.name}")
    try:
        while True:
            c = ready.get()
            if c is None:
                return
            if isinstance(c, BaseException):
                raise c
            hashed = None if hashing is None else hashing.submit(hasher.update, c.data)
            try:
                yield c
            finally:
                if hashed is not None:
                    hashed.result()  # in file order: one thread, one chunk at a time
            c.table = None
            free.put(c.buf)  # the consumer and the hash are done with this chunk's buffer
    finally:
        stop.set()
        reader.join()
        if hashing is not None:
            hashing.shutdown()


class _Stopped(Exception):
    """The consumer of _chunks went away: the reader thread ends."""


def land_jsonl(con, path: Path, display: str, limits=None) -> FileResult | None:
    """Land a big JSON Lines file through DuckDB (see above); None: use read_file instead.

    Fast rows are inserted into raw.* here (inside the caller's transaction); lines left to the
    Python path end in the returned FileResult's rows/bad, like read_file's.
    """
    if path.stat().st_size < FAST_MIN_BYTES:
        return None
    with _open_stream(path) as f:
        head = f.read(1 << 20)
        mode_name = _fast_mode(head, bool(f.read(1)))
    if mode_name is None:
        return None
    limits = limits or DEFAULT_LIMITS
    modes = [_modes(_cluster_of(display, None), secrets, limits)[mode_name]
             for secrets in (False, True)]
    insert = [m.insert_sql(display) for m in modes]
    res = FileResult(path=display, kind="jsonl", limits=limits)
    hasher = None if _is_gzip(path) else hashlib.sha256()  # a gzip file: its caller hashes it
    with small_write_buffer(con):
        _land_chunks(con, path, modes, insert, res, hasher)
    if hasher is not None:
        res.sha256 = hasher.hexdigest()  # read once: landing and hashing share the pass
    return res


def _land_chunks(con, path: Path, modes: list[_Mode], inserts: list[str], res: FileResult,
                 hasher) -> None:
    """`modes`, `inserts`: without and with the secrets test (SECRETS_SQL), per chunk."""
    no0 = 0  # line number of the chunk's first line, minus one
    for c in _chunks(path, hasher):
        n = c.n
        if c.table is not None:
            marked = int(marked_bytes(c.buf, len(c.data)))
            mode, insert = modes[marked], inserts[marked]
            def chunk(sql: str, table=c.table):
                return arrow_query(con, "_recon_chunk", table, sql)

            if mode.items:
                record_no = chunk(insert).fetchnumpy()["record_no"]
                rows, lines = len(record_no), int((record_no == 0).sum())
            else:
                rows = lines = chunk(insert).fetchall()[0][0]
            first = [] if mode.python_first is None else [r[0] for r in chunk(
                f"select line_no from _recon_chunk where {mode.python_first} "
                f"order by line_no").fetchall()]
            if lines + len(first) == n:  # every other line landed: the usual case
                py_lines = [k - no0 - 1 for k in first]
            else:
                py_lines = [r[0] - no0 - 1 for r in chunk(mode.python_lines_sql()).fetchall()]
            res.records_in += rows
            res.loaded += rows
        else:
            py_lines = range(n)
        for k in py_lines:
            raw = bytes(c.data[c.starts[k]:c.ends[k]])
            if raw.endswith(b"\n"):
                raw = raw[:-1]
            _jsonl_line(res, no0 + k + 1, raw, c.final and k == n - 1 and c.trailing)
        no0 += n


def marked_bytes(buf: bytearray, end: int) -> bool:
    """Does buf[:end] hold a marker of a possible secret (pod_secrets.MARKERS) anywhere?"""
    return any(buf.find(m, 0, end) >= 0 for m in MARKERS)


def _is_gzip(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == b"\x1f\x8b"
