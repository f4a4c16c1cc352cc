"""The daily flow's `landing_dir` as `s3://BUCKET/PREFIX`, `az://CONTAINER/PREFIX` and
`gs://BUCKET/PREFIX` (task logic through `.fn`, no flow run), against moto's S3 server, Azurite
and fake-gcs-server on 127.0.0.1 through the real client (tests/fakes/)."""

from __future__ import annotations

import logging
from datetime import date

import pytest

from tests.fakes.s3_server import fake_s3

BUCKET = "recon-flows"
SECRET = "PLANTED-flow-secret-0123456789"


@pytest.fixture
def s3(monkeypatch):
    with fake_s3(monkeypatch, "AKIAFLOWTEST00000001", SECRET, (BUCKET,)) as fake:
        yield fake


def _daily_build(fake, url: str, tmp_path, caplog, monkeypatch) -> tuple[dict, list]:
    """A simulated day put under `url`'s prefix through `fake`, then the daily flow's build task
    on `url` with the flows logger captured: (the task's result, the objects put)."""
    from flows.daily_reconciliation import build_marts
    from recon.simulate import simulate

    root = tmp_path / "in"
    simulate(root, seed=5, days=1, nodes=2)
    objects = sorted(p for p in root.rglob("*") if p.is_file())
    for p in objects:
        fake.put(BUCKET, "landing/" + p.relative_to(root).as_posix(), p.read_bytes())
    caplog.set_level(logging.INFO)
    # Prefect may re-run its logging dictConfig (replacing the root handlers caplog relies on),
    # so listen on the flows logger itself (as tests/flows/test_flows_tasks.py does)
    flows_log = logging.getLogger("flows")
    flows_log.addHandler(caplog.handler)
    monkeypatch.setattr(flows_log, "disabled", False)
    try:
        out = build_marts.fn(url, str(tmp_path / "w.duckdb"), date(2026, 6, 1))
    finally:
        flows_log.removeHandler(caplog.handler)
    return out, objects


def test_the_daily_build_downloads_the_prefix_and_lands_it(s3, tmp_path, caplog, monkeypatch):
    out, objects = _daily_build(s3, f"s3://{BUCKET}/landing", tmp_path, caplog, monkeypatch)
    # landed: every object but the loader's exceptions (a name starting with "." and
    # recon.toml, read as the config: recon/ingest/land.py, input_files)
    landed = [p for p in objects if not p.name.startswith(".") and p.name != "recon.toml"]
    assert out["files"] == len(landed) and out["loaded"] > 0
    assert (f"s3://{BUCKET}/landing/: {len(objects)} object(s) listed, {len(objects)} "
            f"downloaded") in caplog.text
    assert (tmp_path / "landing-cache" / BUCKET / "landing" / "recon.toml").is_file()
    assert SECRET not in caplog.text


@pytest.fixture(params=["az", "gs"])
def cloud(request, monkeypatch, tmp_path_factory):
    """Azurite or fake-gcs-server behind the fault proxy, the store's variables set
    (tests/fakes/azure_server.py, tests/fakes/gcs_server.py): (scheme, fake, its secret)."""
    from tests.fakes import azure_server, gcs_server

    work = tmp_path_factory.mktemp(request.param)
    if request.param == "az":
        with azure_server.fake_azure(monkeypatch, work, (BUCKET,)) as fake:
            yield "az", fake, azure_server.KEY
    else:
        with gcs_server.fake_gcs(monkeypatch, work, (BUCKET,)) as fake:
            yield "gs", fake, gcs_server.TOKEN


def test_the_daily_build_reads_an_azure_or_gcs_landing_area(cloud, tmp_path, caplog,
                                                            monkeypatch):
    scheme, fake, secret = cloud
    out, objects = _daily_build(fake, f"{scheme}://{BUCKET}/landing", tmp_path, caplog,
                                monkeypatch)
    landed = [p for p in objects if not p.name.startswith(".") and p.name != "recon.toml"]
    assert out["files"] == len(landed) and out["loaded"] > 0
    assert (f"{scheme}://{BUCKET}/landing/: {len(objects)} object(s) listed, {len(objects)} "
            f"downloaded") in caplog.text
    assert fake.count("get", 200) == len(objects)
    assert (tmp_path / "landing-cache" / scheme / BUCKET / "landing" / "recon.toml").is_file()
    assert secret not in caplog.text


def test_the_provider_pull_refuses_an_s3_landing_area(s3, monkeypatch):
    """The pull writes files into the landing area: into an s3:// one it would write a local
    folder named `s3:` instead. It fails before asking for the Runpod key or the network."""
    from flows.common import retry_transient
    from flows.daily_reconciliation import pull_provider_window

    monkeypatch.delenv("RUNPOD_API_KEY", raising=False)
    with pytest.raises(ValueError, match=r"^pull_provider lands the Runpod pull in a local "
                                         rf"folder, and the landing area is s3://{BUCKET}/x"):
        pull_provider_window.fn(f"s3://{BUCKET}/x", date(2026, 6, 1), date(2026, 6, 1),
                                base_url="http://127.0.0.1:9")
    assert s3.count("list") == s3.count("get") == 0

    class _State:  # not a failure a retry would fix
        def result(self, raise_on_failure=False):
            return ValueError("x")
    assert retry_transient(None, None, _State()) is False
