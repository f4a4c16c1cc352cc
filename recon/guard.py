"""What keeps data and ad-hoc SQL from reaching further than they should: `recon query`'s
locked-down connection, and text from data made safe for a terminal.

Pod names, namespaces, file names and bill fields come from outside; any of them may hold an
escape sequence (ESC [ 2 J clears the screen, OSC 8 forges a link, OSC 52 writes the
clipboard). Printed as is, the terminal acts on it.
"""

from __future__ import annotations

import re

# What `recon query` turns off before it runs the user's SQL (each setting of the installed
# DuckDB's duckdb_settings(); tests/test_cli_validation.py checks they hold). Order matters:
# enable_external_access goes after the settings it would otherwise refuse to change, and
# lock_configuration last, so that the SQL cannot `set` any of them back.
LOCKED = (
    ("autoinstall_known_extensions", "false"),  # no download of an extension a query names
    ("autoload_known_extensions", "false"),
    ("allow_community_extensions", "false"),
    ("allow_persistent_secrets", "false"),
)
NO_FILES = (("enable_external_access", "false"),)  # COPY TO, read_text, ATTACH, INSTALL


def lock_down(con, allow_files: bool = False) -> None:
    """Leave `con` able to read its own database only: no files (unless `allow_files`), no
    extension installed or loaded on demand, and no configuration the SQL could change back."""
    for name, value in LOCKED + (() if allow_files else NO_FILES):
        con.execute(f"set {name} = {value}")
    con.execute("set lock_configuration = true")


# C0 controls but tab and newline, DEL, the C1 controls (U+0080-U+009F: 8-bit CSI and OSC act
# like ESC [ and ESC ] on many terminals), and the bidirectional overrides and isolates (they
# make a terminal show text in an order other than its own)
_OTHERS = "\x7f-\x9f\u202a-\u202e\u2066-\u2069"
_CONTROL = re.compile(f"[\x00-\x08\x0b-\x1f{_OTHERS}]")
_CONTROL_LINE = re.compile(f"[\x00-\x1f{_OTHERS}]")


def visible(text, keep_newlines: bool = True) -> str:
    """`text` with every control character shown as its escape (ESC as \\x1b), so that it is
    seen, not acted on. Newlines and tabs stay unless `keep_newlines` is false (a table cell,
    a file name in a one-line message)."""
    s = "" if text is None else str(text)
    pattern = _CONTROL if keep_newlines else _CONTROL_LINE
    return pattern.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), s)


class WarehouseBusy(OSError):
    """The warehouse file is held by another process (a run, a `recon serve`, a query): an
    OSError, so that the daily flow's tasks retry it later like other transient failures."""


_LOCK = re.compile(r"Could not set lock on file|Conflicting lock")


def busy(e: Exception, path) -> WarehouseBusy | None:
    """DuckDB's lock conflict on `path` as one sentence naming what to do, else None."""
    text = str(e)
    if not _LOCK.search(text):
        return None
    pid = re.search(r"\(PID (\d+)\)", text)
    holder = f" (PID {pid.group(1)})" if pid else ""
    return WarehouseBusy(f"{path} is in use by another process{holder}: wait for it to finish "
                         "(or stop it), or give another --db")


def disk_full(e: BaseException, doing: str) -> str | None:
    """A full disk (OSError ENOSPC, or DuckDB's IO or fatal error saying so) while `doing`,
    as one sentence naming what to do; else None."""
    import errno

    if (isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT)) or \
            "No space left on device" in str(e) or "Disk quota exceeded" in str(e):
        return (f"no space left on the disk while {doing}: free space there (DuckDB also spills "
                "to its temp directory) and run again; what this command was writing was not "
                "kept")
    return None
