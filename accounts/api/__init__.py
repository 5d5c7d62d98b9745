"""Portal API: shared helpers, version, token, projects and memberships."""
