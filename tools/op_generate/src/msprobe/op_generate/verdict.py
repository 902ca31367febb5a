"""How the scripts op_generate writes judge a run, and the two CSVs they write (part of their runtime).

Each output of the side under test is set against the bench with the documented columns (cosine, largest
absolute and relative errors; pass when cosine > 0.99 and the absolute error < 0.0001), and each side against
the float64 golden: which one is further from it, and whether the tested side is within its dtype's tolerance.
"""
from __future__ import annotations

import csv
import os
import time
from typing import Any, Dict, List

import numpy as np

OWN_INF_NAN = "Inf/NaN Not In Bench"
"""How many elements of the tested output are inf/nan where the bench's are finite: the API's own overflow."""
DETAILS = ["API Name", "Bench Dtype", "Tested Dtype", "Shape", "Cosine", "MaxAbsErr", "MaxRelativeErr", "Status",
           "Message", "Golden MaxAbsErr Tested", "Golden MaxAbsErr Bench", "Further From Golden",
           "Dtype Error Ratio", "Dtype Status", OWN_INF_NAN]
RESULTS = ["API Name", "Forward Test Success", "Backward Test Success", "Message"]
# torch.testing.assert_close's (rtol, atol) per dtype: the dtype-aware verdict of tested against the golden
TOLERANCES = {"float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5),
              "float64": (1e-7, 1e-7)}


def compare(tested: np.ndarray, bench: np.ndarray, golden: np.ndarray, dtype: str, case: Any) -> Dict[str, Any]:
    """One details row's numbers: tested against bench (the documented columns), and both against the golden."""
    if tested.shape != bench.shape:
        return {"Cosine": "", "MaxAbsErr": "", "MaxRelativeErr": "", "Status": "error",
                "Message": f"shape {list(tested.shape)} against the bench's {list(bench.shape)}"}
    t, b, g = (np.asarray(x, dtype=np.float64) for x in (tested, bench, golden))
    err, ratio = _abs_err(t, b), _abs_err(t, g)
    rel = float(np.max(err / np.maximum(np.abs(b), 1e-12))) if err.size else 0.0
    exact = dtype not in TOLERANCES
    rtol, atol = TOLERANCES.get(dtype, (0.0, 0.0))
    # both sides within the dtype's absolute tolerance of zero (a gradient that cancels out): their
    # directions are rounding noise, so cosine counts them as equal
    negligible = not exact and max(float(np.max(np.abs(x[np.isfinite(x)]), initial=0)) for x in (t, b)) <= atol
    cosine = 1.0 if negligible else _cosine(t, b)
    status = (not err.any()) if exact else cosine > case.cosine and float(err.max(initial=0)) < case.max_abs_err
    further_t, further_b = float(ratio.max(initial=0)), float(_abs_err(b, g).max(initial=0))
    dtype_ratio = float(np.max(ratio / (rtol * np.abs(g) + atol), initial=0)) if not exact else float(ratio.any())
    # the tested side's own inf/nan: what tells an overflow of the API from a difference by rounding
    own = int(np.count_nonzero(~np.isfinite(t) & np.isfinite(b)))
    return {"Cosine": cosine, "MaxAbsErr": float(err.max(initial=0)), "MaxRelativeErr": rel,
            "Status": "pass" if status else "error", "Message": "",
            "Golden MaxAbsErr Tested": further_t, "Golden MaxAbsErr Bench": further_b,
            "Further From Golden": "tested" if further_t > further_b else "bench" if further_b > further_t else "equal",
            "Dtype Error Ratio": dtype_ratio, "Dtype Status": "pass" if dtype_ratio <= 1 else "error",
            OWN_INF_NAN: own}


def _abs_err(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|a - b|, 0 where both hold the same inf or both nan, inf where only one is finite."""
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(a - b)
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    return np.where(same, 0.0, np.where(np.isnan(err), np.inf, err))


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    keep = np.isfinite(a) & np.isfinite(b)
    a, b = a[keep], b[keep]
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0 or nb == 0:
        return 1.0 if na == nb else 0.0
    return float(np.clip(np.dot(a.ravel(), b.ravel()) / (na * nb), -1.0, 1.0))


def rows(case: Any, direction: str, outs: List[Any]) -> List[Dict[str, Any]]:
    if any(out is None for out in outs):
        return [{"Status": "error", "Message": "a side failed to run (see the result CSV)"}]
    tested, bench, golden = (out[direction] for out in outs)
    if not len(tested) == len(bench) == len(golden):
        return [{"Status": "error", "Message": f"{len(tested)} tested outputs against {len(bench)} of the bench"}]
    return [dict(compare(t, b, g, td, case), **{"Bench Dtype": bd, "Tested Dtype": td, "Shape": str(list(t.shape))})
            for (t, td), (b, bd), (g, _) in zip(tested, bench, golden)]


def worst(name: str, found: List[Dict[str, Any]], iterations: int) -> Dict[str, Any]:
    """The row of the worst iteration (an error, then inf/nan of the tested side's own, then the largest
    MaxAbsErr), with the spread of MaxAbsErr and Cosine across iterations."""
    worst = max(found, key=lambda r: (r["Status"] == "error", r.get(OWN_INF_NAN) or 0,
                                      r.get("MaxAbsErr") or 0.0))
    row = dict(worst, **{"API Name": name})
    errs = [r["MaxAbsErr"] for r in found if isinstance(r.get("MaxAbsErr"), float)]
    cosines = [r["Cosine"] for r in found if isinstance(r.get("Cosine"), float)]
    if iterations > 1 and errs:
        spread = f"over {iterations} iterations MaxAbsErr {min(errs):.3g}..{max(errs):.3g}, Cosine " \
                 f"{min(cosines):.8g}..{max(cosines):.8g}"
        row["Message"] = "; ".join(m for m in (row.get("Message"), spread) if m)
    return row


def write_reports(case: Any, details: List[Dict[str, Any]], notes: List[str], out_dir: str) -> int:
    verdict = {d: "pass" if all(r["Status"] == "pass" for r in details if f".{d}." in r["API Name"]) else "error"
               for d in ("forward", "backward")}
    result = {"API Name": case.api, "Forward Test Success": verdict["forward"],
              "Backward Test Success": verdict["backward"] if case.backward else "", "Message": "; ".join(notes)}
    os.makedirs(out_dir, exist_ok=True)
    stamp, suffix = time.strftime("%Y%m%d%H%M%S"), 0
    while any(os.path.exists(_csv_path(out_dir, kind, stamp, suffix)) for kind in ("details", "result")):
        suffix += 1  # two runs within one second keep both reports
    for kind, columns, lines in (("details", DETAILS, details), ("result", RESULTS, [result])):
        with open(_csv_path(out_dir, kind, stamp, suffix), "w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, columns, restval="", extrasaction="ignore")
            writer.writeheader()
            writer.writerows(lines)
        print(f"wrote {_csv_path(out_dir, kind, stamp, suffix)}")
    for row in details:
        print(f"{row['API Name']}: {row['Status']}  cosine {row.get('Cosine', '')}  max abs err "
              f"{row.get('MaxAbsErr', '')}  further from the float64 golden: {row.get('Further From Golden', '')}")
    for note in notes:
        print(note)
    ok = all(v == "pass" for v in (result["Forward Test Success"], result["Backward Test Success"] or "pass"))
    return 0 if ok else 1


def _csv_path(out_dir: str, kind: str, stamp: str, suffix: int) -> str:
    return os.path.join(out_dir, f"accuracy_checking_{kind}_{stamp}{'_' + str(suffix) if suffix else ''}.csv")
