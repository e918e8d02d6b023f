"""The CloudWatch metric-math subset this project's alarms use, evaluated on one datapoint.

Semantics from "Using math expressions with CloudWatch metrics" (Amazon CloudWatch User Guide,
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/using-metric-math.html):
``FILL(m, value)`` "Fills the missing values of a time series" with ``value``; ``IF(condition,
trueValue, falseValue)``; comparison operators return 1 or 0; ``AND``/``OR`` are logical operators;
arithmetic on a missing datapoint gives a missing datapoint. A missing value is ``None`` here.
"""

from __future__ import annotations

import functools
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
    return compiled(expression)(values)


@functools.lru_cache(maxsize=256)
def compiled(expression: str) -> Callable[[Mapping[str, Value]], Value]:
    """``expression`` parsed once into a function of the metric values (an alarm evaluates it every minute)."""
    parser = _Parser(expression)
    function = parser.logical()
    if parser.peek() is not None:
        raise MetricMathError(f"unexpected {parser.peek()!r} in {expression!r}")
    return function


Node = Callable[[Mapping[str, Value]], Value]


class _Parser:
    def __init__(self, text: str) -> None:
        self.text, self.tokens, position = text, [], 0
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

    def logical(self) -> Node:
        node = self.comparison()
        while (self.peek() or "").upper() in ("AND", "OR"):
            operator = self.take().upper()
            node = _logical(node, self.comparison(), operator == "AND")
        return node

    def comparison(self) -> Node:
        node = self.additive()
        while self.peek() in _COMPARE:
            operation = _COMPARE[self.take()]
            node = _binary(node, self.additive(), operation, as_float=True)
        return node

    def additive(self) -> Node:
        node = self.term()
        while self.peek() in ("+", "-"):
            operator = self.take()
            node = _binary(node, self.term(), (lambda a, b: a + b) if operator == "+" else (lambda a, b: a - b))
        return node

    def term(self) -> Node:
        node = self.unary()
        while self.peek() in ("*", "/"):
            operator = self.take()
            node = _binary(node, self.unary(), (lambda a, b: a * b) if operator == "*" else _divide)
        return node

    def unary(self) -> Node:
        if self.peek() == "-":
            self.take()
            inner = self.unary()
            return lambda values: None if (value := inner(values)) is None else -value
        return self.atom()

    def atom(self) -> Node:
        token = self.take()
        if token == "(":
            node = self.logical()
            self.take(")")
            return node
        if token[0].isdigit():
            constant = float(token)
            return lambda values: constant
        function = token.upper()
        if function in ("IF", "FILL") and self.peek() == "(":
            self.take("(")
            arguments = [self.logical()]
            while self.peek() == ",":
                self.take(",")
                arguments.append(self.logical())
            self.take(")")
            return _call(function, arguments, self.text)

        def metric(values: Mapping[str, Value]) -> Value:
            if token not in values:
                raise MetricMathError(
                    f"{token!r} in {self.text!r} is neither a metric id of the alarm nor a supported function"
                )
            return values[token]

        return metric


def _binary(
    left: Node, right: Node, operation: Callable[[float, float], float | None], *, as_float: bool = False
) -> Node:
    def node(values: Mapping[str, Value]) -> Value:
        a, b = left(values), right(values)
        if a is None or b is None:
            return None
        result = operation(a, b)
        return float(result) if as_float and result is not None else result

    return node


def _divide(a: float, b: float) -> float | None:
    return None if b == 0 else a / b  # CloudWatch drops a datapoint divided by zero


def _logical(left: Node, right: Node, both: bool) -> Node:
    def node(values: Mapping[str, Value]) -> Value:
        a, b = left(values), right(values)
        if a is None or b is None:
            return None
        return float(bool(a) and bool(b)) if both else float(bool(a) or bool(b))

    return node


def _call(function: str, arguments: list[Node], text: str) -> Node:
    if function == "FILL":
        if len(arguments) != 2:
            raise MetricMathError(f"FILL takes a metric and a value: {text!r}")
        series, filler = arguments
        return lambda values: filler(values) if (value := series(values)) is None else value
    if len(arguments) != 3:
        raise MetricMathError(f"IF takes a condition and two values: {text!r}")
    condition, if_true, if_false = arguments

    def node(values: Mapping[str, Value]) -> Value:
        chosen = condition(values)
        if chosen is None:
            return None
        return if_true(values) if chosen else if_false(values)

    return node
