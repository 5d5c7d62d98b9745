"""What the portal needs from a container engine: exactly the calls it makes, nothing more.

``engine.DockerEngine`` implements it on a Docker daemon; ``clusters.services.engine_for``
builds the class named by ``settings.PORTAL_ENGINE_CLASS``. The fast tests' scripted fake
(tests/support/scripted_engine.py) implements it too, and one contract suite
(tests/integration/contract/) holds both to the same observable behaviour.

Every method raises ``errors.RuntimeFailure`` (``permanent`` or transient) and nothing else;
``ContainerNotFound``, ``ContainerNotRunning`` and ``HostPortBusy`` (a start whose host port
is taken, with the port) are the failures callers tell apart.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:  # the dataclasses live with the Docker adapter; importing them is cheap
    from clusters.runtime.engine import ContainerState, EngineInfo
    from clusters.runtime.spec import ContainerSpec, PortPolicy
    from clusters.runtime.stats import ContainerStats


@runtime_checkable
class Engine(Protocol):
    url: str
    port_policy: PortPolicy

    # -- lifetime: engines are used as ``with engine_for(slave) as engine:`` ----------------
    def close(self) -> None: ...
    def __enter__(self) -> Engine: ...
    def __exit__(self, *exc) -> None: ...

    # -- the engine --------------------------------------------------------------------------
    def info(self) -> EngineInfo: ...
    def image_tags(self) -> list[str]:
        """Every tagged image on the engine as ``repo:tag``."""
        ...

    def image_present(self, ref: str) -> bool: ...
    def pull(
        self,
        repository: str,
        tag: str = "latest",
        *,
        username: str | None = None,
        password: str | None = None,
    ) -> None: ...

    # -- containers --------------------------------------------------------------------------
    def run(self, spec: ContainerSpec) -> str:
        """Check the spec (``spec.check_spec``), create and start; a failed start leaves
        nothing behind."""

    def create(self, spec: ContainerSpec) -> str:
        """Check the spec and create without starting (``run`` is create + start)."""

    def put_archive(self, container_id: str, path: str, tar_bytes) -> None:
        """Unpack a tar (bytes or a file) at ``path``, an existing folder of the container
        (created or running): how a job's inputs are staged before it starts."""

    def start(self, container_id: str) -> None:
        """Start a created container; a host port it publishes being taken raises
        ``HostPortBusy`` (so does ``run``)."""

    def inspect(self, container_id: str) -> ContainerState: ...
    def list_by_labels(self, labels: Mapping[str, str]) -> list[ContainerState]: ...
    def find_by_label(self, key: str, value: str) -> list[ContainerState]: ...
    def signal(self, container_id: str, signal_name: str) -> None: ...
    def stop(self, container_id: str, *, timeout_s: int) -> None: ...
    def kill(self, container_id: str) -> None: ...
    def wait(self, container_id: str, *, timeout_s: float) -> int: ...
    def remove(self, container_id: str, *, force: bool = True) -> None: ...
    def logs(
        self, container_id: str, *, since: float | None = None, timestamps: bool = False
    ) -> bytes: ...
    def log_frames(
        self, container_id: str, *, since: float | None = None, timestamps: bool = False
    ) -> list[tuple[int, bytes]]:
        """``logs`` as entries with their stream: ``(1, stdout)`` or ``(2, stderr)``."""
        ...

    def stats(self, container_id: str) -> ContainerStats:
        """Cumulative CPU time and network bytes, memory in use (clusters.runtime.stats)."""

    def events(
        self,
        *,
        since: datetime | float | None = None,
        until: datetime | float | None = None,
        filters: Mapping[str, object] | None = None,
    ) -> Iterator[dict]:
        """Container "start"/"die" event dicts: id, action, time, exit_code, name, image,
        labels. Without ``until`` the stream never ends; an engine going away raises a
        transient RuntimeFailure."""

    # -- files -------------------------------------------------------------------------------
    def get_archive(self, container_id: str, path: str) -> Iterator[bytes]:
        """A tar stream (chunks of bytes) of ``path`` inside the container, running or
        exited: a folder comes as its own name followed by its contents. A missing path
        raises a permanent RuntimeFailure with status_code 404."""
