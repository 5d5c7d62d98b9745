"""Image references: Docker's reference grammar, GPULab's credentials, the private-registry
policy, redaction."""

import pytest

from jobs.spec import ImageRef, SpecDefaults, SpecError, normalize_job, parse_image, redact_image
from jobs.spec.images import (
    GPULAB_HINT,
    GPULAB_IMAGE_RE,
    gpulab_image,
    image_problem,
    registry_refusal,
)

from .docs import DEFAULTS, minimal_job, with_changes

HEX = "0123456789abcdef" * 4  # 64 hex digits: a sha256
DIGEST = f"sha256:{HEX}"
LOCAL_ALLOWED = SpecDefaults(allowed_private_registries=("localhost:5000",))


def image_of(text: str, defaults: SpecDefaults = DEFAULTS) -> str:
    doc = with_changes(minimal_job(), {"request.docker.image": text})
    return normalize_job(doc, defaults=defaults)["request"]["docker"]["image"]


def image_errors(text: str, defaults: SpecDefaults = DEFAULTS) -> list[str]:
    doc = with_changes(minimal_job(), {"request.docker.image": text})
    with pytest.raises(SpecError) as caught:
        normalize_job(doc, defaults=defaults)
    return [str(e) for e in caught.value.errors]


@pytest.mark.parametrize(
    ("text", "ref", "pull_name", "registry"),
    [
        ("debian:stable", ImageRef(None, None, None, "debian", "stable"), "debian:stable", None),
        ("ubuntu", ImageRef(None, None, None, "ubuntu", None), "ubuntu:latest", None),
        ("busybox", ImageRef(None, None, None, "busybox", None), "busybox:latest", None),
        (
            "library/busybox:1.36",
            ImageRef(None, None, "library", "busybox", "1.36"),
            "library/busybox:1.36",
            None,
        ),
        (
            "nvidia/cuda:10.1-cudnn7-devel-ubuntu18.04",
            ImageRef(None, None, "nvidia", "cuda", "10.1-cudnn7-devel-ubuntu18.04"),
            "nvidia/cuda:10.1-cudnn7-devel-ubuntu18.04",
            None,  # a Docker Hub namespace, not a registry
        ),
        (
            "registry.example.org:5000/team/img:tag",
            ImageRef(None, None, "registry.example.org:5000", "team/img", "tag"),
            "registry.example.org:5000/team/img:tag",
            "registry.example.org:5000",
        ),
        (
            "gitlab.ilabt.imec.be:4567/ilabt/gpulab-examples/nvidia/sample:nvidia-smi",
            ImageRef(
                None,
                None,
                "gitlab.ilabt.imec.be:4567",
                "ilabt/gpulab-examples/nvidia/sample",
                "nvidia-smi",
            ),
            "gitlab.ilabt.imec.be:4567/ilabt/gpulab-examples/nvidia/sample:nvidia-smi",
            "gitlab.ilabt.imec.be:4567",
        ),
        (
            "gitlab+deploy-token-3:XXXXXXXXXXXXX@gitlab.ilabt.imec.be:4567/ilabt/gpulab/sample:nvidia-smi",
            ImageRef(
                "gitlab+deploy-token-3",
                "XXXXXXXXXXXXX",
                "gitlab.ilabt.imec.be:4567",
                "ilabt/gpulab/sample",
                "nvidia-smi",
            ),
            "gitlab.ilabt.imec.be:4567/ilabt/gpulab/sample:nvidia-smi",
            "gitlab.ilabt.imec.be:4567",
        ),
        (
            "user:pass@registry.example.org/x:y",
            ImageRef("user", "pass", "registry.example.org", "x", "y"),
            "registry.example.org/x:y",
            "registry.example.org",
        ),
        (
            "user:pass@myimage:v1",  # credentials for a private Docker Hub image
            ImageRef("user", "pass", None, "myimage", "v1"),
            "myimage:v1",
            None,
        ),
        # Pinned by digest: pulled by digest (a tag beside it is kept for people, not pulled).
        (f"img@{DIGEST}", ImageRef(None, None, None, "img", None, DIGEST), f"img@{DIGEST}", None),
        (
            f"img:tag@{DIGEST}",
            ImageRef(None, None, None, "img", "tag", DIGEST),
            f"img@{DIGEST}",
            None,
        ),
        # Not user "busybox" with password "latest": a reference never gets split for credentials.
        (
            f"busybox:latest@{DIGEST}",
            ImageRef(None, None, None, "busybox", "latest", DIGEST),
            f"busybox@{DIGEST}",
            None,
        ),
        (
            "team/a.b_c__d-e--f:1",  # every separator Docker allows in a path component
            ImageRef(None, None, "team", "a.b_c__d-e--f", "1"),
            "team/a.b_c__d-e--f:1",
            None,
        ),
        (
            "Registry.Example.org/x",  # host names are not case-sensitive
            ImageRef(None, None, "Registry.Example.org", "x", None),
            "Registry.Example.org/x:latest",
            "Registry.Example.org",
        ),
    ],
)
def test_parse_image(text, ref, pull_name, registry):
    parsed = parse_image(text)
    assert parsed == ref
    assert parsed.pull_name == pull_name
    assert parsed.registry == registry
    assert parsed.has_credentials == (ref.username is not None)
    assert image_problem(text) is None
    # every valid reference is a valid job image, stored with its credentials (for the pull)
    assert image_of(text) == text
    # and the GPULab API shows it in a form the real gpulab-cli's image pattern accepts
    assert GPULAB_IMAGE_RE.fullmatch(gpulab_image(text))


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (f"img@{DIGEST}", f"img:latest@{DIGEST}"),
        (f"img:v1@{DIGEST}", f"img:v1@{DIGEST}"),
        ("u:s3cr3t@registry.example.org/img", "u:XXXX@registry.example.org/img"),
        ("debian", "debian"),
    ],
)
def test_gpulab_image(text, shown):
    assert gpulab_image(text) == shown
    assert GPULAB_IMAGE_RE.fullmatch(shown)
    assert parse_image(shown).pull_name == parse_image(text).pull_name  # the same image


@pytest.mark.parametrize(
    "text",
    [
        f"u:pw@registry.example.org:5000/team/img:1@{DIGEST}",  # two "@" for GPULab's pattern
        f"nvidia/cuda@{DIGEST}",  # GPULab's pattern reads "name:tag@" as credentials: no "/"
        "[2606:4700::1111]:5000/x",  # a public IPv6 registry: no brackets in GPULab's pattern
        "debian:" + "t" * 128,  # Docker allows 128 characters, GPULab 127
    ],
)
def test_references_gpulab_cli_could_not_read_back_are_refused(text):
    assert parse_image(text) is not None  # Docker's grammar accepts them
    assert image_errors(text) == [f"request.docker.image: {GPULAB_HINT}"]


def test_credentials_to_an_allowed_local_registry():
    text = "me:pa:ss/w0rd@localhost:5000/x"
    assert parse_image(text) == ImageRef("me", "pa:ss/w0rd", "localhost:5000", "x", None)
    assert image_of(text, LOCAL_ALLOWED) == text


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("--privileged", 'must not start with "-"'),
        ("-v/:/host", 'must not start with "-"'),
        ("a/../../etc", 'must not contain a ".." path component'),
        ("./x", 'must not contain a "." path component'),
        ("UPPER/case", 'the path component "UPPER" must be lowercase'),
        ("Debian", 'the path component "Debian" must be lowercase'),
        ("ghcr.io/Org/x", 'the path component "Org" must be lowercase'),
        ("img/", "empty path component"),
        ("/img", "empty path component"),
        ("a//b", "empty path component"),
        ("@", "the digest after @"),
        ("img@", "the digest after @"),
        ("img@sha256:abc", "the digest after @"),
        (f"img@sha256:{HEX.upper()}", "the digest after @"),
        (f"img@md5:{HEX}", "the digest after @"),
        ("busybox:latest@sha256:abc", "the digest after @"),  # a broken digest, no credentials
        ("debian:", 'the tag "" is not valid'),
        ("debian:.hidden", "is not valid"),
        ("debian:" + "t" * 129, "is not valid"),  # Docker's limit is 128
        ("x:5000000/y", "is not a host name"),
        ("bad_host.org/x", "is not a host name"),  # a "." makes it a host: no "_" there
        ("../x", 'must not contain a ".." path component'),
        ("[::1/x", "is not a host name"),
        ("[fe80::1%eth0]/x", "is not a host name"),
        ("a__-b", "is not valid"),
        ("a b", "must not contain spaces"),
        ("debian:stable\n", "must not contain spaces"),
        ("", "must not be empty"),
        ("é", "is not valid"),
        ("x" * 256, "at most 255 characters"),
        ("x" * 2000, "at most 1024 characters"),
        ("u$:s3cret@registry.example.org/x", "the credentials before"),
        (5, "must be a string"),
    ],
)
def test_parse_image_rejects(text, reason):
    assert parse_image(text) is None
    assert reason in image_problem(text)
    if isinstance(text, str) and 0 < len(text) <= 1024:
        assert [e for e in image_errors(text) if reason in e][0].startswith("request.docker.image:")


def test_messages_never_quote_text_with_an_at_sign():
    """A text with "@" may hold a password the grammar could not split off."""
    for text in ("u$:S3cretPW@registry.example.org/x", "u:S3cretPW@Registry/UP", "a:S3cretPW@x@y"):
        problem = image_problem(text)
        assert problem is not None and "S3cretPW" not in problem


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("127.0.0.1:2375/x", "a loopback address"),
        ("127.0.0.1/x", "a loopback address"),
        ("[::1]:5000/x", "a loopback address"),
        ("[::ffff:7f00:1]/x", "a loopback address"),  # IPv4-mapped IPv6
        ("2130706433:80/x", "a loopback address"),  # 127.0.0.1 as inet_aton reads it
        ("0x7f.1:80/x", "a loopback address"),
        ("169.254.169.254/x", "a link-local address"),  # the cloud metadata service
        ("[fe80::1]/x", "a link-local address"),
        ("10.0.0.5/x", "a private address"),
        ("192.168.1.10:5000/team/x:1", "a private address"),
        ("172.16.0.1/x", "a private address"),
        ("0.0.0.0:2375/x", "the unspecified address"),
        ("100.64.0.1/x", "not a public address"),
        ("localhost:5000/x", "localhost"),
        ("localhost/x", "localhost"),
        ("LOCALHOST:5000/x", "localhost"),
        ("registry.localhost/x", "localhost"),
        ("user:pw@10.0.0.5/x", "a private address"),
    ],
)
def test_private_registries_are_refused(text, kind):
    ref = parse_image(text)
    assert ref is not None, "grammatical: refused by the site policy, not the grammar"
    refusal = registry_refusal(ref)
    assert refusal is not None and f"is {kind}" in refusal
    errors = image_errors(text)
    assert len(errors) == 1 and errors[0].startswith("request.docker.image: the registry ")
    assert "PORTAL_ALLOWED_PRIVATE_REGISTRIES" in errors[0]
    assert "pw" not in errors[0]


@pytest.mark.parametrize(
    ("text", "allowed", "ok"),
    [
        ("localhost:5000/x", ("localhost:5000",), True),
        ("localhost:5001/x", ("localhost:5000",), False),  # host:port allows that port only
        ("10.0.0.5:5000/x", ("10.0.0.5",), True),  # a bare host allows every port
        ("10.0.0.5/x", ("10.0.0.5",), True),
        ("10.0.0.6/x", ("10.0.0.5",), False),
        ("LocalHost:5000/x", (" localhost:5000 ",), True),
        ("[::1]:5000/x", ("[::1]:5000",), True),
    ],
)
def test_allowed_private_registries(text, allowed, ok):
    defaults = SpecDefaults(allowed_private_registries=allowed)
    assert (registry_refusal(parse_image(text), allowed=allowed) is None) == ok
    if not ok:
        assert image_errors(text, defaults)
    elif "[" not in text:  # an IPv6 registry is then refused for gpulab-cli (test below)
        assert image_of(text, defaults) == text


@pytest.mark.parametrize(
    "text", ["registry.example.org/x", "8.8.8.8:5000/x", "[2001:4860::8888]/x", "nvidia/cuda"]
)
def test_public_registries_pass(text):
    assert registry_refusal(parse_image(text)) is None


@pytest.mark.parametrize(
    ("text", "member_view"),
    [
        ("debian:stable", "debian:stable"),
        ("nvidia/cuda:11", "nvidia/cuda:11"),
        (
            "gitlab+deploy-token-3:s3cr3t@gitlab.example.org:4567/group/sample:v1",
            "gitlab+deploy-token-3:XXXX@gitlab.example.org:4567/group/sample:v1",
        ),
        ("u:s3cr3t@registry.example.org/img", "u:XXXX@registry.example.org/img"),
        (
            f"u:s3cr3t@registry.example.org/img:v1@{DIGEST}",
            f"u:XXXX@registry.example.org/img:v1@{DIGEST}",
        ),
        (f"busybox:latest@{DIGEST}", f"busybox:latest@{DIGEST}"),
        ("not an image:s3cr3t@x", "XXXX@x"),  # malformed: never leak what might be a password
    ],
)
def test_redact_image(text, member_view):
    assert redact_image(text, member=True) == member_view
    assert redact_image(text, member=False) == "hidden"
    assert "s3cr3t" not in redact_image(text, member=True)


@pytest.mark.parametrize(
    ("path", "ok"),
    [
        ("/proc", False),
        ("/proc/sys", False),
        ("/sys", False),
        ("/sys/fs/cgroup/", False),
        ("/dev", False),
        ("/dev/nvidia0", False),
        ("/", False),
        ("/dev/shm", True),  # the usual way to give a job more shared memory
        ("/process", True),
        ("/device/x", True),
        ("/data/proc", True),
    ],
)
def test_system_container_paths(path, ok):
    for item in (
        {"containerPath": path},
        {"hostPath": "tmpfs", "containerPath": path, "sizeGb": 1},
    ):
        doc = with_changes(minimal_job(), {"request.docker.storage": [item]})
        if ok:
            storage = normalize_job(doc, defaults=DEFAULTS)["request"]["docker"]["storage"]
            assert storage[0]["containerPath"] == path.rstrip("/") + "/"
        else:
            with pytest.raises(SpecError) as caught:
                normalize_job(doc, defaults=DEFAULTS)
            assert [e.path for e in caught.value.errors] == [
                "request.docker.storage[0].containerPath"
            ]
