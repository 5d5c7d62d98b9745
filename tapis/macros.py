"""Tapis macros (``${JobUUID}``, ``${JobName}``, ...) in arguments and environment values.

Pure. Unknown ``${Names}`` are left as they are: they may be the job's own shell variables
(``${HOME}``), which Tapis leaves alone too.
"""

import re

from jobs.execution.container_spec import (
    CONTAINER_INPUT_DIR,
    CONTAINER_OUTPUT_DIR,
    CONTAINER_WORKING_DIR,
    WORKDIR_ENV,
)

MACRO_RE = re.compile(r"\$\{([A-Za-z][A-Za-z0-9]*)\}")
MACROS = (
    "JobUUID",
    "JobName",
    "JobOwner",
    "AppId",
    "AppVersion",
    "JobWorkingDir",
    "JobInputDir",
    "JobOutputDir",
)


def macro_values(*, job_uuid: str, job_name: str, owner: str, app_id: str, app_version: str):
    return {
        "JobUUID": job_uuid,
        "JobName": job_name,
        "JobOwner": owner,
        "AppId": app_id,
        "AppVersion": app_version,
        "JobWorkingDir": CONTAINER_WORKING_DIR,
        "JobInputDir": CONTAINER_INPUT_DIR,
        "JobOutputDir": CONTAINER_OUTPUT_DIR,
    }


def substitute(text: str, values: dict[str, str]) -> str:
    """``text`` with every known macro replaced (one pass: a value is never expanded again)."""
    return MACRO_RE.sub(lambda m: values.get(m.group(1), m.group(0)), text)


def tapis_environment(values: dict[str, str]) -> dict[str, str]:
    """The variables every job from an app gets, as Tapis sets them (``_tapis*``), plus the
    portal's names of the job's folders (``jobs.execution.container_spec.WORKDIR_ENV``)."""
    return {
        **WORKDIR_ENV,
        "_tapisAppId": values["AppId"],
        "_tapisAppVersion": values["AppVersion"],
        "_tapisJobName": values["JobName"],
        "_tapisJobOwner": values["JobOwner"],
        "_tapisJobUUID": values["JobUUID"],
        "_tapisExecSystemExecDir": values["JobWorkingDir"],
        "_tapisExecSystemInputDir": values["JobInputDir"],
        "_tapisExecSystemOutputDir": values["JobOutputDir"],
    }
