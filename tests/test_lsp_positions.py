"""rlcompat/server/positions.py: character offsets <-> LSP positions in UTF-16, UTF-8 and UTF-32 code units."""

from __future__ import annotations

import pytest

from rlcompat.server.positions import UTF8, UTF16, UTF32, PositionMap, units


def test_code_units_of_each_encoding():
    assert [units("a😀é", e) for e in (UTF16, UTF8, UTF32)] == [4, 7, 3]


@pytest.mark.parametrize("encoding, expected", [(UTF16, (1, 8)), (UTF8, (1, 11)), (UTF32, (1, 7))])
def test_a_position_after_an_emoji_and_an_accent_counts_their_code_units(encoding, expected):
    text = "first\nx = '😀é' + y\n"
    offset = text.index("' + y")
    where = PositionMap(text, encoding)
    assert where.position(offset) == expected
    assert where.offset(*expected) == offset


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_lines_end_at_every_line_break_the_specification_names(newline):
    text = newline.join(["a", "bé", "c😀d"])
    where = PositionMap(text)
    assert where.position(text.index("d")) == (2, 3)
    assert where.offset(2, 3) == text.index("d")


def test_other_unicode_line_breaks_do_not_end_an_lsp_line():
    # str.splitlines() also splits at U+2028 and form feeds; LSP does not, so neither do the positions.
    text = "a\u2028b\x0cc = 1\n"
    assert PositionMap(text).position(text.index("c")) == (0, 4)


def test_positions_past_a_line_or_the_text_are_clamped():
    text = "ab\ncd"
    where = PositionMap(text)
    assert where.offset(0, 99) == 2  # the end of line 0, before its line break
    assert where.offset(7, 0) == len(text)
    assert where.position(99) == (1, 2)


def test_a_position_inside_a_surrogate_pair_moves_past_the_character():
    text = "😀x"
    assert PositionMap(text, UTF16).offset(0, 1) == 1
