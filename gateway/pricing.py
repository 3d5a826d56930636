"""What a call cost, as an exact decimal, and how that figure is written out (pure).

Prices are USD per 1M tokens (``Price``). Both write sites (whole responses and
streams) call ``cost`` so a call is priced the same way whichever path served it.
"""

from __future__ import annotations

from decimal import Context, Decimal

import msgspec

from gateway.domain.model import Price
from gateway.domain.usage import Usage

# Enough digits that token counts times prices never round.
_PRECISION = 60
# Never changed once made (its flags are never read): shared by every call and thread.
_EXACT = Context(prec=_PRECISION)


def cost(usage: Usage, price: Price | None) -> Decimal | None:
    """``input/1e6 · price.input + output/1e6 · price.output``, exactly.

    Cached input is priced at ``price.cache_read`` / ``price.cache_write`` when the
    model has that price and the usage reports such tokens; the rest of the input
    (all of it otherwise) at ``price.input``. A prompt above a long-context tier's
    threshold pays that tier's prices for all its tokens (``Price.at``). ``None`` when
    the model is unpriced.
    """
    if price is None:
        return None
    if price.tiers:
        price = price.at(usage.input_tokens)
    cache_read = usage.cache_read_tokens if price.cache_read is not None else 0
    cache_write = usage.cache_write_tokens if price.cache_write is not None else 0
    plain_input = max(usage.input_tokens - cache_read - cache_write, 0)
    # The operations of one shared context rather than a ``localcontext`` swapped in per
    # call (a third of this function's time): the same precision, the same results.
    exact = _EXACT
    total = exact.add(
        exact.multiply(plain_input, price.input), exact.multiply(usage.output_tokens, price.output)
    )
    if cache_read and price.cache_read is not None:
        total = exact.add(total, exact.multiply(cache_read, price.cache_read))
    if cache_write and price.cache_write is not None:
        total = exact.add(total, exact.multiply(cache_write, price.cache_write))
    # scaleb moves the exponent only: dividing by 1e6 without rounding.
    return total.scaleb(-6, exact)


def format_usd(value: Decimal) -> str:
    """A plain decimal string (never an exponent), trailing zeros trimmed.

    ``Decimal('1E-7')`` → ``'0.0000001'``, ``Decimal('0.00045000')`` → ``'0.00045'``,
    ``Decimal('2.50')`` → ``'2.5'``, ``Decimal('0E-8')`` → ``'0'``.
    """
    if not value.is_finite():
        raise ValueError(f"not a finite amount: {value}")
    text = format(value, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    if text in ("-0", ""):
        text = "0"
    return text


def usd_json_number(value: Decimal) -> msgspec.Raw:
    """The amount as a JSON number for a msgspec-encoded body.

    A ``msgspec.Raw`` holding ``format_usd(value)``: exact (a float would round) and
    without the exponent that ``decimal_format="number"`` writes for small amounts
    (``1E-7``). Encoders other than msgspec can use ``float(value)`` instead.
    """
    return msgspec.Raw(format_usd(value).encode("ascii"))
