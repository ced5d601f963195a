"""Compare the round-trip rules on a synthesized corpus: how many pairs each keeps, and how many of
those pass the faithfulness audit.

The candidates are the pairs the over-copy filter kept: the corpus's pairs plus its ``round_trip``
rejects. Each rule (exact, score, token; answers for SQL when ``--tables`` names the tables the
corpus was sampled from) judges all of them with the given parser (its calibrated thresholds), and
the audit (``qgen.synth.audit``) says which are faithful.

    python benchmarks/round_trip_rules.py --corpus qgen-out/corpus/graph --parser qgen-out/parser/best.pt
    python benchmarks/round_trip_rules.py --corpus qgen-out/corpus/tables --parser qgen-out/parser/best.pt \
        --tables data/demo/ferries.csv data/demo/festivals.csv
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import pyarrow.dataset as ds

from parsers import tokenize_lf
from qgen.synth.audit import audit_pair
from qgen.synth.round_trip import ANSWERS_LF_TYPES, RULES, RoundTripFilter


def candidates(corpus: Path) -> list[tuple[str, str, list[str], str, list[str]]]:
    """(lf_type, logical form, LF tokens, question, answers) of every pair the over-copy filter kept."""
    rows = ds.dataset(corpus / "pairs", format="parquet").to_table().to_pylist()
    out = [(r["lf_type"], r["logical_form"], r["lf_tokens"], r["question"], r["answers"] or []) for r in rows]
    for reject in ds.dataset(corpus / "rejects", format="parquet").to_table().to_pylist():
        if reject["stage"] == "round_trip":
            record = json.loads(reject["input"])
            tokens = tokenize_lf(record["logical_form"], record["lf_type"], names=record.get("names") or {}).tokens
            out.append((record["lf_type"], record["logical_form"], tokens, record["question"],
                        record.get("answers") or []))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True, help="A corpus folder (qgen synthesize --out).")
    parser.add_argument("--parser", type=Path, required=True, help="A parser checkpoint (qgen train --task parse).")
    parser.add_argument("--tables", nargs="*", default=[], help="The tables the corpus was sampled from (rule answers).")
    parser.add_argument("--k", type=int, default=1, help="Rules exact and answers: a match among the parser's K best "
                        "parses (the figures in benchmarks/README.md were measured with 1; synthesis reads 4).")
    args = parser.parse_args()
    pairs = candidates(args.corpus)
    if not pairs:
        raise SystemExit(f"{args.corpus} holds no pair the over-copy filter kept")
    audits = [audit_pair(t, lf, tokens, q).passed for t, lf, tokens, q, _ in pairs]
    print(f"{args.corpus}: {len(pairs)} candidates, {sum(audits) / len(pairs):.1%} pass the audit")
    lf_types = sorted({p[0] for p in pairs})
    results = {}
    for rule in RULES:
        types = [t for t in lf_types if rule != "answers" or (t in ANSWERS_LF_TYPES and args.tables)]
        if not types:
            continue
        started = time.perf_counter()
        judge = RoundTripFilter(args.parser, rules={t: rule for t in types}, k=args.k, tables=args.tables)
        kept = []
        for lf_type in types:
            chosen = [i for i, p in enumerate(pairs) if p[0] == lf_type]
            verdicts = judge.judge(lf_type, [pairs[i][3].split() for i in chosen], [pairs[i][2] for i in chosen],
                                   [pairs[i][4] for i in chosen])
            kept += [audits[i] for i, v in zip(chosen, verdicts) if v.keep]
        rate = sum(kept) / len(kept) if kept else None
        results[rule] = {"kept": len(kept), "audit_pass_rate": rate, "seconds": round(time.perf_counter() - started, 1)}
        print(f"  {rule:6s} kept {len(kept):5d} of {len(pairs)}; audit pass of kept "
              f"{'n/a' if rate is None else f'{rate:.1%}'}  ({results[rule]['seconds']} s)")
    print(json.dumps({"corpus": str(args.corpus), "parser": str(args.parser), "candidates": len(pairs),
                      "audit_pass_rate": sum(audits) / len(pairs), "rules": results}))


if __name__ == "__main__":
    main()
