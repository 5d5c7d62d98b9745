"""manage.py convert_job: canonical v2 on stdout, or one error per line and exit status 1."""

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command

COMPLETE_V1 = {
    "jobDefinition": {
        "name": "Complete v1",
        "description": "every common v1 field",
        "clusterId": [4, 5],
        "dockerImage": "gitlab.example.org:4567/team/img:v1",
        "command": "python train.py --epochs 3",
        "jobType": "BATCH",
        "resources": {"cpuCores": 4, "gpus": 2, "systemMemory": 64000, "gpuModel": "V100"},
        "jobDataLocations": [
            {"mountPoint": "/project"},
            {"sharePath": "/project/code/", "mountPoint": "/work/code"},
        ],
        "portMappings": [{"containerPort": 8888}],
        "environment": {"EPOCHS": 3, "MODE": "fast"},
    }
}


def run(path, stdin_text=None, monkeypatch=None):
    out, err = io.StringIO(), io.StringIO()
    if stdin_text is not None:
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin_text))
    code = 0
    try:
        call_command("convert_job", path, stdout=out, stderr=err)
    except SystemExit as exit_:
        code = exit_.code
    return code, out.getvalue(), err.getvalue()


def test_complete_v1_becomes_valid_v2(tmp_path):
    path = tmp_path / "job.json"
    path.write_text(json.dumps(COMPLETE_V1))
    code, out, err = run(str(path))
    assert code == 0, err
    doc = json.loads(out)
    resources = doc["request"]["resources"]
    assert (resources["cpus"], resources["gpus"], resources["cpuMemoryGb"]) == (4, 2, 63)
    assert resources["clusterId"] == 4 and resources["gpuModel"] == ["V100"]
    docker = doc["request"]["docker"]
    assert docker["image"] == "gitlab.example.org:4567/team/img:v1"
    assert docker["storage"][0] == {"containerPath": "/project/", "hostPath": "/project/"}
    assert docker["storage"][1] == {"containerPath": "/work/code/", "hostPath": "/project/code/"}
    assert docker["portMappings"][0]["containerPort"] == 8888
    assert docker["environment"] == {"EPOCHS": 3, "MODE": "fast"}
    assert doc["request"]["scheduling"]["maxDuration"] == "2 weeks"


def test_stdin_and_errors_one_per_line(monkeypatch):
    bad = {
        "name": "x",
        "request": {
            "resources": {"cpus": 0, "gpus": -1, "cpuMemoryGb": 1},
            "docker": {"image": "debian"},
        },
    }
    code, out, err = run("-", json.dumps(bad), monkeypatch)
    assert code == 1 and out == ""
    lines = err.strip().splitlines()
    assert "request.resources.gpus: must be >= 0" in lines
    assert any(line.startswith("request.resources.cpus:") for line in lines)


@pytest.mark.parametrize("text", ['{"name": "x",,}', "[1, 2]"])
def test_bad_json_fails(monkeypatch, text):
    code, _, err = run("-", text, monkeypatch)
    assert code == 1 and err.strip()


def test_missing_file(tmp_path):
    code, _, err = run(str(tmp_path / "nope.json"))
    assert code == 1 and "nope.json" in err


OPENPAI_SEED = Path(__file__).parent / "spec" / "fixtures" / "openpai-distributed-example.jsonc"


def test_openpai_config_prints_the_canonical_config(tmp_path):
    lines = OPENPAI_SEED.read_text().splitlines()
    doc = json.loads("\n".join(line for line in lines if not line.strip().startswith("//")))
    doc["image"] = "gpuportal/busybox:latest"
    path = tmp_path / "pai.json"
    path.write_text(json.dumps(doc))
    code, out, err = run(str(path))
    assert code == 0, err
    config = json.loads(out)
    assert config["jobName"] == "tensorflow-distributed-jobguid"
    assert [role["shmMB"] for role in config["taskRoles"]] == [64, 64]
    assert config["retryCount"] == 0 and config["authFile"] is None
    assert "request" not in config


def test_openpai_errors_one_per_line_exit_1(monkeypatch):
    bad = {
        "jobName": "x y",
        "image": "gpuportal/busybox:latest",
        "taskRoles": [
            {"name": "a", "taskNumber": 1, "cpuNumber": 1, "memoryMB": 100, "gpuNumber": 0,
             "command": "true"},
            {"name": "b", "taskNumber": 0, "cpuNumber": 1, "memoryMB": 100, "gpuNumber": 0,
             "command": "true"},
        ],
    }  # fmt: skip
    code, out, err = run("-", stdin_text=json.dumps(bad), monkeypatch=monkeypatch)
    assert code == 1 and out == ""
    assert err.splitlines() == [
        r"jobName: must match ^[A-Za-z0-9\-._~]+$",
        "taskRoles[1].taskNumber: must be >= 1",
    ]
