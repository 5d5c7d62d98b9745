"""A running container's resource use, as the engine reports it, in the portal's units.

Counters (CPU time, network bytes) are cumulative since the container started: the sampler
turns two readings into rates, so one cheap reading per interval is enough (Docker's
``one-shot`` stats answer at once instead of waiting a second for a second reading).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class ContainerStats:
    cpu_ns: int  # CPU time used since the start, all cores together
    memory_bytes: int  # in use, page cache that can be dropped not counted (as `docker stats`)
    memory_limit_bytes: int | None
    net_rx_bytes: int
    net_tx_bytes: int


def parse_docker_stats(raw: Mapping) -> ContainerStats:
    """Docker's ``GET /containers/{id}/stats?stream=false`` answer (cgroup v1 or v2)."""
    cpu = (raw.get("cpu_stats") or {}).get("cpu_usage") or {}
    memory = raw.get("memory_stats") or {}
    detail = memory.get("stats") or {}
    # `docker stats` subtracts the inactive page cache: total_inactive_file on cgroup v1,
    # inactive_file on v2.
    cache = detail.get("total_inactive_file", detail.get("inactive_file", 0)) or 0
    usage = int(memory.get("usage") or 0)
    networks = (raw.get("networks") or {}).values()
    limit = memory.get("limit")
    return ContainerStats(
        cpu_ns=int(cpu.get("total_usage") or 0),
        memory_bytes=max(usage - int(cache), 0),
        memory_limit_bytes=int(limit) if limit else None,
        net_rx_bytes=sum(int(n.get("rx_bytes") or 0) for n in networks),
        net_tx_bytes=sum(int(n.get("tx_bytes") or 0) for n in networks),
    )
