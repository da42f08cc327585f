"""Ranking a peer's candidate mappings by their replay: the tables and the text, peer-neutral.

`candidate_table` holds one row per replayed candidate (the peer's latency and rank beside the
replay's cycles and rank); `layer_table` one row per layer: Kendall's tau and Spearman's rho
between the two orders, whether the peer's pick replays best, the regret (replayed cycles of
the pick / best replayed - 1), and the mechanisms behind the pick's and the winner's gaps.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from cyclesim.analysis.rank_stats import kendall_tau, regret, spearman_rho
from cyclesim.errors import CyclesimError

OK = "ok"
NOT_REPLAYED = "not replayed"  # the replay cannot represent the candidate's mapping
NO_CANDIDATES = "no candidates"  # the peer's search failed or found none

CANDIDATE_COLUMNS = (
    "layer_index", "layer", "order", "peer_rank", "peer_latency", "peer_energy", "is_pick",
    "status", "replay_cycles", "replay_rank", "is_winner", "replay_ideal", "replay_stall",
    "replay_onload", "replay_offload", "peer_reevaluated", "causes", "mechanisms", "error",
    "cached",
)  # fmt: skip


@dataclass(frozen=True)
class RankRun:
    """The two tables of one rank run; how many candidates were replayed (timed), how many
    replays explained a pick or a winner, and how many of either came from the cache."""

    peer: str
    candidates: pd.DataFrame
    layers: pd.DataFrame
    replayed: int
    explained: int
    from_cache: int


def candidate_table(
    layers: list[str],
    ranked: dict[str, list[dict]],
    picks: dict[str, int],
    rows: dict[tuple[str, int], dict],
) -> pd.DataFrame:
    """One row per replayed candidate; `ranked` is each layer's candidates in the peer's order."""
    out = []
    for index, layer in enumerate(layers):
        for rank, c in enumerate(ranked.get(layer, ()), start=1):
            row = rows.get((layer, c["order"]))
            if row is None:
                continue
            out.append(
                {
                    "layer_index": index,
                    "layer": layer,
                    "order": c["order"],
                    "peer_rank": rank,
                    "peer_latency": c["latency"],
                    "peer_energy": c["energy"],
                    "is_pick": c["order"] == picks[layer],
                    "status": row.get("status", OK),
                    "replay_cycles": row.get("replay_cycles"),
                    "replay_ideal": row.get("replay_ideal"),
                    "replay_stall": row.get("replay_stall"),
                    "replay_onload": row.get("replay_onload"),
                    "replay_offload": row.get("replay_offload"),
                    "peer_reevaluated": row.get("zigzag_reevaluated", row.get("peer_reevaluated")),
                    "causes": json.dumps(row.get("causes") or {}),
                    "mechanisms": " | ".join(row.get("mechanisms") or ()),
                    "error": row.get("error") or "",
                    "cached": bool(row.get("cached")),
                }
            )
    df = pd.DataFrame(
        out, columns=[c for c in CANDIDATE_COLUMNS if c not in ("replay_rank", "is_winner")]
    )
    ints = ["replay_cycles", "replay_ideal", "replay_stall", "replay_onload", "replay_offload"]
    df[ints] = df[ints].astype("Int64")
    ok = df["replay_cycles"].notna()
    ranks = df[ok].groupby("layer")["replay_cycles"].rank(method="min")
    df["replay_rank"] = ranks.reindex(df.index).astype("Int64")
    df["is_winner"] = False
    # the winner: the fewest replayed cycles, the peer's better rank among equals
    for _, group in df[ok].groupby("layer"):
        winner = group.sort_values(["replay_cycles", "peer_rank"]).index[0]
        df.loc[winner, "is_winner"] = True
    return df[list(CANDIDATE_COLUMNS)]


def merge_row(
    rows: dict[tuple[str, int], dict], key: tuple[str, int], row: dict, explained: bool
) -> None:
    """Put a replay's row into `rows`: an explained row over the timed one (which must time
    the candidate as it did; a mismatch is the row's error), else as it is."""
    if explained and key in rows:
        timed = rows[key].get("replay_cycles")
        if timed is not None and row.get("replay_cycles") not in (None, timed):
            row = row | {"error": f"explained replay {row['replay_cycles']} != timed {timed}"}
        rows[key] = rows[key] | row | {"cached": rows[key].get("cached") and row.get("cached")}
    else:
        rows[key] = row


def _top(text: str) -> str:
    return text.split(" | ")[0] if text else ""


def cause_deltas(pick: dict[str, int], winner: dict[str, int], n: int = 3) -> str:
    """The replay's cycles by phase/cause that the pick pays beyond the winner, largest first."""
    deltas = {k: pick.get(k, 0) - winner.get(k, 0) for k in set(pick) | set(winner)}
    worse = sorted((k for k, v in deltas.items() if v > 0), key=lambda k: (-deltas[k], k))[:n]
    return "; ".join(f"{k} +{deltas[k]:,}" for k in worse)


PHASE_SENTENCES = {"onload": "onloading", "offload": "offloading"}


def regret_sentence(pays_more: str, mechanisms: str) -> str:
    """The pick's sentence (of `check zigzag`) for the cause it pays most beyond the winner:
    'compute/buffer_full +3,072' -> the pick's 'stall, buffer_full (...)' sentence; '' if the
    pick's kept sentences do not name it."""
    if not pays_more or not mechanisms:
        return ""
    phase, _, cause = pays_more.split(";")[0].split(" ")[0].partition("/")
    start = PHASE_SENTENCES.get(phase) or f"stall, {cause} "
    return next((m for m in mechanisms.split(" | ") if m.startswith(start)), "")


def layer_table(
    layers: list[str], candidates: pd.DataFrame, errors: dict[str, str], top: int | None
) -> pd.DataFrame:
    """One row per layer: agreement of the two orders, the pick against the replay's winner."""
    out = []
    for index, layer in enumerate(layers):
        group = candidates[candidates["layer"] == layer]
        row: dict = {"layer_index": index, "layer": layer, "top": top}
        if layer in errors or group.empty:
            out.append(row | {"status": NO_CANDIDATES, "error": errors.get(layer, "")})
            continue
        ok = group[group["replay_cycles"].notna()]
        row |= {"status": OK, "replayed": len(ok), "not_replayed": len(group) - len(ok)}
        pick = group[group["is_pick"]].iloc[0]
        row |= {
            "pick_order": int(pick["order"]),
            "pick_peer_latency": float(pick["peer_latency"]),
            "pick_replay": pick["replay_cycles"],
        }
        if len(ok) >= 1:
            winner = ok[ok["is_winner"]].iloc[0]
            x = [float(v) for v in ok["peer_latency"]]
            y = [float(v) for v in ok["replay_cycles"]]
            row |= {
                "tau": kendall_tau(x, y),
                "rho": spearman_rho(x, y),
                "winner_order": int(winner["order"]),
                "winner_peer_rank": int(winner["peer_rank"]),
                "winner_peer_latency": float(winner["peer_latency"]),
                "best_replay": int(winner["replay_cycles"]),
                "spread": regret(max(y), min(y)),
            }
            ties = ok[ok["peer_latency"] == pick["peer_latency"]]
            tied = [float(v) for v in ties["replay_cycles"]]
            row |= {
                "pick_ties": len(ties),
                "tie_spread": regret(max(tied), min(tied)) if tied else math.nan,
            }
            if pd.notna(pick["replay_cycles"]):
                row |= {
                    "pick_replay_rank": int(pick["replay_rank"]),
                    "pick_is_best": int(pick["replay_cycles"]) == int(winner["replay_cycles"]),
                    "regret": regret(float(pick["replay_cycles"]), float(winner["replay_cycles"])),
                    "pick_mechanism": _top(pick["mechanisms"]),
                    "winner_mechanism": _top(winner["mechanisms"]),
                    "pick_pays_more": cause_deltas(
                        json.loads(pick["causes"]), json.loads(winner["causes"])
                    ),
                }
                row["regret_mechanism"] = regret_sentence(row["pick_pays_more"], pick["mechanisms"])
        out.append(row)
    columns = [
        "layer_index", "layer", "status", "top", "replayed", "not_replayed", "tau", "rho",
        "pick_order", "pick_peer_latency", "pick_replay", "pick_replay_rank", "winner_order",
        "winner_peer_rank", "winner_peer_latency", "best_replay", "pick_is_best", "regret",
        "spread", "pick_ties", "tie_spread", "regret_mechanism",
        "pick_mechanism", "winner_mechanism", "pick_pays_more", "error",
    ]  # fmt: skip
    df = pd.DataFrame(out, columns=columns)
    for c in ("replayed", "not_replayed", "pick_order", "pick_replay", "pick_replay_rank",
              "winner_order", "winner_peer_rank", "best_replay", "top", "pick_ties"):  # fmt: skip
        df[c] = df[c].astype("Int64")
    df["pick_is_best"] = df["pick_is_best"].astype("boolean")
    return df


def totals(layers: pd.DataFrame) -> dict:
    """Over the layers where the pick replayed: the picks' cycles, the best, and the regret."""
    both = layers.dropna(subset=["pick_replay", "best_replay"])
    picked, best = int(both["pick_replay"].sum()), int(both["best_replay"].sum())
    return {
        "layers": len(layers),
        "ranked": len(both),
        "pick_is_best": int(both["pick_is_best"].sum()),
        "peer_picks": float(both["pick_peer_latency"].sum()),
        "pick_replay": picked,
        "best_replay": best,
        "regret": regret(picked, best) if best else math.nan,
    }


TIES_NOTE = (
    "ties: the replayed candidates with the same latency as the pick by the peer's model; tie\n"
    "spread: how much slower the slowest of them replays than the fastest (what the model\n"
    "cannot tell apart)"
)


def _number(value, fmt: str = ",") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return "-"
    return format(value, fmt)


def format_rank(run: RankRun, worst: int = 3) -> str:
    """The per-layer table, the network totals and the layers with the largest regret."""
    df = run.layers
    shown = pd.DataFrame(
        {
            "layer": df["layer"],
            "replayed": [_number(v, "d") for v in df["replayed"]],
            "tau": [_number(v, ".2f") for v in df["tau"]],
            "rho": [_number(v, ".2f") for v in df["rho"]],
            f"{run.peer} pick": [_number(v, ",.0f") for v in df["pick_peer_latency"]],
            "pick replayed": [_number(v) for v in df["pick_replay"]],
            "pick rank": [_number(v, "d") for v in df["pick_replay_rank"]],
            "best replayed": [_number(v) for v in df["best_replay"]],
            "winner's peer rank": [_number(v, "d") for v in df["winner_peer_rank"]],
            "pick best": ["-" if pd.isna(v) else "yes" if v else "no" for v in df["pick_is_best"]],
            "regret": [_number(v, ".1%") for v in df["regret"]],
            "ties": [_number(v, "d") for v in df["pick_ties"]],
            "tie spread": [_number(v, ".0%") for v in df["tie_spread"]],
        }
    )
    lines = [shown.to_string(index=False), "", TIES_NOTE, ""]
    lines += [f"{r.layer}: {r.error}" for r in df.itertuples() if r.status != OK]
    t = totals(df)
    lines.append(
        f"{t['ranked']} of {t['layers']} layers ranked; the pick replays best on "
        f"{t['pick_is_best']} of them"
    )
    if t["ranked"]:
        lines.append(
            f"replaying {run.peer}'s picks: {t['pick_replay']:,} cycles ({run.peer} says "
            f"{t['peer_picks']:,.0f}); the best of its top candidates: {t['best_replay']:,} "
            f"cycles; regret {t['regret']:.2%}"
        )
    regrets = df.dropna(subset=["regret"]).sort_values("regret", ascending=False)
    regrets = regrets[regrets["regret"] > 0].head(worst)
    if len(regrets):
        lines += ["", "largest regret:"]
        for r in regrets.itertuples():
            lines.append(
                f"* {r.layer}: {r.regret:.1%} (pick {r.pick_replay:,} vs winner {r.best_replay:,} "
                f"cycles, the winner ranked {r.winner_peer_rank} by {run.peer}); the pick pays "
                f"more in {r.pick_pays_more or '-'}"
            )
            if r.regret_mechanism:
                lines.append(f"  why: {r.regret_mechanism}")
            if r.pick_mechanism:
                lines.append(f"  pick: {r.pick_mechanism}")
            if r.winner_mechanism:
                lines.append(f"  winner: {r.winner_mechanism}")
    lines.append(
        f"({run.replayed} candidate(s) replayed now and {run.explained} explained (the picks and "
        f"winners), {run.from_cache} read from the cache)"
    )
    return "\n".join(lines)


def write_tables(run: RankRun, path: str | Path) -> list[Path]:
    """The layer table at `path` and the candidate table beside it (…-candidates), CSV or Parquet."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".parquet", ".pq"):
        raise CyclesimError(f"rank table {path}: unknown suffix {suffix!r}; use .csv or .parquet")
    written = []
    for df, target in (
        (run.layers, path),
        (run.candidates, path.with_name(f"{path.stem}-candidates{path.suffix}")),
    ):
        if suffix == ".csv":
            df.to_csv(target, index=False, lineterminator="\n")
        else:
            df.to_parquet(target, index=False)
        written.append(target)
    return written


def read_tables(path: str | Path, peer: str = "zigzag-dse") -> RankRun:
    """A rank run back from the two tables write_tables wrote (to plot or print them again)."""
    path = Path(path)
    other = path.with_name(f"{path.stem}-candidates{path.suffix}")
    read = pd.read_csv if path.suffix.lower() == ".csv" else pd.read_parquet
    layers, candidates = read(path), read(other)
    candidates["mechanisms"] = candidates["mechanisms"].fillna("")
    candidates["causes"] = candidates["causes"].fillna("{}")
    return RankRun(peer, candidates, layers, 0, 0, 0)
