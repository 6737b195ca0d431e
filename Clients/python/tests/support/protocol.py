"""What the tests take from Protocol/: the golden vectors (vectors/frames.json) and the ``body`` kinds that
PROTOCOL.md lists for ``describe``."""

import json
import os
import re

from . import REPO_ROOT

VECTORS_PATH = os.path.join(REPO_ROOT, "Protocol", "vectors", "frames.json")
PROTOCOL_MD_PATH = os.path.join(REPO_ROOT, "Protocol", "PROTOCOL.md")
HANDSHAKE_LIMIT = 65536


def load_vectors():
    with open(VECTORS_PATH, encoding="utf-8") as f:
        return json.load(f)


VECTORS = load_vectors()


def describe_body_kinds():
    """The values of describe's ``body`` field, as PROTOCOL.md section 6 lists them (``"body":"a|b|c"``)."""
    with open(PROTOCOL_MD_PATH, encoding="utf-8") as f:
        match = re.search(r'"body":"([a-z|]+)"', f.read())
    assert match, "PROTOCOL.md no longer shows describe's body field as \"body\":\"a|b|c\""
    return match.group(1).split("|")


DESCRIBE_BODY_KINDS = describe_body_kinds()
