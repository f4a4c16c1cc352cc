"""Bytes to JSON documents for the Python reader: a gzip'd or plain file's bytes, kubectl's
concatenated documents, what is wrong with a line that does not parse (its encoding, a lone
surrogate), JSON Lines told apart from one document."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import orjson


def _open_bytes(path: Path) -> bytes:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data


def _concatenated(text: str):
    """kubectl --watch -o json: pretty-printed JSON documents one after another. Yields
    (k, line, doc, error, text of a broken document): a document that does not parse is given
    with its lines, and reading goes on at the next line that opens a document at its first
    column (kubectl indents everything inside one), so that one broken document does not take
    the rest of the file with it."""
    dec = json.JSONDecoder()
    i, n = 0, len(text)
    k = 0
    line, counted = 1, 0  # line number of offset `counted` (counted incrementally: big files)
    while True:
        while i < n and text[i].isspace():
            i += 1
        if i >= n:
            return
        k += 1
        line += text.count("\n", counted, i)
        counted = i
        try:
            doc, j = dec.raw_decode(text, i)
        except (json.JSONDecodeError, RecursionError) as e:
            msg = e.msg if isinstance(e, json.JSONDecodeError) else "nested too deeply"
            nxt = text.find("\n{", i + 1)
            j = n if nxt < 0 else nxt + 1
            last = line + text.count("\n", i, j) - (1 if nxt >= 0 else 0)
            more = f"; read on at line {last + 1}" if nxt >= 0 else ""
            lines = f"line {line}" if last == line else f"lines {line}-{last}"
            yield (k, line, None, f"invalid JSON in document {k} ({lines}): {msg}{more}",
                   text[i:j])
        else:
            yield k, line, doc, None, None
        i = j


def _utf8_error(raw: bytes) -> str | None:
    """Where `raw` stops being UTF-8, as a reason; None when it is UTF-8."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return f"not valid UTF-8: byte 0x{raw[e.start]:02x} at column {e.start + 1}"
    return None


def _json_but_for_encoding(line: bytes) -> bool:
    """Is `line` JSON once its bytes that are not UTF-8 are replaced? (a JSON Lines file whose
    first line has a Latin-1 byte is still JSON Lines: that line is quarantined, not the rest
    decoded with replacement characters)"""
    try:
        orjson.loads(line.decode("utf-8", "replace"))
    except orjson.JSONDecodeError:
        return False
    return True


def _surrogate_error(raw: bytes, e: orjson.JSONDecodeError) -> str | None:
    """The reason for a line orjson refused for a lone surrogate escape (its message says
    "line 1" of the one line it read: the file's line is the locator's)."""
    if "surrogate" not in str(e):
        return None
    m = _LONE_SURROGATE.search(raw)
    esc = m.group(0).decode() if m else "a \\uD800-\\uDFFF escape"
    return (f"lone UTF-16 surrogate {esc} in a string (half of a character pair, as JavaScript "
            f"writes a string cut inside an emoji) at column {e.pos + 1}: not Unicode text, so "
            f"it cannot be stored; a whole pair such as \\ud83d\\ude00 is accepted")


# an escape of a high surrogate not followed by a low one, or a low one alone (approximate: the
# message names the first such escape; orjson decides)
_LONE_SURROGATE = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F])"
                             rb"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}")


def _lenient_loads(data: bytes):
    """The document as Python's json reads it (lone surrogates kept), or None. NaN and Infinity
    are refused, as orjson refuses them."""
    def no_constant(name):
        raise ValueError(f"{name} is not JSON")

    try:
        return json.loads(data.decode("utf-8"), parse_constant=no_constant)
    except (ValueError, RecursionError):  # (JSONDecodeError and UnicodeDecodeError included)
        return None


# How many of a file's first non-blank lines are looked at to tell JSON Lines from
# pretty-printed documents one after another (kubectl --watch -o json)
FORMAT_LINES = 32


def looks_like_jsonl(lines) -> bool:
    """JSON Lines (each line a document) rather than pretty-printed concatenated documents?

    The first non-blank line parses (or would but for bytes that are not UTF-8: that line is
    quarantined, not the rest read another way), or two of the first FORMAT_LINES non-blank
    lines are whole non-empty JSON objects: pretty printing puts a non-empty object on several
    lines, so a file with such lines is JSON Lines whose first line is damaged (half a line, a
    lone `{`). Deciding from line 1 alone took such a file for one broken document and
    quarantined it whole."""
    seen = objects = 0
    for ln in lines:
        if not ln.strip():
            continue
        seen += 1
        try:
            doc = orjson.loads(ln)
        except orjson.JSONDecodeError:
            if seen == 1 and _utf8_error(ln) is not None and _json_but_for_encoding(ln):
                return True
            doc = None
        if seen == 1 and doc is not None:
            return True
        if isinstance(doc, dict) and doc:
            objects += 1
            if objects == 2:
                return True
        if seen >= FORMAT_LINES:
            return False
    return False
