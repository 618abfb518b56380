"""The blank questionnaire a vendor fills in (`evalkit questionnaire init FILE`).

Its comments are the instructions the vendor reads: each question, what makes an answer
measured, and how the file is read (YAML 1.2 numbers, no tags). It must stay valid against
`SCHEMA` as written (empty fields are allowed); a test parses it.
"""

from __future__ import annotations

from pathlib import Path

from evalkit.errors import QuestionnaireError

TEMPLATE = """\
# evalkit vendor capacity questionnaire (schema evalkit.questionnaire/1)
#
# Six questions about how your endpoint behaves when it STREAMS to many users at once.
# A measured answer has: numbers (the unit is in each field name), the concurrency they
# hold at, where they were measured (source: production | lab | estimate), the time
# window, and evidence (links or document names). Only numbers measured on live
# production traffic count where a question asks for production.
#
# Leave a field empty rather than write words in a number field: "industry-leading",
# "varies" or "contact sales" is recorded as not answered with numbers. Put caveats
# in `notes`. Check the file with:  evalkit questionnaire validate THIS_FILE
# A JSON Schema for editors ships as questionnaires/questionnaire.schema.json.
#
# The file is read as YAML 1.2: numbers are plain digits (0200 is 200, 2e2 is 200.0;
# 2:50 and 1_000 are not numbers), counts have no decimal point (4, not 4.0), dates are
# YYYY-MM-DD, and YAML tags (!!int, !!str, ...) are refused. (evalkit: docs/questionnaire.md)

schema: evalkit.questionnaire/1
vendor:            # company name
model:             # the model this quote is for, as named on the endpoint
endpoint:          # base URL of the OpenAI-compatible endpoint we will measure
date:              # date of these answers, YYYY-MM-DD
contact:
  name:
  email:
  role:

# The figure you market (e.g. "1,107 output tokens/s") and where it was published.
headline:
  value:           # number
  unit:            # output_tokens_per_s (per stream) | output_tokens_per_s_per_gpu
                   # | output_tokens_per_s_per_node
  source:          # URL or document where the figure is published
  published:       # date published, YYYY-MM-DD
  notes:

# Q1. Time to first token at P50 and P90 UNDER LOAD, not in isolation.
# Measured answer: both percentiles in ms, at a stated concurrency above 1, from production.
# We check it against our TTFT p50/p90 at the nearest concurrency we measured.
Q1:
  ttft_p50_ms:     # milliseconds
  ttft_p90_ms:     # milliseconds
  at_concurrency:  # concurrent streams the figures hold at
  prompt_tokens:   # typical prompt length behind the figures
  source:          # production | lab | estimate
  window:          # e.g. "2026-11-16 to 2026-11-22"
  # For a voice product (realtime speech sessions), optional: time to first audio, from
  # the end of the caller's speech to the first answer audio, LESS the silence window
  # your VAD waits to decide the caller stopped (we subtract the window we asked for the
  # same way). Checked against our realtime calls (evalkit probe --api openai-realtime)
  # at the same turn detection and silence window; a text run never checks it.
  voice_ttfa_p50_ms:     # milliseconds
  voice_ttfa_p90_ms:     # milliseconds
  voice_at_calls:        # concurrent calls the figures hold at
  voice_turn_detection:  # server_vad (your VAD ends the turn) | client (the client commits)
  voice_silence_ms:      # the VAD silence window the figures assume (server_vad)
  evidence: []     # links or document names
  notes:

# Q2. Sustained output-token throughput per GPU at the concurrency you sell, and the
# measured production distribution behind it.
# We check the implied per-stream rate and the endpoint's aggregate rate at that
# concurrency (per GPU x GPUs) against ours.
Q2:
  output_tokens_per_s_per_gpu:   # sustained, not peak
  at_concurrency:  # concurrent streams on those GPUs
  gpus:            # GPUs behind the endpoint we measure
  distribution:    # output tokens/s per GPU over the window
    p50:
    p90:
    p99:
    window:
  source:          # production | lab | estimate
  window:
  evidence: []
  notes:

# Q3. How prefill (input) and decode (output) costs appear separately in pricing and in
# your capacity model. A single blended price does not answer it.
Q3:
  input_price_per_mtok:     # price per million input tokens
  output_price_per_mtok:    # price per million output tokens
  blended_price_per_mtok:   # only if you also quote one
  price_per_gpu_hour:       # if you price dedicated GPUs by the hour (Q2's gpus are used)
  # Audio, for a voice product (optional): per minute of audio, or per million audio
  # tokens with the audio tokens one second of audio counts as. We cost a call-minute
  # from the audio our realtime calls sent and received.
  audio_input_price_per_minute:    # per minute of the caller's audio
  audio_output_price_per_minute:   # per minute of answer audio
  audio_input_price_per_mtok:      # per million input audio tokens
  audio_output_price_per_mtok:     # per million output audio tokens
  audio_input_tokens_per_s:        # input audio tokens per second of audio
  audio_output_tokens_per_s:       # output audio tokens per second of audio
  currency:                 # e.g. USD
  capacity_model:           # how prefill and decode each consume capacity, in words
  prefill_tokens_per_s:     # input tokens/s one request is prefilled at
  decode_tokens_per_s_per_stream:   # output tokens/s one stream decodes at
  source:          # production | lab | estimate
  evidence: []
  notes:

# Q4. Maximum concurrent streaming sessions per node, and what degrades first near the
# limit: inter-token latency (itl), time to first token (ttft), or admission (requests
# refused or queued). A load test (source: lab) counts here; an estimate does not.
# We check it against our concurrency ramp: where it held, where it broke, and on what.
Q4:
  max_concurrent_streams_per_node:
  nodes:           # nodes behind the endpoint we measure
  first_degrades:  # itl | ttft | admission
  # For a voice product (optional): concurrent realtime calls per node, and what a caller
  # suffers first near it: ttfa (time to first audio grows), underruns (answer audio
  # falls behind playback), admission (calls refused), failures (calls cut or erroring).
  # Without it we read first_degrades for calls only where it means the same thing
  # (ttft as ttfa, admission as admission; never itl: docs/questionnaire.md).
  voice_max_calls_per_node:
  voice_first_degrades:  # ttfa | underruns | admission | failures
  source:          # production | lab | estimate
  window:
  evidence: []
  notes:

# Q5. Does your observability expose per-stream token inter-arrival times, or only
# request-level latency histograms? And how is it exported (Prometheus, OTLP, ...)?
Q5:
  observability:   # per_stream | request_level | none
  export:          # how we can read it, e.g. "Prometheus /metrics, histogram itl_seconds"
  metrics_url:
  evidence: []
  notes:

# Q6. What your own live production panel showed last week, reconciled with the
# headline figure. If the headline is much higher than the panel's median, write the
# reconciliation: what differs (concurrency, prompt length, caching, hardware...).
Q6:
  output_tokens_per_s:   # per-request output tokens/s on the panel
    p50:
    p90:
    p99:
  latency_s:             # end-to-end request latency on the panel, seconds
    p50:
    p90:
    p99:
  window:          # e.g. "last 7 days to 2026-11-22"
  panel_url:
  source:          # production | lab | estimate
  reconciliation:  # in words: why the headline and the panel differ
  evidence: []
  notes:

# Rate limits (optional; not one of the six questions): what one customer may send before
# the endpoint answers 429. Whole numbers, per minute. We check them against when our
# run's 429s began (the requests and tokens in the minute before the first one) and
# against the x-ratelimit-* headers your endpoint sends.
rate_limits:
  requests_per_minute:
  tokens_per_minute:          # input + output together, if that is how you limit
  input_tokens_per_minute:    # if input and output tokens are limited apart
  output_tokens_per_minute:
  concurrent_streams_per_key: # streams one key may hold open at once
  scope:           # per_key | per_organisation (all of an organisation's keys together)
  source:          # production | lab | estimate
  evidence: []
  notes:
"""


def write_template(path: str | Path) -> Path:
    """Write the commented blank questionnaire; refuses to overwrite an existing file."""
    p = Path(path)
    try:
        with p.open("xb") as fh:  # bytes: the same file whatever the locale's encoding
            fh.write(TEMPLATE.encode())
    except FileExistsError:
        raise QuestionnaireError(f"{p}: already exists; not overwriting it") from None
    except OSError as exc:
        raise QuestionnaireError(f"{p}: cannot write: {exc.strerror or exc}") from None
    return p
