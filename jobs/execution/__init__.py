"""A job's execution on its slave: the container spec, its runs (launch, finish, stop, halt,
restart), reconcile and recovery, the Docker event watcher, logs, outputs and storage mounts.

Named apart from ``clusters/runtime/`` (the engines: the protocol and the Docker engine), which
this package drives."""
