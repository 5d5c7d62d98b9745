"""GPULab lists each slave's CPU model (`gpulab-cli clusters ID`): never empty after a probe."""

import pytest

from clusters.runtime.engine import EngineInfo
from clusters.services import cpu_model_of

INFO = EngineInfo(4, 8 << 30, "27.0", ("runc",), "Debian", "6.1", "gpu1", architecture="x86_64")


class _Slave:
    def __init__(self, url):
        self.docker_url = url


def test_local_engine_reads_this_machines_cpuinfo(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: AMD EPYC 7543 32-Core Processor\n")
    slave = _Slave("unix:///var/run/docker.sock")
    assert cpu_model_of(slave=slave, info=INFO, cpuinfo=str(cpuinfo)) == (
        "AMD EPYC 7543 32-Core Processor"
    )


@pytest.mark.parametrize("url", ["tcp://gpu7.example.org:2376", "unix:///var/run/docker.sock"])
def test_otherwise_the_engines_architecture(url, tmp_path):
    missing = str(tmp_path / "none")
    assert cpu_model_of(slave=_Slave(url), info=INFO, cpuinfo=missing) == "x86_64"
