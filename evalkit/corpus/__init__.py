"""The text the probe's own prompts are made of, and the buyer's corpus it comes from.

A vendor that has read evalkit's source can produce whatever the package can produce, and
recognise it: ten words in a row of a passage that ships with evalkit mark a request as
the probe's. The only text a vendor cannot enumerate is text it has never seen: the
buyer's. So this stage, read before the probe runs (like the questionnaire and the
workload), holds both kinds and says which one a run used:

- `text`: a body of text as tokens (`Passages`), cut to an exact length at a seeded place,
  and `PromptText`, what one run's prompts are made of (passages, the buyer's task
  templates, where they came from). `compose` makes one prompt's text.
- `tasks`: the tasks a customer asks of a text, composed from short varied parts so that
  no fixed sentence marks a request, or the buyer's own templates.
- `public`: the text that ships with evalkit (Python's language reference) and the index
  of the marks a vendor would learn from the source (`PublicIndex`): the reference
  endpoint's `spot_probes` and `evalkit corpus check` use the same one.
- `readers`: the buyer's documents read as text (Markdown, text, HTML, PDF, JSONL chat),
  every file bounded and checked.
- `store`: the corpus on disk, in the user's data directory beside the catalog (never in a
  run directory, report, attachment, catalog entry or log): add, list, remove, load.
"""
