"""Landing files, state, dedupe memory, backoff and line splitting, without a server."""

from __future__ import annotations

import json
import os
import random
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from connectors.kubernetes import landing as landing_mod
from connectors.kubernetes.helpers import Backoff, TruncatedStream, iter_lines
from connectors.kubernetes.landing import (
    DedupeLRU,
    LandingWriter,
    StateStore,
    seed_from_landing,
    version_key,
)
from tests.connectors.kubernetes.k8s_support import DiskFullOS, daily_reader_keys


def pod(uid: str, rv: int, pad: int = 0) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": uid, "uid": uid, "resourceVersion": str(rv)},
        "x": "y" * pad,
    }


class Clock:
    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now


def test_rows_rotate_by_size_and_every_line_is_complete(tmp_path):
    writer = LandingWriter(tmp_path, "c1", "pods", max_file_bytes=1000, fsync=False)
    sizes = [writer.write("MODIFIED", pod("u1", rv, pad=150)) for rv in range(20)]
    big = writer.write("ADDED", pod("big", 99, pad=3000))  # over the limit: a file of its own
    writer.close()
    files = sorted(tmp_path.rglob("*.jsonl"), key=lambda p: int(p.stem.rsplit("-", 1)[1]))
    assert len(files) > 3
    rvs = []
    for path in files:
        data = path.read_bytes()
        assert data.endswith(b"\n")
        lines = data.split(b"\n")[:-1]
        assert len(data) <= 1000 or len(lines) == 1
        rvs += [json.loads(line)["object"]["metadata"]["resourceVersion"] for line in lines]
    assert rvs == [str(rv) for rv in range(20)] + ["99"]
    assert sum(sizes) + big == sum(p.stat().st_size for p in files)


def test_hour_change_opens_a_new_partition_matching_seen_at(tmp_path):
    clock = Clock(datetime(2026, 6, 1, 11, 59, 59, 900000, tzinfo=UTC))
    writer = LandingWriter(tmp_path, "c1", "events", clock=clock)
    writer.write("ADDED", pod("a", 1))
    clock.now += timedelta(milliseconds=200)
    writer.write("MODIFIED", pod("a", 2))
    writer.close()
    rows = {}
    for path in tmp_path.rglob("*.jsonl"):
        for line in path.read_text().splitlines():
            row = json.loads(line)
            rows[row["seenAt"]] = path.relative_to(tmp_path).parts
    assert rows == {
        "2026-06-01T11:59:59.900000Z": (
            "k8s",
            "cluster=c1",
            "hour=2026-06-01T11",
            f"events-{os.getpid()}-0.jsonl",
        ),
        "2026-06-01T12:00:00.100000Z": (
            "k8s",
            "cluster=c1",
            "hour=2026-06-01T12",
            f"events-{os.getpid()}-1.jsonl",
        ),
    }


def test_never_appends_to_an_existing_file(tmp_path):
    clock = Clock(datetime(2026, 6, 1, 12, tzinfo=UTC))
    hour_dir = tmp_path / "k8s" / "cluster=c1" / "hour=2026-06-01T12"
    hour_dir.mkdir(parents=True)
    crashed = hour_dir / f"pods-{os.getpid()}-0.jsonl"  # same pid (pid 1 in a container)
    crashed.write_bytes(
        b'{"type":"ADDED","object":{"metadata":{"uid":"u","resourceVersion":"1"}}}\n{"type":"MOD'
    )
    writer = LandingWriter(tmp_path, "c1", "pods", clock=clock)
    writer.write("ADDED", pod("u2", 5))
    writer.close()
    assert crashed.read_bytes().endswith(b'{"type":"MOD')
    assert writer.path == hour_dir / f"pods-{os.getpid()}-1.jsonl"
    assert json.loads(writer.path.read_text())["object"]["metadata"]["uid"] == "u2"


@pytest.mark.parametrize("truncate_fails", [False, True], ids=["cut-back", "new-file"])
def test_a_row_cut_short_by_a_full_disk_is_not_glued_to_its_retry(
    tmp_path, monkeypatch, truncate_fails
):
    """The fragment does not stay in the open file: the retried row appended to it would make
    one garbled line, quarantined by the daily reader, and that version lost."""
    disk = DiskFullOS(truncate_fails)
    monkeypatch.setattr(landing_mod, "os", disk)
    writer = LandingWriter(tmp_path, "c1", "pods", fsync=False)
    writer.write("ADDED", pod("u", 1))
    disk.armed = True
    with pytest.raises(OSError, match="No space left"):
        writer.write("MODIFIED", pod("u", 2, pad=200))
    writer.write("MODIFIED", pod("u", 2, pad=200))  # the retry, once space is back
    writer.write("MODIFIED", pod("u", 3))
    writer.close()
    files = sorted(tmp_path.rglob("*.jsonl"), key=lambda p: int(p.stem.rsplit("-", 1)[1]))
    assert files[-1].read_bytes().endswith(b"\n")
    found, bad = daily_reader_keys(tmp_path)
    assert found == {("u", "1"), ("u", "2"), ("u", "3")}
    if truncate_fails:  # the fragment ends a file given up; the retry starts a new one
        assert len(files) == 2 and bad == ["truncated last line (file still being written?)"]
    else:  # cut back: one file of whole lines
        assert len(files) == 1 and bad == []


def test_state_is_saved_atomically_and_reloaded(tmp_path):
    store = StateStore(tmp_path, "c1")
    store.save("pods", "1200")
    store.save("events", "1300")
    store.save("pods", "1400")
    path = tmp_path / "k8s" / "state" / "c1.json"
    assert [p.name for p in path.parent.iterdir()] == ["c1.json"]  # no temp file left
    assert StateStore(tmp_path, "c1").versions() == {"pods": "1400", "events": "1300"}
    path.write_text("{not json")
    assert StateStore(tmp_path, "c1").versions() == {}


def test_seed_reads_only_complete_lines_within_budget(tmp_path):
    writer = LandingWriter(tmp_path, "c1", "pods", fsync=False)
    for rv in range(1, 101):
        writer.write("MODIFIED", pod(f"u{rv % 7}", rv))
    writer.close()
    with open(writer.path, "ab") as fh:
        fh.write(b'{"type":"MODIFIED","object":{"metadata":{"uid":"half","resourceVersion":"101"')
    lru = DedupeLRU(1000)
    line_len = len(writer.path.read_bytes().split(b"\n")[0]) + 1
    seeded = seed_from_landing(lru, tmp_path, "c1", "pods", budget_bytes=10 * line_len + 80)
    assert 8 <= seeded <= 10  # the cut first line and the partial last line are skipped
    assert "u2/100" in lru and "u1/1" not in lru and "half/101" not in lru
    assert seed_from_landing(DedupeLRU(10), tmp_path, "c1", "events", 10**6) == 0


def test_dedupe_lru_is_bounded_and_keeps_recent_keys():
    lru = DedupeLRU(100)
    assert lru.check_and_add("hot")
    for i in range(1000):
        assert lru.check_and_add(f"k{i}")
        if i % 10 == 0:
            assert not lru.check_and_add("hot")  # refreshed, so never evicted
    assert len(lru) == 100
    assert "hot" in lru and "k999" in lru and "k0" not in lru


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 30), max_size=200), st.integers(1, 10))
def test_dedupe_lru_matches_a_reference_model(ops, size):
    lru, model = DedupeLRU(size), []
    for op in ops:
        key = str(op)
        assert lru.check_and_add(key) == (key not in model)
        if key in model:
            model.remove(key)
        model.append(key)
        model = model[-size:]
        assert len(lru) == len(model) and all(k in lru for k in model)


def test_backoff_grows_is_capped_and_jittered():
    backoff = Backoff(0.5, 8.0, random.Random(7))
    delays = [backoff.next_delay() for _ in range(12)]
    for n, delay in enumerate(delays):
        ceiling = min(8.0, 0.5 * 2**n)
        assert ceiling / 2 <= delay <= ceiling
    assert len({round(d, 6) for d in delays[6:]}) > 1  # capped delays still differ
    backoff.reset()
    assert backoff.next_delay() <= 0.5


class _Resp:
    chunked = True

    def __init__(self, chunks):
        self._chunks = chunks

    def stream(self, amt=None, decode_content=None):
        yield from self._chunks


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.text(st.sampled_from('ab{}":é€ \r'), min_size=1, max_size=20).filter(str.strip),
        min_size=1,
        max_size=8,
    ),  # multi-byte characters get cut between chunks too
    st.lists(st.integers(1, 50), min_size=1, max_size=30),
)
def test_watch_lines_survive_any_chunking(lines, cuts):
    data = "".join(line + "\n" for line in lines).encode()
    chunks, pos = [], 0
    for cut in cuts:
        chunks.append(data[pos : pos + cut])
        pos += cut
    chunks.append(data[pos:])
    assert [b.decode() for b in iter_lines(_Resp(chunks))] == lines


def test_a_stream_ending_inside_an_event_is_an_error():
    with pytest.raises(TruncatedStream):
        list(iter_lines(_Resp([b'{"type":"ADDED"}\n{"type":"MOD'])))


def test_version_key_uses_uid_and_resource_version():
    assert version_key(pod("u", 7)) == "u/7"
    assert (
        version_key({"metadata": {"name": "n", "namespace": "ns", "resourceVersion": "3"}})
        == "ns/n/3"
    )
    assert version_key({"metadata": {"uid": "u"}}) is None
