"""Helpers for brewing coffee in tests."""


def steep(grams: int, seconds: int = 240) -> float:
    """Steep the grounds and return the extraction yield.

    Longer steeping raises the yield until the grounds are spent.
    """
    return grams * seconds / 1000


def grind_size(method: str) -> str:
    """Return the recommended grind size for a brewing method."""
    return {"espresso": "fine"}.get(method, "medium")


class Kettle:
    """A kettle that heats water to a target temperature."""

    def __init__(self, litres: float) -> None:
        self.litres = litres

    def heat(self, celsius: int) -> None:
        """Heat the water until it reaches the given temperature in celsius."""

    def pour(self, millilitres: int) -> int:
        """Pour water from the spout and return the millilitres left."""
        return 0
