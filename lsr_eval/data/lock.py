"""Lock files of downloaded inputs: a JSON object whose keys (a sha256, counts) are ``null`` until the first run
that has the input records them, to be committed; every later run checks against them. Used by the teacher scores
(:mod:`lsr_eval.data.teacher`) and naver's middle-trained checkpoints (:mod:`lsr_eval.data.archive`)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

from lsr_eval.errors import InputError
from lsr_eval.settings import Setting, check

#: A lock file: recorded value by key (a JSON object).
LOCK = Setting(help="a lock file: a JSON object of recorded values by key")


def check_lock(found: Mapping[str, Any], expect: str | os.PathLike, keys: Sequence[str], what: str) -> str:
    """Compare ``found[k]`` for each of ``keys`` with the lock file ``expect``: a mismatch is one error naming
    ``what`` and both values of every key that differs; values not yet recorded are written into it. Returns what
    was done, for printing."""
    expect = Path(expect)
    try:
        pinned = json.loads(expect.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise InputError(f"{expect}: not a readable lock file ({e})") from e
    check("the lock file", pinned, dict, LOCK, str(expect))
    wrong = [f"{k} {pinned[k]!r} expected, {found[k]!r} found" for k in keys
             if pinned.get(k) is not None and pinned[k] != found[k]]
    if wrong:
        raise InputError(f"{expect}: {what} differs from the one recorded: {'; '.join(wrong)}; check the download "
                         "(or, if the file changed on purpose upstream, update the lock file and say why)")
    missing = [k for k in keys if pinned.get(k) is None]
    if not missing:
        return f"matches {expect}"
    pinned.update({k: found[k] for k in missing})
    expect.write_text(json.dumps(pinned, indent=2) + "\n", encoding="utf-8")
    return f"recorded {', '.join(missing)} into {expect}: commit it, so that later runs check against it"
