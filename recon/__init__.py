"""gpu-recon: GPU billing reconciliation (see README.md)."""

from .bytecode import ensure_compiled as _ensure_compiled

try:  # once per installed set of packages, where Python may not cache bytecode (bytecode.py)
    _ensure_compiled()
except OSError:  # a read-only or odd file system: imports still work, only slower
    pass
