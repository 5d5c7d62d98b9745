"""The API's route prefixes (every app's ``api/urls.py`` uses them) and ``GET version``.

Every route takes an optional trailing slash: the gpulab-cli asks for ``jobs`` and ``jobs/ID``,
people with curl often add a "/". See docs/api.md. portal/urls.py mounts these under ``api/``.
"""

from django.urls import re_path

from core.api.version import VersionView

GPULAB = r"^gpulab/v4\.0/"
PORTAL = r"^portal/"

urlpatterns = [
    # GPULab v4.0 (docs/gpulab-format.md, section 4).
    re_path(GPULAB + r"version/?$", VersionView.as_view(), name="gpulab-version"),
]
