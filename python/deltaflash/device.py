"""Small experiments below the workloads: an emulated NAND ``Device`` with NoFTL
``Region``s (page writes, in-place appends, reads, trims, counters) and the SQL engine on
a database image (``Database``).

Device operations run one at a time on the device's simulated clock; each returns its
latency in simulated nanoseconds. Errors (a refused append, an unknown region, bad SQL)
raise ``DeltaflashError`` with the Rust message.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, NamedTuple, Optional, Union

import pandas as pd

from . import _deltaflash


class PageRead(NamedTuple):
    """A page as read: its bytes with every append in place, and how many appends."""

    data: bytes
    appends: int


class Region:
    """A NoFTL region of a ``Device``: logical pages mapped to flash pages, written out
    of place (``write_page``) or appended to in place (``write_delta``, IPA)."""

    def __init__(self, device: "Device", name: str):
        self.device = device
        self.name = name
        self.logical_pages, self.page_bytes = device._native.region_shape(name)

    def write_page(self, lpn: int, data: bytes) -> int:
        """Writes the whole page ``lpn`` out of place; returns the latency in ns."""
        return self.device._native.write_page(self.name, lpn, data)

    def write_delta(self, lpn: int, offset: int, data: bytes) -> int:
        """Appends ``data`` in place at byte ``offset`` of page ``lpn``; returns the
        latency in ns. Raises ``DeltaflashError`` where the NAND rules refuse it."""
        return self.device._native.write_delta(self.name, lpn, offset, data)

    def read_page(self, lpn: int) -> Optional[PageRead]:
        """The page with its appends, or None if it was never written (or trimmed)."""
        page = self.device._native.read_page(self.name, lpn)
        return None if page is None else PageRead(*page)

    def trim(self, lpn: int) -> None:
        self.device._native.trim(self.name, lpn)

    def counters(self) -> Dict[str, int]:
        """Host reads, writes, appends, trims, GC migrations and erases of the region."""
        return json.loads(self.device._native.region_json(self.name))["counters"]

    def occupancy(self) -> Dict[str, int]:
        return json.loads(self.device._native.region_json(self.name))["occupancy"]

    def __repr__(self) -> str:
        return f"<Region {self.name}: {self.logical_pages} pages of {self.page_bytes} B>"


class Device:
    """An in-memory emulated device of a preset (``deltaflash.PRESETS``) with the given
    changes, and no regions until ``add_region``."""

    def __init__(
        self,
        preset: str = "paper-emulator",
        *,
        chips: Optional[int] = None,
        blocks_per_chip: Optional[int] = None,
        pages_per_block: Optional[int] = None,
        page_bytes: Optional[int] = None,
        max_memory: Optional[int] = None,
    ):
        self._native = _deltaflash.Device(
            preset,
            chips=chips,
            blocks_per_chip=blocks_per_chip,
            pages_per_block=pages_per_block,
            page_bytes=page_bytes,
            max_memory_bytes=max_memory,
        )

    @property
    def geometry(self) -> Dict[str, Any]:
        return json.loads(self._native.geometry_json())

    def add_region(
        self, name: str, *, ipa_mode: str = "none", over_provisioning: float = 0.10, max_chips: Optional[int] = None
    ) -> Region:
        """A new region over the free chips (at most ``max_chips``); ``ipa_mode`` none,
        slc, pslc or odd-mlc decides which pages take in-place appends."""
        self._native.add_region(name, ipa_mode=ipa_mode, over_provisioning=over_provisioning, max_chips=max_chips)
        return Region(self, name)

    def region(self, name: str) -> Region:
        if name not in self._native.region_names():
            raise _deltaflash.DeltaflashError(f"no region `{name}` (regions: {', '.join(self._native.region_names())})")
        return Region(self, name)

    @property
    def regions(self) -> List[Region]:
        return [Region(self, name) for name in self._native.region_names()]

    def counters(self) -> Dict[str, int]:
        """Device-wide page reads, programs, reprograms (appends), erases and bytes."""
        return json.loads(self._native.counters_json())

    @property
    def now_ns(self) -> int:
        """The simulated clock: when the last operation completed."""
        return self._native.now_ns


Statement = Union[pd.DataFrame, int, str]


class Database:
    """The DeltaFlash SQL engine on a database image. ``Database.open(path)`` opens the
    image (restart recovery included) or creates it on a fresh device; use it as a
    context manager, or ``close()`` it to checkpoint and write the image."""

    def __init__(self, native: Any):
        self._native = native

    @classmethod
    def open(
        cls,
        path: Union[str, "os.PathLike[str]"],
        *,
        preset: str = "paper-emulator",
        chips: Optional[int] = None,
        blocks_per_chip: Optional[int] = None,
        db_page_bytes: int = 4096,
        buffer_pages: int = 1024,
    ) -> "Database":
        return cls(
            _deltaflash.Database.open(
                os.fspath(path),
                preset=preset,
                chips=chips,
                blocks_per_chip=blocks_per_chip,
                db_page_bytes=db_page_bytes,
                buffer_pages=buffer_pages,
            )
        )

    def execute(self, sql: str) -> List[Statement]:
        """Runs the statements; per statement a DataFrame (a query), the number of rows
        inserted, updated or deleted, or the DDL's message. The first error raises
        ``DeltaflashError``. A transaction (``BEGIN`` … ``COMMIT``) is all or nothing:
        an error inside it rolls it back, later statements raise "current transaction
        is aborted" until ``ROLLBACK``, and ``COMMIT`` raises saying nothing was
        committed."""
        out: List[Statement] = []
        for kind, a, b in self._native.execute(sql):
            if kind == "rows":
                out.append(pd.DataFrame(b, columns=a))
            elif kind == "count":
                out.append(int(b))
            else:
                out.append(str(a))
        return out

    def query(self, sql: str) -> pd.DataFrame:
        """The rows of one query (its last statement must be a SELECT)."""
        results = self.execute(sql)
        if not results or not isinstance(results[-1], pd.DataFrame):
            raise _deltaflash.DeltaflashError(f"not a query: {sql.strip()[:60]}")
        return results[-1]

    def object_stats(self) -> pd.DataFrame:
        """Per table and index: kind, region, [NxM] scheme and I/O counters."""
        rows = []
        for name, kind, region, scheme, counters in self._native.object_stats():
            rows.append({"name": name, "kind": kind, "region": region, "scheme": scheme, **json.loads(counters)})
        return pd.DataFrame(rows)

    def close(self) -> None:
        self._native.close()

    @property
    def closed(self) -> bool:
        return self._native.closed

    @property
    def in_transaction(self) -> bool:
        """Whether statements run inside a transaction ``BEGIN`` opened (failed or not)."""
        return self._native.in_transaction

    def __enter__(self) -> "Database":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
