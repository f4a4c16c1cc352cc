"""Compile the environment's bytecode once, where Python may not write it itself.

Where PYTHONDONTWRITEBYTECODE=1 (this project's machines, many container images), Python never
caches what it compiles: every process would compile Great Expectations and Prefect from
source, and importing Great Expectations takes 10.5-13.0 s instead of 5.1-6.5 s
(bench/README.md). uv's `compile-bytecode` setting avoids that, but `uv run` then recompiles
the whole environment (~11k files) on *every* invocation (astral-sh/uv#12202): `uv run recon
--help` takes 1.31-1.45 s instead of 0.55-0.59 s on a 2-core host.

`ensure_compiled()` (called when `recon` is imported) compiles the environment's site-packages
once per set of installed distributions instead: a stamp file in site-packages names the set
(a hash of its `*.dist-info` folder names, which carry the versions); when the stamp is
present it costs one directory listing (~1 ms). A fresh environment takes as long as uv's
compile at install does (~11k files: 32-50 s on 2 cores, with a progress line
every 5 s). A new or upgraded package changes the set and compiles again (only what is out
of date: compileall skips up-to-date files). It does nothing where Python writes bytecode
itself, where site-packages is read-only (nothing could be cached there), outside a virtual
environment, or with RECON_COMPILE_BYTECODE=0.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

STAMP_PREFIX = ".recon-bytecode-"
ENV_SWITCH = "RECON_COMPILE_BYTECODE"
PROGRESS_SECONDS = 5.0


def site_dirs() -> list[Path]:
    """The environment's site-packages folders (purelib and platlib; usually one)."""
    out: list[Path] = []
    for key in ("purelib", "platlib"):
        p = Path(sysconfig.get_paths()[key])
        if p.is_dir() and p not in out:
            out.append(p)
    return out


def stamp_of(dirs: list[Path]) -> str:
    """A name for the set of distributions installed in `dirs`."""
    names = sorted(f"{d}/{e.name}" for d in dirs for e in os.scandir(d)
                   if e.name.endswith(".dist-info"))
    return hashlib.sha256("\n".join(names).encode()).hexdigest()[:16]


def ensure_compiled(dirs: list[Path] | None = None, *, force: bool = False,
                    log=None) -> bool:
    """Compile `dirs` (default: this environment's site-packages) unless their stamp says it is
    done; True when it compiled. `force` ignores whether Python writes bytecode itself (tests)."""
    if os.environ.get(ENV_SWITCH, "1") == "0":
        return False
    if not force and (not sys.flags.dont_write_bytecode or sys.prefix == sys.base_prefix):
        return False
    dirs = site_dirs() if dirs is None else dirs
    if not dirs or not all(os.access(d, os.W_OK) for d in dirs):
        return False
    stamp = STAMP_PREFIX + stamp_of(dirs)
    marker = dirs[0] / stamp
    if marker.exists():
        return False
    import fcntl

    with open(dirs[0] / (STAMP_PREFIX + "lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # concurrent processes (pytest's workers) wait
        if marker.exists():
            return False
        t = time.perf_counter()
        n = sum(1 for d in dirs for _ in d.rglob("*.py"))
        (log or _stderr)(f"recon: compiling the environment's {n:,} Python files once "
                         "(PYTHONDONTWRITEBYTECODE is set; 30-50 s on 2 cores) ...")
        # a child process (compileall's worker pool must not start inside an import), which
        # names each file it compiles: counted for a progress line every PROGRESS_SECONDS
        p = subprocess.Popen([sys.executable, "-m", "compileall", "-j", "0", *map(str, dirs)],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        done, failed, shown = 0, 0, t
        for line in p.stdout:
            done += line.count("Compiling ")  # the workers' lines may run into each other
            failed += line.count("*** ")  # one per file that does not compile
            if time.perf_counter() - shown >= PROGRESS_SECONDS:
                shown = time.perf_counter()
                (log or _stderr)(f"recon: compiled {done:,} of {n:,} files "
                                 f"({shown - t:.0f} s)")
        p.wait()
        # compileall exits 1 when some file does not compile (test data of some packages,
        # Python 2 leftovers): those stay uncompiled, the rest is cached; the stamp is written
        # either way, or every process would try again
        for old in dirs[0].glob(STAMP_PREFIX + "*"):
            if old.name != STAMP_PREFIX + "lock":
                old.unlink(missing_ok=True)
        marker.write_text(f"compiled in {time.perf_counter() - t:.1f} s, compileall exit "
                          f"{p.returncode}\n")
        (log or _stderr)(f"recon: compiled {done - failed:,} files in "
                         f"{time.perf_counter() - t:.1f} s" + (
                             f"; {failed} did not compile (Python compiles them on import)"
                             if failed else ""))
        return True


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)
