"""The APIs: one `Adapter` per vendor API (the request it sends, the chunks it reads into
tokens), the vendor's fields read bounded, logprobs and sampling. Below the client, which
speaks through them; imports no other room."""
