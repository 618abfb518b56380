"""The scorecard's charts as vector SVG: the kit (style, axes, placement), the figures and
their captions."""
