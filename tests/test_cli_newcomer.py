"""What a newcomer types: `recon demo` beside a real warehouse, `recon run` on a folder that
loads nothing, `recon simulate --out` into a folder already in use."""

import hashlib
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recon.cli import app


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _tree(d: Path) -> dict:
    return {str(p.relative_to(d)): _sha(p) for p in sorted(d.rglob("*")) if p.is_file()}


@pytest.fixture
def no_gate(monkeypatch):
    """The demo's run without its gate (Great Expectations costs ~30 s here; not what is tested)."""
    import recon.pipeline

    orig = recon.pipeline.run
    monkeypatch.setattr(recon.pipeline, "run", lambda *a, **k: orig(*a, **{**k, "validate": False}))


def test_the_demo_writes_its_own_warehouse_and_never_one_it_did_not_write(tmp_path, monkeypatch,
                                                                          no_gate):
    import duckdb

    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    mine = tmp_path / "data" / "recon.duckdb"  # `recon run`'s default: 8 days of real work
    con = duckdb.connect(str(mine))
    con.execute("create table days as select range as d from range(8)")
    con.close()
    before = _sha(mine)
    cli = CliRunner()
    r = cli.invoke(app, ["demo", "--days", "1", "--nodes", "2"], terminal_width=300)
    assert r.exit_code == 0, r.output
    assert _sha(mine) == before
    demo = tmp_path / "data" / "demo.duckdb"
    assert duckdb.connect(str(demo), read_only=True).execute(
        "select count(*) from marts.resource_day").fetchone()[0] > 0
    # the next commands it prints name its warehouse, and work as printed
    nxt = [ln.strip().removeprefix("uv run recon ") for ln in r.output.splitlines()
           if ln.strip().startswith("uv run recon ")]
    assert len(nxt) == 4 and all("--db data/demo.duckdb" in ln for ln in nxt), r.output
    report = next(ln for ln in nxt if ln.startswith("report"))
    r = cli.invoke(app, [*report.split(), "--out", str(tmp_path / "r.html")])
    assert r.exit_code == 0 and (tmp_path / "r.html").exists(), r.output
    # pointed at a file it did not write: refused, the file as it was
    r = cli.invoke(app, ["demo", "--db", str(mine)], terminal_width=300)
    assert r.exit_code == 2 and "was not written by `recon demo`" in r.output, r.output
    assert _sha(mine) == before
    # its own file from an earlier demo is replaced
    r = cli.invoke(app, ["demo", "--days", "1", "--nodes", "1", "--seed", "3"])
    assert r.exit_code == 0, r.output
    assert duckdb.connect(str(demo), read_only=True).execute(
        "select seed, days, nodes from meta.demo").fetchall() == [(3, 1, 1)]


def test_run_exits_1_when_no_record_of_the_folder_loaded_but_not_on_a_rerun(tmp_path):
    from recon.simulate import simulate

    cli = CliRunner()
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "pods.yaml").write_text("apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n")
    r = cli.invoke(app, ["run", "--input", str(bad), "--db", str(tmp_path / "b.duckdb"),
                         "--no-validate"], terminal_width=300)
    assert r.exit_code == 1, r.output
    assert f"no record of {bad} loaded: 1 file(s), 1 record(s), 1 quarantined" in r.output
    simulate(tmp_path / "sim", seed=3, days=1, nodes=1, endpoints=1)
    args = ["run", "--input", str(tmp_path / "sim"), "--db", str(tmp_path / "s.duckdb"),
            "--no-validate"]
    assert cli.invoke(app, args).exit_code == 0
    r = cli.invoke(app, args)  # everything landed before: the folder's records are loaded
    assert r.exit_code == 0 and "no record" not in r.output, r.output


def test_simulate_refuses_a_folder_in_use_and_force_clears_only_its_own_files(tmp_path):
    cli = CliRunner()
    out = tmp_path / "sim"
    base = ["simulate", "--out", str(out), "--days", "1", "--nodes", "1", "--endpoints", "1"]
    assert cli.invoke(app, base).exit_code == 0
    first = _tree(out)
    r = cli.invoke(app, [*base, "--seed", "9"], terminal_width=300)
    assert r.exit_code == 2 and "would mix two fleets" in r.output, r.output
    assert _tree(out) == first
    r = cli.invoke(app, [*base, "--seed", "9", "--force"], terminal_width=300)
    assert r.exit_code == 0, r.output
    assert f"Cleared {len(first) - 1} files of an earlier simulation" in r.output  # (+ record)
    fresh = tmp_path / "fresh"
    assert cli.invoke(app, ["simulate", "--out", str(fresh), "--days", "1", "--nodes", "1",
                            "--endpoints", "1", "--seed", "9"]).exit_code == 0
    assert _tree(out) == _tree(fresh)  # the second fleet alone, nothing of the first
    # a file it did not write (or one edited since): --force refuses and deletes nothing
    (out / "runpod" / "my-export.json").write_text("{}")
    truth = out / "expected" / "ground_truth.json"
    truth.write_text(json.dumps({"edited": True}))
    held = _tree(out)
    r = cli.invoke(app, [*base, "--force"], terminal_width=300)
    assert r.exit_code == 2, r.output
    assert ("holds 2 file(s) recon simulate did not write or that changed since it did: "
            "expected/ground_truth.json, runpod/my-export.json; nothing was deleted") in r.output
    assert _tree(out) == held
    # a folder with no record of a simulation is not the simulator's to clear
    other = tmp_path / "landing"
    other.mkdir()
    (other / "pods.jsonl").write_text("")
    r = cli.invoke(app, ["simulate", "--out", str(other), "--force"], terminal_width=300)
    assert r.exit_code == 2 and "holds no record of a simulation" in r.output, r.output
    assert (other / "pods.jsonl").exists()
