"""GPU load read through the probe path, parsed from real nvidia-smi output (fixtures)."""

from pathlib import Path

import pytest

from clusters.runtime.errors import RuntimeFailure
from clusters.runtime.gpus import parse_nvidia_smi_utilisation
from clusters.runtime.probe import UTILISATION_COMMAND, gpu_utilisation

FIXTURES = Path(__file__).parent / "fixtures" / "nvidia-smi"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_busy_gpu_with_header_and_units():
    (gpu,) = parse_nvidia_smi_utilisation(fixture("csv-util-busy-6gb-header-units.txt"))
    assert (gpu.index, gpu.percent, gpu.memory_used_mb, gpu.memory_total_mb) == (0, 95.0, 745, 6144)


def test_idle_gpu_with_a_name_column():
    (gpu,) = parse_nvidia_smi_utilisation(fixture("csv-util-rtx4090-idle-header-units.txt"))
    assert (gpu.percent, gpu.memory_used_mb, gpu.memory_total_mb) == (0.0, 678, 49140)


def test_the_samplers_own_query_without_header_and_units():
    # The same readings as the sampler's query prints them (noheader, nounits), derived from
    # the recorded one: index, uuid, utilization.gpu, memory.used, memory.total.
    text = "0, GPU-78aaaccb-3af1-11b3-b1f8-3828c251d9f2, 95, 745, 6144\r\n\r\n1, GPU-x, [N/A], 0, 6144\n"
    first, second = parse_nvidia_smi_utilisation(text)
    assert (first.index, first.uuid[:12], first.percent) == (0, "GPU-78aaaccb", 95.0)
    assert second.percent is None and second.memory_used_mb == 0


def test_garbage_is_refused():
    with pytest.raises(ValueError, match="percentage"):
        parse_nvidia_smi_utilisation("0, GPU-x, busy, 1, 2")


class ProbeEngine:
    def __init__(self, output: bytes, exit_code: int = 0):
        self.output, self.exit_code, self.specs, self.removed = output, exit_code, [], []

    def image_present(self, ref):
        return True

    def run(self, spec):
        self.specs.append(spec)
        return "p1"

    def wait(self, container_id, *, timeout_s):
        return self.exit_code

    def logs(self, container_id):
        return self.output

    def remove(self, container_id):
        self.removed.append(container_id)


def test_probe_container_reads_every_gpu_and_is_removed():
    engine = ProbeEngine(fixture("csv-util-busy-6gb-header-units.txt").encode())
    (gpu,) = gpu_utilisation(engine, image="nvidia/cuda:12.4.1-base-ubuntu22.04")
    assert gpu.percent == 95.0
    (spec,) = engine.specs
    assert spec.gpu_all and spec.command == UTILISATION_COMMAND
    assert engine.removed == ["p1"]


def test_a_failing_probe_raises_a_transient_failure():
    engine = ProbeEngine(b"NVIDIA-SMI has failed", exit_code=9)
    with pytest.raises(RuntimeFailure) as caught:
        gpu_utilisation(engine)
    assert not caught.value.permanent and "exited with 9" in str(caught.value)
    assert engine.removed == ["p1"]
