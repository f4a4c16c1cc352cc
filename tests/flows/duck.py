"""Read a flow's warehouse as a test sees it: read-only, in UTC."""

from __future__ import annotations

import duckdb


def q(db, sql, params=()):
    con = duckdb.connect(str(db), read_only=True)
    try:
        con.execute("set TimeZone = 'UTC'")
        return con.execute(sql, list(params)).fetchall()
    finally:
        con.close()
