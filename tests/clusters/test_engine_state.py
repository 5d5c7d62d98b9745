"""How an inspected container reads back (no Docker needed: inspect answers as Docker gives)."""

from clusters.runtime.engine import _state


def _inspect(status: str, published: dict | None) -> dict:
    return {
        "Id": "c0ffee",
        "Name": "/job",
        "State": {"Status": status, "Running": status == "running", "ExitCode": 0},
        "Config": {"Labels": {}},
        "NetworkSettings": {"Ports": published},
        "HostConfig": {
            "PortBindings": {
                "8888/tcp": [{"HostIp": "", "HostPort": "20080"}],
                "9000/tcp": [{"HostIp": "", "HostPort": ""}],  # a random port: unknown now
            }
        },
    }


def test_a_job_that_exited_at_once_keeps_its_fixed_port_mappings():
    """Docker drops NetworkSettings.Ports when a container stops (issue: a job that exits within
    a second lost its reported port mappings)."""
    state = _state(_inspect("exited", None))
    assert state.host_ports == [{"containerPort": 8888, "hostPort": 20080, "hostIp": ""}]


def test_a_running_container_reports_what_docker_published():
    published = {"8888/tcp": [{"HostIp": "0.0.0.0", "HostPort": "20080"}]}
    state = _state(_inspect("running", published))
    assert state.host_ports == [{"containerPort": 8888, "hostPort": 20080, "hostIp": "0.0.0.0"}]
