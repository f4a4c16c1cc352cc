"""`recon publish`: the marts as Hive-partitioned Parquet in a folder or an S3 prefix, so that
dashboards and other engines (Spark, Trino, Athena, BigQuery external tables) read them without
the DuckDB file.

Layout under the destination `OUT` (a folder, or `s3://BUCKET/PREFIX`):

    OUT/marts/<table>/day=YYYY-MM-DD/part-0.parquet   # a mart with a `day` column, per day
    OUT/marts/<table>/part-0.parquet                  # a mart without one
    OUT/marts/_manifest.json                          # per file: rows, bytes, sha256, run

A shard's warehouse (recon/shards.py) publishes its own rows one partition level down, so
that shards publishing to one destination never write the same object, and a reader's
`hive_partitioning` gives every row its `shard`:

    OUT/marts/<table>/day=YYYY-MM-DD/shard=<s>/part-0.parquet
    OUT/marts/<table>/shard=<s>/part-0.parquet
    OUT/marts/_manifest.shard=<s>.json                # each shard's own manifest
    OUT/shard_claims/shard=<s>/part-0.parquet         # the resources its nodes claim, which
                                                      # the __unassigned__ shard reads

The `day` column lives in the folder name only (the Hive convention: a partition key is not
also a column of the files, which BigQuery's hive partitioning refuses). Each file is DuckDB's `COPY ... (FORMAT parquet, COMPRESSION zstd)` of the mart's rows
in `order by all`: decimals stay DECIMAL, timestamps are Parquet timestamps adjusted to UTC,
HUGEINT (which Parquet lacks) becomes DECIMAL(38,0),
and the same rows give the same bytes, so a rerun on an unchanged warehouse rewrites every file
identically (the manifest holds nothing that changes between runs: no time of publishing).

A command never destroys data it did not create: publish writes or replaces only the
`part-0.parquet` files of the partitions it names and the manifest, and deletes nothing. A day
that a mart held when it was published and no longer holds (in the days the mart keeps, below)
is rewritten as an empty file rather than left stale or removed. A manifest that is not one of
publish's own is refused rather than overwritten.

Which days a mart is authoritative for: the marts that keep every day built, every day; the
marts holding the last run's window (`window = "last_run"` in sql/marts/_models.toml), that
window only (`cfg('day_from')..cfg('day_to')`): a day outside it is not in the warehouse any
more, which says nothing about that day, so its published partition stays as it is.

Local files are written to a hidden temporary file in their own folder, then renamed over the
old one (atomic on POSIX). S3 objects are one PUT each (no multipart: a reader sees the old
object or the new one, never a part; a single PUT takes up to 5 GB), retried on 5xx and
throttling by the client as the mirror's reads are; credentials come from the environment only
and errors name the bucket and prefix, never a secret (recon/ingest/mirror.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from ..ingest import mirror
from ..schema import MARTS

ROOT = "marts"
MANIFEST = f"{ROOT}/_manifest.json"
PART = "part-0.parquet"
FORMAT = "recon-publish/1"  # the manifest's own mark: another file by that name is not ours
COPY_OPTIONS = "FORMAT parquet, COMPRESSION zstd"
DAY = '"day"'  # the partition column, as it stands in a select list


@dataclass
class PublishResult:
    out: str
    written: list[dict] = field(default_factory=list)  # manifest entries of the files written
    tables: int = 0
    manifest: str = MANIFEST

    @property
    def bytes(self) -> int:
        return sum(e["bytes"] for e in self.written)

    def summary(self) -> str:
        days = {e["day"] for e in self.written if e["day"]}
        return (f"published {len(self.written)} file(s) ({self.bytes / 1e6:.1f} MB) of "
                f"{self.tables} mart(s), {len(days)} day(s), to {self.out}; manifest "
                f"{_join(self.out, self.manifest)}")


def _join(out: str, rel: str) -> str:
    return out.rstrip("/") + "/" + rel


class _Folder:
    """A local destination: atomic writes, nothing removed."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.url = str(root)

    def read(self, rel: str) -> bytes | None:
        try:
            return (self.root / rel).read_bytes()
        except FileNotFoundError:
            return None

    def write(self, rel: str, make: Callable[[Path], None]) -> Path:
        """`make(tmp)` writes the file's content to `tmp` (beside the target); the target is then
        replaced by it. Returns the target."""
        dest = self.root / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
        os.close(fd)
        try:
            make(Path(tmp))
            os.replace(tmp, dest)
        finally:
            Path(tmp).unlink(missing_ok=True)
        return dest


class _Bucket:
    """An S3 prefix: one PUT per object, through obstore, as the mirror reads."""

    def __init__(self, url: str, store=None) -> None:
        try:
            bucket, prefix = mirror.parse_url(url)
        except ValueError as e:  # the same rules as an input, said of a destination
            raise ValueError(str(e).replace("as input", "as a destination")) from None
        self.url = f"s3://{bucket}/{prefix}"
        try:
            self.store = store if store is not None else mirror.open_store(bucket, prefix)
        except Exception as e:  # noqa: BLE001 - the client's configuration errors: one sentence
            raise mirror._store_error(e, "writing", self.url) from None

    def read(self, rel: str) -> bytes | None:
        import obstore

        try:
            return bytes(obstore.get(self.store, rel).bytes())
        except FileNotFoundError:
            return None
        except Exception as e:  # noqa: BLE001 - one sentence, no credential
            raise mirror._store_error(e, "getting", self.url + rel) from None

    def put(self, rel: str, data: bytes) -> None:
        import obstore

        try:
            obstore.put(self.store, rel, data, use_multipart=False)
        except Exception as e:  # noqa: BLE001 - one sentence, no credential
            raise mirror._store_error(e, "writing", self.url + rel) from None


# Parquet has no 128-bit integer, and DuckDB writes HUGEINT as DOUBLE (rounding past 2^53):
# DECIMAL(38,0) holds every HUGEINT a mart holds (milliseconds, well under 10^38) exactly
EXACT = {"HUGEINT": "DECIMAL(38,0)", "UHUGEINT": "DECIMAL(38,0)"}


def _marts(con) -> dict[str, list[str]]:
    """The marts of recon/schema.py the warehouse holds: each one's select list, in column
    order (a type Parquet cannot hold exactly cast to one it can)."""
    have: dict[str, list[str]] = {t: [] for t in MARTS}
    for table, column, kind in con.execute(
            "select table_name, column_name, data_type from information_schema.columns "
            "where table_schema = 'marts' and table_catalog = current_database() "
            "order by table_name, ordinal_position").fetchall():
        if table in have:
            name = '"' + column.replace('"', '""') + '"'
            have[table].append(f"{name}::{EXACT[kind]} as {name}" if kind in EXACT else name)
    return {t: cols for t, cols in have.items() if cols}


def _last_run_window(con) -> tuple[date, date]:
    lo, hi = con.execute("select cfg('day_from')::date, cfg('day_to')::date").fetchone()
    return lo, hi


def _runs(con) -> tuple[dict[date, tuple[str | None, str | None]], tuple[str | None, str | None]]:
    """What the warehouse says built what: per day, `meta.published_days`' gate run and time of
    publication (the daily flow's); for the rest, the last run of the gate
    (`marts.validation_results`), or nothing when neither exists."""
    def has(schema: str, table: str) -> bool:
        return bool(con.execute("select count(*) from information_schema.tables where "
                                "table_schema = ? and table_name = ? and table_catalog = "
                                "current_database()", [schema, table]).fetchone()[0])

    per_day: dict[date, tuple[str | None, str | None]] = {}
    if has("meta", "published_days"):
        for d, run, at in con.execute("select day, validation_run, published_at "
                                      "from meta.published_days").fetchall():
            per_day[d] = (run, at.isoformat() if at is not None else None)
    last: tuple[str | None, str | None] = (None, None)
    if has("marts", "validation_results"):
        # (`at` is a keyword of DuckDB's grammar: the alias is last_checked)
        row = con.execute("select run_id, max(checked_at) as last_checked from marts.validation_results "
                          "group by run_id order by last_checked desc, run_id limit 1").fetchone()
        if row:
            last = (row[0], row[1].isoformat() if row[1] is not None else None)
    return per_day, last


def _load_manifest(dest, shown: str, name: str = MANIFEST) -> dict:
    raw = dest.read(name)
    if raw is None:
        return {"format": FORMAT, "tables": {}}
    try:
        data = json.loads(raw)
    except ValueError:
        data = None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"{_join(shown, name)} exists and is not a manifest of recon "
                         f"publish: not overwritten; publish to another destination, or move it")
    return data


def _copy(con, sql: str, params: list, path: Path) -> None:
    target = str(path).replace("'", "''")
    con.execute(f"copy ({sql}) to '{target}' ({COPY_OPTIONS})", params)


def publish(con, out: str | Path, day_from: date | None = None, day_to: date | None = None,
            progress: Callable[[int, int, str], None] | None = None,
            store=None) -> PublishResult:
    """Write the marts of the warehouse behind `con` (read-only is enough) to `out`, a folder or
    `s3://BUCKET/PREFIX`; with `day_from`/`day_to`, only those days' partitions (the marts
    without a day column always). `progress(i, n, path)` after each file; `store`: an obstore
    store to use for an s3:// `out` instead of one from the environment."""
    remote = mirror.is_remote(str(out))
    dest = _Bucket(str(out), store) if remote else _Folder(Path(out))
    shown = dest.url
    from ..shards import WHOLE, lens_shard

    shard = lens_shard(con)
    level = f"/shard={shard}" if shard else ""
    manifest_name = f"{ROOT}/_manifest.shard={shard}.json" if shard else MANIFEST
    manifest = _load_manifest(dest, shown, manifest_name)
    marts = _marts(con)
    window = _last_run_window(con)
    last_run = _last_run_marts()
    per_day, last = _runs(con)
    lo, hi = day_from or date.min, day_to or date.max

    todo: list[tuple[str, date | None]] = []
    for table, cols in marts.items():
        if DAY not in cols:
            todo.append((table, None))
            continue
        a, b = lo, hi
        if table in last_run:
            a, b = max(a, window[0]), min(b, window[1])
        days = {r[0] for r in con.execute(
            f"select distinct day from marts.{table} where day between ? and ?", [a, b]).fetchall()}
        # a day published before and no longer held: an empty file, never a stale one
        for e in manifest["tables"].get(table, {}).get("partitions", []):
            if e["day"] and a <= date.fromisoformat(e["day"]) <= b:
                days.add(date.fromisoformat(e["day"]))
        todo += [(table, d) for d in sorted(days)]

    res = PublishResult(out=shown, tables=len(marts), manifest=manifest_name)
    if shard:  # written first and whole: the __unassigned__ shard reads it (recon/shards.py)
        todo.insert(0, ("shard_claims", None))
    scratch = tempfile.TemporaryDirectory(prefix="recon-publish-") if remote else None
    try:
        for i, (table, day) in enumerate(todo):
            if table == "shard_claims":
                rel, params, run = f"shard_claims{level}/{PART}", [], last
                sql = f"select resource_id, cluster, node_name from {WHOLE}.meta.shard_claims"
            elif day is None:
                cols = marts[table]
                rel, params = f"{ROOT}/{table}{level}/{PART}", []
                sql = f"select {', '.join(cols)} from marts.{table}"
                run = last
            else:
                cols = marts[table]
                rel = f"{ROOT}/{table}/day={day.isoformat()}{level}/{PART}"
                kept = ", ".join(c for c in cols if c != DAY)
                sql = f"select {kept} from marts.{table} where day = ?"
                params = [day]
                run = per_day.get(day, last)
            sql += " order by all"
            rows = con.execute(f"select count(*) from ({sql})", params).fetchone()[0]
            info: dict = {}

            def make(path: Path, sql=sql, params=params, info=info) -> None:
                _copy(con, sql, params, path)
                digest = hashlib.sha256()
                with open(path, "rb") as f:
                    while chunk := f.read(1 << 20):
                        digest.update(chunk)
                info.update(bytes=path.stat().st_size, sha256=digest.hexdigest())

            if remote:
                part = Path(scratch.name) / "part.parquet"
                make(part)
                dest.put(rel, part.read_bytes())
            else:
                dest.write(rel, make)
            entry = {"day": day.isoformat() if day else None, "path": rel, "rows": rows,
                     "bytes": info["bytes"], "sha256": info["sha256"], "run_id": run[0],
                     "built_at": run[1]}
            tables = manifest["tables"].setdefault(
                table, {"partition_column": "day" if day else None, "partitions": []})
            if shard:
                tables["shard"] = shard
            tables["partitions"] = sorted(
                [e for e in tables["partitions"] if e["path"] != rel] + [entry],
                key=lambda e: e["path"])
            res.written.append(entry)
            if progress:
                progress(i + 1, len(todo), _join(shown, rel))
    finally:
        if scratch is not None:
            scratch.cleanup()
    manifest["tables"] = dict(sorted(manifest["tables"].items()))
    data = (json.dumps(manifest, indent=1, sort_keys=True) + "\n").encode()
    if remote:
        dest.put(manifest_name, data)
    else:
        dest.write(manifest_name, lambda p: p.write_bytes(data))
    return res


def _last_run_marts() -> set[str]:
    from ..build.model_settings import load

    return {name for (layer, name), s in load().items() if layer == "marts" and s.last_run}
