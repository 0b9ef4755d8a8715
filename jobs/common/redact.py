"""Recognising and masking secrets, so tokens never reach runtime envs, logs or errors."""

from __future__ import annotations

import re

# Words that make a setting name a credential. Matched on whole words of the key
# (`policy.tokenizer.name` and `max_new_tokens` are not secrets; `hf_token`, `wandb.api_key` are).
_SECRET_WORDS = {"token", "secret", "password", "passwd", "credential", "credentials", "apikey"}
_SECRET_PAIRS = {("api", "key"), ("access", "key"), ("private", "key")}

# Shapes of well-known tokens: Hugging Face, GitHub, OpenAI-style, Slack.
SECRET_VALUE = re.compile(
    r"\b(?:hf_[A-Za-z0-9]{20,}|gh[pousr]_[A-Za-z0-9]{20,}|sk-[A-Za-z0-9_-]{20,}|xox[abpr]-[A-Za-z0-9-]{10,})"
)

# `NAME=value`, `'NAME': 'value'` or `"NAME": "value"` where NAME looks like a credential:
# Ray copies the driver's whole environment into a failed job's message (reference §1.7).
# A NAME that is the last part of a path (`--out /etc/passwd: is a file`, `data/api_key: exists`)
# is a file named in a message, not a setting, and is kept as written.
_SECRET_ASSIGNMENT = re.compile(
    r"""(?P<name>\b[A-Za-z0-9_.-]*(?:TOKEN|API[_-]?KEY|SECRET|PASSWORD|PASSWD)[A-Za-z0-9_]*)"""
    r"""(?P<sep>['"]?\s*[:=]\s*['"]?)(?P<value>[^'"\s,;}]+)""",
    re.IGNORECASE,
)

MASK = "***"


def _words(key: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", key)
    return [w for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if w]


def key_looks_secret(key: str) -> bool:
    words = _words(key)
    if any(w in _SECRET_WORDS for w in words):
        return True
    return any(pair in _SECRET_PAIRS for pair in zip(words, words[1:], strict=False))


def value_looks_secret(value: str) -> bool:
    return SECRET_VALUE.search(value) is not None


def _ends_a_path(m: re.Match[str]) -> bool:
    """The name is the tail of a path written in the text (`/etc/passwd`, `out/api_key`)."""
    before = m.string[: m.start("name")]
    word = re.split(r"[\s'\"=,;({\[?&]", before)[-1]
    return any(sep in word for sep in ("/", "\\", "~"))


def redact(text: str) -> str:
    """Mask token-shaped values and the values of credential-named assignments."""

    def _mask_assignment(m: re.Match[str]) -> str:
        if not key_looks_secret(m.group("name")) or _ends_a_path(m):
            return m.group(0)
        return f"{m.group('name')}{m.group('sep')}{MASK}"

    text = _SECRET_ASSIGNMENT.sub(_mask_assignment, text)
    return SECRET_VALUE.sub(MASK, text)


# A value that reads a credential from the environment instead of holding one: `$HF_TOKEN`,
# `${HF_TOKEN}`, `os.environ[...]`, `os.getenv(...)`. The pods already have the tokens.
_REFERENCE = re.compile(r"^(?:\$|os\.environ|os\.getenv|getenv\()")


def command_secret(args: list[str]) -> str | None:
    """What in a command looks like a credential, described without its value, or None.

    Uses the same detection as `--set` and `redact`: a token-shaped value anywhere, or a
    credential-named assignment (`HF_TOKEN=...`, `--api-key=...`, `"password": ...`) whose value
    is a literal rather than a reference to the environment.
    """
    if any(value_looks_secret(arg) for arg in args):
        return "a token-shaped value"
    for arg in args:
        for m in _SECRET_ASSIGNMENT.finditer(arg):
            if key_looks_secret(m.group("name")) and not _REFERENCE.match(m.group("value")):
                return f"a value for {m.group('name')}"
    return None
