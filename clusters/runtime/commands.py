"""Job commands: what the container's argv becomes."""

from __future__ import annotations

import shlex
from collections.abc import Sequence


def split_command(command: str | Sequence[str] | None) -> list[str] | None:
    """The argv for the container, or None to keep the image's CMD.

    A string is split into words the way ``docker run IMAGE ...`` receives them from a POSIX
    shell (quotes and backslashes honoured), but no shell runs: ``"echo $HOME && ls"`` becomes
    ``["echo", "$HOME", "&&", "ls"]``. Whoever wants a shell writes ``sh -c '...'``. A list is
    the exec form and is passed as is. ``""``, whitespace, ``[]`` and None mean the image CMD.

    Raises ValueError on unbalanced quotes or non-string list items.
    """
    if command is None:
        return None
    if isinstance(command, str):
        try:
            words = shlex.split(command, posix=True)
        except ValueError as exc:  # "No closing quotation", "No escaped character"
            raise ValueError(f"command cannot be split into words: {exc}") from None
        return words or None
    if isinstance(command, bytes):
        raise ValueError("command must be a string or a list of strings, not bytes")
    words = list(command)
    for i, word in enumerate(words):
        if not isinstance(word, str):
            raise ValueError(f"command[{i}] must be a string, not {type(word).__name__}")
    return words or None
