"""The Docker runtime behind slaves: the only package of the portal that imports ``docker``.

- ``protocol.Engine``: the calls the portal makes on an engine.
- ``engine.DockerEngine``: run, inspect, signal, stop, logs, list by label, events, info, pull.
- ``spec.ContainerSpec``: everything a job container may get (and nothing it may not).
- ``errors.RuntimeFailure``: every failure, flagged ``permanent`` (fail the job) or transient
  (retry later).
- ``commands.split_command``, ``gpus`` (nvidia-smi parsing) and ``probe.probe_engine`` (engine
  info plus GPU discovery) are pure helpers around it.

Only ``engine`` imports the Docker SDK, so the pure modules load without it.
"""
