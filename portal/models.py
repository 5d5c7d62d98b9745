"""No models: the portal package is the Django project (settings, urls, schedules).

The module exists because Django sends ``post_migrate`` only to apps with a models module, and
PortalConfig ensures the periodic schedules on it (portal/apps.py).
"""
