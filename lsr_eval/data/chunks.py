"""Consecutive chunks of a stream: the bounded unit of every batch (encoding windows, batch searches, engine
builds), so that memory stays bounded however many items go through."""

from __future__ import annotations

from itertools import islice
from typing import Iterable, Iterator, TypeVar

from lsr_eval.settings import Setting, check

#: A chunk's size: at least one item (none would drop every item).
CHUNK_SIZE = Setting(help="items per chunk", ge=1)

T = TypeVar("T")


def chunks(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """Consecutive lists of at most ``size`` items (the last may be shorter)."""
    check("size", size, int, CHUNK_SIZE)
    it = iter(items)
    while chunk := list(islice(it, size)):
        yield chunk
