"""A tiny module for the autodoc pages of the reference test root."""

from __future__ import annotations


def brew(dose, ratio=16.0):
    """Brew one cup.

    :param dose: grams of ground coffee
    :type dose: float
    :param ratio: water to coffee, by weight
    :type ratio: float
    :returns: the grams of water to pour
    :rtype: float
    :raises ValueError: if the dose is not positive
    """
    if dose <= 0:
        raise ValueError(dose)
    return dose * ratio


class Grinder:
    """A burr grinder.

    :param setting: the grind setting, finer when lower
    :type setting: int
    """

    def __init__(self, setting=12):
        self.setting = setting

    def grind(self, grams):
        """Grind some beans.

        :param grams: weight of the beans
        :returns: ground coffee, in grams
        :raises RuntimeError: if the hopper is empty
        """
        return grams
