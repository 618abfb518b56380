"""The APIs: one module per vendor API, each an `Adapter` (the request it sends, the
chunks it reads into tokens): `chat`, `completions`, `responses`, `anthropic`, `bedrock`,
`gemini`; `base` registers them (`ADAPTERS`, one line an API). Under them `fields` (the
`Delta` an event is read into, the vendor's values read bounded), `logprobs`, `sampling`
and `chunkscan`. Below the client, which speaks through them; imports no other room."""
