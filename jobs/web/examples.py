"""Create Job's examples, fitted to this site: an image the slaves already have (recorded by
each slave's probe, ``Slave.images``) and modest resources, so a new user's first job starts
without a registry and without waiting for a whole machine.

Without any recorded image the examples keep ``debian:stable`` and the page says plainly that
it is a placeholder (it needs Docker Hub).
"""

from __future__ import annotations

import copy
from collections import Counter
from dataclasses import dataclass

from clusters.models import Gpu, Slave
from jobs.web.forms import JOB_TEMPLATES

PLACEHOLDER_IMAGE = "debian:stable"
# Small general-purpose images, preferred in this order when a slave has them.
PREFERRED = ("busybox", "alpine", "debian", "ubuntu", "python")
MODEST = {"cpus": 1, "cpuMemoryGb": 1}
MAX_DURATION = "1 hour"


@dataclass(frozen=True)
class SiteImages:
    example: str  # the image the examples use
    placeholder: bool  # no slave reported images: ``example`` is a placeholder
    present: tuple[str, ...]  # every image some online slave has (the image field's hints)
    cluster_id: int | None  # a cluster with a slave that has ``example``
    gpus: int  # 1 when that cluster has GPUs, else 0


def _repository(tag: str) -> str:
    return tag.rsplit(":", 1)[0].rsplit("/", 1)[-1]


def site_images() -> SiteImages:
    rows = list(
        Slave.objects.filter(online=True)
        .order_by("cluster_id", "name")
        .values_list("cluster_id", "images")
    )
    counts: Counter[str] = Counter()
    where: dict[str, int] = {}
    for cluster_id, images in rows:
        for tag in images or []:
            counts[tag] += 1
            where.setdefault(tag, cluster_id)
    if not counts:
        return SiteImages(PLACEHOLDER_IMAGE, True, (), None, 0)

    def rank(tag: str) -> tuple:
        name = _repository(tag)
        preferred = PREFERRED.index(name) if name in PREFERRED else len(PREFERRED)
        return (preferred, -counts[tag], tag)

    example = min(counts, key=rank)
    cluster_id = where[example]
    gpus = 1 if Gpu.objects.filter(slave__cluster_id=cluster_id, slave__online=True).exists() else 0
    return SiteImages(example, False, tuple(sorted(counts)), cluster_id, gpus)


def site_examples(images: SiteImages) -> dict[str, tuple[str, str, dict]]:
    """JOB_TEMPLATES with this site's image, cluster and modest resources."""
    examples = {}
    for key, (label, help_text, doc) in JOB_TEMPLATES.items():
        doc = copy.deepcopy(doc)
        request = doc["request"]
        request["docker"]["image"] = images.example
        resources = request.setdefault("resources", {})
        resources.update(MODEST, gpus=images.gpus)
        if images.cluster_id is not None:
            resources["clusterId"] = images.cluster_id
        else:
            resources.pop("clusterId", None)
        scheduling = request.setdefault("scheduling", {})
        scheduling["maxDuration"] = MAX_DURATION
        if "minDuration" in scheduling:
            scheduling["minDuration"] = "10 minutes"
        examples[key] = (label, help_text, doc)
    return examples
