"""A persistent cache of judge answers in SQLite, so a restart does not pay for the same judgement twice.

The key is a SHA-256 over everything that changes an answer: the backend URL, the model, the template id
(name plus a hash of its wording), the sampling parameters (temperature, max tokens, logprobs, seed: so
each ensemble sample has its own entry), and the rendered messages (which fix the answer order, so the
two orders of a pairwise comparison are two entries). Only answers are stored, never failures: a 429 or
a timeout must be retried later, not replayed.

SQLite in WAL mode lets several processes (replicas on one host) share the file. Calls run in a thread
(`asyncio.to_thread`) so a slow disk never blocks the event loop. `stats` counts hits, misses and writes;
`on_event` (e.g. a Prometheus counter's `inc` by label) is called with "hit" or "miss" for each lookup.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.judges.client import ChatReply, ChatRequest

_SCHEMA = """
CREATE TABLE IF NOT EXISTS judgements (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    created REAL NOT NULL
)
"""


@dataclass
class CacheStats:
    """Counters a metrics exporter can read (or use `JudgeCache.on_event`)."""

    hits: int = 0
    misses: int = 0
    writes: int = 0


def cache_key(backend: str, template: str, request: ChatRequest) -> str:
    """The SHA-256 of backend, template id and the full request payload (model, parameters, messages)."""
    material = json.dumps(
        {"backend": backend, "template": template, "request": request.payload()},
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(material.encode()).hexdigest()


class JudgeCache:
    """Judge answers by key in one SQLite file."""

    def __init__(self, path: Path, on_event: Callable[[str], None] | None = None) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.stats = CacheStats()
        self.on_event = on_event
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(_SCHEMA)

    async def get(self, key: str) -> ChatReply | None:
        row = await asyncio.to_thread(self._get, key)
        hit = row is not None
        if hit:
            self.stats.hits += 1
        else:
            self.stats.misses += 1
        if self.on_event is not None:
            self.on_event("hit" if hit else "miss")
        return ChatReply.from_json(json.loads(row)) if row is not None else None

    async def put(self, key: str, completion: ChatReply) -> None:
        await asyncio.to_thread(self._put, key, json.dumps(completion.to_json()))
        self.stats.writes += 1

    def _get(self, key: str) -> str | None:
        with self._lock:
            row: Any = self._db.execute("SELECT value FROM judgements WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def _put(self, key: str, value: str) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO judgements (key, value, created) VALUES (?, ?, ?)",
                (key, value, time.time()),
            )

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM judgements").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()
