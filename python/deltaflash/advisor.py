"""The IPA advisor (docs/advisor.md), as ``deltaflash advise`` runs it: ``advise(...)``
runs a baseline without IPA, reads its database image (the catalog's pages, the ARIES
log's updates) and its per-object counters, and returns an ``Advice``: per-object
statistics and a recommended layout (the [NxM] scheme, the IPA mode, the tables in the
IPA region, and the DDL that ``run(schema=...)`` runs unchanged).
"""

from __future__ import annotations

import copy
import json
import os
import tempfile
from typing import Any, Dict, List, Optional

import pandas as pd

from . import _deltaflash
from .experiment import Result, _set, build_config, run


class Advice:
    """What the advisor made of a baseline run: ``objects`` (one row per table and
    index), ``recommendation`` (dict: ``scheme``, ``mode``, ``tables``, the
    ``predicted`` effect of the advised layout, of global IPA and the baseline,
    ``reasoning``), ``ddl``, and ``baseline`` (the
    run's ``Result``). ``selective_config()`` and ``global_config()`` are the configs
    that run the recommended layout and the same scheme on every object."""

    def __init__(self, baseline: Result, data: Dict[str, Any]):
        self.baseline = baseline
        self.data = data

    @property
    def recommendation(self) -> Dict[str, Any]:
        return self.data["recommendation"]

    @property
    def ddl(self) -> str:
        return self.data["ddl"]

    @property
    def scheme(self) -> str:
        return self.recommendation["scheme"]

    @property
    def ipa_tables(self) -> List[str]:
        """Tables in the IPA region (their indexes go with them)."""
        return [t["table"] for t in self.recommendation["tables"] if t["in_ipa_region"]]

    @property
    def objects(self) -> pd.DataFrame:
        """Per table and index: pages, updates, evictions, changed bytes per eviction,
        reads, the share of evictions each [NxM] fits (``fit 2x3``, …) and the share of
        updates on the hottest pages (``hottest_10_pct``, …)."""
        rows = []
        for o in self.data["objects"]:
            row = {k: v for k, v in o.items() if not isinstance(v, (list, dict)) and k != "skew"}
            row.update({f"fit {scheme}": share for scheme, share in o["fits"]})
            row.update(o["skew"] or {})
            rows.append(row)
        return pd.DataFrame(rows)

    @property
    def predicted(self) -> pd.DataFrame:
        """The predicted effect of the advised (selective) layout and of global IPA,
        beside the baseline's: share of host writes as appends, GC work and its
        reduction, space overhead, and the I/O-time model's throughput and latencies.
        One row per scalar; per-region detail stays in
        ``recommendation["predicted"]``."""
        p = self.recommendation["predicted"]

        def flat(prediction: Dict[str, Any]) -> Dict[str, Any]:
            # Scalars, and the scalars of nested objects as `outer_inner`.
            row = {k: v for k, v in prediction.items() if not isinstance(v, (list, dict))}
            for outer, inner in prediction.items():
                if isinstance(inner, dict):
                    row.update({f"{outer}_{k}": v for k, v in inner.items() if not isinstance(v, (list, dict))})
            return row

        return pd.DataFrame(
            {"baseline": flat(p["baseline"]), "selective": flat(p["advised"]), "global": flat(p["global"])}
        )

    def global_config(self) -> Dict[str, Any]:
        """The baseline's config with the recommended scheme on every object."""
        config = copy.deepcopy(self.baseline.config)
        config["device"].pop("image", None)
        r = self.recommendation
        _set(config, "engine.ipa", r["scheme"])
        _set(config, "engine.v", r["v"])
        _set(config, "engine.ipa_mode", r["global_mode"])
        return config

    def selective_config(self) -> Dict[str, Any]:
        """The baseline's config with the recommended layout: the chosen tables in an
        IPA region (``engine.schema`` is the DDL), the rest in a plain one."""
        config = self.global_config()
        _set(config, "engine.ipa_mode", self.recommendation["mode"])
        _set(config, "engine.schema", self.ddl)
        return config

    def __repr__(self) -> str:
        tables = ", ".join(self.ipa_tables) or "none"
        return f"<Advice [{self.scheme}] {self.recommendation['mode']}, IPA region: {tables}>"


def advise(config: Optional[Dict[str, Any]] = None, *, progress: bool = False, **kwargs: Any) -> Advice:
    """Runs the baseline of ``config`` and ``kwargs`` (as ``run`` takes them) without
    IPA, in one region, and returns the advisor's ``Advice`` on it. The baseline's image
    is a scratch file, removed afterwards, unless ``image=`` names a new file to keep.
    Raises ``ConfigError`` for a config with its own layout (``schema``,
    ``ipa_objects``), ``DeltaflashError`` for a run that wrote no data pages."""
    built = build_config(config, **kwargs)
    engine = built.get("engine", {})
    if engine.get("schema") or engine.get("ipa_objects"):
        raise _deltaflash.ConfigError("advise: the baseline runs without IPA in one region: drop schema and ipa_objects")
    _set(built, "engine.ipa", "0x0")
    with tempfile.TemporaryDirectory(prefix="deltaflash-advise") as scratch:
        image = built.get("device", {}).get("image") or os.path.join(scratch, "baseline.img")
        _set(built, "device.image", image)
        baseline = run(built, progress=progress)
        workload = dict(baseline.config["workload"])
        name = workload.pop("name")
        title = f"IPA layout for {name} {json.dumps(workload)}, seed {baseline.config['seed']}"
        data = json.loads(_deltaflash.advise_baseline(image, json.dumps(baseline.data), title))
    return Advice(baseline, data)
