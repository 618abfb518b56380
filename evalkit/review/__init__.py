"""Stage 4, the review: a questionnaire's claims reconciled with a run's summary (Q1–Q6,
the verdict, each use case's fit) into a typed `Scorecard` (`evalkit.review.scorecard`;
the workload's blocks in `evalkit.review.workload_card`; each question's claim in
`evalkit.review.claimed`, what it measured in `evalkit.review.measured`, the cost in
`evalkit.review.costcard`), and several runs compared. Pure but for
`evalkit.review.pipeline`, which reads the inputs once."""
