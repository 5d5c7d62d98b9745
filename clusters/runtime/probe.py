"""Probe a slave's engine: its info, and its GPUs when the NVIDIA runtime is installed.

GPU discovery runs one short container with every GPU (a device request with count -1)
that prints the CSV query and the nvidia-smi banner. Engines without an "nvidia" runtime
report no GPUs here: their GPUs, if any, are declared by an admin (see clusters.services).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from clusters.runtime.errors import RuntimeFailure
from clusters.runtime.gpus import (
    QUERY_ARGS,
    UTILISATION_ARGS,
    DiscoveredGpu,
    GpuUtilisation,
    parse_cuda_version,
    parse_nvidia_smi_csv,
    parse_nvidia_smi_utilisation,
)
from clusters.runtime.spec import ContainerSpec

if TYPE_CHECKING:  # for types only: this module stays free of the SDK
    from clusters.runtime.engine import EngineInfo

DEFAULT_PROBE_IMAGE = "nvidia/cuda:12.4.1-base-ubuntu22.04"
PROBE_LABEL = "gpuportal.probe"
PROBE_TIMEOUT_S = 60.0
_SEPARATOR = "==== gpuportal: nvidia-smi banner ===="
PROBE_COMMAND = (
    "sh",
    "-c",
    f"nvidia-smi {' '.join(shlex.quote(a) for a in QUERY_ARGS)} && echo '{_SEPARATOR}' && nvidia-smi",
)


@dataclass(frozen=True)
class ProbeResult:
    """``error`` says why GPU discovery failed although the NVIDIA runtime is there."""

    info: EngineInfo
    gpus: list[DiscoveredGpu] = field(default_factory=list)
    cuda_version: str | None = None
    nvidia_runtime: bool = False
    error: str | None = None


def _split_image(image: str) -> tuple[str, str]:
    """("registry:5000/name", "tag") from a reference; digests stay in the repository part."""
    if "@" in image:
        return image, ""
    head, _, last = image.rpartition("/")
    if ":" in last:
        name, _, tag = last.partition(":")
        return (f"{head}/{name}" if head else name), tag
    return image, "latest"


def _run_probe(engine, command, *, image: str, timeout_s: float) -> tuple[int, str]:
    """Run one short container with every GPU; its exit code and output. Raises
    RuntimeFailure; the container is removed either way."""
    container_id = None
    try:
        if not engine.image_present(image):
            repository, tag = _split_image(image)
            engine.pull(repository, tag)
        container_id = engine.run(
            ContainerSpec(image=image, command=command, gpu_all=True, labels={PROBE_LABEL: "1"})
        )
        exit_code = engine.wait(container_id, timeout_s=timeout_s)
        return exit_code, engine.logs(container_id).decode("utf-8", "replace")
    finally:
        if container_id is not None:
            try:
                engine.remove(container_id)
            except RuntimeFailure:
                pass  # a leftover probe container is labelled and harmless


UTILISATION_COMMAND = ("nvidia-smi", *UTILISATION_ARGS)


def gpu_utilisation(
    engine, *, image: str = DEFAULT_PROBE_IMAGE, timeout_s: float = 30.0
) -> list[GpuUtilisation]:
    """Every GPU's load now, read by a probe container (NVML through nvidia-smi), so what a
    job's own image holds cannot change the reading. Raises RuntimeFailure."""
    exit_code, output = _run_probe(engine, UTILISATION_COMMAND, image=image, timeout_s=timeout_s)
    if exit_code != 0:
        raise RuntimeFailure(
            f"GPU utilisation probe exited with {exit_code}: {output.strip()[-300:]}",
            permanent=False,
        )
    try:
        return parse_nvidia_smi_utilisation(output)
    except ValueError as exc:
        raise RuntimeFailure(f"GPU utilisation probe output: {exc}", permanent=False) from None


def probe_engine(
    engine,
    *,
    image: str = DEFAULT_PROBE_IMAGE,
    timeout_s: float = PROBE_TIMEOUT_S,
    discover_gpus: bool = True,
) -> ProbeResult:
    """Engine info plus, unless ``discover_gpus`` is False, GPU discovery (a probe container).
    Raises RuntimeFailure only when the engine itself does not answer ``info``; a failed GPU
    probe is reported in ``ProbeResult.error``."""
    info = engine.info()
    if "nvidia" not in info.runtimes:
        return ProbeResult(info=info)
    if not discover_gpus:
        return ProbeResult(info=info, nvidia_runtime=True)
    try:
        exit_code, output = _run_probe(engine, PROBE_COMMAND, image=image, timeout_s=timeout_s)
    except RuntimeFailure as failure:
        return ProbeResult(info=info, nvidia_runtime=True, error=f"GPU probe failed: {failure}")
    if exit_code != 0 or _SEPARATOR not in output:
        tail = output.strip()[-300:]
        return ProbeResult(
            info=info,
            nvidia_runtime=True,
            error=f"GPU probe exited with {exit_code}: {tail}",
        )
    csv_text, _, banner = output.partition(_SEPARATOR)
    try:
        gpus = parse_nvidia_smi_csv(csv_text)
    except ValueError as exc:
        return ProbeResult(info=info, nvidia_runtime=True, error=f"GPU probe output: {exc}")
    return ProbeResult(
        info=info,
        gpus=gpus,
        cuda_version=parse_cuda_version(banner),
        nvidia_runtime=True,
    )
