"""A result store for sweeps: one SQLite file, one row per case, keyed by a stable hash of the
case's JSON.

- ``case_key(case)``: SHA-256 of the case as canonical JSON (sorted keys, no spaces), so the same
  case always gets the same key, whatever process or machine computes it.
- ``put`` inserts a result only if its key is absent (``INSERT OR IGNORE`` in one transaction),
  so a case that comes back twice (a task Dask ran again after losing a worker) is stored once,
  and ``put`` says whether it was new.
- SQLite in WAL mode: writes are atomic (an interrupted sweep leaves every finished row intact
  and no partial one), several processes may write the same file (each write waits up to
  ``timeout`` seconds for the lock), and readers do not block the writer.

Cases and results are JSON values (dicts of numbers, strings, lists).
"""

import hashlib
import json
import sqlite3
import time
from pathlib import Path


def canonical_json(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)


def case_key(case):
    return hashlib.sha256(canonical_json(case).encode()).hexdigest()


class ResultStore:
    """Results of a sweep in the SQLite file ``path`` (created if missing)."""

    def __init__(self, path, *, timeout=60.0):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._connection = sqlite3.connect(self.path, timeout=timeout, isolation_level=None)
        self._connection.execute("PRAGMA journal_mode=WAL")
        self._connection.execute("PRAGMA synchronous=NORMAL")
        self._connection.execute(
            "CREATE TABLE IF NOT EXISTS results (key TEXT PRIMARY KEY, case_json TEXT NOT NULL, "
            "result_json TEXT NOT NULL, stored_at REAL NOT NULL)")

    def close(self):
        self._connection.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def put(self, case, result):
        """Store ``result`` for ``case`` unless the case is already stored; True if it was new."""
        cursor = self._connection.execute(
            "INSERT OR IGNORE INTO results VALUES (?, ?, ?, ?)",
            (case_key(case), canonical_json(case), canonical_json(result), time.time()))
        return cursor.rowcount == 1

    def get(self, case):
        """The stored result of ``case``, or None."""
        row = self._connection.execute("SELECT result_json FROM results WHERE key = ?",
                                       (case_key(case),)).fetchone()
        return None if row is None else json.loads(row[0])

    def __contains__(self, case):
        return self._connection.execute("SELECT 1 FROM results WHERE key = ?",
                                        (case_key(case),)).fetchone() is not None

    def done_keys(self):
        return {row[0] for row in self._connection.execute("SELECT key FROM results")}

    def __len__(self):
        return self._connection.execute("SELECT COUNT(*) FROM results").fetchone()[0]

    def items(self):
        """Every (case, result) pair, in the order they were stored."""
        for case_json, result_json in self._connection.execute(
                "SELECT case_json, result_json FROM results ORDER BY stored_at, rowid"):
            yield json.loads(case_json), json.loads(result_json)
