"""Running jobs on their slaves: the container spec, launch/finish/stop/halt/restart,
reconcile and recovery, the Docker event watcher, logs and storage mounts."""
