"""Starting a job's container: its file inputs copied into its input folder first, and a host
port found taken at the start handled by who chose it.

Tapis' PROCESSING_INPUTS, STAGING_INPUTS, STAGING_JOB, SUBMITTING_JOB and QUEUED stages happen
here, in the launch path: the inputs are read (from the project's storage on the portal host, or
fetched from an http(s) URL whose host the site allows) into one tar, the container is created,
the tar is unpacked into ``/job/inputs`` with the engine's ``put_archive``, then it is started.
A job with nothing to stage and no app is started exactly as before (``engine.run``).

Sources (checked at submit by ``input_source_error`` and again here, settings may change):
- ``/project/data/x.csv``: a file below one of the storage roots the job's slave offers to the
  project (``jobs.execution.storage``), read on the portal host; links may not lead out of the root.
- ``https://host/path``: fetched without following redirects (a redirect could leave the
  allow-list), only when ``host`` is in ``PORTAL_INPUT_ALLOWED_HOSTS``.
Everything is bounded by ``PORTAL_INPUT_MAX_BYTES`` in total.

A host port found taken when the container starts (issue 24 item 7): ports are chosen per slave, but a slave's machine may hold other users of its port space
(several engines on one machine, another installation): a port can be taken when the
container starts. That is the portal's problem, unless the user fixed the port. By who chose
the port (``HostPortBusy`` names it):

- Docker (a mapping without ``hostPort``): Docker tries a few of its own picks, then gives up.
  The start is tried again (``PORT_CLASH_STARTS`` in all), Docker picking other ports, and an
  event says which port was taken and which replaced it.
- The portal (an OpenPAI gang task's ``beginAt`` 0 ports, ``gangs.launch``): every peer of
  the gang already knows the number, so the task does not move alone. It fails with a reason
  the gangs app writes and reads back (``run_hooks().port_clash_reason``, ``gangs.ports``), and
  the gang goes back to the queue whole, on other ports.
- The user (a ``portMappings[].hostPort``, a ``beginAt`` > 0 range): the job fails, saying
  which port is taken where.
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
import tarfile
import tempfile
import time
from collections.abc import Callable
from urllib.parse import urlsplit

import requests
from django.conf import settings

from clusters.runtime.errors import HostPortBusy, RuntimeFailure, removed_on_failure
from jobs.execution.container_spec import CONTAINER_INPUT_DIR
from jobs.execution.run_hooks import run_hooks
from jobs.execution.storage import StorageRefused, resolve_mount, slave_roots
from jobs.models import Job
from jobs.transitions import Stage, job_event_add, job_stage_record

FETCH_TIMEOUT_S = 30
CHUNK = 1 << 16
# Where the tar is unpacked: it carries "job/inputs/..." so the folders are made as well.
_TAR_ROOT = "/"


class InputStagingFailed(RuntimeFailure):
    """An input could not be read or fetched: the job fails with this reason (no retry)."""

    def __init__(self, message: str):
        super().__init__(f"input staging: {message}", permanent=True)


def input_target_error(target: str) -> str | None:
    """Why ``target`` (relative to the input folder) is refused, None when it is fine."""
    if not isinstance(target, str) or not target.strip():
        return "must be a relative file path"
    if target.startswith("/") or "\\" in target:
        return "must be relative to the job's input folder (no leading '/')"
    parts = target.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return "must not contain empty, '.' or '..' components"
    if len(target) > 255:
        return "must be at most 255 characters"
    return None


def input_source_error(source: str) -> str | None:
    """Why ``source`` can never be staged (syntax and the site's allow-list), None if fine."""
    if not isinstance(source, str) or not source.strip():
        return "is required"
    if source.startswith(("http://", "https://")):
        parts = urlsplit(source)
        if parts.username is not None or parts.password is not None:
            # It would be kept in the job and shown in its messages: never take one.
            return "must not carry credentials (user:password@)"
        host = (parts.hostname or "").lower()
        allowed = {h.lower() for h in settings.PORTAL_INPUT_ALLOWED_HOSTS}
        if not host:
            return "must name a host"
        if host not in allowed:
            listed = ", ".join(sorted(allowed)) or "none"
            return f"host {host} is not allowed for inputs (PORTAL_INPUT_ALLOWED_HOSTS: {listed})"
        return None
    if source.startswith("/"):
        segments = source.split("/")[1:]
        if any(part in ("", ".", "..") for part in segments) or len(segments) < 2:
            return (
                "must be a file below a storage root, without '.', '..' or empty parts "
                "(like /project/data/file.txt)"
            )
        return None
    return "must be an http(s) URL or a path in the project's storage (/project/...)"


def _read_project_file(job: Job, source: str, limit: int):
    """An open file below the project's storage root, never reached through a link that
    leads out of that root."""
    try:
        mount = resolve_mount(
            item={"hostPath": source, "containerPath": "/x"},
            index=0,
            roots=slave_roots(job.slave),
            project=job.project.name,
            user=job.owner.username,
        )
    except StorageRefused as refused:
        raise InputStagingFailed(f"{source}: {refused.message}") from None
    assert mount is not None  # a host folder (only tmpfs has none)
    root = os.path.realpath(mount.root_host_path)
    real = os.path.realpath(mount.host_path)
    if os.path.commonpath([root, real]) != root:
        raise InputStagingFailed(f"{source}: leads out of the project's storage")
    try:
        handle = open(real, "rb")  # noqa: SIM115 (closed by the caller)
    except OSError as exc:
        raise InputStagingFailed(f"{source}: {exc.strerror or exc}") from None
    info = os.fstat(handle.fileno())
    if not stat.S_ISREG(info.st_mode):
        handle.close()
        raise InputStagingFailed(f"{source}: not a regular file")
    if info.st_size > limit:
        handle.close()
        raise InputStagingFailed(f"{source}: larger than the {limit} bytes left for inputs")
    return handle, info.st_size


def _fetch(source: str, limit: int, spool) -> int:
    """Download ``source`` into ``spool``; returns the byte count."""
    error = input_source_error(source)
    if error:
        raise InputStagingFailed(f"{source}: {error}")
    try:
        with requests.get(
            source, stream=True, allow_redirects=False, timeout=FETCH_TIMEOUT_S
        ) as response:
            if response.status_code != 200:
                raise InputStagingFailed(f"{source}: HTTP {response.status_code}")
            size = 0
            for chunk in response.iter_content(CHUNK):
                size += len(chunk)
                if size > limit:
                    raise InputStagingFailed(
                        f"{source}: larger than the {limit} bytes left for inputs"
                    )
                spool.write(chunk)
            return size
    except requests.RequestException as exc:
        raise InputStagingFailed(f"{source}: {type(exc).__name__}") from None


def _add_folders(archive: tarfile.TarFile, path: str, made: set[str]) -> None:
    parts = path.split("/")
    for depth in range(1, len(parts) + 1):
        folder = "/".join(parts[:depth])
        if folder in made:
            continue
        made.add(folder)
        info = tarfile.TarInfo(folder)
        info.type = tarfile.DIRTYPE
        info.mode = 0o755
        info.mtime = int(time.time())
        archive.addfile(info)


def inputs_tar(job: Job):
    """The job's inputs as one tar (a file object at offset 0) to unpack at ``/``, and the
    number of bytes of input in it."""
    budget = settings.PORTAL_INPUT_MAX_BYTES
    spool = tempfile.SpooledTemporaryFile(max_size=16 << 20)  # noqa: SIM115
    made: set[str] = set()
    total = 0
    with tarfile.open(fileobj=spool, mode="w") as archive:
        inputs_dir = CONTAINER_INPUT_DIR.lstrip("/")
        _add_folders(archive, inputs_dir, made)
        for item in job.file_inputs:
            target, source = item["target"], item["source"]
            if input_target_error(target):
                raise InputStagingFailed(f"{item.get('name')}: bad target {target!r}")
            name = f"{inputs_dir}/{target}"
            _add_folders(archive, posixpath.dirname(name), made)
            if source.startswith("/"):
                handle, size = _read_project_file(job, source, budget - total)
            else:
                handle = tempfile.TemporaryFile()  # noqa: SIM115
                size = _fetch(source, budget - total, handle)
                handle.seek(0)
            with handle:
                info = tarfile.TarInfo(name)
                info.size = size
                info.mode = 0o644
                info.mtime = int(time.time())
                archive.addfile(info, handle)
            total += size
    spool.seek(0)
    return spool, total


def job_container_start(*, engine, job: Job, spec) -> str:
    """Create and start the job's container; a job from an app or with inputs gets its
    inputs staged between the two and its stages recorded. Returns the container id. A host
    port found taken at the start is handled by who chose it (``start_despite_port_clashes``, below):
    the start may be tried again, or fail with a reason saying what to do."""
    return start_despite_port_clashes(
        engine=engine, job=job, start=lambda: _container_start(engine=engine, job=job, spec=spec)
    )


def _container_start(*, engine, job: Job, spec) -> str:
    if not job.app_id and not job.file_inputs:
        return engine.run(spec)
    names = ", ".join(item["name"] for item in job.file_inputs) or "none"
    job_stage_record(
        job=job, stage=Stage.PROCESSING_INPUTS, message=f"{len(job.file_inputs)} inputs: {names}"
    )
    job_stage_record(
        job=job, stage=Stage.STAGING_INPUTS, message=f"reading inputs into {CONTAINER_INPUT_DIR}"
    )
    assert job.slave is not None  # started on its slave
    tar, size = inputs_tar(job)
    with tar:
        job_stage_record(
            job=job, stage=Stage.STAGING_JOB, message=f"creating the container from {spec.image}"
        )
        container_id = engine.create(spec)
        with removed_on_failure(engine, container_id):
            engine.put_archive(container_id, _TAR_ROOT, tar)
            job_stage_record(
                job=job,
                stage=Stage.SUBMITTING_JOB,
                message=f"{size} bytes of input staged; starting on {job.slave.name}",
            )
            engine.start(container_id)
    job_stage_record(job=job, stage=Stage.QUEUED, message="container started")
    return container_id


def job_inputs_restage(*, engine, job: Job, container_id: str) -> None:
    """Copy the inputs again into a container a crashed launch created but never started
    (``jobs.execution.runs._adopt``): the first copy may not have happened."""
    if not job.file_inputs:
        return
    tar, _size = inputs_tar(job)
    with tar:
        engine.put_archive(container_id, _TAR_ROOT, tar)


# --- a host port found taken at the start -----------------------------------------------------

# Starts of one container, the first included, while Docker's own picks are found taken.
PORT_CLASH_STARTS = 4

_CAUSE = re.compile(r"address already in use|port is already allocated", re.IGNORECASE)


def _cause(busy: HostPortBusy) -> str:
    found = _CAUSE.search(busy.message)
    return found.group(0).lower() if found else "taken"


def _user_fixed_ports(job: Job) -> set[int]:
    return {
        int(m["hostPort"])
        for m in (job.request.get("docker") or {}).get("portMappings") or ()
        if isinstance(m, dict) and m.get("hostPort") is not None
    } - run_hooks().portal_chosen_ports(job)


def start_despite_port_clashes(*, engine, job: Job, start: Callable[[], str]) -> str:
    """``start()`` (create and start the job's container, removing it when the start fails;
    returns its id), with a taken host port handled by who chose it (see the module)."""
    slave = job.slave.name if job.slave is not None else "?"
    replaced: list[int | None] = []  # None: a port Docker did not name
    for attempt in range(1, PORT_CLASH_STARTS + 1):
        try:
            container_id = start()
        except HostPortBusy as busy:
            port, cause = busy.host_port, _cause(busy)
            portal = run_hooks().portal_chosen_ports(job)
            if portal and (port is None or port in portal):
                chosen = [port] if port is not None else sorted(portal)
                raise RuntimeFailure(
                    run_hooks().port_clash_reason(chosen, slave, cause),
                    permanent=True,
                    status_code=busy.status_code,
                ) from None
            fixed = _user_fixed_ports(job)
            if port in fixed or (port is None and fixed):
                named = f"host port {port}" if port is not None else "a host port it fixes"
                field = "portList beginAt" if job.openpai_config else "portMappings hostPort"
                unfixed = "beginAt 0" if job.openpai_config else "hostPort out"
                raise RuntimeFailure(
                    f"{named} is taken on slave {slave} ({cause}): the job asks for this host "
                    f"port itself ({field}); free it on that machine, or use {unfixed} and a "
                    "free port is chosen for the job",
                    permanent=True,
                    status_code=busy.status_code,
                ) from None
            shown = port if port is not None else "?"
            if attempt == PORT_CLASH_STARTS:
                raise RuntimeFailure(
                    f"host ports picked by Docker were taken on slave {slave} at "
                    f"{PORT_CLASH_STARTS} starts in a row (the last: {shown}, {cause})",
                    permanent=True,
                    status_code=busy.status_code,
                ) from None
            replaced.append(port)
            job_event_add(
                job=job,
                message=f"host port {shown} that Docker picked is taken on slave {slave} "
                f"({cause}): starting the container again on other ports",
            )
            continue
        if replaced:
            published = ", ".join(
                str(p["hostPort"]) for p in engine.inspect(container_id).host_ports
            )
            job_event_add(
                job=job,
                message=f"started on host port(s) {published or 'none'}, in place of "
                + ", ".join(str(p) if p is not None else "?" for p in replaced)
                + " found taken",
            )
        return container_id
    raise AssertionError("unreachable")
