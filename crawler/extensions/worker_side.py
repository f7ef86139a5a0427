"""What runs inside a worker process of :mod:`crawler.extensions.workers`: its start-up and the call of
each job. No Scrapy here: a worker imports only the pure modules its jobs live in, so it is ready for the
crawl's first listing page sooner."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

# Imported by each worker when it starts, before its first job arrives: the modules of the crawl's jobs.
JOB_MODULES = ("crawler.cache.entry", "crawler.pages.lecture", "crawler.pages.api", "crawler.dedup.near")

# WORKER_JOB_WRAPPER in this worker: wrapper(fn, *args, **kwargs) runs every job (None: the job itself).
_job_wrapper: Callable[..., object] | None = None


def warm_up(job_wrapper: Callable[..., object] | None) -> None:
    """A worker's initializer: import the jobs' modules and keep the job wrapper."""
    for module in JOB_MODULES:
        importlib.import_module(module)
    global _job_wrapper
    _job_wrapper = job_wrapper


def call(fn: Callable[..., T], args: tuple[object, ...], kwargs: Mapping[str, object]) -> T:
    """Run a job in a worker, through ``WORKER_JOB_WRAPPER`` when one is set."""
    if _job_wrapper is not None:
        return _job_wrapper(fn, *args, **kwargs)  # type: ignore[return-value]  # the wrapper returns fn's result
    return fn(*args, **kwargs)
