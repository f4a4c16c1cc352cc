"""recon.ingest.list_scan: the byte ranges of a big List's items, found in one streaming pass.

orjson is the reference: whenever scan_list returns a layout, each range must parse to the
document's item and the skeleton to the document without its items; None is always allowed for
odd input, and required for the cases the module promises to refuse. Small chunk sizes put a
chunk boundary at every place in small documents (between a backslash and its quote, inside a
UTF-8 sequence, inside the `"items"` key, between `:` and `[` ...).
"""

import hashlib
import json
import random

import numpy as np
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recon.ingest import list_events, list_scan
from recon.ingest.list_scan import ListLayout, scan_list

CHUNKS = [1, 2, 3, 7, 64, None]  # None: the default chunk size
NEG_CHUNKS = [1, 3, None]
WS = b" \t\r\n"
HYP = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                       HealthCheck.function_scoped_fixture])


def scan(path, chunk):
    return scan_list(path) if chunk is None else scan_list(path, chunk_bytes=chunk)


def write(tmp_path, data: bytes, name="doc.json"):
    p = tmp_path / name
    p.write_bytes(data)
    return p


def check_layout(layout: ListLayout | None, data: bytes, doc: dict) -> None:
    """The layout is exactly right for `data`, whose parse is `doc`."""
    assert layout is not None
    items = layout.items
    assert isinstance(items, np.ndarray) and items.dtype == np.int64
    assert items.shape == (len(doc["items"]), 2)
    for (s, e), want in zip(items.tolist(), doc["items"]):
        text = data[s:e]
        assert text and text == text.strip(WS)
        assert orjson.loads(text) == want
    # between two items: whitespace and one comma
    for e, s in zip(items[:-1, 1].tolist(), items[1:, 0].tolist()):
        assert data[e:s].strip(WS) == b","
    if len(items):
        lb = data.rindex(b"[", 0, int(items[0, 0]))
        rb = data.index(b"]", int(items[-1, 1]))
        assert data[lb + 1:int(items[0, 0])].strip(WS) == b""
        assert data[int(items[-1, 1]):rb].strip(WS) == b""
        assert layout.skeleton == data[:lb + 1] + data[rb:]
    assert orjson.loads(layout.skeleton) == {**doc, "items": []}
    assert layout.sha256 == hashlib.sha256(data).hexdigest()
    assert layout.size == len(data)


def check_all_chunks(tmp_path, data: bytes, chunks=CHUNKS) -> None:
    doc = orjson.loads(data)
    p = write(tmp_path, data)
    for chunk in chunks:
        check_layout(scan(p, chunk), data, doc)


def check_never_wrong(layout, data: bytes) -> bool:
    """What the caller relies on: when scan_list returns a layout, every element parses (the
    caller checks that) and the skeleton parses (checked here), the document is valid JSON
    and the layout is right. Returns whether the caller would take the layout."""
    if layout is None:
        return False
    try:
        elems = [orjson.loads(data[s:e]) for s, e in layout.items.tolist()]
    except orjson.JSONDecodeError:
        return False  # the caller falls back to its exact reader
    doc = orjson.loads(data)  # must not raise: the document is valid
    assert isinstance(doc, dict) and doc["items"] == elems
    check_layout(layout, data, doc)
    return True


# ------------------------------------------------------------------ random documents
PIECES = ['a', 'Z', ' ', '"', '\\', '[', ']', '{', '}', ',', ':', '\n', '\t', '\x00', '\x1f',
          '\x7f', '/', 'é', '✓', '😀', '\u2028', 'items', '"items"', '\\"', '\\\\', '\\u0022',
          '"items": [', 'ß']
texts = (st.lists(st.sampled_from(PIECES), max_size=6).map("".join)
         | st.text(st.characters(blacklist_categories=("Cs",)), max_size=4))
keys = texts | st.sampled_from(["items", "items2", "xitems", "Items", "item", "ite\\ms"])
scalars = (st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1)
           | st.floats(allow_nan=False, allow_infinity=False) | texts | st.just("items"))
values = st.recursive(
    scalars,
    lambda ch: st.lists(ch, max_size=4) | st.dictionaries(keys, ch, max_size=4),
    max_leaves=10)
top_keys = keys.filter(lambda k: k != "items")


@st.composite
def list_docs(draw):
    before = draw(st.dictionaries(top_keys, values, max_size=3))
    after = draw(st.dictionaries(top_keys.filter(lambda k: k not in before), values, max_size=3))
    items = draw(st.lists(values, max_size=6))
    return {**before, "items": items, **after}


def _string(s: str, rnd: random.Random, escape: bool) -> str:
    """A JSON string for s; with `escape`, some characters written as \\uXXXX."""
    out = []
    for ch in s:
        if escape and rnd.random() < 0.2:
            cp = ord(ch)
            if cp < 0x10000:
                out.append(f"\\u{cp:04x}" if rnd.random() < 0.5 else f"\\u{cp:04X}")
            else:
                cp -= 0x10000
                out.append(f"\\u{0xD800 + (cp >> 10):04x}\\u{0xDC00 + (cp & 0x3FF):04x}")
        else:
            out.append(json.dumps(ch, ensure_ascii=rnd.random() < 0.5)[1:-1])
    return '"' + "".join(out) + '"'


def dump_spaced(value, rnd: random.Random, top: bool = True) -> str:
    """JSON text of value with random whitespace between all tokens and random \\u escapes
    (never in the top-level keys: the items key stays literal)."""
    def ws():
        return rnd.choice(["", "", " ", "\n", "\t", "\r\n", "  \n    ", " \t "])

    if isinstance(value, dict):
        parts = [ws() + _string(k, rnd, not top) + ws() + ":" + ws() + dump_spaced(v, rnd, False)
                 + ws() for k, v in value.items()]
        text = "{" + (",".join(parts) if parts else ws()) + "}"
        return ws() + text + ws() if top else text
    if isinstance(value, list):
        parts = [ws() + dump_spaced(v, rnd, False) + ws() for v in value]
        return "[" + (",".join(parts) if parts else ws()) + "]"
    if isinstance(value, str):
        return _string(value, rnd, True)
    return json.dumps(value)


def serializations(doc: dict, seed: int) -> list[bytes]:
    return [orjson.dumps(doc),
            json.dumps(doc, indent=2).encode(),
            json.dumps(doc, ensure_ascii=False).encode(),
            dump_spaced(doc, random.Random(seed)).encode()]


@settings(HYP, max_examples=50)
@given(doc=list_docs(), seed=st.integers(0, 2**32))
def test_random_lists_all_styles_and_chunks(tmp_path, doc, seed):
    for i, data in enumerate(serializations(doc, seed)):
        assert orjson.loads(data) == doc
        p = write(tmp_path, data, f"doc{i}.json")
        for chunk in CHUNKS:
            check_layout(scan(p, chunk), data, doc)


# ------------------------------------------------------------------ tricky valid documents
VALID = {
    "kubectl": b'{\n    "apiVersion": "v1",\n    "items": [\n        {\n            "a": 1\n'
               b'        },\n        {\n            "b": [1, 2]\n        }\n    ],\n'
               b'    "kind": "List",\n    "metadata": {\n        "resourceVersion": ""\n    }\n}\n',
    "empty": b'{"apiVersion": "v1", "items": [], "kind": "List"}',
    "empty_ws": b' \r\n\t{ "items" \n:\t[ \n\r\t ] } \n',
    "escapes": rb'{"items": ["\\", "\"", "a\\\"b", "\\\\", "\\\\\"]", "x\\\\\\\\\"\\\\\"", '
               rb'{"k\"": "v\\"}, "\"items\": [", "\\\\u0022"]}',
    "brackets_in_strings": b'{"a": "]}", "items": ["[", "{", "]", "}", ",", ":", '
                           b'{"x": "}]", "y": ["]"]}], "z": "[{"}',
    "nested_items": b'{"items": [{"items": [1, {"items": []}]}, [{"items": "items"}]], '
                    b'"meta": {"items": [9]}}',
    "lookalike_keys": b'{"items2": [1], "xitems": [2], "c": "items", "Items": [3], '
                      b'"d": ["items", {"items": 4}], "items": [5], "e": "\\"items\\": [6]"}',
    "scalars": b'{"items": [1, -2.5e3, true, false, null, "s", 0, 1E+2, "", [], {}]}',
    "scalars_spaced": b'{"items":[ 1 ,\n2\t,\r\n"x" , true , null ,[ ] ,{ }\n]}',
    "one_char_tokens": b'{"items": [1,2,3,4,5,6,7,8,9]}',
    "multibyte": '{"é": "✓😀", "items": ["é", "✓", "😀", {"😀": "ß"}], "ω": "\u2028"}'.encode(),
    "escaped_key_elsewhere": rb'{"ite\u006ds2": 1, "items": [1], "x": {"ite\u006ds": 2}}',
    "key_with_escaped_quote": rb'{"x\"items": 5, "items": [7]}',
    "key_ending_in_items": rb'{"x\"items": [1], "items": [2]}',
    "arrays_before_and_after": b'{"a": [[1], {"b": [2]}], "items": [[3]], "z": [[4], []]}',
    "deep_item": b'{"items": [' + b'[' * 40 + b'{}' + b']' * 40 + b']}',
    "string_items": b'{"items": ["a,b", "c]d", "e\\"f", "{", "\\\\"]}',
}


@pytest.mark.parametrize("name", sorted(VALID))
def test_valid_documents_every_chunk_size(tmp_path, name):
    check_all_chunks(tmp_path, VALID[name], chunks=[1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 64, None])


def _speed():
    """bench/list_scan_speed.py (its sample List writer)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "bench" / "list_scan_speed.py"
    spec = importlib.util.spec_from_file_location("list_scan_speed", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_big_file_small_chunks(tmp_path):
    p = tmp_path / "events.json"
    n = _speed().write_sample(p, 1 << 20)
    data = p.read_bytes()
    doc = orjson.loads(data)
    assert len(doc["items"]) == n and len(data) > 1 << 20
    for chunk in (4096, 65536, None):
        check_layout(scan_list(p, chunk_bytes=chunk or 64 << 20), data, doc)


def test_big_list_of_scalars_and_strings(tmp_path, monkeypatch):
    rnd = random.Random(5)
    items = [rnd.choice([rnd.randint(-10**6, 10**6), "s" * rnd.randint(0, 30), None, True,
                         1.5, "a,b]c\"d"]) for _ in range(40000)]
    doc = {"kind": "List", "items": items}
    data = json.dumps(doc, separators=(",", ":")).encode()
    assert len(data) > 200_000
    p = write(tmp_path, data)
    for chunk in (4096, None):
        check_layout(scan(p, chunk), data, doc)
    monkeypatch.setattr(list_events, "_GAP_PIECE", 1000)  # tokens cut between pieces
    check_layout(scan(p, 4096), data, doc)


def test_long_gaps_and_long_elements_across_chunks(tmp_path):
    items = ["x" * 5000, {"k": "y" * 5000}, 12345678901234, "é" * 3000, [1] * 2000, "z"]
    gap = " " * 3000 + "," + "\n" * 3000
    text = gap.join(json.dumps(v, ensure_ascii=False) for v in items)
    data = ('{"items": [' + "\t" * 3000 + text + "\r" * 3000 + "]}").encode()
    doc = {"items": items}
    p = write(tmp_path, data)
    for chunk in (7, 64, 1000, None):
        check_layout(scan(p, chunk), data, doc)


def test_carry_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(list_scan, "MAX_CARRY", 100)
    big_string = orjson.dumps({"items": ["x" * 1000]})
    big_object = orjson.dumps({"items": [{"x": "x" * 1000}]})
    for chunk in (3, 64):
        assert scan(write(tmp_path, big_string), chunk) is None  # a string element re-read
        check_all_chunks(tmp_path, big_object, chunks=[chunk])  # an object is not


def test_skeleton_limit(tmp_path, monkeypatch):
    data = b'{"pad": "' + b"a" * 200 + b'", "items": [1]}'
    check_all_chunks(tmp_path, data, chunks=NEG_CHUNKS)
    monkeypatch.setattr(list_scan, "MAX_SKELETON", 100)
    for chunk in NEG_CHUNKS:
        assert scan(write(tmp_path, data), chunk) is None
    small = b'{"pad": "a", "items": [' + b"[1]," * 100 + b"2]}"  # items do not count
    check_all_chunks(tmp_path, small, chunks=NEG_CHUNKS)


def test_skeleton_limit_real_size(tmp_path):
    data = b'{"pad": "' + b"a" * (17 << 20) + b'", "items": []}'
    assert scan_list(write(tmp_path, data)) is None
    assert scan_list(write(tmp_path, data), chunk_bytes=1 << 20) is None


# ------------------------------------------------------------------ what must be refused
NONE_CASES = {
    # not one object first
    "array_top": b'[{"items": []}]',
    "garbage_first": b'x{"items": []}',
    "string_first": b'"a" {"items": []}',
    "bom": b'\xef\xbb\xbf{"items": []}',
    "empty_file": b"",
    "only_ws": b" \n",
    # something after the object
    "trailing_word": b'{"items": []} x',
    "trailing_object": b'{"items": [1]}{}',
    "trailing_bracket": b'{"items": [1]}]',
    "trailing_formfeed": b'{"items": []}\x0c',
    "trailing_nul": b'{"items": []}\x00',
    "trailing_string": b'{"items": []} "a"',
    # unbalanced, mismatched, unterminated
    "brace_closes_items": b'{"items": [}',
    "mismatch_in_item": b'{"items": [{]}',
    "mismatch_deep": b'{"items": [{"a": [1}]]}',
    "mismatch_nested": b'{"items": [[}]}',
    "extra_close": b'{"items": [1]]}',
    "unclosed_object": b'{"items": [1]',
    "unclosed_items": b'{"items": [1, 2',
    "mismatch_before": b'{"a": [}, "items": []}',
    "mismatch_after": b'{"items": [], "a": {]}',
    "ends_in_string": b'{"items": ["abc',
    "ends_in_string_after": b'{"items": [], "a": "abc',
    "ends_in_escaped_quote": b'{"items": [], "a": "abc\\"}',
    "ends_after_backslash": b'{"items": [], "a": "abc\\',
    # no plain top-level items array
    "no_items": b'{}',
    "capital_items": b'{"Items": []}',
    "items2": b'{"items2": []}',
    "xitems": b'{"xitems": []}',
    "items_as_value": b'{"a": "items", "b": []}',
    "nested_only": b'{"a": {"items": []}}',
    "items_object": b'{"items": {}}',
    "items_number": b'{"items": 1}',
    "items_string": b'{"items": "[]"}',
    "items_in_string": b'{"a": "\\"items\\": [1]"}',
    "no_colon": b'{"items" []}',
    "two_colons": b'{"items": : []}',
    "escaped_key_only": b'{"ite\\u006ds": [1]}',
    "key_with_escaped_quote": b'{"x\\"items": [1]}',
    # the key more than once
    "dup_arrays": b'{"items": [], "items": []}',
    "dup_arrays_2": b'{"items": [1], "items": [2]}',
    "dup_value_first": b'{"items": 5, "items": [1]}',
    "dup_value_after": b'{"items": [1], "items": {}}',
    "dup_escaped_after": b'{"items": [1], "ite\\u006ds": []}',
    "dup_escaped_before": b'{"ite\\u006ds": [1], "items": [2]}',
    "dup_nested_ok_but_top_twice": b'{"items": [{"items": []}], "a": 1, "items": []}',
    # separators between items
    "leading_comma": b'{"items": [,{}]}',
    "trailing_comma": b'{"items": [{},]}',
    "missing_comma": b'{"items": [{} {}]}',
    "missing_comma_tight": b'{"items": [{}{}]}',
    "double_comma": b'{"items": [{},,{}]}',
    "only_comma": b'{"items": [,]}',
    "two_scalars": b'{"items": [1 2]}',
    "two_strings": b'{"items": ["a" "b"]}',
    "string_then_scalar": b'{"items": ["a"1]}',
    "scalar_then_object": b'{"items": [1{}]}',
    "colon_between": b'{"items": [{}:{}]}',
    "colon_in_array": b'{"items": ["a":1]}',
    "junk_between": b'{"items": [{}, x {}]}',
    "semicolon": b'{"items": [{};{}]}',
    "formfeed_between": b'{"items": [\x0c{}]}',
    "nbsp_between": '{"items": [{},\u00a0{}]}'.encode(),
    "backslash_between": b'{"items": [{},\\ {}]}',
    "backslash_before_quote": b'{"items": [\\"a"]}',
    "backslash_top": b'{"items": []\\}',
    # not UTF-8
    "bad_byte": b'{"items": ["\xff"]}',
    "truncated_seq": b'{"items": ["\xc3"]}',
    "truncated_seq_end": b'{"items": []}\xe2\x82',
    "surrogate": b'{"items": ["\xed\xa0\x80"]}',
    "overlong": b'{"items": ["\xc0\xaf"]}',
    "bad_in_skeleton": b'{"a": "\xe2\x82", "items": []}',
    "latin1": b'{"items": ["caf\xe9"]}',
    # too deep for the bracket check
    "too_deep": b'{"items": [' + b"[" * 70 + b"]" * 70 + b"]}",
}


@pytest.mark.parametrize("name", sorted(NONE_CASES))
def test_refused(tmp_path, name):
    p = write(tmp_path, NONE_CASES[name])
    for chunk in NEG_CHUNKS:
        assert scan(p, chunk) is None, (name, chunk)


def test_refused_cases_are_not_lists_to_orjson_or_are_unusual():
    """The refusal cases are, each, invalid JSON, not a dict with one items list, or one of the
    documented oddities (duplicate or escaped keys, nesting deeper than MAX_DEPTH)."""
    odd = {"escaped_key_only", "key_with_escaped_quote", "dup_arrays", "dup_arrays_2",
           "dup_value_first", "dup_value_after", "dup_escaped_after", "dup_escaped_before",
           "dup_nested_ok_but_top_twice", "too_deep", "items2", "xitems", "capital_items",
           "items_as_value", "nested_only", "items_object", "items_number", "items_string",
           "items_in_string", "no_items", "array_top"}
    for name, data in NONE_CASES.items():
        try:
            orjson.loads(data)
        except orjson.JSONDecodeError:
            continue
        assert name in odd, name


# ------------------------------------------------------------------ mutated documents
BASES = [VALID[k] for k in ("kubectl", "escapes", "brackets_in_strings", "nested_items",
                             "scalars_spaced", "multibyte", "lookalike_keys", "string_items")]
MUTATION_BYTES = b'{}[],:"\\ \nx1'


def mutate(data: bytes, rnd: random.Random) -> bytes:
    for _ in range(rnd.randint(1, 3)):
        i = rnd.randrange(len(data) + 1)
        op = rnd.random()
        ch = bytes([rnd.choice(MUTATION_BYTES)])
        if op < 0.4 and i < len(data):
            data = data[:i] + data[i + 1:]  # delete
        elif op < 0.8:
            data = data[:i] + ch + data[i:]  # insert
        elif i < len(data):
            data = data[:i] + ch + data[i + 1:]  # replace
    return data


def test_mutated_documents_never_wrong(tmp_path):
    rnd = random.Random(1234)
    taken = refused = 0
    p = tmp_path / "m.json"
    for _ in range(600):
        data = mutate(rnd.choice(BASES), rnd)
        p.write_bytes(data)
        for chunk in (rnd.choice([1, 2, 3, 5]), None):
            if check_never_wrong(scan(p, chunk), data):
                taken += 1
            else:
                refused += 1
    assert taken and refused  # both outcomes happen


@settings(HYP, max_examples=40)
@given(doc=list_docs(), seed=st.integers(0, 2**32))
def test_mutated_random_documents_never_wrong(tmp_path, doc, seed):
    rnd = random.Random(seed)
    data = mutate(rnd.choice(serializations(doc, seed)), rnd)
    p = write(tmp_path, data)
    for chunk in (rnd.choice([1, 2, 3, 7]), None):
        check_never_wrong(scan(p, chunk), data)


def test_api_types(tmp_path):
    data = VALID["kubectl"]
    layout = scan_list(write(tmp_path, data))
    assert isinstance(layout, ListLayout)
    assert isinstance(layout.skeleton, bytes) and isinstance(layout.sha256, str)
    assert layout.items.shape == (2, 2) and layout.items.dtype == np.int64
    assert scan_list(write(tmp_path, b'{"items": []}')).items.shape == (0, 2)
    with pytest.raises(ValueError):
        scan_list(write(tmp_path, data), chunk_bytes=0)
