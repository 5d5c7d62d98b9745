"""Pure parts of the runtime: spec checks (the Docker socket never reaches a job), failure
classification and redaction. No engine needed."""

import pytest

from clusters.runtime.errors import RuntimeFailure, is_permanent, redact
from clusters.runtime.spec import (
    ContainerSpec,
    Mount,
    PortMapping,
    PortPolicy,
    check_spec,
    docker_socket_exposure,
)


@pytest.mark.parametrize(
    "source",
    [
        "/var/run/docker.sock",
        "/run/docker.sock",
        "/run//docker.sock",
        "/var/run/../run/docker.sock",
        "/var/run",
        "/run",
        "/var",
        "/",
        "/run/docker/containerd/containerd.sock",
        "/run/containerd",
        "/var/lib/docker/volumes",
        "/home/alice/.docker/run/docker.sock",
        "/tmp/containerd.sock",
        "/var/run/gpuportal/slave2.sock",
    ],
)
def test_docker_sockets_and_their_parents_are_exposures(source):
    assert docker_socket_exposure(source) is not None


@pytest.mark.parametrize(
    "source", ["/project/data", "/var/lib/gpuportal/storage", "/tmp/x.sock", "/run-data"]
)
def test_ordinary_paths_are_fine(source):
    assert docker_socket_exposure(source) is None


def test_engine_socket_is_added():
    assert docker_socket_exposure("/srv/sockets/engine.sock") is None
    assert docker_socket_exposure("/srv/sockets", ["/srv/sockets/engine.sock"]) is not None


def refusal(**fields) -> str:
    with pytest.raises(RuntimeFailure) as caught:
        check_spec(ContainerSpec(image="busybox", **fields))
    assert caught.value.permanent
    return str(caught.value)


def test_spec_refusals():
    assert "Docker socket" in refusal(binds=[Mount("/var/run/docker.sock", "/d.sock")])
    assert "absolute" in refusal(binds=[Mount("data", "/data")])
    assert "absolute" in refusal(binds=[Mount("/data", "data")])
    assert "container's /" in refusal(binds=[Mount("/data", "/")])
    assert "tmpfs" in refusal(tmpfs={"/scratch": 0})
    assert "cpuset" in refusal(cpuset_cpus="0;1")
    assert "memory" in refusal(mem_limit_bytes=-1)
    assert "port" in refusal(port_mappings=[(0, None, None)])
    assert "port" in refusal(port_mappings=[("80/http", None, None)])
    assert "host port" in refusal(port_mappings=[(80, 70000, None)])
    assert "not both" in refusal(gpu_all=True, gpu_device_ids=["0"])
    with pytest.raises(RuntimeFailure, match="image"):
        check_spec(ContainerSpec(image=""))


def test_valid_spec_passes_and_is_normalised():
    spec = ContainerSpec(
        image="busybox",
        command=["sh", "-c", "true"],
        environment={"N": 1},
        binds=[Mount("/data", "/data", read_only=True)],
        tmpfs={"/scratch": 1024},
        cpuset_cpus="0-3,6",
        port_mappings=[(8080, None, None), PortMapping("53/udp", 5353, "127.0.0.1")],
        gpu_device_ids=[0, "GPU-abc"],
        group_add=[1000],
    )
    check_spec(spec, port_policy=PortPolicy((1024, 65535), (), ("127.0.0.1",)))
    assert spec.command == ("sh", "-c", "true")
    assert spec.environment == {"N": "1"}
    assert spec.binds == (Mount("/data", "/data", True),)
    assert spec.port_mappings[0] == PortMapping(8080, None, None)
    assert spec.gpu_device_ids == ("0", "GPU-abc") and spec.group_add == ("1000",)
    with pytest.raises(AttributeError):
        spec.image = "other"  # frozen


@pytest.mark.parametrize(
    "message,status,operation,permanent",
    [
        ("No such image: foo:latest", 404, "create", True),
        ("invalid reference format", 400, "pull", True),
        ("pull access denied for nope, repository does not exist", 500, "pull", True),
        ("manifest for nvidia/cuda:99 not found: manifest unknown", 500, "pull", True),
        (
            'Get "http://127.0.0.1:1/v2/": dial tcp 127.0.0.1:1: connect: connection refused',
            500,
            "pull",
            True,
        ),
        ("dial tcp: lookup registry.example: no such host", 500, "pull", True),
        ("net/http: TLS handshake timeout", 500, "pull", False),
        ("toomanyrequests: rate limit", 500, "pull", False),
        ("Too Many Requests", 429, "pull", False),
        ('could not select device driver "nvidia" with capabilities: [[gpu]]', 500, "start", True),
        (
            'OCI runtime create failed: exec: "x": executable file not found in $PATH',
            500,
            "start",
            True,
        ),
        ("bind source path does not exist: /nope", 400, "create", True),
        ("Conflict. The container name is already in use", 409, "create", True),
        ("containerd: context deadline exceeded: timeout", 500, "start", False),
        ("something odd happened in the daemon", 500, "create", False),
        ("anything", None, "info", False),
    ],
)
def test_classification(message, status, operation, permanent):
    assert is_permanent(message, status_code=status, operation=operation) is permanent


def test_redact():
    text = "auth for user:s3cret@reg failed; token s3cret; encoded p%40ss%2Fw"
    out = redact(text, ["s3cret", "p@ss/w", None, ""])
    assert "s3cret" not in out and "p%40ss" not in out
    assert (
        redact("bad ref alice:hunter2@registry:5000/x:1") == "bad ref alice:***@registry:5000/x:1"
    )
    assert (
        redact('Get "http://127.0.0.1:1/v2/": refused') == 'Get "http://127.0.0.1:1/v2/": refused'
    )


@pytest.mark.parametrize("folder", ["job/outputs", "/", "/job/../etc", ""])
def test_folders_must_be_absolute_and_below_the_root(folder):
    with pytest.raises(RuntimeFailure, match="folder"):
        check_spec(ContainerSpec(image="busybox", folders=(folder,)))


def test_folders_tar_makes_parents_and_owns_the_leaves():
    import io
    import tarfile

    from clusters.runtime.folders import folders_tar, numeric_owner

    data = folders_tar(("/job/inputs", "/job/outputs"), owner=(1234, 100))
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        members = [(m.name, m.isdir(), m.uid, m.gid) for m in tar.getmembers()]
    assert members == [
        ("job", True, 0, 0),
        ("job/inputs", True, 1234, 100),
        ("job/outputs", True, 1234, 100),
    ]
    assert numeric_owner(None) == (0, 0) and numeric_owner("1000") == (1000, 0)
    assert numeric_owner("1000:100") == (1000, 100) and numeric_owner("alice") is None
