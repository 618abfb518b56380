"""Stage 5, the render: the review written as a PDF/A-3b scorecard (and a comparison),
with its evidence attached, its charts drawn and every vendor string made printable.

What a scorecard's pages print is one frozen `page.Page` (`page.build_page(card, run)`),
one module per section: questions, keyfigures, precision, prompttext, workload, costtext,
appendix, rawtables, and charts.listed (the charts, as one list)."""
