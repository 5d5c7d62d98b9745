"""The runtime's last line of defence for GPUs and host ports (clusters.runtime.spec): whatever
the caller builds, a container never names more GPUs to the NVIDIA runtime than its device
request, and never publishes a fixed host port outside the site's policy."""

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
        (PortMapping(22, 22), "between 20000 and 29999"),
        (PortMapping(2375, 2375, "0.0.0.0"), "between 20000 and 29999"),
        (PortMapping(80, 8080), "between 20000 and 29999"),
        (PortMapping(80, 30000), "between 20000 and 29999"),
        (PortMapping(80, 20000, "127.0.0.1"), "must be one of 0.0.0.0, ::"),
        (PortMapping(80, None, "10.0.0.5"), "must be one of 0.0.0.0, ::"),
    ],
)
def test_default_policy_refuses_host_ports_and_addresses(mapping, why):
    assert why in refusal(port_mappings=[mapping])


def test_reserved_ports_are_refused_even_inside_the_range():
    policy = PortPolicy((1, 65535), (22, 2375), ("0.0.0.0",))
    assert "22 is reserved" in refusal(policy, port_mappings=[PortMapping(2222, 22)])
    assert "2375 is reserved" in refusal(policy, port_mappings=[PortMapping(80, 2375)])
    check_spec(
        ContainerSpec(image="busybox", port_mappings=[PortMapping(80, 8080, "0.0.0.0")]),
        port_policy=policy,
    )


def test_default_policy_allows_random_ports_and_the_range():
    spec = ContainerSpec(
        image="busybox",
        port_mappings=[
            PortMapping(80),
            PortMapping(81, 20000),
            PortMapping(82, 29999, "0.0.0.0"),
            PortMapping("53/udp", 25353, "::"),
            PortMapping(83, None, "0:0:0:0:0:0:0:0"),  # "::" written out
        ],
    )
    check_spec(spec)


def test_policy_parse_and_bad_settings():
    policy = PortPolicy.parse(
        host_port_range="30000-30010", reserved=["30005"], addresses=["0.0.0.0"]
    )
    assert policy.host_port_range == (30000, 30010) and policy.reserved == {30005}
    assert policy.host_port_refusal(30005) == "30005 is reserved on the slaves"
    assert policy.host_port_refusal(30001) is None
    single = PortPolicy.parse(host_port_range="25000", reserved=[], addresses=["::"])
    assert single.host_port_range == (25000, 25000)
    for bad in ("30010-30000", "0-10", "x-y", "1-70000"):
        with pytest.raises(ValueError):
            PortPolicy.parse(host_port_range=bad, reserved=[], addresses=["0.0.0.0"])
    with pytest.raises(ValueError):
        PortPolicy.parse(host_port_range="1-2", reserved=["ssh"], addresses=["0.0.0.0"])
    with pytest.raises(ValueError):
        PortPolicy.parse(host_port_range="1-2", reserved=[], addresses=["localhost"])


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
