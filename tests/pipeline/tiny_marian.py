"""Build a tiny OPUS-MT-style (Marian) CTranslate2 model folder with no downloads.

The model is a hand-wired *copy* model: its output is exactly its input tokens, so a test can check
that tokenizing, loading, translating and detokenizing are all real (``"hello world"`` must come
back as ``"hello world"``). How it copies (post-norm Transformer, 1 encoder and 1 decoder layer):

* the residual stream has a token subspace (one dimension per vocabulary entry, one-hot minus its
  mean) and a position subspace (our own ``Wpos`` table: 8 frequencies as cos, sin, -cos, -sin,
  so every vector has mean 0 and the same norm, and layer norm only rescales);
* every self-attention and feed-forward block outputs zero (``Wo``, ``W2`` and biases are 0), so
  the residual passes through unchanged;
* the decoder's embeddings are zero: its state at step i is just position i;
* cross-attention queries and keys read only the position subspace, sharply scaled, so decoder
  step i attends to encoder position i; values read the token subspace; so after it the decoder
  holds "the source token at position i";
* the (untied) output projection reads the token subspace: the argmax is that source token, and
  at position n it is the ``</s>`` that CTranslate2 appends to Marian sources, which ends decoding.

    folder = build_tiny_marian(tmp_path)   # model.bin, vocabularies, source.spm, target.spm
"""

from __future__ import annotations

import contextlib
import random
import shutil
from pathlib import Path

import numpy as np
import sentencepiece as spm
import yaml

# Words covering every lowercase letter, so that no test sentence needs <unk>.
WORDS = (
    "hello world the quick brown fox jumps over lazy dog subtitles are fun video cat table "
    "zebra queen xylophone wax jam kiwi yes very good morning night music speech translation"
).split()

_FREQS = 8  # position encoding frequencies
_POSITIONS = 512


def _corpus(lines: int = 400, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 9))) for _ in range(lines)]


def train_spm(folder: Path, vocab_size: int = 64, symbols: tuple[str, ...] = ()) -> Path:
    """A small unigram sentencepiece model trained on generated text; returns the .model path.
    ``symbols`` become single pieces (NLLB's language tokens)."""
    folder.mkdir(parents=True, exist_ok=True)
    text = folder / "corpus.txt"
    text.write_text("\n".join(_corpus()) + "\n", encoding="utf-8")
    prefix = folder / "spm"
    spm.SentencePieceTrainer.train(
        input=str(text),
        model_prefix=str(prefix),
        vocab_size=vocab_size,
        character_coverage=1.0,
        hard_vocab_limit=False,
        num_threads=1,
        minloglevel=2,
        user_defined_symbols=list(symbols),
    )
    return prefix.with_suffix(".model")


def _yaml_token(token: str) -> str:
    return '"' + token.replace("\\", "\\\\").replace('"', '\\"') + '"'


def write_vocab(model_path: Path, out: Path) -> list[str]:
    """Marian vocabulary (.yml, token: index) in sentencepiece id order; returns the tokens."""
    processor = spm.SentencePieceProcessor(model_file=str(model_path))
    tokens = [processor.id_to_piece(i) for i in range(processor.get_piece_size())]
    out.write_text("".join(f"{_yaml_token(tok)}: {i}\n" for i, tok in enumerate(tokens)), encoding="utf-8")
    return tokens


def _positions(dim: int, offset: int) -> np.ndarray:
    """(positions, dim) table, unit-norm, zero-mean, non-zero only in [offset, offset + 4*_FREQS)."""
    table = np.zeros((_POSITIONS, dim), dtype=np.float32)
    omega = np.geomspace(2.5, 2 * np.pi / 1100, _FREQS)
    angles = np.outer(np.arange(_POSITIONS), omega)
    block = np.concatenate([np.cos(angles), np.sin(angles), -np.cos(angles), -np.sin(angles)], axis=1)
    table[:, offset : offset + 4 * _FREQS] = block / np.sqrt(2 * _FREQS)
    return table


def copy_model_weights(vocab_size: int) -> dict[str, np.ndarray]:
    """Marian .npz arrays (Marian's convention: y = x @ W + b) for the copy model described above."""
    V = vocab_size
    P = 4 * _FREQS
    dh = max(V, P)
    d = 2 * dh  # two heads
    ff = 8
    f32 = np.float32
    w: dict[str, np.ndarray] = {}

    # token subspace: dims [0, V); position subspace: dims [dh, dh + P)
    token = np.zeros((V, d), dtype=f32)
    token[:, :V] = np.eye(V, dtype=f32) - 1.0 / V
    token /= np.linalg.norm(token[0])
    w["encoder_Wemb"] = token / np.sqrt(d)  # CTranslate2 scales embeddings by sqrt(d)
    w["decoder_Wemb"] = np.zeros((V, d), dtype=f32)
    w["Wpos"] = _positions(d, dh)

    def zeros(*shape):
        return np.zeros(shape, dtype=f32)

    def ones(*shape):
        return np.ones(shape, dtype=f32)

    def block(prefix: str, q, k, v, o) -> None:
        for name, matrix in (("q", q), ("k", k), ("v", v), ("o", o)):
            w[f"{prefix}_W{name}"] = matrix
            w[f"{prefix}_b{name}"] = zeros(1, d)
        w[f"{prefix}_Wo_ln_scale"] = ones(1, d)
        w[f"{prefix}_Wo_ln_bias"] = zeros(1, d)

    def ffn(prefix: str) -> None:
        w[f"{prefix}_W1"] = zeros(d, ff)
        w[f"{prefix}_b1"] = zeros(1, ff)
        w[f"{prefix}_W2"] = zeros(ff, d)
        w[f"{prefix}_b2"] = zeros(1, d)
        w[f"{prefix}_ffn_ln_scale"] = ones(1, d)
        w[f"{prefix}_ffn_ln_bias"] = zeros(1, d)

    # Self-attention that adds nothing (Wo = 0) in both stacks.
    block("encoder_l1_self", zeros(d, d), zeros(d, d), zeros(d, d), zeros(d, d))
    ffn("encoder_l1_ffn")
    block("decoder_l1_self", zeros(d, d), zeros(d, d), zeros(d, d), zeros(d, d))
    ffn("decoder_l1_ffn")

    # Cross-attention: position -> position (both heads), token -> token (head 0).
    pos_dims = np.arange(dh, dh + P)
    wq, wk, wv, wo = zeros(d, d), zeros(d, d), zeros(d, d), zeros(d, d)
    for head in range(2):
        wq[pos_dims, head * dh + np.arange(P)] = 60.0  # sharp: a softmax gap of > 100 nats
        wk[pos_dims, head * dh + np.arange(P)] = 1.0
    wv[np.arange(V), np.arange(V)] = 1.0
    wo[np.arange(V), np.arange(V)] = np.sqrt(2.0)  # token part as large as the position part
    block("decoder_l1_context", wq, wk, wv, wo)

    # Output projection reads the token subspace only.
    out = zeros(d, V)
    out[np.arange(V), np.arange(V)] = 6.0
    w["decoder_ff_logit_out_W"] = out
    w["decoder_ff_logit_out_b"] = zeros(1, V)

    config = {
        "type": "transformer",
        "enc-depth": 1,
        "dec-depth": 1,
        "transformer-heads": 2,
        "transformer-decoder-autoreg": "self-attention",
        "transformer-no-projection": False,
        "transformer-ffn-activation": "relu",
        "transformer-preprocess": "",
        "transformer-postprocess": "dan",
        "transformer-postprocess-top": "",
        "transformer-postprocess-emb": "d",
        "transformer-guided-alignment-layer": "last",
        "dim-emb": d,
    }
    w["special:model.yml"] = np.frombuffer(yaml.safe_dump(config).encode() + b"\0", dtype=np.int8)
    return w


NLLB_LANGUAGES = ("eng_Latn", "spa_Latn", "deu_Latn")


def build_tiny_marian(root: Path, *, nllb: bool = False) -> Path:
    """Train the sentencepiece model, write and convert the Marian copy model; returns the
    CTranslate2 folder (model.bin, config, vocabularies, source.spm, target.spm).

    ``nllb=True`` lays the folder out like a converted NLLB model instead: one
    ``sentencepiece.bpe.model`` and language tokens (NLLB_LANGUAGES) in the vocabulary. The copy
    model then copies ``[src_lang] + pieces + </s>`` shifted by the forced target-language prefix,
    i.e. it still gives back the input text."""
    import ctranslate2

    work = Path(root) / ("nllb-src" if nllb else "marian-src")
    work.mkdir(parents=True, exist_ok=True)
    spm_model = train_spm(work, symbols=NLLB_LANGUAGES if nllb else ())
    vocab = work / "vocab.yml"
    tokens = write_vocab(spm_model, vocab)
    npz = work / "model.npz"
    # allow_pickle is named (as its default) so that no weight's name can be taken for it
    np.savez(npz, allow_pickle=True, **copy_model_weights(len(tokens)))
    out = Path(root) / ("nllb-tiny" if nllb else "opus-mt-tiny")
    ctranslate2.converters.MarianConverter(str(npz), [str(vocab), str(vocab)]).convert(str(out), force=True)
    if nllb:
        shutil.copy(spm_model, out / "sentencepiece.bpe.model")
    else:
        shutil.copy(spm_model, out / "source.spm")
        shutil.copy(spm_model, out / "target.spm")
    return out


def build_argos_package(model: Path, out: Path, source: str = "en", target: str = "de") -> Path:
    """An Argos Translate package (.argosmodel, a zip) of a ``build_tiny_marian`` folder: one folder
    holding ``model/`` (the CTranslate2 files), ``sentencepiece.model`` and ``metadata.json``."""
    import json
    import zipfile

    top = f"translate-{source}_{target}-1_0"
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as package:
        for path in sorted(Path(model).iterdir()):
            if path.suffix != ".spm":
                package.write(path, f"{top}/model/{path.name}")
        package.write(Path(model) / "source.spm", f"{top}/sentencepiece.model")
        metadata = {"package_version": "1.0", "from_code": source, "to_code": target, "argos_version": "1.0"}
        package.writestr(f"{top}/metadata.json", json.dumps(metadata))
    return out


@contextlib.contextmanager
def package_index(root: Path, packages: dict[tuple[str, str], Path], sha256: dict[tuple[str, str], str] | None = None):
    """Serve ``packages`` ({(source, target): .argosmodel file under ``root``}) and an Argos-style
    ``index.json`` listing them (with a ``sha256`` where ``sha256`` gives one) from ``root`` on
    127.0.0.1; yields the index address."""
    import json
    import threading
    from functools import partial
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(Quiet, directory=str(root)))
    base = f"http://127.0.0.1:{server.server_port}"
    entries = []
    for (source, target), path in packages.items():
        entry: dict[str, object] = {
            "from_code": source,
            "to_code": target,
            "package_version": "1.0",
            "links": [f"{base}/{path.name}"],
        }
        digest = (sha256 or {}).get((source, target))
        if digest:
            entry["sha256"] = digest
        entries.append(entry)
    (Path(root) / "index.json").write_text(json.dumps(entries))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"{base}/index.json"
    finally:
        server.shutdown()
        server.server_close()
