"""Static files storage: WhiteNoise's compressed manifest storage, usable before collectstatic.

In production ``collectstatic`` (run by run_portal, and by the web service before it starts)
writes hashed, compressed copies and a manifest into STATIC_ROOT; WhiteNoise serves them with
far-future cache headers. Tests and ``runserver`` never collect: with no manifest at all, a plain
manifest storage fails every ``{% static %}`` (500 on every page), so this one links the plain
names instead, which the test server and ``runserver`` serve from the app directories.
A manifest that exists but lacks a name is still an error, as in Django.
"""

from whitenoise.storage import CompressedManifestStaticFilesStorage


class StaticFilesStorage(CompressedManifestStaticFilesStorage):
    def stored_name(self, name: str) -> str:
        if not self.hashed_files:  # nothing collected yet
            return name
        return super().stored_name(name)
