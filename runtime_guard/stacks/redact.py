"""Secrets never reach a report: with `--locals`, the value of a local whose name looks like a
secret is replaced, and so is a secret-looking entry inside any other value's repr.

A name looks like a secret when one of its words (split at `_`, `-`, `.` and lower-to-upper
case changes), singular, is one of SECRET_WORDS, or it contains `password` or `secret`: `token`,
`api_key`, `DB_PASSWORD`, `awsSecretAccessKey`, `prng_keys`, `mypassword` are redacted; `monkey`,
`tokenizer`, `author` are not. Inside a repr, `'password': 'hunter2'`, `token='abc'` and `secret=abc` lose
their values the same way (docs/report-format.md).
"""

from __future__ import annotations

import re

SECRET_WORDS = ("token", "key", "password", "passwd", "pwd", "secret", "credential", "credentials",
                "auth", "apikey", "passphrase", "cookie", "signature", "private")
REDACTED = "<redacted>"

_WORD = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
_ANYWHERE = re.compile(r"passw(?:or)?d|secret", re.I)
# name = value / 'name': value / "name": value inside a repr; the value: a quoted string or a
# run up to the next separator.
_IN_REPR = re.compile(
    r"""(?P<head>(?P<q>['"]?)(?P<name>[A-Za-z_][\w.-]*)(?P=q)\s*(?:=|:)\s*)"""
    r"""(?P<value>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[^\s,)}\]]+)""")


def is_secret_name(name: str) -> bool:
    words = [w.lower() for w in _WORD.findall(name)]
    return any(w in SECRET_WORDS or w.rstrip("s") in SECRET_WORDS for w in words) or bool(_ANYWHERE.search(name))


def redact_repr(text: str) -> str:
    """`{'user': 'me', 'token': 'abc'}` → `{'user': 'me', 'token': '<redacted>'}`."""
    def sub(m: re.Match) -> str:
        if not is_secret_name(m.group("name")):
            return m.group(0)
        v = m.group("value")
        q = v[0] if v[:1] in ("'", '"') else ""
        return f"{m.group('head')}{q}{REDACTED}{q}"

    return _IN_REPR.sub(sub, text)


def redact_locals(values: dict[str, str]) -> dict[str, str]:
    """name → repr, with secret-looking names' values and secret-looking entries redacted."""
    return {k: REDACTED if is_secret_name(k) else redact_repr(v) for k, v in values.items()}
