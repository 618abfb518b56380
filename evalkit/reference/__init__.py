"""The built-in reference endpoint: a local OpenAI-compatible server with known timing.

It models a continuous-batching inference engine (prefill, decode steps that slow down
as the batch grows, a KV-cache batch limit with a queue, an admission limit with 429s),
injects the faults real endpoints have, and can log every request's server-side timing
as ground truth. Profiles live in `profiles.json`.

One job per module: `params` (profiles), `engine` (the pure scheduler: no clock, no I/O),
`faults` (each request's fate, seeded), `answers` (the words and logprobs a model says to
a prompt: the same prompt, the same answer), `parse` (request bodies -> `Job`), `loop` (the
engine on real time, and each request's `Stream`), `writer` (a response's bytes, every
write stamped), `wire` (Anthropic Messages and OpenAI Responses frames), `asgi`
(plumbing), `app` (routes and the ground-truth log), `metrics` (`/metrics`), `server`
(uvicorn with arrival stamps, in a thread or a process), `ratelimit` (the gateway's
sliding-window rate limit and its headers), `prefix` (the prefix cache and the digests
of the messages a request carried), `clouds` (AWS Bedrock's and Google's Gemini / Vertex
AI routes, bodies, credentials (SigV4 verified) and error shapes), `cloudwire` (their
frames: Bedrock's event-stream messages, Gemini's SSE) and `eventstream` (AWS's binary
framing, written).

    from evalkit.reference import ReferenceServer
    with ReferenceServer(profile="queueing", truth_log=path) as srv:
        ...  # srv.base_url, srv.model, srv.truth()

Ground-truth log: one JSON line per request, written in batches after it ends
(`srv.truth()` waits for every line). Times are absolute `time.perf_counter_ns()`
(CLOCK_MONOTONIC, shared by every process on the machine): `request_id` (the
`x-request-id` header, else `ref-<index>`), `index` (arrival order), `path`, `arrived_ns`
(when the server's event loop first saw the request's bytes: the socket read holding its
first byte, stamped in the HTTP protocol's `data_received` before any parsing; null under
a uvicorn config without `server.arrival_stamped_protocol`), `poll_began_ns` and
`polled_ns` (when the loop's poll that reported that read began and returned: bytes sent
before `poll_began_ns` found the loop busy with other work, bytes ready inside the poll
waited for the server's process to get a CPU), `kernel_ns` (the kernel's receive stamp
of that read, SO_TIMESTAMPNS: on loopback, inside the client's send; from it to
`arrived_ns` is the server's process alone; null where the kernel gave none),
`received_ns` (the handler's first line, after parsing and task dispatch; truth TTFT runs
from here), `queued` (the batch was full on arrival), `admitted_ns` (its first engine
step began), `first_write_ns` (first content
or reasoning chunk), `first_answer_ns` (first answer chunk), `writes` = `[[actual_ns,
scheduled_ns, tokens, kind], ...]` with kind in
role/content/reasoning/usage/done/ping/error/malformed (actual = stamped right after the
bytes went to the transport; scheduled = the engine model's time), `end_ns`,
`prompt_tokens` (o200k_base), `messages` (per message received, in the order a model
reads it, system or instructions first: `{"role", "sha256": hex of its text's UTF-8,
"tokens"}`, a completions prompt's role `prompt`; at most 256, the first) and
`message_count` (how many it had), `cached_prompt_tokens` (the prompt tokens the prefix
cache served: 0 without `prefix_cache`), `prefill_s` (this request's share of its
admitting step's prefill, the step's fixed `prefill_overhead_ms` apart: uncached tokens
in full, cached ones at `prefix_cache_cost`, over `prefill_tokens_per_s`; the last two
null where the request never reached the engine), `completion_tokens` (generated),
`billed_tokens` (what usage reported, when it did: `usage_factor` × generated),
`billed_prompt_tokens` (the prompt tokens usage reports for a served request:
`prompt_usage_factor` × prompt_tokens), `status` (HTTP), `outcome` (`ok`, `rejected`,
`error`, `disconnected`, `fault:<name>`), `faults` (all injected, also the harmless
ones such as `role_first_chunk`), `client_disconnected`, `prompt_sha` (the first 16 hex
digits of the SHA-256 of the prompt's text, so a record joins its truth line
without a request-id header), and with `spot_probes` `spotted` (the benchmark marks the
request carried, `evalkit.reference.spotting`, text that ships with evalkit among them;
spotted requests ran on an idle pool where no stream slows another: `app.IDLE_POOL`).
Answer and load faults (null where the request never reached the engine):
`active_streams` (requests in flight at the server, received and not yet ended, itself
included, when this one reached the engine: what `swap_above` and `truncate_above`
compare against), `served_by`
(`primary` or `swap`: which model's words it got), `model_returned` and
`system_fingerprint` (what its `model` and `system_fingerprint` fields said; the
fingerprint null for Messages and Responses, which have none), `planned_tokens` (the
length decided before any truncation), `truncated` (`truncate_above` stopped it at half
of that), `first_flip_at` (0-based position, among the tokens generated, reasoning
included, of the first token `batch_variance` flipped; null: none), `output_sha` (SHA-256
hex of the answer text generated, reasoning excluded: what a client that read it all
hashes). A swap or truncation is also named in `faults` (`swap`, `truncate`).
With `rate_limit_rpm`, a request the gateway refused (`evalkit.reference.ratelimit`: 429
before the engine) has `rejected_by`, the limiter's reason.
"""

from evalkit.reference.app import ReferenceApp
from evalkit.reference.engine import EngineCore, simulate_closed_loop
from evalkit.reference.params import Profile, get_profile, load_profiles, param_specs
from evalkit.reference.parse import MODEL
from evalkit.reference.server import ReferenceServer, serve

__all__ = [
    "MODEL",
    "EngineCore",
    "Profile",
    "ReferenceApp",
    "ReferenceServer",
    "get_profile",
    "load_profiles",
    "param_specs",
    "serve",
    "simulate_closed_loop",
]
