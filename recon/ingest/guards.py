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

TIME_SUFFIXES = ("At", "_at", "Time", "time", "Timestamp", "timestamp", "Start", "End", "Date",
                 "date")
_BLANKS = " \t\n\r\f\v"  # what DuckDB's cast skips before a date (ASCII only, unlike \s)
_DATE = re.compile(r"[ \t\n\r\f\v]*(-?)([0-9]+)-([0-9]{1,2})-([0-9]{1,2})(?=$|[Tt \t\n\r\f\v])")
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


def _bad_years_re(limits: Landing) -> str:
    """Regex of the year digits of a date that may be out of the range (a negative year, one
    of fewer or more than 4 digits, one not wholly inside it)."""
    first, last = _safe_years(limits)
    years = [r"-[0-9]+", "[0-9]{1,3}", "[0-9]{5,6}"]
    if first > last:
        years.append("[0-9]{4}")
    else:
        if first > 0:
            years.append(_range_re("0000", f"{first - 1:04d}"))
        if last < 9999:
            years.append(_range_re(f"{last + 1:04d}", "9999"))
    return "|".join(years)


_QUICK: dict = {}


def _quick(limits: Landing) -> re.Pattern:
    """For the Python reader: a regex found in a record's compact JSON (orjson's or json's
    `":"` separators, escapes only of control characters) wherever _find would refuse a value:
    a string value opening with a blank, an escape, a date of a year not wholly inside the
    range, or infinity/epoch. Its literal prefix `":"` lets re skip ahead (a walk of every
    document costs ~20 us a record)."""
    pat = _QUICK.get(limits)
    if pat is None:
        pat = _QUICK[limits] = re.compile(
            f'":"(?:[ \t\\\\]|(?:{_bad_years_re(limits)})-[0-9]{{1,2}}-[0-9]'
            "|[-+]?[iIeE](?:nfinity|NFINITY|poch|POCH))")
    return pat


def suspect_re(limits: Landing) -> str:
    """A regex found in the text of every record that holds a date outside the range (and in
    some that do not): a string opening with a date whose year is not one every day of which
    is accepted, infinity or epoch (lower, Capitalised or upper case: SPECIAL_PARTS), or a
    \\u escape of a digit, `-` or a control character, or an escaped blank before one of
    them. "(BC)" is looked for apart (python_first_sql)."""
    years = _bad_years_re(limits)
    return (f'"[ \t]*(?:(?:{years})-[0-9]{{1,2}}-[0-9]|[-+]?[iIeE](?:nfinity|NFINITY|poch|POCH))'
            r"|\\(?:u00(?:[01][0-9a-fA-F]|2[dD]|3[0-9])|[tnrf][-+0-9 \t\\iIeE])")


# infinity and epoch (DuckDB casts both, in any case) as they are written: lower, Capitalised
# or upper case. A mixed case such as "InFiNiTy" is not looked for (by either half: the paths
# agree), as a case-blind search of every line costs about twice as much.
SPECIAL_PARTS = ("nfinity", "NFINITY", "poch", "POCH")


def has_special(text: str) -> bool:
    """Might `text` hold infinity or epoch (see SPECIAL_PARTS)?"""
    return any(p in text for p in SPECIAL_PARTS)


def _safe_years(limits: Landing) -> tuple[int, int]:
    """The first and last year every day of which is in the range."""
    lo, hi = limits.timestamps_from, limits.timestamps_before
    return lo.year + (0 if (lo.month, lo.day) == (1, 1) else 1), hi.year - 1


def _out_of_range(value: str, limits: Landing) -> bool:
    # the usual case first, without a regex: "2026-06-01T...", a year every day of which is in
    first, last = _safe_years(limits)
    if (value[4:5] == "-" and value[:4].isdigit() and first <= int(value[:4]) <= last
            and "(" not in value):  # ("2026-06-01 (BC)" is 2027 years before it)
        return False
    m = _DATE.match(value)
    if m is None:
        return has_special(value) and value.strip(_BLANKS).lower() in _SPECIAL
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
                if k.endswith(TIME_SUFFIXES) and _out_of_range(v, limits):
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
    outside [timestamps_from, timestamps_before). The document is walked only when `_quick`
    finds its text (or "(BC)" is in it)."""
    hit = None
    for name in ("seen_at", "pulled_at"):
        v = cols.get(name)
        if isinstance(v, str) and _out_of_range(v, limits):
            hit = (name, v)
            break
    if hit is None and (_quick(limits).search(text) or "(BC)" in text):
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
            f"or regexp_matches(line, '{suspect}') "
            "or contains(line, '(BC)'))")
