"""Where synthesis shards run: in the flow's own process, or on a Dask cluster (prefect-dask).

``--dask-address tcp://host:8786`` uses an existing cluster; ``--dask-workers N`` starts a
``distributed.LocalCluster`` of N single-threaded worker processes for the run. Dask workers
report their task runs to the Prefect API: a LocalCluster gets the flow's API URL (also the
embedded server's), an existing cluster's workers need ``PREFECT_API_URL`` set to a server they
can reach (see the README).
"""
from __future__ import annotations

from typing import Any, Optional


def current_api_url() -> Optional[str]:
    """The API the running flow reports to (the embedded server's URL when none is configured)."""
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        url = str(client.api_url)
    return url or None


def dask_task_runner(dask_address: Optional[str] = None, dask_workers: int = 0) -> Any:
    """A ``DaskTaskRunner`` for the shards, or None to run them in the flow's process."""
    if not dask_address and dask_workers <= 0:
        return None
    from prefect_dask import DaskTaskRunner

    if dask_address:
        return DaskTaskRunner(address=dask_address)
    env = {"PREFECT_API_URL": current_api_url() or "", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    return DaskTaskRunner(cluster_class="distributed.LocalCluster",
                          cluster_kwargs={"n_workers": dask_workers, "threads_per_worker": 1, "processes": True,
                                          "dashboard_address": ":0", "env": env})
