"""GPULab's own examples, copied verbatim from the seed pages (issue 26 item 1), and the one
repair the portal's refusal names where the page's JSON is broken.

Shared by tests/jobs/test_seed_examples_submit.py (accepted on the default configuration) and
tests/integration/test_seed_examples_run.py (they run on real Docker, as on `make run`).
"""

from __future__ import annotations

import json
import re

# gpulab-job-request-v2.txt, the page's full example ("The Job Request").
REQUEST_V2_HELLOWORLD = """\
 {
    "name": "HelloWorld",
    "description": "Hello world!",
    "request": {
        "resources": {
            "clusterId": 1,
            "gpus": 1,
            "cpus": 2,
            "cpuMemoryGb": 1
        },
        "docker": {
            "image": "debian:stable",
            "command": "echo 'Hello World!'",
            "environment": { },
            "storage": [ ],
            "portMappings": [ ]
        },
        "scheduling": {
            "interactive": true
        }
    }
}"""

# gpulab-scheduling.txt, "Advanced Scheduling Job" (its commas are broken on the page).
SCHEDULING_ADVANCED_JOB = """\
{
  "name": "Scheduling Example",
  "description": "Example Job with all scheduling options",
  "request": {
    "docker": {
      "command": "/project/start_job.sh",
      "image": "debian:stable",
      "storage": [ { "hostPath": "/project_ghent", "containerPath": "/project" } ]
    },
    "resources": {
      "cpus": 2,
      "gpus": 1,
      "cpuMemoryGb": 2,
    },
    "scheduling": {
      "interactive": true,
      "restartable": false,
      "allowHaltWithoutSignal": false,
      "maxDuration": "1 week",
      "notBefore": "2020-01-01T00:00:00+01:00",
      "notAfter": "2030-01-01T00:00:00+01:00",
      "minDuration": "1 hour",
      "maxSimultaneousJobs": {
        "bucketName": "aBucketName",
        "bucketMax": 1
      }
      "reservationIds": ["f6dbca7b-58fd-47e3-9ac4-9ad33e7f6030"],
    }
  }
}"""

# gpulab-scheduling.txt, "Restartable Job" (a trailing comma on the page).
SCHEDULING_RESTARTABLE_JOB = """\
{
  "name": "RestartDemo",
  "description": "Demo of Restartable Job",
  "request": {
    "docker": {
      "command": "/project/start_job.sh",
      "image": "debian:stable",
      "storage": [ { "hostPath": "/project_ghent", "containerPath": "/project" } ]
    },
    "resources": {
      "cpus": 2,
      "gpus": 1,
      "cpuMemoryGb": 2,
    },
    "scheduling": {
      "restartable": true,
      "allowHaltWithoutSignal": false,
      "maxDuration": "1 week",
      "minDuration": "1 hour",
      "interactive": false
    }
  }
}"""

# gpulab-scheduling.txt, "Example content of /project_ghent/start_job.sh:" (its two TODO
# branches are empty, which no shell accepts: see runnable_start_job()).
SCHEDULING_START_JOB_SH = """\
#!/bin/bash

halt_handler() {
   echo "saw SIGUSR1 @ $(date)"
   # TODO: if needed, make the job save its work and stop
   exit 123
}
trap halt_handler SIGUSR1;

echo "Job started at $(date)"
echo "GPULAB_JOB_ID=${GPULAB_JOB_ID}"  # different for each restart
echo "GPULAB_RESTART_INITIAL_JOB_ID=${GPULAB_RESTART_INITIAL_JOB_ID}"  # always the same, for original and restarts
echo "GPULAB_RESTART_COUNT=${GPULAB_RESTART_COUNT}"

if [ $GPULAB_RESTART_COUNT -lt 1 ]
then
   # TODO: code to start your job the first time
else
   # TODO: restart_my_job
fi
"""

# gpulab-scheduling.txt, "Maximum Simultanious Jobs": "Example object:"
SCHEDULING_BUCKET = """\
{
  "bucketName": "my parameter sweep limit",
  "bucketMax": 2
}"""

# gpulab-job-request-v2.txt (and gpulab-job-definition-v1.txt, the same line), "Opening TCP
# ports with portMappings": "You can also choose the port of the host machine, ..."
REQUEST_V2_HOST_PORT = """"portMappings": [ { "containerPort": 80, "hostPort" : 8080 } ]"""

# gpulab-job-request-v2.txt, "Storage": "This will cause a directory /project to be bound
# inside your docker container."
REQUEST_V2_STORAGE_PROJECT = """\
"storage": [
    {
       "containerPath": "/project"
    }
],"""

SEED_RESERVATION = "f6dbca7b-58fd-47e3-9ac4-9ad33e7f6030"


def commas_repaired(text: str) -> str:
    """The page's JSON with exactly the repairs the portal's refusal names (a comma missing
    between two items, a trailing comma before the end of an object): nothing else changes."""
    text = re.sub(r",(\s*[}\]])", r"\1", text)  # trailing commas
    return re.sub(r"}(\s*\n\s*\")", r"},\1", text)  # "}" then a key on the next line


def fragment(text: str) -> dict:
    """A `"key": value` fragment (with its trailing comma, when the page has one) as an object."""
    return json.loads("{" + text.strip().rstrip(",") + "}")


def runnable_start_job() -> str:
    """The page's start_job.sh with its two empty TODO branches filled with work that waits
    (a shell refuses an empty branch); everything else, the halt handler included, as written."""
    script = SCHEDULING_START_JOB_SH
    for todo in (
        "   # TODO: code to start your job the first time\n",
        "   # TODO: restart_my_job\n",
    ):
        assert todo in script
        script = script.replace(todo, todo + "   while true; do sleep 0.1; done\n")
    return script
