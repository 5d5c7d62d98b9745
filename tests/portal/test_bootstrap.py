"""The embedded defaults: admin, demo project, cluster 1, slave local; idempotent."""

import pytest

from accounts.models import Membership, Project
from clusters.models import Cluster, Slave
from portal.bootstrap import bootstrap_demo

pytestmark = pytest.mark.django_db


def test_bootstrap_without_docker_still_works_and_says_why(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    settings.PORTAL_LOCAL_DOCKER_URL = f"unix://{tmp_path}/no-docker.sock"
    result = bootstrap_demo()
    assert result.created_admin and result.password
    assert (tmp_path / "admin-password.txt").read_text().strip() == result.password
    slave = Slave.objects.get(name="local")
    assert slave.cluster == Cluster.objects.get(id=1)
    assert slave.online is False and "unreachable" in slave.offline_reason
    gpus = list(slave.gpus.all())
    assert len(gpus) == 2 and all(g.declared and "Demo" in g.model for g in gpus)
    project = Project.objects.get(name="demo")
    assert Membership.objects.filter(project=project, user__username="admin").exists()

    again = bootstrap_demo()
    assert again.created_admin is False and again.password == result.password
    assert Slave.objects.count() == 1 and Project.objects.count() == 1
    assert Slave.objects.get(name="local").gpus.count() == 2


def test_the_printed_password_path_is_where_the_password_is(settings, tmp_path):
    """PORTAL_VAR_DIR moves var/: the start-up line names the file that holds the password."""
    from io import StringIO

    from django.core.management import call_command

    settings.VAR_DIR = tmp_path / "elsewhere"
    settings.PORTAL_LOCAL_DOCKER_URL = f"unix://{tmp_path}/no-docker.sock"
    out = StringIO()
    call_command("bootstrap_demo", stdout=out)
    printed = out.getvalue()
    password_file = tmp_path / "elsewhere" / "admin-password.txt"
    assert f"(stored in {password_file})" in printed, printed
    assert f"/ {password_file.read_text().strip()} " in printed
