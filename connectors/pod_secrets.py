"""Secret values in pod specs, replaced by a keyed fingerprint before anything is landed.

A Runpod pod (and template, and serverless endpoint) carries ``env`` as an object of
``{"NAME": "value"}``; a Kubernetes container carries ``env`` as a list of
``{"name": ..., "value": ...}`` (or ``valueFrom``, a reference to a Secret or ConfigMap key,
which is no secret itself). These values hold API tokens and passwords (``HF_TOKEN``,
``JUPYTER_PASSWORD``), and reconciliation needs none of them. :func:`redact_secrets` keeps
every name and reference and replaces each literal value by ``sha256:<16 hex digits>``, an
HMAC-SHA256 of the value:

* a fingerprint, not a fixed ``"<redacted>"``: two versions of a pod whose token changed still
  differ, and the same value in two places (or two runs) has the same fingerprint;
* keyed: a plain hash of a short password is reversed by trying a dictionary of passwords. The
  key is ``$RECON_SECRET_HASH_KEY`` when set (set the same one for the collectors and
  ``recon run`` to compare fingerprints between them); without it a fixed built-in key is used,
  which still hides any real token or random password but not a dictionary word;
* truncated to 64 bits: enough to tell values apart, too short to be mistaken for the value.

Also replaced: the ``kubectl.kubernetes.io/last-applied-configuration`` annotation (a copy of
the whole manifest, env values included, as JSON text: redacted the same way inside it, or
fingerprinted whole if it is not JSON) and string values of registry credentials
(:data:`SECRET_KEYS`). A value that already is a fingerprint is kept, so landing a redacted
file again changes nothing.

:func:`may_hold_secrets` is the cheap test on a record's JSON text: a record none of whose
:data:`MARKERS` occur (most Kubernetes objects that are not pods) is left as it is, unparsed.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
from typing import Any

import orjson

KEY_ENV = "RECON_SECRET_HASH_KEY"
_DEFAULT_KEY = b"gpu-recon pod env fingerprint v1"
PREFIX = "sha256:"
_FINGERPRINT = re.compile(r"^sha256:[0-9a-f]{16}$")
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
# keys whose string value is a credential wherever they appear (registry auth in Runpod pods
# and templates, docker config "auth" entries); ids of stored credentials (`registry`,
# `containerRegistryAuthId`) are references and kept
SECRET_KEYS = frozenset({"containerRegistryAuth", "registryAuth", "registryPassword", "password",
                         "auth"})
# byte strings at least one of which occurs in the JSON text of any record that redact_secrets
# would change; `\u` because a key may be written with escapes (`"\u0065nv"`)
MARKERS = (b'"env"', b"last-applied-configuration", b'"containerRegistryAuth"',
           b'"registryAuth"', b'"registryPassword"', b'"password"', b'"auth"', b"\\u")
MARKERS_TEXT = tuple(m.decode() for m in MARKERS)


def _key() -> bytes:
    key = os.environ.get(KEY_ENV)
    return key.encode("utf-8", "surrogatepass") if key else _DEFAULT_KEY


def fingerprint(value: Any) -> Any:
    """``sha256:<16 hex>`` of a secret value (a non-string is fingerprinted as its JSON text);
    None and an existing fingerprint are returned as they are."""
    if value is None or (isinstance(value, str) and _FINGERPRINT.match(value)):
        return value
    if isinstance(value, str):
        data = value.encode("utf-8", "surrogatepass")  # a lone surrogate must not stop landing
    else:
        data = json.dumps(value, sort_keys=True, default=str).encode()
    return PREFIX + hmac.new(_key(), data, hashlib.sha256).hexdigest()[:16]


def may_hold_secrets(text: bytes | str) -> bool:
    """Could the JSON text of a record hold a value :func:`redact_secrets` replaces?"""
    markers = MARKERS if isinstance(text, (bytes, bytearray, memoryview)) else MARKERS_TEXT
    return any(m in text for m in markers)


def _env(value: Any) -> Any:
    if type(value) is dict:  # Runpod: {"NAME": "value"}
        return {k: fingerprint(v) for k, v in value.items()}
    if type(value) is list:  # Kubernetes: [{"name": "NAME", "value": "..."}] or valueFrom
        return [({**item, "value": fingerprint(item["value"])}
                 if type(item) is dict and "value" in item else _walk(item))
                for item in value]
    return value  # a label or selector called `env` ("env": "prod") is no secret


def _last_applied(text: Any) -> Any:
    if not isinstance(text, str):
        return fingerprint(text)
    try:
        doc = orjson.loads(text)
    except orjson.JSONDecodeError:
        return fingerprint(text)
    return orjson.dumps(_walk(doc)).decode()


# Subtrees that never hold a value of a pod spec: an object's status (phases, conditions,
# container states) and managedFields (field names only, never values; often half a pod's
# JSON). Not walked: landing every pod version of a busy cluster walks its spec alone.
_SKIP = frozenset({"status", "managedFields"})


def _walk(node: Any) -> Any:
    """``node`` with every secret value replaced; a new object only where something changed
    (scalars are not visited: this runs for every landed pod version)."""
    if type(node) is list:
        out = None
        for i, v in enumerate(node):
            if type(v) is dict or type(v) is list:
                new = _walk(v)
                if new is not v:
                    if out is None:
                        out = list(node)
                    out[i] = new
        return node if out is None else out
    if type(node) is not dict:
        return node
    changes = None
    for k, v in node.items():
        if k == "env":
            new = _env(v)
        elif k == LAST_APPLIED:
            new = _last_applied(v)
        elif k in SECRET_KEYS and type(v) is str:
            new = fingerprint(v)
        elif (type(v) is dict or type(v) is list) and k not in _SKIP:
            new = _walk(v)
        else:
            continue
        if new is not v and new != v:
            if changes is None:
                changes = {}
            changes[k] = new
    return node if changes is None else {**node, **changes}


def redact_secrets(doc: Any) -> Any:
    """``doc`` (parsed JSON) with every env value, registry credential and last-applied
    manifest replaced as the module says; names and ``valueFrom`` references are kept. The
    input is not modified; it is returned itself when nothing needed replacing."""
    return _walk(doc)


def redact_text(text: str) -> str:
    """A record's text that is not JSON (quarantined as such) cannot be redacted by structure:
    it is cut before its first marker, so that no value after it is kept."""
    # (not at `\u`: an escape in a broken line, such as half an emoji, is no sign of a secret)
    at = [i for i in (text.find(m) for m in MARKERS_TEXT if m != "\\u") if i >= 0]
    if not at:
        return text
    return text[:min(at)] + " [cut here: the rest may hold secret values]"
