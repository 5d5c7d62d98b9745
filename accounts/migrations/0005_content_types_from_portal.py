"""Projects, memberships, profiles, login certificates and API tokens moved from the ``portal``
app to ``accounts`` (issue #11). Their tables keep their names; their content types follow here,
so the permissions granted on them (``accounts.view_project`` etc.) and the admin's history stay
attached. A fresh database has no ``portal`` content types: nothing to do.
"""

from django.db import migrations

MODELS = ["project", "membership", "profile", "logincertificate", "apitoken"]


def content_types_to_accounts(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    db = schema_editor.connection.alias
    for model in MODELS:
        if ContentType.objects.using(db).filter(app_label="accounts", model=model).exists():
            continue
        ContentType.objects.using(db).filter(app_label="portal", model=model).update(
            app_label="accounts"
        )


def content_types_to_portal(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    db = schema_editor.connection.alias
    for model in MODELS:
        if ContentType.objects.using(db).filter(app_label="portal", model=model).exists():
            continue
        ContentType.objects.using(db).filter(app_label="accounts", model=model).update(
            app_label="portal"
        )


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0004_logincertificate_ssh_key_fingerprint"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(content_types_to_accounts, content_types_to_portal)]
