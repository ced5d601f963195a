"""Scheduled corpus runs: the synthesize flow served as a deployment with a cron schedule.

``serve_synthesis`` (behind ``qgen serve``) registers the deployment ``qgen-synthesize/<name>``
with its schedule and default parameters (the source, how many logical forms, the model) on the
Prefect API (``PREFECT_API_URL``, else the embedded server) and polls for its runs until stopped.
Stopping pauses the deployment (Prefect's default for served flows), whether by Ctrl-C (SIGINT) or
by SIGTERM, what systemd and Kubernetes send (a test holds Prefect to it). ``run_once`` registers, polls once and returns, leaving
the schedule active: a check, or a registration for a worker. Each run draws its seed from its
scheduled time unless the deployment fixes one (``flows.synthesize.run_seed``).

``deploy_to_work_pool`` (``qgen serve --work-pool NAME``) registers the same deployment for a work
pool instead: a ``prefect worker start --pool NAME`` process (anywhere that sees the code and the
files) then runs the scheduled runs. Either way the runs need a Prefect server with its scheduler
(``prefect server start``); the embedded server has none.
"""
from __future__ import annotations

import asyncio
import signal
import threading
from pathlib import Path
from typing import Any, Optional

from prefect.runner import Runner
from prefect.schedules import Cron
from prefect.types.entrypoint import EntrypointType

from flows.synthesize import synthesize_flow

DEPLOYMENT = "scheduled-corpus"


def deployment_parameters(checkpoint: str, out: str, from_graph: Optional[str] = None,
                          from_tables: Optional[list[str]] = None, from_file: Optional[str] = None,
                          from_endpoint: Optional[str] = None, count: int = 1000, seed: Optional[int] = None,
                          beam: int = 4,
                          shard_size: int = 1000, dask_address: Optional[str] = None,
                          dask_workers: int = 0, no_repeat: bool = False,
                          dedup_against: Optional[list[str]] = None) -> dict[str, Any]:
    """The deployment's default parameters: exactly one source, as ``qgen synthesize`` asks.

    Unset ones are left out (the flow's defaults apply: without ``seed``, each run's seed comes from
    its scheduled time); ``no_repeat`` appears only when on."""
    sources = [x for x in (from_graph, from_tables or None, from_file, from_endpoint) if x]
    if len(sources) != 1:
        raise ValueError("give exactly one of --from-graph, --from-tables, --from-file, --from-endpoint")
    params = {"checkpoint": checkpoint, "out": out, "from_graph": from_graph, "from_tables": from_tables or None,
              "from_file": from_file, "from_endpoint": from_endpoint, "count": count, "seed": seed, "beam": beam,
              "shard_size": shard_size, "dask_address": dask_address, "dask_workers": dask_workers,
              "no_repeat": True if no_repeat else None, "dedup_against": dedup_against or None}
    return {k: v for k, v in params.items() if v is not None}


class Terminated(Exception):
    """SIGTERM arrived before Prefect's runner took the signal over."""


def _terminate(signum: int, frame: Any) -> None:
    raise Terminated()


def serve_synthesis(parameters: dict[str, Any], cron: str = "0 3 * * *", name: str = DEPLOYMENT,
                    timezone: Optional[str] = None, run_once: bool = False) -> str:
    """Register the scheduled deployment and serve it; returns its id (after the runner stops).

    Prefect's runner pauses the schedule on SIGTERM only once ``start`` has installed its handler,
    but ``add_flow`` registers the deployment (active) before that: a SIGTERM in between would kill
    the process with the schedule left active. Our own handler covers that window, and whatever
    way serving ends, the deployment is paused here too (pausing twice is harmless)."""
    runner = Runner(name=f"qgen-{name}", pause_on_shutdown=not run_once, limit=1)
    schedule = Cron(cron, timezone=timezone) if timezone else Cron(cron)
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if in_main_thread else None
    deployment_id = None
    try:
        deployment_id = runner.add_flow(synthesize_flow, name=name, schedules=[schedule], parameters=parameters,
                                        description="A scheduled synthetic-corpus run (qgen serve)",
                                        tags=["qgen", "synthesis"], entrypoint_type=EntrypointType.MODULE_PATH)
        asyncio.run(runner.start(run_once=run_once))
    except (Terminated, SystemExit):
        pass  # a SIGTERM: stop serving (SystemExit is Prefect's own handler's way out)
    finally:
        if in_main_thread:
            signal.signal(signal.SIGTERM, previous)
        if not run_once:
            _pause(f"{synthesize_flow.name}/{name}")
    return str(deployment_id)


def _pause(deployment_name: str) -> None:
    """Pause the named deployment if it was registered (a SIGTERM may have come before)."""
    from prefect import get_client

    with get_client(sync_client=True) as client:
        try:
            deployment = client.read_deployment_by_name(deployment_name)
        except Exception:  # noqa: BLE001 - never registered: nothing to pause
            return
        client.pause_deployment(deployment.id)


def deploy_to_work_pool(parameters: dict[str, Any], work_pool: str, cron: str = "0 3 * * *",
                        name: str = DEPLOYMENT, timezone: Optional[str] = None) -> str:
    """Register the scheduled deployment on ``work_pool`` (which must exist); returns its id."""
    root = Path(__file__).resolve().parent.parent
    schedule = Cron(cron, timezone=timezone) if timezone else Cron(cron)
    deployable = synthesize_flow.from_source(source=str(root), entrypoint="flows/synthesize.py:synthesize_flow")
    deployment_id = deployable.deploy(name=name, work_pool_name=work_pool, schedules=[schedule], parameters=parameters,
                                      description="A scheduled synthetic-corpus run (qgen serve --work-pool)",
                                      tags=["qgen", "synthesis"], print_next_steps=False, ignore_warnings=True)
    return str(deployment_id)
