"""The three templates every site starts with (docs/sessions.md "Templates"); staff edit them in
the admin. The images are built locally (docs/sessions.md "Images")."""

from datetime import timedelta

from django.db import migrations

TEMPLATES = [
    {
        "slug": "jupyterlab",
        "title": "JupyterLab",
        "kind": "jupyterlab",
        "image": "gpuportal/jupyterlab:latest",
        "command": (
            "jupyter lab --ip=0.0.0.0 --port={port} --no-browser --allow-root"
            " --ServerApp.base_url={base_url} --ServerApp.allow_origin=*"
            " --ServerApp.allow_remote_access=True --ServerApp.root_dir=/"
        ),
        "port": 8888,
        "strip_prefix": False,
        "landing_path": "lab",
    },
    {
        "slug": "tensorboard",
        "title": "TensorBoard",
        "kind": "tensorboard",
        "image": "gpuportal/tensorboard:latest",
        "command": (
            "tensorboard --logdir {logdir} --host 0.0.0.0 --port {port}"
            " --path_prefix {base_url_no_trailing_slash}"
        ),
        "port": 6006,
        "strip_prefix": False,
        "landing_path": "",
        "gpus": 0,
    },
    {
        "slug": "code-server",
        "title": "VS Code (code-server)",
        "kind": "code-server",
        "image": "gpuportal/code-server:latest",
        "command": "code-server --bind-addr 0.0.0.0:{port} --auth none /",
        "port": 8080,
        "strip_prefix": True,
        "landing_path": "",
    },
]


def seed(apps, schema_editor):
    SessionTemplate = apps.get_model("interactive", "SessionTemplate")
    for row in TEMPLATES:
        defaults = {"gpus": 1, "cpus": 2, "memory_gb": 8, "time_box": timedelta(hours=4), **row}
        SessionTemplate.objects.get_or_create(slug=row["slug"], defaults=defaults)


def unseed(apps, schema_editor):
    SessionTemplate = apps.get_model("interactive", "SessionTemplate")
    SessionTemplate.objects.filter(
        slug__in=[row["slug"] for row in TEMPLATES], sessions__isnull=True
    ).delete()


class Migration(migrations.Migration):
    dependencies = [("interactive", "0001_initial")]

    operations = [migrations.RunPython(seed, unseed)]
