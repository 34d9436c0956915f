"""Running SPMD test bodies on several ranks in one process: torch's threaded process group (one thread per
rank, real collectives between the threads, a private API of torch's own test suite) and a 2-process gloo
launcher for what threads cannot show."""

from __future__ import annotations

import datetime
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist
from torch.testing._internal.distributed.multi_threaded_pg import (
    ProcessLocalGroup,
    _install_threaded_pg,
    _uninstall_threaded_pg,
)

import trn_backend.distributed as td  # noqa: F401  (wraps the namespace before any rank starts)
from trn_backend.distributed._mesh import leave_together

_LOCK = threading.Lock()  # one simulated world at a time


def spmd(world_size: int, body: Callable[[int], Any], timeout: float = 60.0) -> list[Any]:
    """``body(rank)`` on ``world_size`` threads, each a rank of a threaded process group; returns the results
    in rank order, or raises with every failing rank's traceback (a rank that hangs fails after ``timeout``)."""
    with _LOCK:
        torch._C._distributed_c10d._set_thread_isolation_mode(True)
        _install_threaded_pg()
        store = dist.HashStore()
        results: dict[int, Any] = {}
        errors: dict[int, str] = {}

        def worker(rank: int) -> None:
            dist.init_process_group("threaded", rank=rank, world_size=world_size, store=store)
            try:
                results[rank] = body(rank)
            except BaseException as e:  # noqa: BLE001 - reported below, and wakes the other ranks
                errors[rank] = traceback.format_exc()
                ProcessLocalGroup.exception_handle(e)
            finally:
                dist.destroy_process_group()

        threads = [threading.Thread(target=worker, args=(r,), daemon=True) for r in range(world_size)]
        try:
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout)
            hung = [r for r, t in enumerate(threads) if t.is_alive()]
            ProcessLocalGroup.reset()
        finally:
            _uninstall_threaded_pg()
            torch._C._distributed_c10d._set_thread_isolation_mode(False)
    if hung:
        raise TimeoutError(f"ranks {hung} did not finish within {timeout} s; errors: {errors}")
    if errors:
        raise AssertionError("\n".join(f"rank {r}:\n{e}" for r, e in sorted(errors.items())))
    return [results[r] for r in range(world_size)]


def raised(cases: list[Callable[[], Any]]) -> list[str]:
    """Each case called: "no error", or the TypeError, ValueError or IndexError it raised as "Kind: message"."""
    out = []
    for case in cases:
        try:
            case()
            out.append("no error")
        except (TypeError, ValueError, IndexError) as e:
            out.append(f"{type(e).__name__}: {e}")
    return out


def gloo(world_size: int, body: Callable[[int], None], store_path: str, timeout: float = 90.0) -> None:
    """``body(rank)`` in ``world_size`` spawned processes joined in a gloo process group (collectives time out
    after 30 s, so a lost rank fails the others fast); a failing rank's traceback is raised here."""
    import torch.multiprocessing as mp

    context = mp.start_processes(
        _gloo_rank, args=(world_size, body, store_path), nprocs=world_size, join=False, start_method="spawn"
    )
    deadline = time.monotonic() + timeout
    while not context.join(timeout=max(0.1, deadline - time.monotonic())):
        if time.monotonic() > deadline:
            for p in context.processes:
                p.kill()
            raise TimeoutError(f"the {world_size} gloo ranks did not finish within {timeout} s")


def _gloo_rank(rank: int, world_size: int, body: Callable[[int], None], store_path: str) -> None:
    store = dist.FileStore(store_path, world_size)
    dist.init_process_group(
        "gloo", store=store, rank=rank, world_size=world_size, timeout=datetime.timedelta(seconds=30)
    )
    try:
        body(rank)
    except BaseException:
        dist.destroy_process_group()  # the others time out, and the error reaches the parent
        raise
    leave_together(store, datetime.timedelta(seconds=30))
