"""A simulated fleet's landing folder, mutated as an attacker or an unlucky operator would:
lone surrogates, damaged first lines, extreme timestamps, oversized records, truncated lines,
byte-identical copies of files. Seeded (a failure names its round and is reproduced by it),
over 10,000 mutated records per run, on each of the three landing paths. Every run completes,
every file's records in = loaded + quarantined + skipped, every mutated line is quarantined
with its line number, and two runs of the same folder give identical marts."""

from __future__ import annotations

import random
import re
import shutil
from pathlib import Path

import pytest

from recon.config import Landing
from recon.db import connect
from recon.ingest import jsonl, lists
from recon.ingest.land import load_folder

LIMITS = Landing(max_record_bytes=32 << 10)  # an oversized record stays cheap to write
BAD_TIMES = ["0001-01-01T00:00:00Z", "-2026-06-01T00:00:00Z", "9999-12-31T23:59:59Z",
             "1969-12-31T23:59:59Z", "2100-01-01T00:00:00Z", "infinity", "294247-01-01"]
ROUNDS = 12
COPIES = 8  # each JSON Lines file's lines, written this many times over (distinct mutations)
LINE_MUTATION = 0.7  # share of JSON Lines lines mutated
PER_LINE_FILES = ("watch-pods-00.jsonl", "warm-pool-watch.jsonl", "serverless-jobs.jsonl")
TS = re.compile(rb'"(20[0-9]{2}-[0-9]{2}-[0-9]{2}[T ][0-9:.]+Z?)"')
STRING = re.compile(rb'": ?"([^"\\]{1,60})"')


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """The files of `recon simulate --seed 1 --days 1 --nodes 3` (ground truth left out)."""
    from recon.simulate import simulate

    root = tmp_path_factory.mktemp("fleet")
    simulate(root / "sim", seed=1, days=1, nodes=3, endpoints=1)
    files = {p.relative_to(root / "sim"): p.read_bytes() for p in sorted((root / "sim").rglob("*"))
             if p.is_file() and "expected" not in p.parts}
    shutil.rmtree(root)
    return files


def _mutate(rng: random.Random, text: bytes) -> tuple[bytes, str]:
    """One mutation of a record's text (a line, or a spot in a document)."""
    kind = rng.choice(("surrogate", "timestamp", "oversized", "timestamp", "surrogate"))
    spots = list((TS if kind == "timestamp" else STRING).finditer(text))
    if not spots:
        return text, ""
    m = rng.choice(spots)
    a, b = m.span(1)
    if kind == "timestamp":
        new = rng.choice(BAD_TIMES).encode()
    elif kind == "surrogate":
        new = text[a:b] + rng.choice((b"\\ud83d", b"\\udc00", b"\\ud83d\\u0041"))
    else:
        new = b"x" * (LIMITS.max_record_bytes + rng.randint(1, 5000))
    return text[:a] + new + text[b:], kind


def _jsonl(rng: random.Random, data: bytes) -> tuple[bytes, dict[int, str]]:
    """The file's lines COPIES times over, LINE_MUTATION of them mutated; {line: mutation}."""
    src = [ln for ln in data.split(b"\n") if ln.strip()]
    out, mutated = [], {}
    for _ in range(COPIES):
        for ln in src:
            if rng.random() < LINE_MUTATION:
                if rng.random() < 0.15:
                    ln, kind = ln[:rng.randint(1, len(ln) - 1)], "truncated"
                else:
                    ln, kind = _mutate(rng, ln)
                if kind:
                    mutated[len(out) + 1] = kind
            out.append(ln)
    if rng.random() < 0.5:  # a damaged first line: half of it, or a lone brace
        out[0] = rng.choice((b"{", out[0][:len(out[0]) // 2]))
        mutated[1] = "first line"
    return b"\n".join(out) + b"\n", mutated


def _folder(rng: random.Random, fleet: dict, d: Path) -> tuple[dict, int]:
    """Write a mutated copy of `fleet` into `d`: ({file: {line: mutation}}, records mutated)."""
    expect, n = {}, 0
    for rel, data in fleet.items():
        p = d / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if p.suffix == ".jsonl":
            data, mutated = _jsonl(rng, data)
            expect[str(p.resolve())] = mutated
            n += len(mutated)
        elif p.suffix == ".json":
            for _ in range(rng.randint(0, 3)):
                data, kind = _mutate(rng, data)
                n += bool(kind)
        p.write_bytes(data)
    for rel in rng.sample(sorted(fleet), 2):  # byte-identical copies under another name
        src = d / rel
        shutil.copy(src, src.with_name("copy-of-" + src.name))
        if src.suffix == ".jsonl":
            expect[str(src.with_name("copy-of-" + src.name).resolve())] = expect[str(src.resolve())]
    return expect, n


def _check_landed(con, expect: dict) -> None:
    files = con.execute("select source_file, records_in, records_loaded, records_quarantined, "
                        "records_skipped, kind from raw.files").fetchall()
    assert files
    # a byte-identical copy lands once: whichever of the pair is met second is recorded as a
    # duplicate, every record of it skipped, and its twin carries the expected quarantines
    duplicates = {f for f, *_, kind in files if kind == "duplicate"}
    for f in list(expect):
        twin = (str(Path(f).with_name(Path(f).name.removeprefix("copy-of-")))
                if Path(f).name.startswith("copy-of-")
                else str(Path(f).with_name("copy-of-" + Path(f).name)))
        if twin in expect:
            assert (f in duplicates) != (twin in duplicates), (f, "exactly one of a pair lands")
    raw_n = dict(con.execute("""select source_file, count(*) from (
        select source_file from raw.k8s_objects union all select source_file from raw.runpod_billing
        union all select source_file from raw.runpod_inventory union all
        select source_file from raw.serverless_jobs union all select source_file from raw.focus_rows
        union all select source_file from raw.prometheus_series) group by all""").fetchall())
    quarantine = {}
    for f, loc, reason in con.execute("select source_file, locator, reason from raw.quarantine"
                                      ).fetchall():
        assert reason, (f, loc)
        quarantine.setdefault(f, []).append(loc)
    for f, n_in, n_loaded, n_quar, n_skip, _ in files:
        assert n_in == n_loaded + n_quar + n_skip, f
        assert raw_n.get(f, 0) == n_loaded, f
        assert len(quarantine.get(f, [])) == n_quar, f
        if f in duplicates:
            assert (n_loaded, n_quar) == (0, 0) and n_skip == n_in > 0, f
            continue
        if f not in expect:
            continue
        lines = {int(m.group(1)) for loc in quarantine.get(f, [])
                 if (m := re.match(r"line (\d+)", loc))}
        missed = {no: kind for no, kind in expect[f].items() if no not in lines}
        assert not missed, (f, sorted(missed.items())[:5])
        if Path(f).name.removeprefix("copy-of-") in PER_LINE_FILES:  # one record a line
            text = Path(f).read_bytes()
            assert n_in == sum(1 for ln in text.split(b"\n") if ln.strip()), f
    # nothing landed that landing must refuse
    for t in ("k8s_objects", "runpod_billing", "runpod_inventory", "serverless_jobs"):
        too_big, bad_time = con.execute(
            f"select count(*) filter (where strlen(doc::varchar) > {LIMITS.max_record_bytes}), "
            f"count(*) filter (where regexp_matches(doc::varchar, "
            f"'\"(?:0001-01-01T|-2026-|9999-12|1969-12|2100-01-01T|infinity|294247-)')) "
            f"from raw.{t}").fetchone()
        assert (too_big, bad_time) == (0, 0), t


def test_mutated_folders_land_every_record_accounted(fleet, tmp_path, monkeypatch):
    mutated = 0
    for i in range(ROUNDS):
        rng = random.Random(f"fuzz-landing-{i}")
        path = ("fast", "lists", "python")[i % 3]  # DuckDB's JSON Lines / List path, Python's
        monkeypatch.setattr(lists, "LIST_MIN_BYTES", 0 if path == "lists" else 4 << 20)
        monkeypatch.setattr(jsonl, "FAST_MIN_BYTES", 1 << 40 if path == "python" else 0)
        d = tmp_path / f"round-{i}"
        expect, n = _folder(rng, fleet, d)
        mutated += n
        con = connect(None)
        try:
            load_folder(con, d, limits=LIMITS)
            _check_landed(con, expect)
        except AssertionError as e:
            raise AssertionError(f"round {i} ({path} path): {e}") from None
        finally:
            con.close()
        shutil.rmtree(d)
    assert mutated >= 10_000, mutated


def _marts_digest(db: Path) -> dict:
    con = connect(db, read_only=True)
    try:
        tables = [r[0] for r in con.execute(
            "select table_name from information_schema.tables where table_schema = 'marts' "
            "order by 1").fetchall()]
        return {t: con.execute(f"select count(*), coalesce(sum(hash(m)::hugeint), 0) "
                               f"from marts.{t} m").fetchone() for t in tables}
    finally:
        con.close()


def test_two_runs_of_one_mutated_folder_give_identical_marts(fleet, tmp_path):
    from recon.pipeline import run

    rng = random.Random("fuzz-landing-marts")
    d = tmp_path / "in"
    expect, n = _folder(rng, fleet, d)
    assert n > 100
    (d / "recon.toml").write_text((d / "recon.toml").read_text() + (
        f"\n[landing]\nmax_record_bytes = {LIMITS.max_record_bytes}\n"))
    digests = []
    for k in range(2):
        res = run(d, tmp_path / f"run-{k}.duckdb")
        assert res.records_in == res.loaded + res.quarantined + res.skipped
        assert res.quarantined >= len(expect) and res.loaded > 0
        digests.append(_marts_digest(tmp_path / f"run-{k}.duckdb"))
    assert digests[0] and digests[0] == digests[1]
    assert sum(rows for rows, _ in digests[0].values()) > 0
