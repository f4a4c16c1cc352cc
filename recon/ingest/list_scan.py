r"""Where the items of a big JSON List document are, found in one streaming pass.

`kubectl get events -A -o json` writes one JSON object, `{"apiVersion": "v1", "items": [...],
"kind": "List", "metadata": {...}}`, of 100 MB to 1 GB. `scan_list` reads such a file once, in
chunks, and returns the byte range of each element of the top-level `items` array, the document
without the array's content (the "skeleton"), the file's sha256 and its size, with memory of
O(chunk + 16 bytes an item + skeleton). It returns None for anything that is not plainly one
object with one literal `"items"` key whose value is an array: None is always safe (the caller
reads the file with its exact, slower reader), wrong ranges never are.

It does not check the grammar inside an element (the caller parses every element with a strict
parser; `[-]` gives the range of `-`); everything else it does check: with the skeleton valid
JSON (checked here with orjson) and every element valid JSON (the caller), the document is
valid JSON and its items are exactly the elements. So between two elements there is whitespace
and exactly one comma, nothing else, and the file is valid UTF-8.

How (per chunk, vectorised with numpy; Python loops only over chunks and top-level arrays):

1. Event bytes: the positions of the only bytes that change the lexical state, `"` `\` `{` `}`
   `[` `]` (`event_positions`, in cache-sized blocks). Commas and colons are not events: only
   those between the elements matter, and they lie in the short gaps between them (5.).
2. Escapes. A `"` is escaped (text inside a string) iff the run of backslashes right before it
   has odd length: `\\` pairs cancel, so `\\"` ends a string and `\\\"` does not. Runs come from
   the backslash positions (consecutive positions = one run; a run may continue from the
   previous chunk, whose trailing run parity is carried); escaped quotes are dropped.
3. Strings by parity. Outside a string every `"` opens one and inside one every unescaped `"`
   closes it, so a byte is in a string iff an odd number of unescaped quotes precede it (plus
   the state carried from the previous chunk). The k-th non-quote event, at event index i, has
   i - k quotes before it: no prefix sum over the quotes is needed. Brackets in strings are
   text; a backslash outside strings is not JSON (None).
4. Depth. Over the brackets outside strings, depth = carried depth + cumulative sum of +1/-1.
   A `]` closing a `{` (or `}` a `[`) is caught with a bit stack in one integer: opening a
   curly brace at stack level L adds 2**L, closing one subtracts it; after a matching close
   bit L is clear again, after the first mismatched one it is set (nesting deeper than
   MAX_DEPTH: None). Only the few brackets at depth <= 2 go on to the next step.
5. Items. The items array is the first `[` at depth 1 -> 2 whose two preceding events are the
   quotes of a string `"items"` that opens outside strings, then whitespace, `:`, whitespace.
   Inside it, depth-2 brackets give the container elements; the gaps between them (after `[`,
   after an element's closing bracket, up to the next bracket) are read byte by byte (they are
   whitespace and a comma when the items are objects): quotes in a gap delimit string
   elements, other non-whitespace runs are scalar elements, commas are separators. The
   resulting stream must read `[ elem (, elem)* ]` (or `[ ]`), elem = a bracket pair, a string
   or one scalar token.
6. At the end: the skeleton must parse (orjson) to an object whose "items" is [], with exactly
   one top-level key reading "items" (json with object_pairs_hook: escaped spellings count).

A chunk that ends in a gap between elements is cut after the gap's last comma (or at the gap's
start) and the rest is read again with the next chunk (the carry: at most MAX_CARRY bytes; a
larger string or scalar element, or more whitespace between two elements, gives None).

The vectorised steps over a chunk's bytes are in `list_events`; the items array's stream (5.) is
in `list_items`.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import os
from dataclasses import dataclass

import numpy as np
import orjson

from .list_events import (
    BS,
    LCURLY,
    LSQUARE,
    WS,
    Q,
    escaped_quotes,
    event_positions,
)
from .list_items import _ItemsStream, _NotPlain

MAX_SKELETON = 16 << 20  # the document without its items: bigger is not a List we expect
MAX_CARRY = 4 << 20  # bytes of one gap between elements read again with the next chunk
MAX_DEPTH = 60  # the bracket-matching bit stack is an int64
_MAX_KEY_GAP = 1 << 20  # at most this much whitespace around the `:` of `"items": [`

BEFORE, IN, AFTER = range(3)  # where the scan is with respect to the items array


@dataclass
class ListLayout:
    items: np.ndarray  # int64 (n, 2): [start, end) in the file of each element of "items"
    skeleton: bytes  # the document with the items array emptied: ...[ + ]...
    sha256: str  # of the whole file
    size: int  # of the whole file, bytes


def scan_list(path, chunk_bytes: int = 64 << 20) -> ListLayout | None:
    """Scan the JSON file at `path` for the elements of its top-level "items" array, reading it
    once, `chunk_bytes` at a time. None: not plainly `{..., "items": [...], ...}` (see module
    doc); the caller then reads the file another way. OSError propagates."""
    if chunk_bytes < 1:
        raise ValueError("chunk_bytes must be positive")
    with open(path, "rb", buffering=0) as f:
        try:
            return _Scan(chunk_bytes).run(f)
        except _NotPlain:
            return None


class _Scan(_ItemsStream):
    """One pass over a file: steps 1 to 4 and 6 of the module doc; step 5's stream of the items
    array is `list_items._ItemsStream`."""

    def __init__(self, chunk_bytes: int):
        self.chunk = chunk_bytes
        self.hasher = hashlib.sha256()
        self.utf8 = codecs.getincrementaldecoder("utf-8")()
        # lexical state at the start of the next buffer
        self.in_str = 0  # inside a string
        self.bs_odd = 0  # after an odd run of backslashes
        self.depth = 0
        self.stack = 0  # bit L: the bracket open at stack level L is a curly brace
        self.top_opened = False  # the top-level `{` was seen
        self.prev_events: list[tuple[int, int, int]] = []  # (pos, byte, in_str), latest first
        # the items array
        self.phase = BEFORE
        self.gap_at_start = False  # IN: the next buffer starts in a gap between elements
        self.pending: tuple[np.ndarray, np.ndarray] | None = None  # < 3 events of the stream
        self.n_items = 0
        self.item_parts: list[np.ndarray] = []
        self.skeleton = bytearray()

    # ------------------------------------------------------------------ reading
    def run(self, f) -> ListLayout:
        # no bigger buffer than the file needs (it is read to its end whatever its size says)
        chunk = max(1, min(self.chunk, os.fstat(f.fileno()).st_size + 1))
        buf = bytearray(0)
        carry = b""
        read = 0  # bytes read so far
        while True:
            k = len(carry)
            if len(buf) < k + chunk:  # (with room for a short carry next time)
                buf = bytearray(k + chunk + min(chunk, 1 << 16))
            mv = memoryview(buf)
            mv[:k] = carry
            got = 0
            while got < chunk:
                r = f.readinto(mv[k + got:k + chunk])
                if not r:
                    break
                got += r
            if got == 0:
                mv.release()
                break
            new = mv[k:k + got]
            self.hasher.update(new)
            new.release()
            n = k + got
            self._check_utf8(buf, k, n)
            base = read - k  # file offset of buf[0]
            read += got
            cut = self._buffer(buf, n, base)  # buf[cut:n] is read again with the next chunk
            carry = bytes(mv[cut:n])
            mv.release()
            if len(carry) > MAX_CARRY:
                raise _NotPlain
        return self._finish(read, carry)

    def _check_utf8(self, buf: bytearray, k: int, n: int) -> None:
        """Is buf[k:n] (the new bytes) valid UTF-8, after what came before? Only the 64 KiB
        blocks with a non-ASCII byte are decoded (a sequence split between blocks has its
        continuation bytes, non-ASCII too, in the next block; one split between chunks is kept
        by the incremental decoder)."""
        if not self.utf8.getstate()[0] and buf.isascii():
            return  # the whole buffer is ASCII, so the new part is
        a = np.frombuffer(buf, np.uint8, count=n)[k:]
        blk = 1 << 16
        full = len(a) // blk
        flags = np.zeros(-(-len(a) // blk), bool)
        if full:
            flags[:full] = a[:full * blk].reshape(full, blk).max(axis=1) >= 0x80
        if len(a) > full * blk:
            flags[full] = a[full * blk:].max() >= 0x80
        if self.utf8.getstate()[0]:
            flags[0] = True  # the previous chunk ended inside a sequence
        at = np.flatnonzero(flags)
        if not len(at):
            return
        brk = np.flatnonzero(np.diff(at) != 1) + 1
        mv = memoryview(buf)
        try:
            for first, last in zip(at[np.concatenate(([0], brk))],
                                   at[np.concatenate((brk - 1, [len(at) - 1]))]):
                lo, hi = k + int(first) * blk, min(n, k + (int(last) + 1) * blk)
                for s in range(lo, hi, 1 << 20):  # the decoded text (discarded) stays small
                    self.utf8.decode(mv[s:min(hi, s + (1 << 20))])
                if hi < n and self.utf8.getstate()[0]:
                    raise _NotPlain  # a sequence cut short by an ASCII byte
        except UnicodeDecodeError:
            raise _NotPlain from None
        finally:
            mv.release()

    def _finish(self, size: int, carry: bytes) -> ListLayout:
        if (self.phase != AFTER or carry or self.in_str or self.depth != 0
                or not self.top_opened):
            raise _NotPlain
        try:
            self.utf8.decode(b"", final=True)
        except UnicodeDecodeError:
            raise _NotPlain from None
        skeleton = bytes(self.skeleton)
        try:
            doc = orjson.loads(skeleton)
        except orjson.JSONDecodeError:
            raise _NotPlain from None
        if not isinstance(doc, dict) or doc.get("items") != [] or _count_top_items(skeleton) != 1:
            raise _NotPlain
        items = (np.concatenate(self.item_parts) if self.item_parts
                 else np.zeros((0, 2), np.int64))
        return ListLayout(items=items, skeleton=skeleton, sha256=self.hasher.hexdigest(),
                          size=size)

    def _add_skeleton(self, part) -> None:
        self.skeleton += part
        if len(self.skeleton) > MAX_SKELETON:
            raise _NotPlain

    # ------------------------------------------------------------------ one buffer
    def _buffer(self, buf: bytearray, n: int, base: int) -> int:
        """Scan buf[:n] (file offset `base`); returns where the next buffer starts in it."""
        a = np.frombuffer(buf, np.uint8, count=n)
        pos = event_positions(a)
        if not len(pos) and not (self.phase == IN and self.gap_at_start):
            # no event byte (common with tiny chunks): the state stays, the bytes are text
            if self.phase != IN:
                self._add_skeleton(memoryview(buf)[:n])
            self.bs_odd = 0
            return n
        c = a[pos]
        in0 = self.in_str

        # escapes (2.) and strings (3.)
        nq = np.flatnonzero(c != Q)  # event indices of the non-quotes
        bsj = nq[c[nq] == BS]
        bs_tail = 0
        if len(bsj) or self.bs_odd:
            esc, bs_tail = escaped_quotes(pos, c, bsj, self.bs_odd, n)
            if len(esc):
                c[esc] = 0  # no longer an event: text inside a string
                nq = np.insert(nq, np.searchsorted(nq, esc), esc)
        cn = c[nq]
        in_str = (in0 + nq - np.arange(len(nq))) & 1  # inside a string, for each non-quote
        outside = in_str == 0
        if np.any(outside & (cn == BS)):
            raise _NotPlain  # a backslash outside strings
        br = nq[outside & (cn != BS) & (cn != 0)]  # brackets outside strings
        in_end = (in0 + len(pos) - len(nq)) & 1

        # depth and bracket matching (4.)
        bp, bc = pos[br], c[br]
        opens = (bc & 0xDF) == LSQUARE
        delta = opens.astype(np.int64) * 2 - 1
        depth_after = self.depth + np.cumsum(delta)
        depth_end, stack_end = self.depth, self.stack
        if len(bp):
            if depth_after.min() < 0 or depth_after.max() > MAX_DEPTH:
                raise _NotPlain
            level = depth_after - opens  # the smaller of the depths before and after
            curly = ((bc & 0x20) != 0).astype(np.int64)
            stack = self.stack + np.cumsum(delta * (curly << level))
            closes = ~opens
            if np.any((stack[closes] >> level[closes]) & 1):
                raise _NotPlain  # a `]` closing a `{` or a `}` closing a `[`
            top = np.flatnonzero((level == 0) & opens)
            if len(top):  # depth 0 -> 1: only once, the document's `{`
                if self.top_opened or len(top) > 1 or bc[top[0]] != LCURLY:
                    raise _NotPlain
                self.top_opened = True
            depth_end, stack_end = int(depth_after[-1]), int(stack[-1])
            low = np.flatnonzero(level <= 2)
            lj, lpos, llev, lopen = br[low], bp[low], level[low], opens[low]
        else:
            lj = lpos = llev = lopen = np.zeros(0, np.int64)

        # the items array (5.)
        cut, in_gap = n, False
        i0 = 0  # first low bracket after the items' `[`
        gap0 = None  # where a gap between elements starts in this buffer, if before any bracket
        gap0_ev = 0  # the index of the first event after gap0
        phase0 = self.phase
        if self.phase == BEFORE:
            for ci in np.flatnonzero((llev == 1) & lopen & (c[lj] == LSQUARE)):
                if self._is_items_key(int(lj[ci]), pos, c, nq, in0, base, buf):
                    self.phase, i0 = IN, int(ci) + 1
                    gap0, gap0_ev = int(lpos[ci]) + 1, int(lj[ci]) + 1
                    self._add_skeleton(memoryview(buf)[:gap0])
                    break
            else:
                self._add_skeleton(memoryview(buf)[:n])
                self._remember_events(pos, c, nq, in0, base)
        elif self.phase == IN and self.gap_at_start:
            gap0 = 0
        if self.phase == IN:
            after = np.flatnonzero(llev[i0:] <= 1)
            stop = i0 + int(after[0]) if len(after) else len(lpos)
            close = int(lpos[stop]) if len(after) else None
            cut, in_gap = self._items_part(a, n, base, pos, c, gap0, gap0_ev, lpos[i0:stop + 1],
                                           lj[i0:stop + 1], lopen[i0:stop], close)
            if close is not None:
                self.phase = AFTER
                self._add_skeleton(memoryview(buf)[close:n])
        elif phase0 == AFTER:
            self._add_skeleton(memoryview(buf)[:n])

        # the state where the next buffer starts
        if in_gap:  # in a gap between elements: outside strings, at depth 2
            self.in_str, self.bs_odd, self.gap_at_start = 0, 0, True
        else:
            self.in_str, self.bs_odd, self.gap_at_start = in_end, bs_tail, False
        self.depth, self.stack = depth_end, stack_end
        return cut

    def _remember_events(self, pos, c, nq, in0, base) -> None:
        """Keep the last two events (for an `"items"` key whose quotes are in earlier buffers)."""
        evs = [self._event(j, pos, c, nq, in0, base) for j in range(len(pos) - 1,
                                                                    max(len(pos) - 3, -1), -1)]
        self.prev_events = (evs + self.prev_events)[:2]

    @staticmethod
    def _event(j, pos, c, nq, in0, base) -> tuple[int, int, int]:
        quotes_before = j - int(np.searchsorted(nq, j))
        return int(pos[j]) + base, int(c[j]), (in0 + quotes_before) & 1

    def _is_items_key(self, j, pos, c, nq, in0, base, buf) -> bool:
        """Is the `[` (event j) the value of a key spelled `"items"`? Its two previous events
        must be the quotes of "items", the first opening a string; between the second and the
        `[`: whitespace, `:`, whitespace."""
        evs = [self._event(i, pos, c, nq, in0, base) for i in range(j - 1, max(j - 3, -1), -1)]
        evs = (evs + self.prev_events)[:2]
        if len(evs) < 2:
            return False
        (qc, bc_, _), (qo, bo, open_in_str) = evs
        if bc_ != Q or bo != Q or qc - qo != 6 or open_in_str:
            return False
        bracket = base + int(pos[j])
        if bracket - qc > _MAX_KEY_GAP:
            return False
        text = self._file_bytes(qo, bracket, base, buf)
        return text[:7] == b'"items"' and text[7:].strip(WS) == b":"

    def _file_bytes(self, lo: int, hi: int, base: int, buf) -> bytes:
        """file[lo:hi] before the items array: the skeleton so far holds file[:base]."""
        head = bytes(self.skeleton[lo:min(hi, base)]) if lo < base else b""
        return head + bytes(buf[max(lo, base) - base:hi - base])

def _count_top_items(skeleton: bytes) -> int:
    """How many keys of the top-level object read "items" (written with escapes or not)."""
    top = []

    def hook(pairs):
        top[:] = [pairs]  # the top-level object is the last one to end
        return dict(pairs)

    try:
        json.loads(skeleton, object_pairs_hook=hook)
    except (ValueError, RecursionError):
        return -1
    return sum(1 for key, _ in top[0] if key == "items") if top else 0
