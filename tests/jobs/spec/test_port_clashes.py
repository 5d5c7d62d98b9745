"""Duplicate host ports in one request (issue 26 item 2): "two identical hostPorts inside one
job are accepted and the job fails at start". Refused at submit, naming the second mapping."""

import pytest

from jobs.spec import SpecError, normalize_job

from .docs import DEFAULTS, minimal_job, with_changes


def errors_of(doc: dict) -> list[str]:
    try:
        normalize_job(doc, defaults=DEFAULTS)
    except SpecError as error:
        return [f"{e.path}: {e.message}" for e in error.errors]
    return []


def _ports(*mappings) -> dict:
    return with_changes(minimal_job(), {"request.docker.portMappings": list(mappings)})


def test_the_same_host_port_twice_is_refused_at_the_second():
    errors = errors_of(_ports({"containerPort": 80, "hostPort": 8080},
                              {"containerPort": 81, "hostPort": 8080}))  # fmt: skip
    assert errors == [
        "request.docker.portMappings[1].hostPort: host port 8080 is already mapped by "
        "portMappings[0]"
    ]


@pytest.mark.parametrize(
    "first, second",
    [
        ({"hostIp": "127.0.0.1"}, {"hostIp": "127.0.0.1"}),
        ({"hostIp": "127.0.0.1"}, {}),  # all addresses include 127.0.0.1
        ({"hostIp": "0.0.0.0"}, {"hostIp": "127.0.0.2"}),
    ],
)
def test_overlapping_addresses_clash(first, second):
    errors = errors_of(_ports({"containerPort": 80, "hostPort": 9000, **first},
                              {"containerPort": 81, "hostPort": 9000, **second}))  # fmt: skip
    assert errors and "portMappings[1].hostPort" in errors[0]


def test_distinct_addresses_or_ports_and_portal_chosen_ports_do_not_clash():
    assert errors_of(_ports({"containerPort": 80, "hostPort": 9000, "hostIp": "127.0.0.1"},
                            {"containerPort": 81, "hostPort": 9000, "hostIp": "127.0.0.2"},
                            {"containerPort": 82, "hostPort": 9001},
                            {"containerPort": 83}, {"containerPort": 84})) == []  # fmt: skip
