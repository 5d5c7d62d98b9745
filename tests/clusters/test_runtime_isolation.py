"""The runtime's last line of defence for GPUs and host ports (clusters.runtime.spec): whatever
the caller builds, a container never names more GPUs to the NVIDIA runtime than its device
request, and never publishes a fixed host port the site's policy refuses."""

import pytest

from clusters.runtime.errors import RuntimeFailure
from clusters.runtime.spec import ContainerSpec, Mount, PortMapping, PortPolicy, check_spec


def refusal(policy=None, **fields) -> str:
    with pytest.raises(RuntimeFailure) as caught:
        check_spec(ContainerSpec(image="busybox", **fields), port_policy=policy)
    assert caught.value.permanent
    return str(caught.value)


@pytest.mark.parametrize(
    "mapping,why",
    [
        (PortMapping(22, 22), "22 is refused (a privileged port (below 1024))"),
        (PortMapping(80, 80), "80 is refused (a privileged port (below 1024))"),
        (PortMapping(2375, 2375, "0.0.0.0"), "2375 is refused (a Docker engine port)"),
        (PortMapping(2222, 2222), "2222 is refused (the portal's SSH gateway)"),
        (PortMapping(80, 8000), "8000 is refused (the portal's web server)"),
        (PortMapping(80, 5432), "5432 is refused (PostgreSQL's port)"),
        (PortMapping(80, 20000, "127.0.0.1"), "must be one of 0.0.0.0, ::"),
        (PortMapping(80, None, "10.0.0.5"), "must be one of 0.0.0.0, ::"),
    ],
)
def test_default_policy_refuses_host_ports_and_addresses(mapping, why):
    assert why in refusal(port_mappings=[mapping])


def test_refused_ports_are_refused_even_inside_a_narrowed_range():
    policy = PortPolicy((1, 65535), (22, 2375), ("0.0.0.0",))
    assert "22 is refused" in refusal(policy, port_mappings=[PortMapping(2222, 22)])
    assert "2375 is refused" in refusal(policy, port_mappings=[PortMapping(80, 2375)])
    check_spec(
        ContainerSpec(image="busybox", port_mappings=[PortMapping(80, 8080, "0.0.0.0")]),
        port_policy=policy,
    )
    narrowed = PortPolicy((20000, 29999))
    assert "must be between 20000 and 29999 (this site's range for fixed host ports)" in (
        refusal(narrowed, port_mappings=[PortMapping(80, 8080)])
    )


def test_default_policy_allows_random_ports_and_any_port_it_does_not_refuse():
    """GPULab's own example publishes ``"hostPort": 8080`` (issue 26 item 1)."""
    spec = ContainerSpec(
        image="busybox",
        port_mappings=[
            PortMapping(80),
            PortMapping(80, 8080),
            PortMapping(81, 1024),
            PortMapping(82, 29999, "0.0.0.0"),
            PortMapping("53/udp", 25353, "::"),
            PortMapping(84, 65535),
            PortMapping(83, None, "0:0:0:0:0:0:0:0"),  # "::" written out
        ],
    )
    check_spec(spec)


def test_policy_parse_and_bad_settings():
    policy = PortPolicy.parse(
        refused=["1-1023", "30005", "31000-31010"], addresses=["0.0.0.0"], allowed="30000-31000"
    )
    assert policy.allowed == (30000, 31000)
    assert policy.host_port_refusal(30005) == (
        "30005 is refused (listed in PORTAL_REFUSED_HOST_PORTS)"
    )
    assert policy.host_port_refusal(31005).startswith("must be between 30000 and 31000")
    assert policy.host_port_refusal(30001) is None and not policy.refuses(30001)
    assert policy.auto_range == (20000, 29999)
    single = PortPolicy.parse(refused=[], addresses=["::"], allowed="25000", auto_range="21000")
    assert single.allowed == (25000, 25000) and single.auto_range == (21000, 21000)
    assert PortPolicy.parse(refused=[], addresses=["::"]).allowed is None
    for bad in ("30010-30000", "0-10", "x-y", "1-70000"):
        for field in ("allowed", "auto_range"):
            with pytest.raises(ValueError, match="invalid host port policy"):
                PortPolicy.parse(refused=[], addresses=["0.0.0.0"], **{field: bad})
        with pytest.raises(ValueError, match="invalid host port policy"):
            PortPolicy.parse(refused=[bad], addresses=["0.0.0.0"])
    with pytest.raises(ValueError):
        PortPolicy.parse(refused=["ssh"], addresses=["0.0.0.0"])
    with pytest.raises(ValueError):
        PortPolicy.parse(refused=[], addresses=["localhost"])


def test_an_engine_over_tcp_refuses_its_own_port():
    from clusters.runtime.engine import DockerEngine

    engine = DockerEngine("tcp://10.0.0.9:12376", port_policy=PortPolicy(refused=()))
    assert engine.port_policy.host_port_refusal(12376) == (
        "12376 is refused (this slave's Docker engine)"
    )
    assert engine.port_policy.host_port_refusal(12377) is None
    assert DockerEngine("unix:///run/x.sock").port_policy == PortPolicy()


@pytest.mark.parametrize(
    "fields,why",
    [
        ({"environment": {"NVIDIA_VISIBLE_DEVICES": "all"}}, "NVIDIA_VISIBLE_DEVICES=all"),
        (
            {"environment": {"NVIDIA_VISIBLE_DEVICES": "ALL"}, "gpu_device_ids": ["GPU-a"]},
            "NVIDIA_VISIBLE_DEVICES=all",
        ),
        (
            {"environment": {"NVIDIA_VISIBLE_DEVICES": "GPU-a,GPU-b"}, "gpu_device_ids": ["GPU-a"]},
            "outside the device request",
        ),
        ({"environment": {"NVIDIA_MIG_CONFIG_DEVICES": "all"}}, "MIG"),
        ({"environment": {"NVIDIA_MIG_MONITOR_DEVICES": "all"}}, "MIG"),
        (
            {"binds": [Mount("/srv/x", "/var/run/nvidia-container-devices/all")]},
            "NVIDIA runtime reads GPU choices there",
        ),
        (
            {"binds": [Mount("/srv/x", "/run/nvidia-container-devices")]},
            "NVIDIA runtime reads GPU choices there",
        ),
        ({"binds": [Mount("/srv/x", "/var/run")]}, "NVIDIA runtime reads GPU choices there"),
    ],
)
def test_gpu_selection_cannot_widen_the_device_request(fields, why):
    assert why in refusal(**fields)


def test_gpu_variables_that_match_the_grant_pass():
    for fields in (
        {"environment": {"NVIDIA_VISIBLE_DEVICES": "GPU-a"}, "gpu_device_ids": ["GPU-a", "GPU-b"]},
        {"environment": {"NVIDIA_VISIBLE_DEVICES": "void"}},
        {"environment": {"NVIDIA_VISIBLE_DEVICES": "0,1", "CUDA_VISIBLE_DEVICES": "0,1"}},
        {"environment": {"NVIDIA_VISIBLE_DEVICES": "all"}, "gpu_all": True},  # the GPU probe
        {"binds": [Mount("/srv/x", "/run/data")]},
    ):
        check_spec(ContainerSpec(image="busybox", **fields))
