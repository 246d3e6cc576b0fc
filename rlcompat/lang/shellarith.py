"""Shell arithmetic (`$((...))`) worked out without running anything: integer literals, and variables the script
assigned an integer literal (or an arithmetic expansion of them) earlier, under `+ - * / % **`, unary `+ -` and
parentheses, with bash's integer semantics (`/` and `%` truncate toward zero; bash manual, "Shell Arithmetic":
https://www.gnu.org/software/bash/manual/html_node/Shell-Arithmetic.html). Anything else (a variable set any other
way, a command substitution, a comparison, an assignment inside the expression, division by zero) has no value here,
and `evaluate` says why instead.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r"\s*(?:(?P<num>0[xX][0-9a-fA-F]+|\d+)|\$\{(?P<braced>[A-Za-z_]\w*)\}|\$?(?P<name>[A-Za-z_]\w*)"
                    r"|(?P<op>\*\*|[-+*/%()]))")
_MAX_BITS = 64  # bash's integers are 64-bit: a larger result is not the value bash computes


class Unknown(Exception):
    """Why an expression has no value here."""


def evaluate(expression: str, variables: dict[str, int | str]) -> int:
    """The value of the arithmetic `expression` (the text inside `$((` and `))`). `variables`: name -> its integer
    value, or the reason it has none. Raises Unknown."""
    tokens, pos = [], 0
    text = expression.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise Unknown(f"`{text[pos:].strip()[:20]}` is not plain integer arithmetic")
        pos = m.end()
        if m.group("num"):
            tokens.append(_number(m.group("num")))
        elif m.group("braced") or m.group("name"):
            name = m.group("braced") or m.group("name")
            value = variables.get(name, f"`{name}` is not assigned an integer literal earlier in the script")
            if isinstance(value, str):
                raise Unknown(value)
            tokens.append(value)
        else:
            tokens.append(m.group("op"))
    if not tokens:
        raise Unknown("the expression is empty")
    value, rest = _sum(tokens)
    if rest:
        raise Unknown(f"`{text}` is not plain integer arithmetic")
    return value


def _number(text: str) -> int:
    """A literal as bash reads it: `0x1F` hexadecimal, `017` octal (a leading zero), else decimal."""
    if text[:2].lower() == "0x":
        return int(text, 16)
    try:
        return int(text, 8) if len(text) > 1 and text[0] == "0" else int(text)
    except ValueError:
        raise Unknown(f"`{text}` is no octal number (a leading zero makes it one)") from None


def _sum(tokens: list) -> tuple[int, list]:
    value, tokens = _product(tokens)
    while tokens and tokens[0] in ("+", "-"):
        op, (right, tokens) = tokens[0], _product(tokens[1:])
        value = _checked(value + right if op == "+" else value - right)
    return value, tokens


def _product(tokens: list) -> tuple[int, list]:
    value, tokens = _power(tokens)
    while tokens and tokens[0] in ("*", "/", "%"):
        op, (right, tokens) = tokens[0], _power(tokens[1:])
        if op == "*":
            value = _checked(value * right)
        elif right == 0:
            raise Unknown("division by zero")
        else:
            quotient = abs(value) // abs(right) * (1 if (value >= 0) == (right >= 0) else -1)
            value = quotient if op == "/" else value - quotient * right
    return value, tokens


def _power(tokens: list) -> tuple[int, list]:
    base, tokens = _unary(tokens)
    if tokens and tokens[0] == "**":
        exponent, tokens = _power(tokens[1:])  # right-associative
        if exponent < 0 or exponent > _MAX_BITS:
            raise Unknown("an exponent outside 0..64")
        return _checked(base ** exponent), tokens
    return base, tokens


def _unary(tokens: list) -> tuple[int, list]:
    if not tokens:
        raise Unknown("an operator without an operand")
    head = tokens[0]
    if head in ("+", "-"):
        value, rest = _unary(tokens[1:])
        return (-value if head == "-" else value), rest
    if head == "(":
        value, rest = _sum(tokens[1:])
        if not rest or rest[0] != ")":
            raise Unknown("unbalanced parentheses")
        return value, rest[1:]
    if isinstance(head, int):
        return head, tokens[1:]
    raise Unknown(f"`{head}` where a value belongs")


def _checked(value: int) -> int:
    if not -(2 ** (_MAX_BITS - 1)) <= value < 2 ** (_MAX_BITS - 1):
        raise Unknown("a result outside 64-bit integers")
    return value
