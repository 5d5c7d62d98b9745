"""Image references: GPULab's pattern, credentials for private registries, redaction."""

import pytest

from jobs.spec import ImageRef, normalize_job, parse_image, redact_image

from .docs import DEFAULTS, minimal_job, with_changes


def image_of(text: str) -> str:
    doc = with_changes(minimal_job(), {"request.docker.image": text})
    return normalize_job(doc, defaults=DEFAULTS)["request"]["docker"]["image"]


@pytest.mark.parametrize(
    ("text", "ref", "pull_name", "registry"),
    [
        ("debian:stable", ImageRef(None, None, None, "debian", "stable"), "debian:stable", None),
        ("ubuntu", ImageRef(None, None, None, "ubuntu", None), "ubuntu:latest", None),
        (
            "nvidia/cuda:10.1-cudnn7-devel-ubuntu18.04",
            ImageRef(None, None, "nvidia", "cuda", "10.1-cudnn7-devel-ubuntu18.04"),
            "nvidia/cuda:10.1-cudnn7-devel-ubuntu18.04",
            None,  # a Docker Hub namespace, not a registry
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
            "me:pa:ss/w0rd@localhost:5000/x",
            ImageRef("me", "pa:ss/w0rd", "localhost:5000", "x", None),
            "localhost:5000/x:latest",
            "localhost:5000",
        ),
    ],
)
def test_parse_image(text, ref, pull_name, registry):
    parsed = parse_image(text)
    assert parsed == ref
    assert parsed.pull_name == pull_name
    assert parsed.registry == registry
    assert parsed.has_credentials == (ref.username is not None)
    # every documented format is a valid job image, stored with its credentials (for the pull)
    assert image_of(text) == text


@pytest.mark.parametrize(
    "text", ["Debian", "debian:", "debian:stable\n", "user:p w@reg/x", "a b", "", "x" * 2000, 5]
)
def test_parse_image_rejects(text):
    assert parse_image(text) is None


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
        ("not an image:s3cr3t@x", "XXXX@x"),  # malformed: never leak what might be a password
    ],
)
def test_redact_image(text, member_view):
    assert redact_image(text, member=True) == member_view
    assert redact_image(text, member=False) == "hidden"
    assert "s3cr3t" not in redact_image(text, member=True)
