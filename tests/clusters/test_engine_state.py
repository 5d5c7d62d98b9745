"""How an inspected container reads back (no Docker needed: inspect answers as Docker gives)."""

from clusters.runtime.engine import _host_ports, _state


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


# Recorded from Docker on a host with IPv6: one container port published per address family,
# the two on different host ports (each family's port is allocated on its own).
DUAL_STACK = {
    "8080/tcp": [
        {"HostIp": "0.0.0.0", "HostPort": "32768"},
        {"HostIp": "::", "HostPort": "32769"},
    ],
    "10000/tcp": [
        {"HostIp": "0.0.0.0", "HostPort": "20001"},
        {"HostIp": "::", "HostPort": "20001"},
    ],
    "9090/udp": [{"HostIp": "::", "HostPort": "32770"}, {"HostIp": "0.0.0.0", "HostPort": "32771"}],
    "8888/tcp": [{"HostIp": "::", "HostPort": "20080"}],  # the job asked for "::" only
    "8081/tcp": [{"HostIp": "127.0.0.1", "HostPort": "20081"}],  # the job asked for loopback
    "7000/tcp": None,  # exposed, not published
}


def test_dual_stack_bindings_give_one_mapping_per_published_port():
    assert _host_ports(DUAL_STACK) == [
        {"containerPort": 8080, "hostPort": 32768, "hostIp": "0.0.0.0"},
        {"containerPort": 8081, "hostPort": 20081, "hostIp": "127.0.0.1"},
        {"containerPort": 8888, "hostPort": 20080, "hostIp": "::"},
        {"containerPort": 9090, "hostPort": 32771, "hostIp": "0.0.0.0"},
        {"containerPort": 10000, "hostPort": 20001, "hostIp": "0.0.0.0"},
    ]


def test_a_running_dual_stack_container_reads_back_one_mapping_per_port():
    # The job asked for host port 20080 (HostConfig above): Docker publishes it once per family.
    both = [{"HostIp": "0.0.0.0", "HostPort": "20080"}, {"HostIp": "::", "HostPort": "20080"}]
    state = _state(_inspect("running", {"8888/tcp": both}))
    assert state.host_ports == [{"containerPort": 8888, "hostPort": 20080, "hostIp": "0.0.0.0"}]


def test_no_published_ports():
    assert _host_ports(None) == [] and _host_ports({}) == []
    assert _host_ports({"8080/tcp": [{"HostIp": "", "HostPort": ""}]}) == []
