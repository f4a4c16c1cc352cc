"""What landing refuses of a record that parses: a lone surrogate, too many bytes, a timestamp
outside the plausible range (recon.toml [landing], `recon.config.Landing`).

Each check has two halves that must agree. The Python reader decides exactly, per record
(`FileResult.add` in reader.py). The DuckDB paths (jsonl.py, lists.py) never decide: a cheap
test inside their SQL (`python_first_sql`: a length, one regular expression) sends every line
or item that *might* fail to the Python reader, which then lands, or quarantines, it with the
same file, line and reason as a file read in Python whole would get. The SQL test may send more
than needed (a node named "10-0-0-1" looks like a date to it); it never sends less.
"""

from __future__ import annotations

import re

from ..config import Landing
from .classify import BadRecord

DEFAULT = Landing()

# ------------------------------------------------------------------ lone surrogates
#
# `"vision\ud83d"`: half a UTF-16 pair, as JavaScript's JSON.stringify writes a string cut in the
# middle of an emoji. orjson and DuckDB refuse such a document; Python's json module reads it
# into a str that cannot be encoded as UTF-8, so nothing can store it.


def surrogate_reason(text: str) -> str | None:
    """Why `text` (a serialised record) cannot be stored, when it holds a lone surrogate."""
    for i, ch in enumerate(text):
        if "\ud800" <= ch <= "\udfff":
            return (f"lone UTF-16 surrogate \\u{ord(ch):04x} in a string (half of a character "
                    f"pair, as JavaScript writes a string cut inside an emoji) at character "
                    f"{i + 1} of the record: not Unicode text, so it cannot be stored; "
                    f"a whole pair such as \\ud83d\\ude00 is accepted")
    return None


def printable(text: str) -> str:
    """`text` with any lone surrogate written as its escape, so that it can be stored."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


# ------------------------------------------------------------------ record size


def size_reason(n: int, limits: Landing) -> str:
    return (f"record of {n:,} bytes exceeds the limit of {limits.max_record_bytes:,} bytes "
            f"(recon.toml [landing] max_record_bytes)")


# ------------------------------------------------------------------ timestamps
#
# A timestamp field is a key named like one (creationTimestamp, lastTransitionTime, startedAt,
# completedAt, ChargePeriodStart, ...) whose string value DuckDB's TIMESTAMPTZ cast would read:
# a date `[-]Y-M-D` (any number of year digits), optionally followed by a time, or
# infinity/-infinity/epoch. Its date is compared with [timestamps_from, timestamps_before).

TIME_KEY = re.compile(r"(?:At|_at|Time|time|Timestamp|timestamp|Start|End|Date|date)$")
_DATE = re.compile(r"\s*(-?)([0-9]+)-([0-9]{1,2})-([0-9]{1,2})(?=$|[Tt\s])")
_SPECIAL = frozenset(("infinity", "+infinity", "-infinity", "epoch"))


def _range_re(lo: str, hi: str) -> str:
    """RE2/Python regex of the digit strings of len(lo) == len(hi) between lo and hi."""
    if not lo:
        return ""
    if lo == hi:
        return lo
    n = len(lo) - 1
    if lo[0] == hi[0]:
        return lo[0] + _range_re(lo[1:], hi[1:])
    parts = [lo[0] + _range_re(lo[1:], "9" * n)]
    if int(hi[0]) - int(lo[0]) > 1:
        parts.append(f"[{int(lo[0]) + 1}-{int(hi[0]) - 1}]" + "[0-9]" * n)
    parts.append(hi[0] + _range_re("0" * n, hi[1:]))
    return "(?:" + "|".join(parts) + ")"


def suspect_re(limits: Landing) -> str:
    """A regex found in the text of every record that holds a timestamp outside the range (and
    in some that do not): a string opening with a date whose year is not one every day of which
    is accepted, infinity or epoch, or a digit or `-` written as a \\u escape."""
    lo, hi = limits.timestamps_from, limits.timestamps_before
    first = lo.year + (0 if (lo.month, lo.day) == (1, 1) else 1)  # years wholly inside
    last = hi.year - 1
    years = [r"-[0-9]+", "[0-9]{1,3}", "[0-9]{5,6}"]
    if first > last:
        years.append("[0-9]{4}")
    else:
        if first > 0:
            years.append(_range_re("0000", f"{first - 1:04d}"))
        if last < 9999:
            years.append(_range_re(f"{last + 1:04d}", "9999"))
    lead = r'"(?:\s|\\[tnr])*'
    return (f"{lead}(?:{'|'.join(years)})-[0-9]{{1,2}}-[0-9]"
            rf"|{lead}[-+]?(?i:infinity|epoch)|\\u00(?:2[dD]|3[0-9])")


_SUSPECT_CACHE: dict[Landing, re.Pattern] = {}


def _suspect(limits: Landing) -> re.Pattern:
    pat = _SUSPECT_CACHE.get(limits)
    if pat is None:
        pat = _SUSPECT_CACHE[limits] = re.compile(suspect_re(limits))
    return pat


def _out_of_range(value: str, limits: Landing) -> bool:
    m = _DATE.match(value)
    if m is None:
        return value.strip().lower() in _SPECIAL
    if m.group(1) or "(BC)" in value.upper():
        return True
    ymd = (int(m.group(2)), int(m.group(3)), int(m.group(4)))
    lo, hi = limits.timestamps_from, limits.timestamps_before
    return not (lo.year, lo.month, lo.day) <= ymd < (hi.year, hi.month, hi.day)


def _find(obj, path: str, limits: Landing):
    """The first (path, value) in `obj` of a timestamp field outside the range, or None."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            where = f"{path}.{k}" if path else str(k)
            if isinstance(v, str):
                if TIME_KEY.search(str(k)) and _out_of_range(v, limits):
                    return where, v
            elif isinstance(v, (dict, list)):
                hit = _find(v, where, limits)
                if hit:
                    return hit
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            if isinstance(v, (dict, list)):
                hit = _find(v, f"{path}[{i}]", limits)
                if hit:
                    return hit
    return None


def check_timestamps(text: str, doc, cols: dict, limits: Landing) -> None:
    """Raise BadRecord naming the field, its value and the range when a timestamp field of the
    record (its document `doc`, serialised as `text`, or its seen_at/pulled_at column) lies
    outside [timestamps_from, timestamps_before). Only a record whose text the suspect regex
    finds is walked: one search of C code per record otherwise."""
    pat = _suspect(limits)
    hit = None
    for name in ("seen_at", "pulled_at"):
        v = cols.get(name)
        if isinstance(v, str) and _out_of_range(v, limits):
            hit = (name, v)
            break
    if hit is None and pat.search(text):
        hit = _find(doc, "", limits)
    if hit:
        where, value = hit
        raise BadRecord(f"timestamp {where} = {printable(value)[:60]!r} is outside the accepted "
                        f"range {limits.timestamps_from} .. {limits.timestamps_before} (exclusive; "
                        f"recon.toml [landing] timestamps_from / timestamps_before)")


def python_first_sql(lenient_sql: str, limits: Landing) -> str:
    """SQL over `line` (a JSON Lines line or a List item): true when the line goes to the Python
    reader, which decides exactly (see the module doc)."""
    suspect = suspect_re(limits).replace("'", "''")
    return (f"({lenient_sql} or strlen(line) > {int(limits.max_record_bytes)} "
            f"or regexp_matches(line, '{suspect}'))")
