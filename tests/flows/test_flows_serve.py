"""``qgen serve`` registers the synthesize flow as a deployment with a cron schedule and parameters."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator
from unittest.mock import patch

import pytest
from prefect.client.orchestration import get_client
from prefect.testing.utilities import prefect_test_harness
from typer.testing import CliRunner

from flows.serve import deployment_parameters
from qgen.cli import app

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()


@pytest.fixture(scope="module")
def harness() -> Iterator[None]:
    with prefect_test_harness(server_startup_timeout=120):
        yield


def test_serve_registers_a_scheduled_deployment(harness: None, tmp_path: Path, tiny_checkpoint: Path) -> None:
    checkpoint = tiny_checkpoint  # read when serving starts: a file that is no question generator is refused
    graph = REPO / "data" / "demo" / "demo_kg.ttl"
    result = runner.invoke(app, ["serve", "--checkpoint", str(checkpoint), "--out", str(tmp_path / "corpus"),
                                 "--from-graph", str(graph), "--count", "250", "--cron", "30 4 * * 1",
                                 "--timezone", "Europe/Berlin", "--name", "nightly", "--dask-workers", "2", "--once"])
    assert result.exit_code == 0, result.output
    assert "serving qgen-synthesize/nightly on cron '30 4 * * 1'" in result.stdout
    assert "registered; its schedule is active" in result.stdout
    with get_client(sync_client=True) as client:
        deployment = client.read_deployment_by_name("qgen-synthesize/nightly")
    assert deployment.entrypoint == "flows.synthesize.synthesize_flow"
    assert deployment.parameters == {"checkpoint": str(checkpoint), "out": str(tmp_path / "corpus"),
                                     "from_graph": str(graph), "count": 250, "beam": 4,
                                     "shard_size": 1000, "dask_workers": 2}
    [schedule] = deployment.schedules
    assert schedule.active and schedule.schedule.cron == "30 4 * * 1"
    assert schedule.schedule.timezone == "Europe/Berlin"


def test_serve_registers_the_deployment_for_a_work_pool_instead(harness: None, tmp_path: Path,
                                                               tiny_checkpoint: Path) -> None:
    from prefect.client.schemas.actions import WorkPoolCreate

    with get_client(sync_client=True) as client:
        client.create_work_pool(WorkPoolCreate(name="qgen-pool", type="process"))
    tables = [str(REPO / "data" / "demo" / t) for t in ("ferries.csv", "festivals.csv")]
    result = runner.invoke(app, ["serve", "--checkpoint", str(tiny_checkpoint), "--from-tables", tables[0],
                                 "--from-tables", tables[1], "--work-pool", "qgen-pool", "--name", "pooled",
                                 "--no-repeat"])
    assert result.exit_code == 0, result.output
    assert "registered on work pool 'qgen-pool'; start a worker: prefect worker start --pool qgen-pool" in result.stdout
    with get_client(sync_client=True) as client:
        deployment = client.read_deployment_by_name("qgen-synthesize/pooled")
    assert deployment.work_pool_name == "qgen-pool" and deployment.entrypoint == "flows/synthesize.py:synthesize_flow"
    assert deployment.parameters["from_tables"] == tables and deployment.parameters["no_repeat"] is True
    assert deployment.parameters["out"].endswith("qgen-out/scheduled/{date}-{time}")  # one corpus per scheduled run
    assert "seed" not in deployment.parameters  # each run's seed comes from its scheduled time
    assert deployment.schedules[0].schedule.cron == "0 3 * * *"


def test_run_folder_names_the_scheduled_day() -> None:
    from datetime import datetime, timezone

    from flows.synthesize import run_folder

    assert run_folder("out/{date}") == "out/" + datetime.now(timezone.utc).strftime("%Y-%m-%d")
    assert run_folder("out/fixed") == "out/fixed"
    assert len(run_folder("out/{date}-{time}")) == len("out/2026-01-01-030000")


def test_each_scheduled_run_draws_its_own_seed_unless_one_is_fixed() -> None:
    from datetime import datetime, timezone

    from flows.synthesize import run_seed

    assert run_seed(7) == 7 and run_seed(0) == 0
    assert abs(run_seed(None) - datetime.now(timezone.utc).timestamp()) < 5  # outside a run: now
    with patch("prefect.runtime.flow_run.scheduled_start_time", datetime(2026, 3, 1, 3, 0, tzinfo=timezone.utc),
               create=True):
        assert run_seed(None) == int(datetime(2026, 3, 1, 3, 0, tzinfo=timezone.utc).timestamp())


def test_serve_needs_exactly_one_source(tmp_path: Path, tiny_checkpoint: Path) -> None:
    result = runner.invoke(app, ["serve", "--checkpoint", str(tiny_checkpoint), "--once"])
    assert result.exit_code == 2 and "error: give exactly one of --from-graph" in result.output
    with pytest.raises(ValueError, match="exactly one"):
        deployment_parameters("m.pt", "out", from_graph="g.ttl", from_file="lfs.jsonl")


@pytest.mark.parametrize(("options", "said"), [
    (["--from-graph", "{tmp}/nope.ttl"], "--from-graph {tmp}/nope.ttl: no such file"),
    (["--from-tables", "{graph}", "--from-tables", "{tmp}/nope.csv"], "--from-tables {tmp}/nope.csv: no such file"),
    (["--from-graph", "{graph}", "--cron", "not a cron"], "--cron 'not a cron': Invalid cron string"),
    (["--from-graph", "{graph}", "--timezone", "Mars/Base"], "--timezone 'Mars/Base': not a time zone"),
    (["--from-graph", "{graph}", "--timezone", "right/UTC"], "--timezone 'right/UTC': not a time zone"),
])
def test_serve_refuses_a_missing_source_or_a_bad_schedule_before_registering(
        options: list[str], said: str, tmp_path: Path, tiny_checkpoint: Path) -> None:
    """Else the deployment is registered and every scheduled run fails."""
    fill = {"tmp": tmp_path, "graph": REPO / "data" / "demo" / "demo_kg.ttl"}
    with patch("flows.serve.serve_synthesis") as served:
        result = runner.invoke(app, ["serve", "--checkpoint", str(tiny_checkpoint), "--once",
                                     *(o.format(**fill) for o in options)])
    assert result.exit_code == 2 and f"error: {said.format(**fill)}" in result.output, result.output
    assert "serving" not in result.output and not served.called


def test_serve_takes_a_missing_dedup_folder_only_where_its_runs_go(tmp_path: Path, tiny_checkpoint: Path) -> None:
    graph = str(REPO / "data" / "demo" / "demo_kg.ttl")
    serve = ["serve", "--checkpoint", str(tiny_checkpoint), "--from-graph", graph, "--once",
             "--out", str(tmp_path / "runs" / "{date}-{time}")]
    result = runner.invoke(app, [*serve, "--dedup-against", str(tmp_path / "typo")])
    assert result.exit_code == 2 and "typo: no such folder (only the folder the runs write to" in result.output
    with patch("flows.serve.serve_synthesis", return_value="id") as served:  # the runs' own folder: accepted
        result = runner.invoke(app, [*serve, "--dedup-against", str(tmp_path / "runs")])
    assert result.exit_code == 0, result.output
    assert served.call_args.args[0]["dedup_against"] == [str(tmp_path / "runs")]


def test_serving_a_schedule_without_a_prefect_server_is_refused(tmp_path: Path, tiny_checkpoint: Path) -> None:
    """The embedded server runs no scheduler: serving with it would idle forever, so it is refused before work."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(PREFECT_HOME=str(tmp_path / "prefect-home"), PYTHONPATH=str(REPO))  # no profile naming a server
    command = [sys.executable, "-c", "from qgen.cli import run; run()", "serve", "--checkpoint", str(tiny_checkpoint),
               "--from-graph", str(REPO / "data" / "demo" / "demo_kg.ttl"), "--out", str(tmp_path / "c")]
    proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("error: serving a schedule needs a Prefect server") and "PREFECT_API_URL" in proc.stderr
    assert not (tmp_path / "c").exists()


def test_sigterm_stops_serving_and_pauses_the_schedule(harness: None, tmp_path: Path, tiny_checkpoint: Path) -> None:
    """systemd and Kubernetes stop a service with SIGTERM: the schedule must not stay active behind it."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from prefect.settings import PREFECT_API_URL

    env = {**os.environ, "PREFECT_API_URL": PREFECT_API_URL.value(), "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-c", "from qgen.cli import app; app()", "serve", "--checkpoint",
               str(tiny_checkpoint), "--from-graph", str(REPO / "data" / "demo" / "demo_kg.ttl"),
               "--name", "terminated", "--cron", "0 3 * * *"]
    served = subprocess.Popen(command, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True)
    try:
        deadline = time.monotonic() + 120
        active = None
        while time.monotonic() < deadline and active is None:  # registered and serving
            time.sleep(1)
            with get_client(sync_client=True) as client:
                try:
                    active = client.read_deployment_by_name("qgen-synthesize/terminated").schedules[0].active
                except Exception:  # noqa: BLE001 - not registered yet
                    active = None
        assert active is True, "the deployment was never registered"
        time.sleep(2)  # past registration, into the polling loop
        served.send_signal(signal.SIGTERM)
        output, _ = served.communicate(timeout=60)
    finally:
        served.kill()
    with get_client(sync_client=True) as client:
        deployment = client.read_deployment_by_name("qgen-synthesize/terminated")
    assert served.returncode is not None and deployment.paused, output


def test_sigterm_between_registration_and_serving_still_pauses(harness: None) -> None:
    """add_flow registers the schedule before Prefect's runner installs its SIGTERM handler: a SIGTERM
    in that window must not leave the schedule active behind a dead process."""
    import asyncio
    import os
    import signal
    import threading

    from flows.serve import deployment_parameters, serve_synthesis

    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signal handlers need the main thread")

    async def terminated_before_start(self: object, run_once: bool = False) -> None:
        os.kill(os.getpid(), signal.SIGTERM)  # as systemd would, before the runner's own handler
        await asyncio.sleep(30)

    parameters = deployment_parameters("best.pt", "out", from_graph="g.ttl")
    before = signal.getsignal(signal.SIGTERM)
    with patch("flows.serve.Runner.start", terminated_before_start):
        serve_synthesis(parameters, name="early-term")
    with get_client(sync_client=True) as client:
        deployment = client.read_deployment_by_name("qgen-synthesize/early-term")
    assert deployment.paused and signal.getsignal(signal.SIGTERM) is before
