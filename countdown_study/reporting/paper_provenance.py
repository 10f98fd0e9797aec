"""Where the paper's results came from, from the tables' ``.meta.json`` sidecars: the provenance macros
(git SHAs, seeds, presets, latest date) and the provenance table. Pure: metadata in, LaTeX text out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from countdown_study.reporting.latex import MISSING, Column, escape, table_float, tabular


def _sha(meta: Mapping, dirty: str) -> str:
    """The short git SHA of a table's sidecar, ``dirty`` appended when the tree was dirty."""
    return str(meta.get("git_sha", ""))[:12] + (dirty if meta.get("git_dirty") else "")


def _written(meta: Mapping) -> str:
    """The date a table was written (``YYYY-MM-DD``), or empty."""
    return str(meta.get("written", ""))[:10]


def _seeds(metas) -> set[int]:
    return {int(r["seed"]) for m in metas for r in m.get("runs", []) if r.get("seed") is not None}


def provenance(metas: Mapping[str, Mapping]) -> dict[str, str]:
    """Macros of where the results came from, over every table: git SHAs, seeds and their count, presets,
    latest date."""
    values = list(metas.values())
    shas = {_sha(m, "-dirty") for m in values if m.get("git_sha")}
    presets = {str(m["preset"]) for m in values if m.get("preset")}
    written = max((_written(m) for m in values), default="")
    return {
        "ResultsGitSha": escape(", ".join(sorted(shas)) or MISSING),
        "ResultsSeeds": seed_list(sorted(_seeds(values))),
        "ResultsSeedCount": str(len(_seeds(values))) if _seeds(values) else MISSING,
        "ResultsPreset": escape(", ".join(sorted(presets)) or MISSING),
        "ResultsWritten": escape(written or MISSING),
    }


def seed_list(seeds: Sequence[int]) -> str:
    """Seeds as LaTeX text: a run as ``0--4``, else a comma list; ``--`` when there are none."""
    if not seeds:
        return MISSING
    if list(seeds) == list(range(seeds[0], seeds[-1] + 1)) and len(seeds) > 2:
        return f"{seeds[0]}--{seeds[-1]}"
    return ", ".join(str(s) for s in seeds)


def provenance_table(metas: Mapping[str, Mapping]) -> pd.DataFrame:
    """One row per notebook whose tables are in ``results/``: preset, seeds, git SHA (dirty flag), written."""
    rows = {}
    for meta in metas.values():
        notebook = str(meta.get("notebook", MISSING))
        row = rows.setdefault(
            notebook,
            {
                "notebook": notebook,
                "preset": meta.get("preset", MISSING),
                "seeds": set(),
                "git SHA": set(),
                "written": "",
            },
        )
        row["seeds"] |= _seeds([meta])
        row["git SHA"].add(_sha(meta, " (dirty)"))
        row["written"] = max(row["written"], _written(meta))
    for row in rows.values():
        row["seeds"] = seed_list(sorted(row["seeds"])).replace("--", "-")
        row["git SHA"] = ", ".join(sorted(row["git SHA"]))
    return pd.DataFrame(
        sorted(rows.values(), key=lambda r: r["notebook"]),
        columns=["notebook", "preset", "seeds", "git SHA", "written"],
    )


def provenance_body(metas: Mapping[str, Mapping]) -> str:
    """The provenance table float (``provenance_table``)."""
    prov = provenance_table(metas)
    columns = tuple(Column(c, c, "code" if c == "git SHA" else "text") for c in prov.columns)
    return table_float(
        tabular(prov, columns),
        "Provenance of the tables in \\texttt{results/tables}, from their \\texttt{.meta.json} sidecars.",
        "tab:provenance",
    )
