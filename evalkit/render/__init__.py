"""Stage 5, the render: the review written as a PDF/A-3b scorecard (and a comparison),
with its evidence attached, its charts drawn and every vendor string made printable."""
