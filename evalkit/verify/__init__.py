"""Stage 6, verification: a scorecard PDF checked against the evidence it carries.

`evalkit verify SCORECARD.pdf` reads the PDF's attachments and signatures, re-derives the
summary from the attached records (`evalkit.rundir`), judges the questionnaire again
(`evalkit.review`), and compares the result with the attached scorecard.json (the pure
comparison is `evalkit.review.recheck`); then it draws the pages again from that result
with the renderer's own code (`evalkit.render`) and compares what the two documents draw
(`redraw`, reading pages with `drawing` and `objects`). It comes after render: it reads
what render wrote, and no earlier stage imports it.
"""
