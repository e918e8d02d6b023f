"""The CloudWatch metric-math subset this project's alarms use, evaluated on one datapoint.

Semantics from "Using math expressions with CloudWatch metrics" (Amazon CloudWatch User Guide,
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/using-metric-math.html):
``FILL(m, value)`` "Fills the missing values of a time series" with ``value``; ``IF(condition,
trueValue, falseValue)``; comparison operators return 1 or 0; ``AND``/``OR`` are logical operators;
arithmetic on a missing datapoint gives a missing datapoint. A missing value is ``None`` here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

Value = float | None
_TOKEN = re.compile(r"\s*(?:(\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)|([A-Za-z_][A-Za-z0-9_]*)|(>=|<=|==|!=|[-+*/(),<>]))")
_COMPARE: dict[str, Callable[[float, float], bool]] = {
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
}


class MetricMathError(ValueError):
    """An expression outside the supported subset."""


def evaluate(expression: str, values: Mapping[str, Value]) -> Value:
    parser = _Parser(expression, values)
    result = parser.logical()
    if parser.peek() is not None:
        raise MetricMathError(f"unexpected {parser.peek()!r} in {expression!r}")
    return result


class _Parser:
    def __init__(self, text: str, values: Mapping[str, Value]) -> None:
        self.text, self.values, self.tokens, position = text, values, [], 0
        while position < len(text):
            match = _TOKEN.match(text, position)
            if not match or match.end() == position:
                if text[position:].strip() == "":
                    break
                raise MetricMathError(f"cannot read {text[position:]!r} in {text!r}")
            self.tokens.append(match.group(1) or match.group(2) or match.group(3))
            position = match.end()
        self.index = 0

    def peek(self) -> str | None:
        return self.tokens[self.index] if self.index < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        token = self.peek()
        if token is None or (expected is not None and token.upper() != expected):
            raise MetricMathError(f"expected {expected or 'a value'} in {self.text!r}")
        self.index += 1
        return token

    def logical(self) -> Value:
        left = self.comparison()
        while (self.peek() or "").upper() in ("AND", "OR"):
            operator = self.take().upper()
            right = self.comparison()
            if left is None or right is None:
                left = None
            else:
                left = float(bool(left) and bool(right)) if operator == "AND" else float(bool(left) or bool(right))
        return left

    def comparison(self) -> Value:
        left = self.additive()
        while self.peek() in _COMPARE:
            operator = self.take()
            right = self.additive()
            left = None if left is None or right is None else float(_COMPARE[operator](left, right))
        return left

    def additive(self) -> Value:
        left = self.term()
        while self.peek() in ("+", "-"):
            operator = self.take()
            right = self.term()
            left = None if left is None or right is None else (left + right if operator == "+" else left - right)
        return left

    def term(self) -> Value:
        left = self.unary()
        while self.peek() in ("*", "/"):
            operator = self.take()
            right = self.unary()
            if left is None or right is None or (operator == "/" and right == 0):
                left = None  # CloudWatch drops a datapoint divided by zero
            else:
                left = left * right if operator == "*" else left / right
        return left

    def unary(self) -> Value:
        if self.peek() == "-":
            self.take()
            value = self.unary()
            return None if value is None else -value
        return self.atom()

    def atom(self) -> Value:
        token = self.take()
        if token == "(":
            value = self.logical()
            self.take(")")
            return value
        if token[0].isdigit():
            return float(token)
        function = token.upper()
        if function in ("IF", "FILL") and self.peek() == "(":
            self.take("(")
            arguments = [self.logical()]
            while self.peek() == ",":
                self.take(",")
                arguments.append(self.logical())
            self.take(")")
            return _call(function, arguments, self.text)
        if token not in self.values:
            raise MetricMathError(
                f"{token!r} in {self.text!r} is neither a metric id of the alarm nor a supported function"
            )
        return self.values[token]


def _call(function: str, arguments: list[Value], text: str) -> Value:
    if function == "FILL":
        if len(arguments) != 2:
            raise MetricMathError(f"FILL takes a metric and a value: {text!r}")
        return arguments[1] if arguments[0] is None else arguments[0]
    if len(arguments) != 3:
        raise MetricMathError(f"IF takes a condition and two values: {text!r}")
    condition, if_true, if_false = arguments
    if condition is None:
        return None
    return if_true if condition else if_false
