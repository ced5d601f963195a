"""Hostile inputs for the samplers: misbehaving SPARQL endpoints, SQL that asks for gigabytes, bad tables.

    python benchmarks/endpoint_limits_probe.py [--only NAME ...] [--wall 60] [--out FILE]

Each scenario runs in its own Python process under a wall-clock limit, through the public entry
points only (``readonly.endpoint_graph`` / ``run_sparql``, ``KGSampler.from_endpoint``, ``run_sql``,
``TableSampler``), and reports: the outcome (the sampler's counts, or the exception's first line),
the draws tried and whether every one has an outcome (accounted), a crash (an exception out of
sampling, or one that is not a typed ``LogicalFormError`` anywhere, or a non-zero exit), a hang
(killed at ``--wall``), the seconds taken and the process's peak RSS. The endpoints are
``tests/security/fake_endpoint.py`` serving ``tests/fixtures/samplers/small_kg.ttl`` from a thread.
"""
from __future__ import annotations

import argparse
import json
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "security"))

ENDPOINT_MODES = ("ok", "stall", "flaky", "down", "garbage", "html", "stream", "trickle", "huge", "mixed",
                  "refused", "surrogate")
SQL_SCENARIOS = ("sql-randomblob", "sql-printf", "sql-zeroblob-table", "csv-oversized-cell", "csv-header-only",
                 "sqlite-no-tables", "sqlite-empty-table")


def _sample_endpoint(mode: str, count: int = 5) -> dict:
    from fake_endpoint import FakeEndpoint, closed_port
    from rdflib import Graph, Literal, URIRef

    from qgen.samplers.kg import KGSampler, KGSamplerConfig
    from qgen.samplers.readonly import endpoint_graph

    graph = Graph().parse(REPO / "tests" / "fixtures" / "samplers" / "small_kg.ttl")
    if mode == "surrogate":  # every English name of a country gets a lone surrogate
        name = URIRef("http://rdf.freebase.com/ns/type.object.name")
        for subject in list(graph.subjects(name, None)):
            for old in [o for o in graph.objects(subject, name) if getattr(o, "language", None) == "en"]:
                graph.remove((subject, name, old))
                graph.add((subject, name, Literal(str(old) + " \ud800", lang="en")))
    with FakeEndpoint(graph) as server:
        url = f"http://127.0.0.1:{closed_port()}/ok" if mode == "refused" else \
            f"{server.url}/{'ok' if mode == 'surrogate' else mode}"
        sampler = KGSampler.from_endpoint(endpoint_graph(url), KGSamplerConfig(seed=0, timeout_s=2.0))
        return _sample(sampler, count) | {"requests": server.requests, "bytes_streamed": server.sent}


def _sample(sampler: object, count: int) -> dict:
    """Draw up to ``count`` records (40 draws at most); an exception here kills the run: a crash."""
    try:
        records = list(sampler.sample(count, max_draws=40))
    except Exception as exc:  # noqa: BLE001
        raise _Crash(exc) from None
    stats = sampler.stats
    return {"outcome": f"{len(records)} records; {stats}", "tried": stats.drawn, "accounted": stats.accounted()}


class _Crash(Exception):
    """An exception that escaped a sampling run."""


def _prepare(name: str) -> Path | None:
    """The table file of a table scenario, written by the driver (so that the scenario's peak RSS
    does not include writing it)."""
    tmp = Path(tempfile.mkdtemp(prefix="qgen-probe-"))
    if name.startswith("csv"):
        path = tmp / "notes.csv"
        rows = "" if name == "csv-header-only" else "".join(f"n{i},{i},{'x' * 25_000}\n" for i in range(10))
        path.write_text("name,year,notes\n" + rows)
        return path
    if name.startswith("sqlite") or name == "sql-zeroblob-table":
        path = tmp / "db.sqlite"
        with sqlite3.connect(path) as conn:
            if name == "sql-zeroblob-table":
                conn.execute("CREATE TABLE t (a INTEGER, b TEXT GENERATED ALWAYS AS (hex(zeroblob(2e8))) VIRTUAL)")
                conn.executemany("INSERT INTO t (a) VALUES (?)", [(1,), (2,), (3,)])
            elif name == "sqlite-empty-table":
                conn.execute("CREATE TABLE t (a INTEGER, b TEXT)")
        conn.close()
        return path
    return None


def _sql(name: str, path: str | None) -> dict:
    from qgen.samplers.readonly import run_sql
    from qgen.samplers.tables import TableSampler

    if name in ("sql-randomblob", "sql-printf"):
        sql = "SELECT randomblob(1e9)" if name == "sql-randomblob" else "SELECT printf('%.*c', 1e9, 'x')"
        rows = run_sql(sqlite3.connect(":memory:"), sql, timeout_s=3.0)
        return {"outcome": f"{len(rows)} row of {len(rows[0][0] or '')} bytes"}
    assert path is not None
    sampler = TableSampler.from_files([path]) if path.endswith(".csv") else TableSampler.from_sqlite(path)
    return _sample(sampler, 5)


def child(name: str, path: str | None) -> None:
    started = time.monotonic()
    from parsers.errors import LogicalFormError

    try:
        report = _sql(name, path) if name in SQL_SCENARIOS else _sample_endpoint(name)
    except Exception as exc:  # noqa: BLE001 - the probe reports what escaped
        error = exc.args[0] if isinstance(exc, _Crash) else exc
        typed = isinstance(error, LogicalFormError) and not isinstance(exc, _Crash)
        report = {"outcome": f"{'typed error' if typed else 'raised'} {type(error).__name__}: "
                             f"{' '.join(str(error).split())[:160]}", "escaped": not typed}
    report["seconds"] = round(time.monotonic() - started, 2)
    report["peak_rss_mb"] = _peak_rss_mb()
    print("PROBE " + json.dumps(report), flush=True)


def _peak_rss_mb() -> int:
    """This process's peak RSS (Linux's VmHWM, which starts afresh at exec; ru_maxrss elsewhere)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024)
    except OSError:
        pass
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def run(name: str, wall: float) -> dict:
    path = _prepare(name)
    started = time.monotonic()
    try:
        proc = subprocess.run([sys.executable, __file__, "--child", name, *(["--path", str(path)] if path else [])],
                              capture_output=True, text=True, timeout=wall, cwd=REPO)
    except subprocess.TimeoutExpired:
        return {"scenario": name, "hang": True, "crash": False, "seconds": round(time.monotonic() - started, 1),
                "outcome": f"killed after {wall:g} s"}
    lines = [line for line in proc.stdout.splitlines() if line.startswith("PROBE ")]
    report = json.loads(lines[-1][6:]) if lines else {"outcome": (proc.stderr.strip().splitlines() or ["?"])[-1]}
    crash = proc.returncode != 0 or report.pop("escaped", False)
    return {"scenario": name, "hang": False, "crash": crash, **report}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--path", help=argparse.SUPPRESS)
    parser.add_argument("--only", nargs="*", help="scenarios to run (default: all)")
    parser.add_argument("--wall", type=float, default=60.0, help="seconds before a scenario counts as hung")
    parser.add_argument("--out", type=Path, help="also write the results as JSON here")
    args = parser.parse_args()
    if args.child:
        child(args.child, args.path)
        return
    results = []
    for name in args.only or (*ENDPOINT_MODES, *SQL_SCENARIOS):
        result = run(name, args.wall)
        results.append(result)
        print(f"{name:20s} crash={int(result['crash'])} hang={int(result['hang'])} "
              f"{result.get('seconds', '?'):>6}s rss={result.get('peak_rss_mb', '?')}MB "
              f"tried={result.get('tried', '-')} accounted={result.get('accounted', '-')} | {result['outcome']}",
              flush=True)
    crashes, hangs = sum(r["crash"] for r in results), sum(r["hang"] for r in results)
    print(f"scenarios {len(results)}: crashes {crashes}, hangs {hangs}, "
          f"peak RSS {max((r.get('peak_rss_mb') or 0) for r in results)} MB")
    if args.out:
        args.out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
