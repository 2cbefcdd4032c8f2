"""A benchmark row's status as a type: what happened to the row (:class:`Status`) and why, written in the table as
``ok``, ``failed: <why>`` or ``not run: <why>`` (the text committed tables hold, byte for byte) and read back with
:meth:`RowStatus.parse`, so that no reader matches prose."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Status(StrEnum):
    OK = "ok"
    FAILED = "failed"        #: the row's run (or its efficiency measurement) raised
    NOT_RUN = "not run"      #: the row could not start (its inputs failed, no split to tune on)
    UNKNOWN = "unknown"      #: a table written without a status column


@dataclass(frozen=True)
class RowStatus:
    """A status and its reason (empty for ``ok``)."""

    kind: Status
    reason: str = ""

    def __str__(self) -> str:
        return self.kind.value if not self.reason else f"{self.kind.value}: {self.reason}"

    @classmethod
    def parse(cls, text: object) -> RowStatus:
        """The status a table cell holds: ``ok``, ``failed[: why]``, ``not run[: why]``; anything else (an older or
        hand-made table, an empty cell) is :data:`Status.UNKNOWN` with the text as its reason."""
        value = "" if text is None or (isinstance(text, float) and text != text) else str(text).strip()
        head, _, reason = value.partition(":")
        for kind in (Status.OK, Status.FAILED, Status.NOT_RUN):
            if head.strip() == kind.value:
                return cls(kind, reason.strip())
        if value == Status.UNKNOWN.value:
            return cls(Status.UNKNOWN)
        return cls(Status.UNKNOWN, value)

    @property
    def ok(self) -> bool:
        return self.kind is Status.OK


def kind_of(text: object) -> Status:
    """The kind of status a table cell holds (:meth:`RowStatus.parse`)."""
    return RowStatus.parse(text).kind
