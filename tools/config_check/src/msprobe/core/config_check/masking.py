"""Secrets never reach a pack or a report: they become keyed hashes (HMAC-SHA256).

What is masked: values of names that look like credentials (``HF_TOKEN``, ``--api-key``,
``hub_token``, ``DB_PASSWORD`` ...), the userinfo of URLs (``postgres://u:pw@host``) and token
formats found anywhere in a string (GitHub, AWS access key ids, Hugging Face, JWT, ...).

The key is random for each pack and never written, so a mask cannot be reversed by guessing
values. Packs made with the same key in ``MSPROBE_CONFIG_CHECK_KEY`` carry the same key id in
their masks; only those can be told apart as "same secret" / "different secret" when compared.
Masks made with different (random) keys only say that a value was set on both sides.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
from typing import Any, List, Optional, Tuple

from msprobe.schema.errors import MsprobeError

KEY_ENV = "MSPROBE_CONFIG_CHECK_KEY"
MIN_KEY_CHARS = 16
MAX_DEPTH = 64  # nested hyperparameters deeper than this are left as they are (bounded recursion)

DUPLICATE = "duplicate_value"  # msprobe's record of an option given twice: {"description": DUPLICATE, "values": [...]}
SAME, DIFFERENT, BOTH_SET = "same secret", "different secret", "both set"

# Parts of a name (split at '_', '-', '.', camelCase) that make its value a secret, whatever it is.
_SECRET_WORDS = frozenset({"TOKEN", "SECRET", "SECRETS", "PASSWORD", "PASSWD", "PASS", "PWD", "PW", "PASSPHRASE",
                           "APIKEY", "ACCESSKEY", "SECRETKEY", "PRIVATEKEY", "CREDENTIAL", "CREDENTIALS",
                           "CREDS", "AUTH", "COOKIE", "PAT", "SIGNATURE", "BEARER", "DSN"})
# 'key' alone also names model sizes (num_key_value_heads): only its non-numeric text is masked.
_KEY_WORDS = frozenset({"KEY", "KEYS"})
# Substrings that make a name secret even inside one word (PGPASSWORD, MYSECRETVALUE).
_SECRET_PARTS = ("PASSWORD", "PASSWD", "SECRET", "CREDENTIAL", "APIKEY", "ACCESSKEY", "PRIVATEKEY", "AUTHTOKEN")
_NOT_SECRET = frozenset({"PWD", "OLDPWD", "KEYTIMEOUT", "XAUTHORITY"})
_WORD_SPLIT = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])")

_URL_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/\s@\"'<>]+)@")
TOKEN_FORMATS: Tuple[Tuple[str, "re.Pattern[str]"], ...] = (
    ("GitHub", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{20,})")),
    ("AWS access key id", re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b")),
    ("Hugging Face", re.compile(r"\bhf_[A-Za-z0-9]{30,}")),
    ("JWT", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    ("OpenAI", re.compile(r"\bsk-(?:proj-)?[A-Za-z0-9_-]{20,}")),
    ("Slack", re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}")),
    ("Google API", re.compile(r"\bAIza[0-9A-Za-z_-]{35}")),
    ("private key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)")),
)
_FLAG = re.compile(r"true|false|none|", re.IGNORECASE)
_NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")
_MASK = re.compile(r"<secret hmac:(?P<key>[0-9a-f]{8}):(?P<digest>[0-9a-f]{16})>")


def secret_kind(name: str) -> str:
    """"strong" (any value is a secret), "key" (text that is not a number), or "" (not a secret name)."""
    upper = str(name).upper()
    if upper in _NOT_SECRET:
        return ""
    words = {word.upper() for word in _WORD_SPLIT.split(str(name)) if word}
    if words & _SECRET_WORDS or any(part in re.sub(r"[^A-Z0-9]", "", upper) for part in _SECRET_PARTS):
        return "strong"
    return "key" if words & _KEY_WORDS else ""


def _masked_whole(name: str, value: Any) -> bool:
    kind = secret_kind(name)
    if not kind or isinstance(value, bool) or value is None or value == "" or _MASK.fullmatch(str(value)):
        return False
    if isinstance(value, str) and _FLAG.fullmatch(value.strip()):  # a switch, not a credential
        return False
    if kind == "strong":
        return isinstance(value, (str, int, float))
    return isinstance(value, str) and not _NUMBER.fullmatch(value.strip())


class Masker:
    """Masks with one key: the user's (``MSPROBE_CONFIG_CHECK_KEY``) or a random one never written."""

    def __init__(self, key: Optional[str] = None) -> None:
        given = os.environ.get(KEY_ENV, "") if key is None else key
        if given:
            if len(given) < MIN_KEY_CHARS:
                raise MsprobeError(f"config_check: {KEY_ENV} must have at least {MIN_KEY_CHARS} characters "
                                   f"(use a random one, e.g. 'openssl rand -hex 32'), got {len(given)}")
            self._key = given.encode("utf-8", "surrogateescape")
            self.key_id = self._hmac(b"msprobe config_check key id")[:8]
        else:
            self._key = secrets.token_bytes(32)
            self.key_id = secrets.token_hex(4)

    def _hmac(self, data: bytes) -> str:
        return hmac.new(self._key, data, hashlib.sha256).hexdigest()

    def token(self, secret: str) -> str:
        digest = self._hmac(secret.encode("utf-8", "surrogateescape"))[:16]
        return f"<secret hmac:{self.key_id}:{digest}>"

    def text(self, value: str) -> str:
        """URL userinfo and known token formats inside ``value`` are masked; the rest is kept."""
        value = _URL_USERINFO.sub(lambda m: m["scheme"] + self._once(m["userinfo"]) + "@", value)
        for _, pattern in TOKEN_FORMATS:
            value = pattern.sub(lambda m: self.token(m[0]), value)
        return value

    def _once(self, secret: str) -> str:
        return secret if _MASK.fullmatch(secret) else self.token(secret)

    def value(self, name: str, value: Any, depth: int = 0) -> Any:
        """A value under ``name``: wholly masked when the name looks secret and the value is text."""
        if _masked_whole(name, value):
            return self.token(str(value))
        if isinstance(value, str):
            return self.text(value)
        if depth >= MAX_DEPTH:
            return value
        if isinstance(value, list):
            return [self.value(name, item, depth + 1) for item in value]
        if isinstance(value, dict):
            if value.get("description") == DUPLICATE and isinstance(value.get("values"), list):
                # an option set twice (two lines, or a script and a yaml): every value is masked by the option's name
                return dict(value, values=self.value(name, value["values"], depth + 1))
            # under a secret name, everything stored is that secret's (``password: {main: ..., backup: ...}``)
            inherit = secret_kind(name) == "strong"
            return {key: self.value(name if inherit and not secret_kind(str(key)) else str(key), item, depth + 1)
                    for key, item in value.items()}
        return value

    def tree(self, mapping: dict) -> dict:
        """Every value of a flat or nested mapping, masked by its own name."""
        return {key: self.value(str(key), item) for key, item in mapping.items()}


def has_mask(value: Any) -> bool:
    return isinstance(value, str) and _MASK.search(value) is not None


def compare_masked(bench: Any, cmp: Any) -> Optional[str]:
    """SAME / DIFFERENT / BOTH_SET when the values differ only in masks; None when no mask decides."""
    if not (has_mask(bench) or has_mask(cmp)) or not isinstance(bench, str) or not isinstance(cmp, str):
        return None
    b_masks, c_masks = _masks(bench), _masks(cmp)
    if _MASK.sub("<secret>", bench) != _MASK.sub("<secret>", cmp) or len(b_masks) != len(c_masks):
        return None
    if any(b[0] != c[0] for b, c in zip(b_masks, c_masks)):
        return BOTH_SET
    return SAME if b_masks == c_masks else DIFFERENT


def _masks(value: str) -> List[Tuple[str, str]]:
    return [(m["key"], m["digest"]) for m in _MASK.finditer(value)]
