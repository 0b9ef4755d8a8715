"""Secret recognition and masking."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobs.common.redact import MASK, key_looks_secret, redact, value_looks_secret

TOKEN = "hf_" + "a1B2" * 9


@pytest.mark.parametrize(
    "key",
    [
        "hf_token",
        "HF_TOKEN",
        "wandb.api_key",
        "apiKey",
        "db.password",
        "my_secret",
        "aws.access_key",
        "credentials.file",
    ],
)
def test_credential_keys(key):
    assert key_looks_secret(key)


@pytest.mark.parametrize(
    "key",
    [
        "policy.tokenizer.name",
        "policy.max_new_tokens",
        "policy.model_name",
        "data.max_prompt_length",
        "keyword",
    ],
)
def test_ordinary_keys_are_not_secret(key):
    assert not key_looks_secret(key)


def test_environment_dumps_are_masked():
    message = (
        "Failed to merge the Job's runtime env {'env_vars': {'HF_TOKEN': 'abc123', "
        f"'WANDB_API_KEY': 'w0w', 'HF_HOME': '/lustre/hf', 'X': '{TOKEN}'}}}}"
    )
    out = redact(message)
    assert "abc123" not in out and "w0w" not in out and TOKEN not in out
    assert "/lustre/hf" in out and MASK in out
    assert redact("HF_TOKEN=abc123 tokenizer=qwen") == f"HF_TOKEN={MASK} tokenizer=qwen"


@given(
    st.text(
        alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
        min_size=20,
        max_size=60,
    ),
    st.text(max_size=40),
    st.text(max_size=40),
)
def test_any_hf_token_inside_any_text_is_masked(body, before, after):
    token = f"hf_{body}"
    assert value_looks_secret(f"{before} {token} {after}")
    assert token not in redact(f"{before} {token} {after}")


@pytest.mark.parametrize(
    "text",
    ["--out /etc/passwd: is a file", "data/my_secret: exists", "/tmp/run.api_key: x", "~/token: y"],
)
def test_a_path_ending_in_a_credential_word_is_not_a_credential(text):
    """A file named in a message is kept as written."""
    assert redact(text) == text


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("https://hub/x?token=abc", "https://hub/x?token=***"),
        ("HF_TOKEN=abc123 python train.py", "HF_TOKEN=*** python train.py"),
        ("--api-key=abc", "--api-key=***"),
    ],
)
def test_credentials_beside_paths_and_urls_are_still_masked(text, masked):
    assert redact(text) == masked
