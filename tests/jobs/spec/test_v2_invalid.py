"""Invalid v2 documents: each is refused with the path of the field and the rule it breaks."""

import pytest

from jobs.spec import FieldError, SpecError, normalize_job, parse_job_document

from .docs import DEFAULTS, DELETE, errors_of, minimal_job, with_changes

R = "request.resources"
D = "request.docker"
S = "request.scheduling"
E = "request.extra"
GOOD_UUID = "f6dbca7b-58fd-47e3-9ac4-9ad33e7f6030"

# (changes applied to minimal_job(), expected error path, fragment of the message)
CASES = [
    # top level
    ({"name": DELETE}, "name", "is required"),
    ({"name": ""}, "name", "must not be empty"),
    ({"name": 5}, "name", "must be a string"),
    ({"name": "x" * 256}, "name", "at most 255 characters"),
    ({"description": 5}, "description", "must be a string"),
    ({"request": DELETE}, "request", "is required"),
    ({"request": []}, "request", "must be an object"),
    ({"requst": {}}, "requst", 'unknown key (did you mean "request"?)'),
    ({"request.foo": 1}, "request.foo", "unknown key"),
    ({"request.docker": DELETE}, D, "is required"),
    ({"request.resources": DELETE}, R, "is required"),
    # resources
    ({f"{R}.cpus": 0}, f"{R}.cpus", "must be > 0"),
    ({f"{R}.cpus": DELETE}, f"{R}.cpus", "is required"),
    ({f"{R}.cpus": None}, f"{R}.cpus", "is required"),
    ({f"{R}.cpus": "two"}, f"{R}.cpus", "must be an integer"),
    ({f"{R}.cpus": True}, f"{R}.cpus", "must be an integer"),
    ({f"{R}.cpus": "1"}, f"{R}.cpus", 'must be an integer, not a string ("1")'),
    ({f"{R}.gpus": "+2"}, f"{R}.gpus", "must be an integer"),
    ({f"{R}.gpus": -1}, f"{R}.gpus", "must be >= 0"),
    ({f"{R}.gpus": 2**40}, f"{R}.gpus", "must be <= 2147483647"),
    ({f"{R}.cpuMemoryGb": 1.5}, f"{R}.cpuMemoryGb", "must be an integer"),
    ({f"{R}.cpuMemoryGb": "2.5"}, f"{R}.cpuMemoryGb", "must be an integer"),
    ({f"{R}.cpuMemoryGb": 0}, f"{R}.cpuMemoryGb", "must be > 0"),
    ({f"{R}.gpuMemoryGb": 1}, f"{R}.gpuMemoryGb", "must be > 1"),
    ({f"{R}.gpuModel": "V"}, f"{R}.gpuModel", "at least 2 characters"),
    ({f"{R}.gpuModel": ["V100", 5]}, f"{R}.gpuModel[1]", "must be a string"),
    ({f"{R}.features": ["ok", "x"]}, f"{R}.features[1]", "at least 2 characters"),
    ({f"{R}.minCudaVersion": -1}, f"{R}.minCudaVersion", "must be >= 0"),
    ({f"{R}.clusterId": -1}, f"{R}.clusterId", "must be >= 0"),
    ({f"{R}.clusterId": "abc"}, f"{R}.clusterId", "must be an integer"),
    ({f"{R}.slaveName": ""}, f"{R}.slaveName", "must not be empty"),
    ({f"{R}.slaveInstanceId": 7}, f"{R}.slaveInstanceId", "must be a string"),
    ({f"{R}.cpu": 1}, f"{R}.cpu", 'unknown key (did you mean "cpus"?)'),
    (
        {f"{R}.cpu_memory_gb": 2},
        f"{R}.cpu_memory_gb",
        "given twice (as cpuMemoryGb and cpu_memory_gb)",
    ),
    # docker
    ({f"{D}.image": DELETE}, f"{D}.image", "is required"),
    (
        {f"{D}.image": "Debian:stable"},
        f"{D}.image",
        'the path component "Debian" must be lowercase',
    ),
    ({f"{D}.image": "debian stable"}, f"{D}.image", "must not contain spaces"),
    ({f"{D}.image": "debian:stable\n"}, f"{D}.image", "must not contain spaces"),
    ({f"{D}.image": "--privileged"}, f"{D}.image", 'must not start with "-"'),
    ({f"{D}.image": "127.0.0.1:2375/x"}, f"{D}.image", "is a loopback address"),
    ({f"{D}.command": 5}, f"{D}.command", "must be a string or a list of strings"),
    ({f"{D}.command": ["ls", 1]}, f"{D}.command[1]", "must be a string"),
    # What the launcher could not split is refused here (it used to crash the launch).
    (
        {f"{D}.command": "sh -c 'echo hi"},
        f"{D}.command",
        "cannot be split into words: No closing quotation",
    ),
    ({f"{D}.command": "echo a\\"}, f"{D}.command", "cannot be split into words: No escaped"),
    ({f"{D}.environment": {"1BAD": "x"}}, f"{D}.environment.1BAD", "must be a variable name"),
    ({f"{D}.environment": {"MY-VAR": "x"}}, f"{D}.environment.MY-VAR", "must be a variable name"),
    (
        {f"{D}.environment": {"A": None}},
        f"{D}.environment.A",
        "must be a string, integer or boolean, not null",
    ),
    (
        {f"{D}.environment": {"A": 1.5}},
        f"{D}.environment.A",
        "must be a string, integer or boolean",
    ),
    (
        {f"{D}.environment": {"A": ["x"]}},
        f"{D}.environment.A",
        "must be a string, integer or boolean",
    ),
    ({f"{D}.environment": ["A=1"]}, f"{D}.environment", "must be an object"),
    ({f"{D}.storage": "/project"}, f"{D}.storage", "must be a list"),
    ({f"{D}.storage": [{}]}, f"{D}.storage[0]", "needs containerPath or hostPath"),
    ({f"{D}.storage": [""]}, f"{D}.storage[0]", "must not be empty"),
    ({f"{D}.storage": [5]}, f"{D}.storage[0]", "must be an object"),
    (
        {f"{D}.storage": [{"hostPath": "tmpfs", "sizeGb": 1}]},
        f"{D}.storage[0].containerPath",
        'is required with hostPath "tmpfs"',
    ),
    (
        {f"{D}.storage": [{"hostPath": "tmpfs", "containerPath": "/t"}]},
        f"{D}.storage[0].sizeGb",
        'is required with hostPath "tmpfs"',
    ),
    (
        {f"{D}.storage": [{"hostPath": "tmpfs", "containerPath": "/t", "sizeGb": 0}]},
        f"{D}.storage[0].sizeGb",
        "must be > 0",
    ),
    (
        {f"{D}.storage": [{"hostPath": "tmpfs", "containerPath": "/t", "sizeGb": 1.5}]},
        f"{D}.storage[0].sizeGb",
        "must be an integer",
    ),
    (
        {f"{D}.storage": [{"containerPath": "/a", "sizeGb": 1}]},
        f"{D}.storage[0].sizeGb",
        'only allowed with hostPath "tmpfs"',
    ),
    (
        {f"{D}.storage": [{"containerPath": "relative/dir"}]},
        f"{D}.storage[0].containerPath",
        "must be an absolute path",
    ),
    ({f"{D}.storage": [{"containerPath": "/"}]}, f"{D}.storage[0].containerPath", "root directory"),
    (
        {f"{D}.storage": [{"containerPath": "/proc"}]},
        f"{D}.storage[0].containerPath",
        "cannot be /proc or inside it",
    ),
    (
        {f"{D}.storage": [{"hostPath": "data"}]},
        f"{D}.storage[0].hostPath",
        'must be an absolute path (or ".ssh", "PROJECT_SHARE_AUTO" or "tmpfs")',
    ),
    (
        {f"{D}.storage": [{"hostPath": "/project/../etc"}]},
        f"{D}.storage[0].hostPath",
        '"." or ".." segments',
    ),
    (
        {f"{D}.storage": [{"containerPath": "/a"}, {"containerPath": "/a/"}]},
        f"{D}.storage[1].containerPath",
        "is already used by request.docker.storage[0]",
    ),
    (
        {f"{D}.storage": [{"hostPath": "PROJECT_SHARE_AUTO"}]},
        f"{D}.storage[0].containerPath",
        "is required with hostPath PROJECT_SHARE_AUTO",
    ),
    (
        {f"{D}.storage": [{"containerPath": "/a", "mode": "ro"}]},
        f"{D}.storage[0].mode",
        "unknown key",
    ),
    (
        {f"{D}.portMappings": ["80"]},
        f"{D}.portMappings[0]",
        'must be an object like {"containerPort": 80} or a port number',
    ),
    ({f"{D}.portMappings": [True]}, f"{D}.portMappings[0]", "must be an object like"),
    ({f"{D}.portMappings": 80}, f"{D}.portMappings", "must be a list"),
    ({f"{D}.portMappings": [0]}, f"{D}.portMappings[0].containerPort", "must be >= 1"),
    (
        {f"{D}.portMappings": [{"containerPort": 70000}]},
        f"{D}.portMappings[0].containerPort",
        "must be <= 65535",
    ),
    (
        {f"{D}.portMappings": [{"hostPort": 8080}]},
        f"{D}.portMappings[0].containerPort",
        "is required",
    ),
    (
        {f"{D}.portMappings": [{"containerPort": 80, "hostPort": -1}]},
        f"{D}.portMappings[0].hostPort",
        "must be >= 1",
    ),
    (
        {f"{D}.portMappings": [{"containerPort": 80, "hostIp": "nope"}]},
        f"{D}.portMappings[0].hostIp",
        "must be an IP address",
    ),
    (
        {f"{D}.projectGidVariableName": "1GID"},
        f"{D}.projectGidVariableName",
        "must be a variable name",
    ),
    ({f"{D}.workingDir": "work"}, f"{D}.workingDir", "must be an absolute path"),
    ({f"{D}.workingDir": "/a//b"}, f"{D}.workingDir", "no empty segments"),
    ({f"{D}.workingDir": "/a/../b"}, f"{D}.workingDir", '"." or ".." segments'),
    ({f"{D}.groupAdd": ["video", "my-group"]}, f"{D}.groupAdd[1]", r"must be a group (\w+)"),
    ({f"{D}.groupAdd": "a b"}, f"{D}.groupAdd", "must be a group"),
    ({f"{D}.user": "1000:1000"}, f"{D}.user", r"must be a user name or id (\w+)"),
    ({f"{D}.user": 1000}, f"{D}.user", "must be a string"),
    ({f"{D}.entrypoint": "sh"}, f"{D}.entrypoint", "unknown key"),
    # scheduling
    ({S: []}, S, "must be an object"),
    ({f"{S}.interactive": "yes"}, f"{S}.interactive", "must be true or false"),
    ({f"{S}.restartable": 1}, f"{S}.restartable", "must be true or false"),
    (
        {f"{S}.minDuration": "1d"},
        f"{S}.minDuration",
        'must be a duration like "3 hours" (units: s, sec',
    ),
    ({f"{S}.killable_after": "3 hr"}, f"{S}.killable_after", 'unknown unit "hr"'),
    ({f"{S}.maxDuration": "30 seconds"}, f"{S}.maxDuration", "must be at least 1 minute"),
    ({f"{S}.maxDuration": 3600}, f"{S}.maxDuration", "must be a duration like"),
    ({f"{S}.maxDuration": "1h30m"}, f"{S}.maxDuration", 'not "1h30m"'),
    (
        {f"{S}.minDuration": "1 hour", f"{S}.killableAfter": "1 hour"},
        f"{S}.killableAfter",
        "given twice (as minDuration and killableAfter)",
    ),
    (
        {f"{S}.notBefore": "2030-01-01T00:00:00"},
        f"{S}.notBefore",
        "RFC 3339 date-time with a timezone",
    ),
    ({f"{S}.notBefore": "2030-01-01"}, f"{S}.notBefore", "RFC 3339"),
    ({f"{S}.notBefore": "2030-02-30T00:00:00Z"}, f"{S}.notBefore", "RFC 3339"),
    ({f"{S}.notBefore": "2030-01-01T00:00:00+25:00"}, f"{S}.notBefore", "RFC 3339"),
    ({f"{S}.notBefore": 1893456000}, f"{S}.notBefore", "must be a string"),
    (
        {f"{S}.notBefore": "2030-01-02T00:00:00Z", f"{S}.notAfter": "2030-01-01T00:00:00Z"},
        f"{S}.notAfter",
        "must be later than notBefore",
    ),
    (
        {f"{S}.notBefore": "2030-01-01T01:00:00+01:00", f"{S}.notAfter": "2030-01-01T00:00:00Z"},
        f"{S}.notAfter",
        "must be later than notBefore",
    ),
    # Spaces inside are fine (GPULab's own example: tests/jobs/spec/test_seed_examples.py);
    # not at either end, nor control characters, nor more than the column holds.
    (
        {f"{S}.maxSimultaneousJobs": {"bucketName": " sweep", "bucketMax": 1}},
        f"{S}.maxSimultaneousJobs.bucketName",
        "must be printable text, without control characters or a space at either end",
    ),
    (
        {f"{S}.maxSimultaneousJobs": {"bucketName": "sweep ", "bucketMax": 1}},
        f"{S}.maxSimultaneousJobs.bucketName",
        "a space at either end",
    ),
    (
        {f"{S}.maxSimultaneousJobs": {"bucketName": "a\tb", "bucketMax": 1}},
        f"{S}.maxSimultaneousJobs.bucketName",
        "without control characters",
    ),
    (
        {f"{S}.maxSimultaneousJobs": {"bucketName": "", "bucketMax": 1}},
        f"{S}.maxSimultaneousJobs.bucketName",
        "without control characters",
    ),
    (
        {f"{S}.maxSimultaneousJobs": {"bucketName": "b" * 201, "bucketMax": 1}},
        f"{S}.maxSimultaneousJobs.bucketName",
        "must be at most 200 characters",
    ),
    (
        {f"{S}.maxSimultaneousJobs": {"bucketName": "b", "bucketMax": 0}},
        f"{S}.maxSimultaneousJobs.bucketMax",
        "must be > 0",
    ),
    (
        {f"{S}.maxSimultaneousJobs": {"bucketName": "b"}},
        f"{S}.maxSimultaneousJobs.bucketMax",
        "is required",
    ),
    ({f"{S}.maxSimultaneousJobs": 3}, f"{S}.maxSimultaneousJobs", "must be an object"),
    ({f"{S}.reservationIds": ["not-a-uuid"]}, f"{S}.reservationIds[0]", "must be a UUID"),
    ({f"{S}.reservationId": "xyz"}, f"{S}.reservationId", "must be a UUID"),
    (
        {f"{S}.reservationIds": [GOOD_UUID], f"{S}.reservationId": GOOD_UUID},
        f"{S}.reservationId",
        "given twice",
    ),
    ({f"{S}.priority": 1}, f"{S}.priority", "unknown key"),
    # extra
    ({f"{E}.sshPubKeys": "ssh-ed25519 AAAA"}, f"{E}.sshPubKeys", "must be a list"),
    ({f"{E}.sshPubKeys": [""]}, f"{E}.sshPubKeys[0]", "must not be empty"),
    ({f"{E}.sshPubKeys": ["garbage"]}, f"{E}.sshPubKeys[0]", "must be an OpenSSH public key"),
    (
        {f"{E}.sshPubKeys": ["ssh-ed25519 AAAAC3Nza me@laptop"]},
        f"{E}.sshPubKeys[0]",
        "must be an OpenSSH public key",
    ),
    ({f"{E}.emailOnEnd": ["nope"]}, f"{E}.emailOnEnd[0]", "must be an e-mail address"),
    ({f"{E}.email_on_run": [5]}, f"{E}.email_on_run[0]", "must be a string"),
    ({f"{E}.sms": ["+32"]}, f"{E}.sms", "unknown key"),
]


@pytest.mark.parametrize(
    ("changes", "path", "fragment"), CASES, ids=[c[1] + ":" + c[2][:30] for c in CASES]
)
def test_invalid(changes, path, fragment):
    errors = errors_of(normalize_job, with_changes(minimal_job(), changes), defaults=DEFAULTS)
    assert len(errors) == 1, errors
    assert errors[0][0] == path
    assert fragment in errors[0][1]


def test_there_are_at_least_forty_cases():
    assert len(CASES) >= 40


def test_all_errors_are_collected_in_document_order():
    doc = with_changes(
        minimal_job(),
        {
            "name": "",
            f"{R}.gpus": -1,
            f"{R}.cpuMemoryGb": 1.5,
            f"{D}.image": "UPPER",
            f"{D}.storage": [{"containerPath": "/ok"}, {"containerPath": "rel"}],
            f"{S}.maxDuration": "5 s",
            f"{E}.emailOnRun": ["x"],
        },
    )
    assert [path for path, _ in errors_of(normalize_job, doc, defaults=DEFAULTS)] == [
        "name",
        f"{R}.gpus",
        f"{R}.cpuMemoryGb",
        f"{D}.image",
        f"{D}.storage[1].containerPath",
        f"{S}.maxDuration",
        f"{E}.emailOnRun[0]",
    ]


def test_error_text_is_path_colon_message():
    with pytest.raises(SpecError) as info:
        normalize_job(
            with_changes(minimal_job(), {f"{R}.gpus": -1, f"{R}.cpus": 0}), defaults=DEFAULTS
        )
    assert (
        str(info.value)
        == "request.resources.cpus: must be > 0\nrequest.resources.gpus: must be >= 0"
    )
    assert str(info.value.errors[0]) == "request.resources.cpus: must be > 0"
    assert info.value.as_dict() == {
        "request.resources.cpus": ["must be > 0"],
        "request.resources.gpus": ["must be >= 0"],
    }


def test_errors_use_the_spelling_the_user_wrote():
    doc = with_changes(minimal_job(), {f"{R}.cpuMemoryGb": DELETE, f"{R}.cpu_memory_gb": 0})
    assert errors_of(normalize_job, doc, defaults=DEFAULTS) == [
        (f"{R}.cpu_memory_gb", "must be > 0")
    ]


@pytest.mark.parametrize("doc", [[], "job", 5, None])
def test_document_must_be_an_object(doc):
    errors = errors_of(normalize_job, doc, defaults=DEFAULTS)
    assert errors[0][0] == "(document)"


def test_document_needs_request_or_job_definition():
    assert errors_of(parse_job_document, {"name": "x"}, defaults=DEFAULTS) == [
        (
            "(document)",
            'must contain "request" (GPULab v2), "jobDefinition" (GPULab v1) or "jobName" and '
            '"taskRoles" (OpenPAI)',
        )
    ]
    both = {**minimal_job(), "jobDefinition": {}}
    assert errors_of(parse_job_document, both, defaults=DEFAULTS)[0][0] == "(document)"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '{"name": "x",}',
            "invalid JSON at line 1 column 13: trailing comma: remove the ',' before the end of "
            "the object",
        ),
        (
            '{\n  "name": "x"\n  "request": {}\n}',
            "invalid JSON at line 3 column 3: a comma is missing between two items",
        ),
        ('{"a": NaN}', "NaN is not valid JSON"),
        ("", "the document is empty"),
        (b"\xff\xfe{}", "not valid UTF-8"),
    ],
)
def test_bad_json(text, message):
    errors = errors_of(parse_job_document, text, defaults=DEFAULTS)
    assert errors[0][0] == "(json)"
    assert message in errors[0][1]


def test_json_top_level_must_be_an_object():
    assert errors_of(parse_job_document, "[1, 2]", defaults=DEFAULTS) == [
        ("(document)", "must be a JSON object ({...}), not an array")
    ]


def test_spec_error_needs_errors():
    with pytest.raises(ValueError):
        SpecError([])
    assert SpecError.single("a", "b").errors == [FieldError("a", "b")]


def test_min_duration_longer_than_max_duration_is_refused_when_both_are_given():
    """GPULab: "don't set minDuration larger than maxDuration"; no clamp is documented."""
    doc = with_changes(
        minimal_job(),
        {"request.scheduling.minDuration": "2 days", "request.scheduling.maxDuration": "1 day"},
    )
    assert errors_of(normalize_job, doc, defaults=DEFAULTS) == [
        ("request.scheduling.minDuration", "must not be longer than maxDuration (2 days > 1 day)")
    ]
