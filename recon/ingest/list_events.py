"""The vectorised steps of `list_scan` (numpy over a chunk's bytes): the event bytes that change
the lexical state (step 1 of its module doc), the quotes escaped by backslash runs (step 2), and
the commas and scalar tokens in the gaps between the items (step 5)."""

from __future__ import annotations

import numpy as np

_BLOCK = 128 << 10  # event bytes are found in blocks of this size (temporaries stay in cache)
_GAP_PIECE = 1 << 22  # gap bytes looked at in one go (their positions take 8 bytes each)
WS = b" \t\r\n"

Q, BS, LCURLY, LSQUARE = 0x22, 0x5C, 0x7B, 0x5B

# the bytes of a gap between elements: 0 whitespace, 1 comma, 2 anything else (a scalar's text)
_GAP_CLASS = np.full(256, 2, np.uint8)
_GAP_CLASS[list(WS)] = 0
_GAP_CLASS[ord(",")] = 1


def event_positions(a: np.ndarray) -> np.ndarray:
    """Positions (int64, ascending) of the bytes `"` `\\` `{` `}` `[` `]` in the uint8 array a."""
    n = len(a)
    if n == 0:
        return np.zeros(0, np.int64)
    blk_n = min(n, _BLOCK)
    m, m2, t = np.empty(blk_n, bool), np.empty(blk_n, bool), np.empty(blk_n, np.uint8)
    out = []
    for s in range(0, n, blk_n):
        blk = a[s:s + blk_n]
        k = len(blk)
        mm, mm2, tt = m[:k], m2[:k], t[:k]
        np.equal(blk, Q, out=mm)
        np.equal(blk, BS, out=mm2)
        mm |= mm2
        np.bitwise_and(blk, 0xDF, out=tt)  # folds { } (0x7B 0x7D) onto [ ] (0x5B 0x5D)
        np.equal(tt, 0x5B, out=mm2)
        mm |= mm2
        np.equal(tt, 0x5D, out=mm2)
        mm |= mm2
        nz = np.flatnonzero(mm)
        if s:
            nz += s
        out.append(nz)
    return out[0] if len(out) == 1 else np.concatenate(out)


def ranges(starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """Concatenation of arange(s, s + l) for each (s, l)."""
    total = int(lens.sum())
    offs = np.cumsum(lens) - lens
    return np.repeat(starts - offs, lens) + np.arange(total)


def escaped_quotes(pos, c, bsj, carried_odd: int, n: int):
    """Event indices of the quotes escaped by a backslash run of odd length, and the parity of
    the run of backslashes that ends the buffer (0 if its last byte is not a backslash).

    pos, c: all event positions and bytes; bsj: event indices of the backslashes;
    carried_odd: the previous buffer ended with an odd run (it continues here or escapes byte 0).
    """
    bp = pos[bsj]
    esc = np.zeros(0, np.int64)
    tail = 0
    if len(bp):
        brk = np.flatnonzero(np.diff(bp) != 1) + 1
        first = np.concatenate(([0], brk))
        last = np.concatenate((brk - 1, [len(bp) - 1]))
        lens = bp[last] - bp[first] + 1
        if carried_odd and bp[0] == 0:
            lens[0] += 1
        odd = (lens & 1).astype(bool)
        j = bsj[last[odd]] + 1  # the event after an odd run's last backslash ...
        target = bp[last[odd]] + 1  # ... is escaped if it is the byte right after it
        inside = j < len(pos)
        j, target = j[inside], target[inside]
        esc = j[(pos[j] == target) & (c[j] == Q)]
        if bp[-1] == n - 1:
            tail = int(lens[-1] & 1)
    if carried_odd and not (len(bp) and bp[0] == 0) and len(pos) and pos[0] == 0 and c[0] == Q:
        esc = np.concatenate(([0], esc))
    return esc, tail


def gap_tokens(a: np.ndarray, gap_s: np.ndarray, gap_e: np.ndarray):
    """The commas, and the first and last bytes of the runs of other non-whitespace bytes
    (scalar tokens), in the ranges [gap_s, gap_e) of `a` (sorted, disjoint, not adjacent)."""
    lens = gap_e - gap_s
    cum = np.cumsum(lens)
    total = int(cum[-1]) if len(cum) else 0
    commas, starts, ends = [], [], []
    for o0 in range(0, total, _GAP_PIECE):  # pieces of the gaps' concatenation
        o1 = min(total, o0 + _GAP_PIECE)
        g0 = int(np.searchsorted(cum, o0, side="right"))  # the gaps in the piece
        g1 = int(np.searchsorted(cum, o1, side="left")) + 1
        s, e = gap_s[g0:g1].copy(), gap_e[g0:g1].copy()
        s[0] += o0 - (int(cum[g0]) - int(lens[g0]))  # the first and last may be cut
        e[-1] -= int(cum[g1 - 1]) - o1
        gi = ranges(s, e - s)
        cls = _GAP_CLASS[a[gi]]
        commas.append(gi[cls == 1])
        other = gi[cls == 2]
        if len(other):
            run = np.concatenate(([True], np.diff(other) != 1))  # a token starts
            starts.append(other[run])
            ends.append(other[np.concatenate((run[1:], [True]))])
    empty = np.zeros(0, np.int64)
    if len(starts) > 1:  # a token cut between pieces is one token: adjacent bytes
        tok_s, tok_e = np.concatenate(starts), np.concatenate(ends)
        cut = np.flatnonzero(tok_e[:-1] + 1 == tok_s[1:])
        return (np.concatenate(commas), np.delete(tok_s, cut + 1), np.delete(tok_e, cut))
    return (np.concatenate(commas) if commas else empty,
            starts[0] if starts else empty, ends[0] if ends else empty)
