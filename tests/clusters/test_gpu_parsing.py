"""nvidia-smi parsing on real pasted output (fixtures/nvidia-smi/README.txt says where from),
and the probe's use of it with a stand-in engine."""

from pathlib import Path

import pytest

from clusters.runtime.engine import EngineInfo
from clusters.runtime.errors import RuntimeFailure
from clusters.runtime.gpus import (
    QUERY_ARGS,
    DiscoveredGpu,
    cuda_major,
    parse_cuda_version,
    parse_nvidia_smi_csv,
)
from clusters.runtime.probe import PROBE_COMMAND, probe_engine

FIXTURES = Path(__file__).parent / "fixtures" / "nvidia-smi"

RTX2080_FIELDS = (
    "power.limit,power.min_limit,power.max_limit,memory.total,vbios_version,driver_version,"
    "name,gpu_uuid,power.draw,temperature.gpu,temperature.memory,clocks.current.graphics,"
    "clocks.sm,clocks.mem,utilization.gpu,utilization.memory,fan.speed,"
    "pcie.link.width.current,pstate"
).split(",")


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def as_probe_output(text: str) -> str:
    """A header-and-units sample rewritten as the probe's query prints it (noheader,nounits,
    columns index,uuid,name,memory.total,driver_version)."""
    rows = parse_nvidia_smi_csv(text)
    return "".join(f"{g.index}, {g.uuid}, {g.name}, {g.memory_mb}, 550.54.15\n" for g in rows)


# -- CSV ---------------------------------------------------------------------------------


def test_h200_header_with_units_and_extra_column():
    gpus = parse_nvidia_smi_csv(fixture("csv-h200-x4-header-units.txt"))
    assert [g.index for g in gpus] == [0, 1, 2, 3]
    assert gpus[0] == DiscoveredGpu(
        index=0,
        uuid="GPU-78aaaccb-3af1-11b3-b1f8-3828c251d9f2",
        name="NVIDIA H200-141C",
        memory_mb=144384,
        driver_version=None,
    )
    assert gpus[3].uuid == "GPU-8187d0e1-3af1-11b3-a3da-3990b94501cf"


def test_names_with_spaces():
    gpus = parse_nvidia_smi_csv(fixture("csv-rtx4080super-rtx3090-header-units.txt"))
    assert [(g.name, g.memory_mb) for g in gpus] == [
        ("NVIDIA GeForce RTX 4080 SUPER", 16376),
        ("NVIDIA GeForce RTX 3090", 24576),
    ]


def test_noheader_nounits_with_explicit_fields_and_gpu_uuid_alias():
    gpus = parse_nvidia_smi_csv(
        fixture("csv-rtx2080-noheader-nounits-19-fields.txt"), fields=RTX2080_FIELDS
    )
    assert gpus == [
        DiscoveredGpu(
            index=0,
            uuid="GPU-22b2c6ac-2d49-4863-197c-9c469071178a",
            name="GeForce RTX 2080",
            memory_mb=7979,
            driver_version="440.64",
        )
    ]


def test_header_columns_in_any_order():
    gpus = parse_nvidia_smi_csv(fixture("csv-titanv-rtx5880-header.txt"))
    assert [(g.index, g.name, g.driver_version, g.uuid) for g in gpus] == [
        (0, "NVIDIA TITAN V", "570.86.15", ""),
        (1, "NVIDIA RTX 5880 Ada Generation", "570.86.15", ""),
    ]


def test_unified_memory_reports_na():
    gpus = parse_nvidia_smi_csv(fixture("csv-gb10-memory-na-header.txt"))
    assert len(gpus) == 1 and gpus[0].memory_mb is None


def test_bare_na_value_is_none():
    line = fixture("csv-rtx2080-noheader-nounits-19-fields.txt")
    gpus = parse_nvidia_smi_csv(line.replace("7979", "[N/A]"), fields=RTX2080_FIELDS)
    assert gpus[0].memory_mb is None


@pytest.mark.parametrize(
    "mangle",
    [
        pytest.param(lambda t: t.replace("\n", "\r\n"), id="crlf"),
        pytest.param(lambda t: t.replace("\n", "  \n"), id="trailing-spaces"),
        pytest.param(lambda t: "\n\n" + t.replace("\n", "\n\n") + "\n\n", id="blank-lines"),
        pytest.param(lambda t: t.replace(", ", ","), id="no-space-after-comma"),
    ],
)
def test_probe_output_survives_formatting_noise(mangle):
    probe_text = as_probe_output(fixture("csv-h200-x4-header-units.txt"))
    clean = parse_nvidia_smi_csv(probe_text)
    assert len(clean) == 4
    assert parse_nvidia_smi_csv(mangle(probe_text)) == clean


def test_probe_query_columns_map_onto_the_fields():
    text = as_probe_output(fixture("csv-rtx4080super-rtx3090-header-units.txt"))
    gpus = parse_nvidia_smi_csv(text)
    assert gpus[1] == DiscoveredGpu(
        1, "GPU-358353dd-5933-1dc6-ac0d-e1189b063e4c", "NVIDIA GeForce RTX 3090", 24576, "550.54.15"
    )
    assert QUERY_ARGS[0] == "--query-gpu=index,uuid,name,memory.total,driver_version"


def test_empty_and_no_devices():
    assert parse_nvidia_smi_csv("") == []
    assert parse_nvidia_smi_csv("\r\n\n") == []
    assert parse_nvidia_smi_csv("No devices were found\n") == []


def test_row_with_missing_columns_is_an_error():
    with pytest.raises(ValueError, match="expected 5"):
        parse_nvidia_smi_csv("0, GPU-abc, NVIDIA A40\n")


def test_memory_that_is_not_a_number_is_an_error():
    with pytest.raises(ValueError, match="MiB"):
        parse_nvidia_smi_csv("0, GPU-a, NVIDIA A40, lots, 550.1\n")


# -- banner ----------------------------------------------------------------------------------

BANNERS = {
    "banner-titan-xp-450.57-cuda11.0.txt": "11.0",
    "banner-a100-sxm4-40gb-x2-580.126.09-cuda13.0.txt": "13.0",
    "banner-tesla-v100-sxm2-16gb-470.182.03-cuda11.4.txt": "11.4",
    "banner-tesla-v100-sxm2-32gb-525.105.17-cuda12.0.txt": "12.0",
    "banner-h100-80gb-hbm3-x2-570.148.08-cuda12.8.txt": "12.8",
    "banner-h100-pcie-mig-535.171.04-cuda12.2.txt": "12.2",
    "banner-gtx1080ti-windows-quoted-531.14-cuda12.1.txt": "12.1",
    "banner-tesla-t4-smi450.66-driver418.67-cuda10.1.txt": "10.1",
    "banner-b200-610.43.02-cuda-umd13.3.txt": "13.3",
    "nvsmi-q-a100-sxm4-80gb-470.103.01-cuda11.4.txt": "11.4",
    "banner-gtx680-x3-331.62-no-cuda.txt": None,
}


@pytest.mark.parametrize("name,expected", sorted(BANNERS.items(), key=lambda kv: kv[0]))
def test_cuda_version_from_real_banners(name, expected):
    text = fixture(name)
    assert parse_cuda_version(text) == expected
    assert parse_cuda_version(text.replace("\n", "\r\n")) == expected


def test_every_fixture_is_covered():
    used = set(BANNERS) | {
        "csv-h200-x4-header-units.txt",
        "csv-rtx4080super-rtx3090-header-units.txt",
        "csv-rtx2080-noheader-nounits-19-fields.txt",
        "csv-titanv-rtx5880-header.txt",
        "csv-gb10-memory-na-header.txt",
        # Utilisation readings: tests/clusters/test_gpu_utilisation.py, tests/runtime/.
        "csv-util-busy-6gb-header-units.txt",
        "csv-util-rtx4090-idle-header-units.txt",
    }
    assert {p.name for p in FIXTURES.glob("*.txt")} - {"README.txt"} == used


@pytest.mark.parametrize(
    "version,major",
    [
        ("12.2", 12),
        ("11.0", 11),
        ("13", 13),
        ("10.1.243", 10),
        (None, None),
        ("", None),
        ("N/A", None),
    ],
)
def test_cuda_major(version, major):
    assert cuda_major(version) == major


def test_no_banner():
    assert parse_cuda_version("") is None
    assert parse_cuda_version("NVIDIA-SMI has failed because it couldn't communicate") is None


# -- probe -----------------------------------------------------------------------------------


class FakeEngine:
    """Stands in for DockerEngine: canned info and probe-container output."""

    def __init__(self, runtimes, output=b"", exit_code=0, present=True, fail_run=None):
        self.runtimes, self.output, self.exit_code = runtimes, output, exit_code
        self.present, self.fail_run = present, fail_run
        self.pulled, self.specs, self.removed = [], [], []

    def info(self):
        return EngineInfo(4, 8 << 30, "27.0", tuple(self.runtimes), "Debian", "6.1", "gpu1")

    def image_present(self, ref):
        return self.present

    def pull(self, repository, tag, **kwargs):
        self.pulled.append((repository, tag))

    def run(self, spec):
        if self.fail_run:
            raise self.fail_run
        self.specs.append(spec)
        return "c1"

    def wait(self, container_id, *, timeout_s):
        return self.exit_code

    def logs(self, container_id):
        return self.output

    def remove(self, container_id):
        self.removed.append(container_id)


def probe_output() -> bytes:
    csv_text = as_probe_output(fixture("csv-h200-x4-header-units.txt"))
    banner = fixture("banner-h100-80gb-hbm3-x2-570.148.08-cuda12.8.txt")
    return (csv_text + "==== gpuportal: nvidia-smi banner ====\n" + banner).encode()


def test_probe_without_nvidia_runtime_finds_no_gpus():
    result = probe_engine(FakeEngine(["runc"]))
    assert result.gpus == [] and not result.nvidia_runtime and result.error is None
    assert result.info.cpus == 4


def test_probe_with_nvidia_runtime_parses_the_container_output():
    engine = FakeEngine(["nvidia", "runc"], output=probe_output(), present=False)
    result = probe_engine(engine, image="nvidia/cuda:12.4.1-base-ubuntu22.04")
    assert result.nvidia_runtime and result.error is None
    assert [g.uuid[:12] for g in result.gpus] == ["GPU-78aaaccb", "GPU-7bdd753d"] + [
        "GPU-7eb48ff1",
        "GPU-8187d0e1",
    ]
    assert result.cuda_version == "12.8"
    assert engine.pulled == [("nvidia/cuda", "12.4.1-base-ubuntu22.04")]
    (spec,) = engine.specs
    assert spec.gpu_all and spec.command == PROBE_COMMAND
    assert engine.removed == ["c1"]


def test_probe_failure_is_reported_not_raised():
    engine = FakeEngine(["nvidia"], output=b"NVIDIA-SMI has failed", exit_code=9)
    result = probe_engine(engine)
    assert result.gpus == [] and "exited with 9" in result.error
    engine = FakeEngine(["nvidia"], fail_run=RuntimeFailure("no driver", permanent=True))
    assert "no driver" in probe_engine(engine).error
