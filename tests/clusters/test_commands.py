"""split_command: a string becomes the words `docker run IMAGE ...` would get from a shell."""

import pytest

from clusters.runtime.commands import split_command


@pytest.mark.parametrize(
    "command,argv",
    [
        ("python train.py --lr 0.1", ["python", "train.py", "--lr", "0.1"]),
        ("sh -c 'echo hi && sleep 1'", ["sh", "-c", "echo hi && sleep 1"]),
        ('echo "a  b" c', ["echo", "a  b", "c"]),
        (r"echo a\ b", ["echo", "a b"]),
        ("echo 'it''s'", ["echo", "its"]),
        ("  nvidia-smi   ", ["nvidia-smi"]),
        ("python -c 'print(1)'\n", ["python", "-c", "print(1)"]),
        # No shell runs: variables, operators and globs stay literal words.
        ("echo $HOME && ls *.py", ["echo", "$HOME", "&&", "ls", "*.py"]),
        ("curl http://h/a#b", ["curl", "http://h/a#b"]),
        ("echo ''", ["echo", ""]),
    ],
)
def test_string_is_split_like_shell_words(command, argv):
    assert split_command(command) == argv


@pytest.mark.parametrize("empty", ["", "   ", "\n", [], (), None])
def test_empty_means_image_cmd(empty):
    assert split_command(empty) is None


def test_list_is_exec_form_untouched():
    argv = ["sh", "-c", "echo $HOME; exit 3"]
    result = split_command(argv)
    assert result == argv and result is not argv
    assert split_command(("a b", "c")) == ["a b", "c"]


@pytest.mark.parametrize("bad", ["echo 'unterminated", 'echo "x', "echo x\\"])
def test_unbalanced_quotes_are_rejected(bad):
    with pytest.raises(ValueError, match="cannot be split"):
        split_command(bad)


def test_non_string_items_are_rejected():
    with pytest.raises(ValueError, match=r"command\[1\]"):
        split_command(["sleep", 5])
    with pytest.raises(ValueError):
        split_command(b"echo hi")
