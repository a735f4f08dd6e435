"""A directory of simulator builds keyed by what went into them.

A build directory's name is a hash of the Verilog text, the simulator and its version, cocotb's
version and installation (a model links cocotb's VPI library by its path) and the build options, so a
second run of the same design reuses the compiled model and a changed design never sees a stale one.
Builds of the same key from concurrent processes (pytest-xdist workers) are serialised with a file
lock; a build is only published once it completed, so an interrupted build is never reused.

The cache lives in ``$NNACCEL_CACHE_DIR`` or, by default, ``~/.cache/nnaccel``.
"""

import fcntl
import hashlib
import json
import shutil
from contextlib import contextmanager

from nnaccel.models.shared.cache import cache_root

_COMPLETE_MARKER = "build-complete.json"


def build_key(verilog_text, **options):
    """Hex digest identifying a build: the Verilog plus every option (JSON-serialisable values)."""
    digest = hashlib.sha256(verilog_text.encode())
    digest.update(json.dumps(options, sort_keys=True, default=str).encode())
    return digest.hexdigest()[:20]


@contextmanager
def _locked(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as lock_file:
        fcntl.flock(lock_file, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock_file, fcntl.LOCK_UN)


def cached_build(name, key, build):
    """Return ``(build_dir, built_now)``; calls ``build(build_dir)`` only when no complete build exists.

    ``build`` must raise on failure; a failed or interrupted build leaves no complete marker and is
    retried from scratch on the next call.
    """
    build_dir = cache_root() / "builds" / f"{name}-{key}"
    with _locked(cache_root() / "locks" / f"{name}-{key}.lock"):
        if (build_dir / _COMPLETE_MARKER).exists():
            return build_dir, False
        shutil.rmtree(build_dir, ignore_errors=True)
        build_dir.mkdir(parents=True)
        build(build_dir)
        (build_dir / _COMPLETE_MARKER).write_text(json.dumps({"name": name, "key": key}))
        return build_dir, True
