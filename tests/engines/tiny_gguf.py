"""A tiny llama-architecture GGUF with random (seeded) weights, written with `gguf`.

Nothing is downloaded: the vocabulary is built here and the weights are drawn from a
seeded generator, so the file is the same on every machine (`build_tiny_gguf`).

Tokenizer: llama.cpp's SentencePiece ("llama") type. The vocabulary (~820 pieces) is

    <unk> <s> </s>                       control tokens (ids 0, 1, 2)
    <0x00> ... <0xFF>                    byte fallback: any input text tokenizes
    ! " # ... ~                          the 94 printable ASCII characters
    ▁ and every prefix of "▁word"        for evalkit's filler words (`filler_words()`)
                                         and its prompts' commonest words (`prompt_words`)

so an evalkit prompt of N o200k tokens is not many more tokens here (its common words
are whole pieces), and prefill work grows with the prompt as it does for a
real model. `tokenizer.chat_template` is a plain role-prefix template, so
llama-cpp-python's chat endpoint formats messages with it (Jinja) and needs no
`--chat_format`.

Weights: normal, scaled by 1/sqrt(fan-in). One residual dimension (0) is held at a
constant: the embeddings carry `_CONST` there and no layer writes to it, so after the
final RMS norm it is a large positive feature. The output row of every token the model
must not emit (control and byte tokens, and "<") has a large negative weight on it, so
they are never sampled: the output is always printable ASCII (valid UTF-8 in every
chunk, no early end-of-sequence), whatever the random weights do elsewhere. "<" is
banned because llama-cpp-python holds back streamed text that could begin its stop
string "</s>" and sends it with the next token: one chunk would carry two tokens, now
and then. Without it every token is one chunk and every stream ends on its length.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

CHAT_TEMPLATE = (
    "{% for message in messages %}{{ message['role'] }}: {{ message['content'] }}\n"
    "{% endfor %}assistant:"
)
_CONST = 8.0  # value of the constant residual dimension (unit-scale elsewhere)
_BAN = 6.0    # negative output weight on it for tokens that must never be sampled


@dataclass(frozen=True)
class TinyModel:
    """Sizes of the model. The defaults decode a token in a few ms on one CPU thread."""

    n_embd: int = 384
    n_layer: int = 6
    n_head: int = 6
    n_ff: int = 1024
    n_ctx_train: int = 4096
    seed: int = 1234
    #: >0: every other normal token's output row is its neighbour's plus noise this
    #: small (relative), so each argmax has a twin within rounding: a model whose
    #: greedy answers flip on any change in the order of a sum (0: no twins)
    twin_noise: float = 0.0


#: words of evalkit's prompt prose that are whole pieces here (the rest spell out)
WORDS = 1200


def vocabulary() -> tuple[list[str], list[float], list[int], int]:
    """(pieces, scores, token types, index of the first normal piece)."""
    from gguf import TokenType

    from evalkit.probe.plan.prompts import filler_words, prompt_words

    pieces = ["<unk>", "<s>", "</s>"]
    types = [TokenType.UNKNOWN, TokenType.CONTROL, TokenType.CONTROL]
    pieces += [f"<0x{b:02X}>" for b in range(256)]
    types += [TokenType.BYTE] * 256
    first_normal = len(pieces)
    normal = [chr(c) for c in range(33, 127)] + ["▁"]
    seen = set(normal)
    # what evalkit's prompts are made of: the filler words, and the prose's commonest
    for word in dict.fromkeys([*filler_words(), *prompt_words(WORDS)]):
        piece = "▁" + word
        for end in range(2, len(piece) + 1):
            if piece[:end] not in seen:
                seen.add(piece[:end])
                normal.append(piece[:end])
    pieces += normal
    types += [TokenType.NORMAL] * len(normal)
    # SentencePiece merges the best-scoring pair first: longer pieces score higher
    scores = [0.0] * first_normal + [float(len(p)) for p in normal]
    return pieces, scores, [int(t) for t in types], first_normal


def build_tiny_gguf(path: Path, model: TinyModel | None = None) -> Path:
    """Write the GGUF to `path` (45 MB of float32 with the defaults); return it."""
    import gguf

    m = model or TinyModel()
    pieces, scores, types, first_normal = vocabulary()
    n_vocab, d, head_dim = len(pieces), m.n_embd, m.n_embd // m.n_head
    rng = np.random.default_rng(m.seed)

    def mat(rows: int, cols: int) -> np.ndarray:
        """A (rows x cols) weight: numpy (out, in) is ggml's (in, out), as llama.cpp wants."""
        return (rng.standard_normal((rows, cols)) / np.sqrt(cols)).astype(np.float32)

    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("evalkit-tiny-random")
    w.add_context_length(m.n_ctx_train)
    w.add_embedding_length(d)
    w.add_block_count(m.n_layer)
    w.add_feed_forward_length(m.n_ff)
    w.add_head_count(m.n_head)
    w.add_head_count_kv(m.n_head)
    w.add_rope_dimension_count(head_dim)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(n_vocab)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_tokenizer_model("llama")
    w.add_tokenizer_pre("default")
    w.add_token_list(pieces)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    w.add_chat_template(CHAT_TEMPLATE)

    embd = rng.standard_normal((n_vocab, d)).astype(np.float32)
    embd[:, 0] = _CONST
    w.add_tensor("token_embd.weight", embd)
    ones = np.ones(d, dtype=np.float32)
    for i in range(m.n_layer):
        blk = f"blk.{i}"
        w.add_tensor(f"{blk}.attn_norm.weight", ones)
        for name in ("attn_q", "attn_k", "attn_v"):
            w.add_tensor(f"{blk}.{name}.weight", mat(d, d))
        out = mat(d, d)
        out[0, :] = 0.0  # nothing writes to the constant dimension
        w.add_tensor(f"{blk}.attn_output.weight", out)
        w.add_tensor(f"{blk}.ffn_norm.weight", ones)
        w.add_tensor(f"{blk}.ffn_gate.weight", mat(m.n_ff, d))
        w.add_tensor(f"{blk}.ffn_up.weight", mat(m.n_ff, d))
        down = mat(d, m.n_ff)
        down[0, :] = 0.0
        w.add_tensor(f"{blk}.ffn_down.weight", down)
    w.add_tensor("output_norm.weight", ones)
    head = 3.0 * mat(n_vocab, d)  # logits of a few units: varied, not uniform, sampling
    if m.twin_noise > 0:
        twins = np.arange(first_normal + 1, n_vocab, 2)
        head[twins] = head[twins - 1] * (1 + m.twin_noise * rng.standard_normal(
            (len(twins), d)).astype(np.float32))
    head[:, 0] = 0.0
    head[:first_normal, 0] = -_BAN  # control and byte tokens: never sampled
    head[pieces.index("<"), 0] = -_BAN  # nor "<": see the module's docstring
    w.add_tensor("output.weight", head)

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path
