"""The scorecard's charts as vector SVG: the kit (style, axes, placement), the figures and
their captions; `listed.CHARTS` is the page's list of them (a new chart joins with one
line)."""
