"""The Ray executor: `ray` (a local instance, or the cluster RAY_ADDRESS names) or `ray://host:port`.

Each candidate is one Ray task asking for one GPU (one CPU where the cluster has no GPU: the
interpreter mode), which starts the same worker as the other executors and streams its events
back as a Ray generator. Ray's own retries are off: a task whose worker process dies is a lost
job, recorded with Ray's reason and retried once by the pool, as on every executor. Ray is an
optional extra (`pip install 'rung[ray]'`), imported only here.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

from rung.errors import UsageError
from rung.executors.pool import FINAL_EVENTS, SlotDown, SlotLost
from rung.executors.wire import Job


def climb_in_task(job_json: str) -> Iterator[str]:
    """The Ray task: a fresh worker for one job, its event lines yielded as they come."""
    import ray

    gpus = ",".join(str(g) for g in ray.get_gpu_ids())  # the GPU Ray gave this task, if any
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rung.executors.worker",
            "--die-with-parent",
            *(["--gpu", gpus] if gpus else []),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert worker.stdin is not None and worker.stdout is not None and worker.stderr is not None
    # Drained meanwhile, so a chatty worker never blocks on a full stderr pipe.
    stderr: list[str] = []
    drain = threading.Thread(target=lambda: stderr.extend(worker.stderr or []), daemon=True)
    drain.start()
    worker.stdin.write(job_json + "\n")
    worker.stdin.close()
    for line in worker.stdout:
        if json.loads(line).get("event") != "hello":
            yield line
    code = worker.wait()
    drain.join(timeout=5)
    if code != 0:
        raise RuntimeError(f"the worker ended with status {code}: {''.join(stderr[-5:]).strip()}")


class RaySlot:
    def __init__(self, name: str, task: Any, resources: dict[str, float]) -> None:
        self.name, self.task, self.resources = name, task, resources

    def start(self) -> None:
        import ray

        if not ray.is_initialized():
            raise SlotDown("Ray is not running")

    def run(self, job: Job) -> Iterator[dict[str, Any]]:
        import ray

        try:
            for ref in self.task.options(**self.resources).remote(job.to_json()):
                event = json.loads(ray.get(ref))
                yield event
                if event.get("event") in FINAL_EVENTS:
                    return
        except ray.exceptions.RayError as e:
            lines = [ln for ln in str(e).splitlines() if ln.strip()]
            raise SlotLost(f"Ray: {type(e).__name__}: {lines[-1] if lines else e}") from None
        raise SlotLost("the Ray task ended before the climb did")

    def close(self) -> None:
        """Nothing to stop: a task in flight is cancelled with the Ray instance it ran on."""


class RayExecutor:
    remote = True  # a task may land on another machine: the problem is packed into each job

    def __init__(self, address: str | None = None, workers: int | None = None) -> None:
        try:
            import ray
        except ImportError:
            raise UsageError("the ray executor needs Ray: pip install 'rung[ray]'") from None
        self.ray, self.address, self.workers = ray, address, workers

    def slots(self) -> list[RaySlot]:
        ray = self.ray
        if not ray.is_initialized():
            ray.init(address=self.address, log_to_driver=False)
        gpus = int(ray.cluster_resources().get("GPU", 0))
        resources: dict[str, float] = {"num_gpus": 1} if gpus else {"num_cpus": 1}
        count = self.workers or gpus or int(ray.cluster_resources().get("CPU", 1))
        # max_retries=0: the pool retries, recording the loss first.
        task = ray.remote(max_retries=0)(climb_in_task)
        return [RaySlot(f"ray task slot {i}", task, resources) for i in range(count)]
