"""sql/<layer>/_models.toml (recon.build.model_settings): every file loads, names only models
that exist, and a file the build could not follow fails with the file, the model and what is
accepted."""

from __future__ import annotations

import tomllib

import pytest

from recon.build.model_settings import (
    FILE,
    Bounds,
    SettingsError,
    Spec,
    Window,
    load,
    parse,
    settings_of,
)
from recon.build.models import LAYERS, SQL_DIR


def test_every_file_loads_and_names_existing_models():
    files = sorted(SQL_DIR.glob(f"*/{FILE}"))
    assert {p.parent.name for p in files} == {"staging", "scope", "intermediate", "marts"}
    settings = load()
    for path in files:
        layer = path.parent.name
        assert layer in LAYERS
        names = set(tomllib.loads(path.read_text(encoding="utf-8")))
        assert names, path
        for name in names:
            assert (SQL_DIR / layer / f"{name}.sql").exists(), (path, name)
            # every model with settings says what a row is
            assert settings[(layer, name)].grain, (path, name)


def test_each_kind_of_setting_reads_as_the_build_uses_it():
    assert settings_of("staging", "stg_runpod__pods").incremental == Spec(None, None)
    assert settings_of("staging", "stg_k8s__pods").incremental == Spec(
        ("cluster", "pod_uid", "resource_version"), "source_file, record_no")
    assert settings_of("staging", "stg_k8s__pod_life").incremental == Spec(
        ("cluster", "pod_uid"), None, "stg_k8s__pods")
    assert settings_of("staging", "stg_runpod__workers").bounds == Bounds(
        ("endpoint_id", "worker_id"), "last_seen_at", "pulled_at")
    window = settings_of("marts", "workload_lifecycle").window
    assert isinstance(window, Window) and window.key == ("cluster", "pod_uid")
    assert settings_of("marts", "nodes").last_run
    assert settings_of("intermediate", "int_k8s__node_resources").scope_before
    assert settings_of("scope", "stg_runpod__jobs").scope_view
    # a model without a table has no settings
    plain = settings_of("marts", "findings")
    assert not (plain.incremental or plain.window or plain.last_run or plain.grain)


@pytest.mark.parametrize("layer, text, message", [
    ("staging", '[stg_nope]\nincremental = { strategy = "append" }\n',
     r"\[stg_nope\]: no model stg_nope\.sql in sql/staging/"),
    ("staging", '[stg_a]\nincremetal = { strategy = "append" }\n',
     r"\[stg_a\]: unknown key 'incremetal' \(accepted in sql/staging/: grain, incremental, bounds\)"),
    ("staging", '[stg_a]\nincremental = { strategy = "upsert" }\n',
     r"\[stg_a\] incremental: strategy must be one of 'append', 'merge', 'recompute', got 'upsert'"),
    ("staging", '[stg_a]\nincremental = { strategy = "merge", key = ["x"] }\n',
     r"\[stg_a\] incremental \(strategy 'merge'\): missing 'order' \(accepted: strategy, key, order\)"),
    ("staging", '[stg_a]\nincremental = { strategy = "merge", key = "x", order = "y" }\n',
     r"\[stg_a\] incremental\.key: expected a non-empty list of column names"),
    ("staging", '[stg_a]\nincremental = { strategy = "recompute", key = ["x"], from = "stg_z" }\n',
     r"\[stg_a\] incremental\.from: no model 'stg_z' in this layer"),
    ("staging", '[stg_a]\nbounds = { key = ["x"], span = "t", inside = "u" }\n',
     r"\[stg_a\] bounds: unknown key 'inside' \(accepted: key, span, within\)"),
    ("staging", '[stg_a]\ngrain = 1\n', r"\[stg_a\] grain: expected a non-empty string, got 1"),
    ("marts", '[stg_a]\nwindow = "last run"\n',
     r"\[stg_a\] window: expected \"last_run\" or \{ key, where \}, got 'last run'"),
    ("marts", '[stg_a]\nscope = "view"\n',
     r"\[stg_a\]: unknown key 'scope' \(accepted in sql/marts/: grain, window\)"),
    ("intermediate", '[stg_a]\nscope = "view"\n',
     r"\[stg_a\] scope: expected 'before' in sql/intermediate/, got 'view'"),
    ("staging", '[stg_a\n', r"not valid TOML"),
])
def test_a_bad_file_names_the_file_the_model_and_what_is_accepted(tmp_path, layer, text, message):
    path = tmp_path / layer / FILE
    path.parent.mkdir()
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SettingsError, match=message) as e:
        parse(path, layer, {"stg_a"})
    assert str(path) in str(e.value)


def test_a_bad_file_in_the_tree_stops_the_loader(tmp_path):
    for layer in ("staging", "marts"):
        (tmp_path / layer).mkdir()
    (tmp_path / "staging" / "stg_a.sql").write_text("select 1")
    (tmp_path / "staging" / FILE).write_text('[stg_b]\ngrain = "x"\n')
    with pytest.raises(SettingsError, match=r"_models\.toml: \[stg_b\]: no model stg_b\.sql"):
        load(tmp_path)


def test_the_build_hash_follows_the_sql_and_the_settings_that_shape_the_rows(monkeypatch):
    """meta.staged_models keeps this hash: a kept table is rebuilt when it changes."""
    import dataclasses

    from recon.build import model_settings

    base = model_settings.build_hash("stg_runpod__jobs", "select 1")
    assert base == model_settings.build_hash("stg_runpod__jobs", "select 1")
    assert base != model_settings.build_hash("stg_runpod__jobs", "select 2")
    real = model_settings.settings_of("staging", "stg_runpod__jobs")
    for change, rebuilds in (({"grain": "other words"}, False),
                             ({"incremental": Spec(("job_id",), real.incremental.order)}, True),
                             ({"incremental": Spec(real.incremental.key, "record_no")}, True),
                             ({"bounds": None}, True)):
        monkeypatch.setattr(model_settings, "settings_of",
                            lambda layer, name, c=change: dataclasses.replace(real, **c))
        assert (model_settings.build_hash("stg_runpod__jobs", "select 1") != base) is rebuilds, change
