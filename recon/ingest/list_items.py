"""Step 5 of `list_scan` (see its module doc): a buffer's part of the items array as a stream
of events, checked against `[ elem (, elem)* ]` and turned into the elements' byte ranges.

`_ItemsStream` is a mixin of `list_scan._Scan`: it reads and sets the scan's `pending` (the
events of an element not finished in the last buffer), `n_items` and `item_parts` (the ranges
found so far).
"""

from __future__ import annotations

import numpy as np

from .list_events import Q, gap_tokens, ranges

# the stream of the items array's events (after its `[`): an element is (start, start + 1)
OPEN, CLOSE, QOPEN, QCLOSE, TOK_S, TOK_E, COMMA, END = range(1, 9)
_ELEM_START = np.zeros(9, bool)
_ELEM_START[[OPEN, QOPEN, TOK_S]] = True


class _NotPlain(Exception):
    """The document is not plainly one object with an items array: scan_list returns None."""


class _ItemsStream:
    """The items array of `_Scan`: its events between the elements, and the ranges they give."""

    def _items_part(self, a, n, base, pos, c, gap0, gap0_ev, l2pos, l2ev, l2open, close):
        """Turn this buffer's part of the items array into the stream of its events and feed it
        on. l2pos, l2ev: the positions and event indices of the depth-2 brackets, the items'
        `]` last if `close` (its position) is not None; l2open: which of the others open.
        Returns (where the next buffer starts, whether that is in a gap between elements):
        (n, False) inside an element, (the start of the unfinished gap or after its last comma,
        True) in a gap."""
        bpos, bev = l2pos.astype(np.int64), l2ev.astype(np.int64)
        btyp = np.where(l2open, OPEN, CLOSE).astype(np.int8)
        if close is not None:
            btyp = np.append(btyp, np.int8(END))
        # gaps between elements: from gap0 and after each element's closing bracket, to the
        # next bracket (an element's opening one or the items' `]`), or to the buffer's end
        after_close = np.flatnonzero(btyp == CLOSE)
        starts, lo = bpos[after_close] + 1, bev[after_close] + 1  # lo: first event in the gap
        nxt = after_close + 1  # the next bracket
        if gap0 is not None:
            starts = np.concatenate(([gap0], starts))
            lo = np.concatenate(([gap0_ev], lo))
            nxt = np.concatenate(([0], nxt))
        open_gap = len(starts) > 0 and nxt[-1] == len(bpos)  # the last one runs to the end
        ends = np.full(len(starts), n, np.int64)
        hi = np.full(len(starts), len(pos), np.int64)  # hi: the event after the gap
        has_end = nxt < len(bpos)
        ends[has_end] = bpos[nxt[has_end]]
        hi[has_end] = bev[nxt[has_end]]

        # string elements: the quotes in the gaps, opening and closing in turn
        nev = hi - lo
        qo = qc = np.zeros(0, np.int64)
        gap_s, gap_e = starts, ends
        if nev.sum():
            ev = ranges(lo, nev)
            gid = np.repeat(np.arange(len(starts)), nev)
            isq = c[ev] == Q
            ev, gid = ev[isq], gid[isq]
            rank = np.arange(len(gid)) - np.searchsorted(gid, gid)
            qp = pos[ev]
            qo, qc = qp[rank % 2 == 0], qp[rank % 2 == 1]
            odd = np.bincount(gid, minlength=len(starts)) % 2 == 1
            if odd[:-1].any() or (odd[-1] and not open_gap):
                raise _NotPlain  # cannot happen: a gap ends outside strings
            # what is outside strings in the gaps (the end of an unfinished string is not)
            gap_s = np.sort(np.concatenate((starts, qc + 1)))
            gap_e = np.sort(np.concatenate((qo, ends[~odd])))
        commas, tok_s, tok_e = gap_tokens(a, gap_s, gap_e)
        parts = [(bpos, btyp)]
        for p, t in ((qo, QOPEN), (qc, QCLOSE), (commas, COMMA), (tok_s, TOK_S), (tok_e, TOK_E)):
            if len(p):
                parts.append((p, np.full(len(p), t, np.int8)))
        if len(parts) > 1:
            ep = np.concatenate([p for p, _ in parts])
            et = np.concatenate([t for _, t in parts])
            order = np.argsort(ep, kind="stable")  # stable: a 1-byte token's start, then end
            ep, et = ep[order], et[order]
        else:
            ep, et = bpos, btyp
        cut = n
        if open_gap:  # read the unfinished gap again, from after its last comma
            gs = int(starts[-1])
            last = commas[commas >= gs]
            cut = int(last[-1]) + 1 if len(last) else gs
            keep = ep < cut
            ep, et = ep[keep], et[keep]
        self._feed(ep + base, et, close is not None)
        return cut, bool(open_gap)

    def _feed(self, ep: np.ndarray, et: np.ndarray, closed: bool) -> None:
        """Check the items stream: elem (COMMA elem)* END, or END alone; keep the ranges."""
        if self.pending is not None:
            ep = np.concatenate((self.pending[0], ep))
            et = np.concatenate((self.pending[1], et))
            self.pending = None
        if self.n_items == 0 and len(et) and et[0] == END:
            if len(et) != 1:
                raise _NotPlain
            return  # `[]`
        k = len(et) // 3
        if closed and (len(et) != 3 * k or k == 0):
            raise _NotPlain
        if k:
            t = et[:3 * k].reshape(k, 3).astype(np.int64)
            p = ep[:3 * k].reshape(k, 3)
            if not (_ELEM_START[t[:, 0]].all() and (t[:, 1] == t[:, 0] + 1).all()
                    and (t[:-1, 2] == COMMA).all() and t[-1, 2] == (END if closed else COMMA)):
                raise _NotPlain
            r = np.empty((k, 2), np.int64)
            r[:, 0] = p[:, 0]
            r[:, 1] = p[:, 1] + 1
            self.item_parts.append(r)
            self.n_items += k
        if len(et) > 3 * k:
            self.pending = (ep[3 * k:], et[3 * k:])
