"""`recon run --input s3://BUCKET/PREFIX`: the landing area read from an S3-compatible store.

Everything goes through the real client (obstore) over HTTP to moto's S3 server on 127.0.0.1
(tests/fakes/s3_server.py), credentials from the environment as in production. S3's behaviour
cited here is the Amazon S3 API Reference: ListObjectsV2 (keys under a prefix, with ETag, Size,
LastModified), GetObject, and "Error responses" (NoSuchBucket 404, AccessDenied 403,
SignatureDoesNotMatch 403, SlowDown 503: "Reduce your request rate").
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recon.cli import app
from recon.db import connect
from recon.ingest import land, mirror
from recon.pipeline import run
from recon.simulate import simulate
from tests.fakes.s3_server import fake_s3

BUCKET = "recon-landing"
ACCESS_KEY = "AKIARECONTESTKEY0001"
SECRET_KEY = "PLANTED/secret+key/do-not-show-0123456789"
BROKEN = "k8s/cluster=sim-cluster/watch-pods-00.jsonl"  # its last line is no JSON (below)
MARTS = ("resource_day", "billed_segments", "allocation", "waste", "findings", "settlement")


@pytest.fixture(scope="module")
def s3():
    with pytest.MonkeyPatch.context() as mp, fake_s3(mp, ACCESS_KEY, SECRET_KEY, (BUCKET,)) as fake:
        yield fake


@pytest.fixture(scope="module")
def landing(tmp_path_factory, s3):
    """A one-day, two-node simulated landing area, one line of it broken, as a local folder and
    as the objects under s3://recon-landing/landing/ (the same bytes)."""
    root = tmp_path_factory.mktemp("landing") / "in"
    simulate(root, seed=3, days=1, nodes=2)
    with open(root / BROKEN, "a") as f:
        f.write("{not json\n")
    files = sorted(p for p in root.rglob("*") if p.is_file())
    for p in files:
        s3.put(BUCKET, "landing/" + p.relative_to(root).as_posix(), p.read_bytes())
    return root, files


def rows(db: Path, mart: str) -> list[tuple]:
    con = connect(db, read_only=True)
    try:
        return con.execute(f"select * from marts.{mart} order by all").fetchall()
    finally:
        con.close()


def query(db: Path, sql: str) -> list[tuple]:
    con = connect(db, read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_s3_input_gives_the_marts_of_the_local_folder(tmp_path, s3, landing):
    root, files = landing
    local = run(root, tmp_path / "local.duckdb")
    out = CliRunner().invoke(app, ["run", "--input", f"s3://{BUCKET}/landing", "--db",
                                   str(tmp_path / "s3.duckdb"), "--no-validate"])
    assert out.exit_code == 0, out.output
    # every object listed and downloaded once: the files written above, and their bytes
    size = sum(p.stat().st_size for p in files)
    assert (f"s3://{BUCKET}/landing/: {len(files)} object(s) listed, {len(files)} downloaded "
            f"({size / 1e6:.1f} MB), 0 unchanged") in " ".join(out.output.split())
    for mart in MARTS:
        assert rows(tmp_path / "s3.duckdb", mart) == rows(tmp_path / "local.duckdb", mart), mart
    assert query(tmp_path / "s3.duckdb", "select sum(billed_amount) > 0 from marts.resource_day"
                 ) == [(True,)]  # the marts compared hold a bill, not two empty tables
    # files are named by their objects' URLs, never by the cache folder
    names = [r[0] for r in query(tmp_path / "s3.duckdb", "select source_file from raw.files")]
    assert len(names) == len(local.files)
    assert all(n.startswith(f"s3://{BUCKET}/landing/") for n in names), names
    assert not [n for n in names if "landing-cache" in n]
    # the broken line is quarantined with its object's URL and its line number (the file's
    # line count: the line appended last)
    lines = (root / BROKEN).read_text().count("\n")
    assert query(tmp_path / "s3.duckdb", "select source_file, locator from raw.quarantine") == [
        (f"s3://{BUCKET}/landing/{BROKEN}", f"line {lines}")]
    # the cache is beside the warehouse, as the store has it
    cached = tmp_path / "landing-cache" / BUCKET / "landing" / BROKEN
    assert cached.read_bytes() == (root / BROKEN).read_bytes()


def test_rerun_downloads_nothing_and_a_changed_object_is_read_again(tmp_path, s3, landing):
    root, files = landing
    db, url = tmp_path / "w.duckdb", f"s3://{BUCKET}/landing"
    first = run(url, db)
    assert first.mirror.downloaded == len(files)
    before = query(db, "select * from raw.files order by all")

    s3.clear()
    again = run(url, db)
    assert (again.mirror.downloaded, again.mirror.unchanged) == (0, len(files))
    assert (s3.count("list"), s3.count("get")) == (1, 0)  # one listing, no download
    assert all(f.unchanged for f in again.files)
    assert query(db, "select * from raw.files order by all") == before

    # the broken line rewritten with the same length: same size, another ETag (the same size
    # within the same second: the next test)
    old = (root / BROKEN).read_bytes()
    new = old.replace(b"{not json\n", b"{NOT JSON\n")
    assert len(new) == len(old) and new != old
    s3.clear()
    s3.put(BUCKET, f"landing/{BROKEN}", new)
    changed = run(url, db)
    assert (changed.mirror.downloaded, changed.mirror.unchanged) == (1, len(files) - 1)
    assert s3.count("get") == 1
    read = [f for f in changed.files if not f.unchanged]
    assert [f.path for f in read] == [f"s3://{BUCKET}/landing/{BROKEN}"]
    assert query(db, "select record from raw.quarantine") == [("{NOT JSON",)]

    # an object gone from the store: its cached copy goes, what it landed stays
    gone = "runpod/balance.json"
    s3.delete(BUCKET, f"landing/{gone}")
    after = run(url, db)
    assert after.mirror.removed == [gone]
    assert not (tmp_path / "landing-cache" / BUCKET / "landing" / gone).exists()
    assert query(db, f"select count(*) from raw.files where source_file = "
                     f"'s3://{BUCKET}/landing/{gone}'") == [(1,)]
    for key in (gone, BROKEN):  # the store as the module's other tests expect it
        s3.put(BUCKET, f"landing/{key}", (root / key).read_bytes())


def test_an_object_rewritten_within_its_second_at_the_same_size_is_read_again(tmp_path, s3,
                                                                             landing):
    """LastModified has whole seconds (ListObjectsV2's `LastModified`), and the loader skips a
    file whose size and mtime are those it landed: the cached copy's mtime carries a part of
    the ETag below the millisecond, so that the second version differs."""
    root, _ = landing
    old = (root / BROKEN).read_bytes()
    new = old.replace(b"{not json\n", b"{NOT JSON\n")
    url, key = f"s3://{BUCKET}/same-second", f"same-second/{BROKEN}"
    for attempt in range(5):  # until both versions are written within one second
        con = connect(None)
        s3.put(BUCKET, key, old)
        first = mirror.mirror(url, tmp_path / str(attempt))
        written = mirror._load_manifest(first.folder, first.url)[BROKEN]["last_modified"]
        land.load_folder(con, first.folder, source_root=first.url)
        s3.put(BUCKET, key, new)
        second = mirror.mirror(url, tmp_path / str(attempt))
        if mirror._load_manifest(first.folder, first.url)[BROKEN]["last_modified"] == written:
            break
    else:
        pytest.skip("no two writes within one second in 5 tries")
    assert second.downloaded == 1
    [r] = land.load_folder(con, second.folder, source_root=second.url)
    assert not r.unchanged
    assert con.execute("select record from raw.quarantine").fetchall() == [("{NOT JSON",)]


def test_a_503_on_the_first_list_and_get_is_retried(tmp_path, s3, landing):
    _, files = landing
    s3.clear()
    s3.fail("list", 503, "SlowDown")
    s3.fail("get", 503, "SlowDown")
    res = mirror.mirror(f"s3://{BUCKET}/landing", tmp_path)
    assert res.downloaded == len(files)
    # one 503 then the answer: LIST twice; GET once per object plus the one retried
    assert (s3.count("list", 503), s3.count("list", 200)) == (1, 1)
    assert (s3.count("get", 503), s3.count("get", 200)) == (1, len(files))


def test_an_object_deleted_between_the_list_and_its_get_is_gone(tmp_path, s3, landing):
    """GetObject of a key deleted since the listing answers 404 NoSuchKey: the object is
    gone, as if it had not been listed, and the run goes on."""
    _, files = landing
    s3.clear()
    s3.fail("get", 404, "NoSuchKey")
    res = mirror.mirror(f"s3://{BUCKET}/landing", tmp_path)
    [(_, _, key, _)] = [r for r in s3.seen if r[0] == "get" and r[3] == 404]
    gone = key.removeprefix("landing/")
    assert res.removed == [gone] and res.downloaded == len(files) - 1
    assert not (res.folder / gone).exists()
    assert gone not in mirror._load_manifest(res.folder, res.url)


def test_keys_without_a_safe_local_path(tmp_path, s3):
    """S3 keys are any UTF-8 (ListObjectsV2 returns them as written). `a\\b` is no POSIX path
    part, and `d` beside `d/e.json` is a file where a folder must be: not mirrored, named. `a/../../x` would write outside the cache folder: the client
    (object_store's Path) refuses to list a prefix holding it, and the error names the key."""
    s3.clear()
    for key in ("unsafe/ok.json", "unsafe/a\\b.json", "unsafe/d", "unsafe/d/e.json"):
        s3.put(BUCKET, key, b"{}")
    res = mirror.mirror(f"s3://{BUCKET}/unsafe", tmp_path / "cache")
    assert res.refused == ["a\\b.json", "d"]  # `d` is also the folder of d/e.json
    assert res.downloaded == 2 and (res.folder / "ok.json").read_bytes() == b"{}"
    assert sorted(p.relative_to(res.folder).as_posix() for p in res.folder.rglob("*")
                  if p.is_file() and p.name != mirror.MANIFEST) == ["d/e.json", "ok.json"]
    assert ("2 not mirrored (no local path: a key with a backslash or NUL, named as the "
            "mirror's manifest, or that is also a folder of other keys)") in res.summary()

    s3.put(BUCKET, "unsafe/a/../../../escape.json", b"{}")
    with pytest.raises(mirror.ObjectStoreError) as e:
        mirror.mirror(f"s3://{BUCKET}/unsafe", tmp_path / "cache")
    assert str(e.value) == (f"listing s3://{BUCKET}/unsafe/ failed: the object store client "
                            "cannot list the prefix: 'unsafe/a/../../../escape.json' has a '.', "
                            "'..' or empty part (such as a//b), which it refuses as a path; "
                            "rename that object, or give a prefix without it")
    assert not list(tmp_path.rglob("escape.json"))


def test_a_store_down_past_the_retries_is_a_clear_error(tmp_path, s3, landing, monkeypatch):
    monkeypatch.setattr(mirror, "RETRY", {"max_retries": 2, "retry_timeout": timedelta(seconds=5),
                                          "backoff": {"init_backoff": timedelta(milliseconds=10),
                                                      "max_backoff": timedelta(milliseconds=20),
                                                      "base": 2}})
    s3.clear()
    s3.fail("list", 503, "SlowDown", times=None)
    try:
        with pytest.raises(mirror.ObjectStoreError) as e:
            mirror.mirror(f"s3://{BUCKET}/landing", tmp_path)
        assert s3.count("list", 503) == 3  # the request and its 2 retries
    finally:
        s3.clear()
    assert str(e.value) == (f"listing s3://{BUCKET}/landing/ failed: SlowDown (HTTP 503) "
                            "after 2 retries")


def _cli_error(tmp_path, url: str) -> str:
    out = CliRunner().invoke(app, ["run", "--input", url, "--db", str(tmp_path / "w.duckdb"),
                                   "--no-validate"])
    assert out.exit_code == 1, out.output
    text = " ".join(out.output.split())
    assert SECRET_KEY not in text and ACCESS_KEY not in text
    return text


def test_no_such_bucket_names_the_bucket(tmp_path, s3):
    s3.clear()
    text = _cli_error(tmp_path, "s3://recon-nowhere/landing")
    assert text == ("error: listing s3://recon-nowhere/landing/ failed: bucket 'recon-nowhere' "
                    "does not exist (or is in another account or region): check the URL, "
                    "AWS_REGION and AWS_ENDPOINT_URL")
    assert s3.count("list", 404) == 1  # moto's own NoSuchBucket, not retried


def test_access_denied_names_bucket_and_prefix_without_credentials(tmp_path, s3, landing):
    s3.clear()
    s3.fail("list", 403, "AccessDenied", times=None)
    try:
        text = _cli_error(tmp_path, f"s3://{BUCKET}/landing")
    finally:
        s3.clear()
    assert text == (f"error: listing s3://{BUCKET}/landing/ failed: access denied "
                    f"(AccessDenied, HTTP 403): the credentials in the environment may not list "
                    f"it (s3:ListBucket on {BUCKET})")


def test_refused_credentials_never_echo_the_key(tmp_path, s3, landing):
    """S3's SignatureDoesNotMatch answer carries the request's access key id; the secret key
    planted in the answer too stands for any echo of what the client holds."""
    s3.clear()
    s3.fail("get", 403, "SignatureDoesNotMatch", times=None,
            echo={"AWSAccessKeyId": ACCESS_KEY, "StringToSign": SECRET_KEY})
    try:
        text = _cli_error(tmp_path, f"s3://{BUCKET}/landing")
    finally:
        s3.clear()
    assert text.startswith(f"error: getting s3://{BUCKET}/landing/")
    assert text.endswith("failed: the store refused the credentials (SignatureDoesNotMatch): "
                         "check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (or the role) in the "
                         "environment")


def test_a_prefix_with_nothing_to_land_is_a_failed_run(tmp_path, s3):
    """The rule of a local folder: a run that loaded no record exits 1 (recon/cli/run.py)."""
    s3.clear()
    s3.put(BUCKET, "nothing/notes.txt", b"no billing data here\n")
    out = CliRunner().invoke(app, ["run", "--input", f"s3://{BUCKET}/nothing", "--db",
                                   str(tmp_path / "w.duckdb"), "--no-validate"])
    assert out.exit_code == 1, out.output
    # the file is not recognised: its one record quarantined, by its object's URL
    assert (f"error: no record of s3://{BUCKET}/nothing loaded: 1 file(s), 1 record(s), "
            f"1 quarantined" in " ".join(out.output.split()))
    assert query(tmp_path / "w.duckdb", "select source_file from raw.quarantine") == [
        (f"s3://{BUCKET}/nothing/notes.txt",)]


def test_an_s3_url_with_credentials_or_another_scheme_is_refused_before_any_request(tmp_path,
                                                                                   s3):
    s3.clear()
    out = CliRunner().invoke(app, ["run", "--input", "hdfs://bucket/landing", "--db",
                                   str(tmp_path / "w.duckdb")])
    assert out.exit_code == 2
    assert " ".join(out.output.split()) == ("error: hdfs:// is not supported as input: give a "
                                            "local folder, s3://BUCKET/PREFIX (an S3-compatible "
                                            "store: AWS_ENDPOINT_URL), gs://BUCKET/PREFIX or "
                                            "az://CONTAINER/PREFIX")
    assert not (tmp_path / "w.duckdb").exists()
    out = CliRunner().invoke(app, ["run", "--input", f"s3://{ACCESS_KEY}:{SECRET_KEY}@b/p",
                                   "--db", str(tmp_path / "w.duckdb")])
    assert out.exit_code == 2
    assert SECRET_KEY not in out.output and "credentials come from the environment" in out.output
    assert s3.seen == []
