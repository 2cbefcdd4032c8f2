import pytest

from lsr_eval.data.chunks import chunks
from lsr_eval.errors import ConfigError


def test_chunks_keep_every_item_in_order():
    assert list(chunks(range(7), 3)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(chunks(iter(range(4)), 4)) == [[0, 1, 2, 3]]
    assert list(chunks([], 3)) == []


@pytest.mark.parametrize("size", [0, -2])
def test_a_size_below_one_is_refused_not_one_chunk_or_none(size):
    # a zero-sized islice would drop every item; the declaration refuses it before the stream is touched
    with pytest.raises(ConfigError, match="size must be"):
        next(chunks(range(3), size))
