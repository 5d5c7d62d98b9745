"""User actions on jobs: the services that check who may act (submit, cancel, halt, hold,
release, delete) and the registry that web, API, URLs and admin read."""
