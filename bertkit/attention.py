"""`bertkit attention`: the attention weights of any bertkit bundle or Hugging Face encoder on one
text (or pair), as a heatmap and as JSON.

The weights are the softmax rows of each head: `attentions[layer][head][i][j]` is how much token
i (attending) takes from token j (attended to), and every row sums to 1. With `words`, WordPiece
pieces are merged into words: the columns of a word's pieces are summed (what a token takes from
the whole word) and the rows of its pieces averaged (what the word, as one reader, takes), so
every row still sums to 1. Special tokens stay as they are.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bertkit.core import models
from bertkit.core.adapters.base import bundle_inputs
from bertkit.core.adapters.loading import load_weights
from bertkit.core.errors import BertkitError
from bertkit.core.outputs import atomic_path, atomic_text, check_output_file, json_line
from bertkit.core.plots import pyplot
from bertkit.core.tokenization import load_tokenizer


@dataclass
class Attention:
    tokens: list[str]
    weights: np.ndarray  # (layers, heads, tokens, tokens)
    words: list[str] | None = None  # each word's text, for merge_words (None: from the tokens)

    def to_json(self) -> dict:
        # rounded in float64: float32 values rounded to 6 decimals print as 0.19302399456501007
        return {"tokens": self.tokens, "attentions": np.round(self.weights.astype(np.float64), 6).tolist()}


def attention_of(
    model, tokenizer, text: str, pair: str | None = None, max_length: int | None = None
) -> tuple[Attention, list[list[int]]]:
    """Every layer's and head's attention on `text` (and `pair`), uncut, and the token positions of
    each word; a text longer than the model reads is refused with the limit named."""
    import torch


    fast = getattr(tokenizer, "is_fast", False)
    encoded = tokenizer(text, pair, return_tensors="pt", truncation=False, verbose=False, return_offsets_mapping=fast)
    offsets = encoded.pop("offset_mapping")[0].tolist() if fast else None
    length = encoded["input_ids"].shape[1]
    limit = models.position_limit(model.config) or max_length
    if limit and length > limit:
        raise BertkitError(
            f"the text is {length} tokens long, and this model reads at most {limit}: give a shorter text "
            "(or the part of it to look at)"
        )
    if hasattr(model, "set_attn_implementation"):
        model.set_attn_implementation("eager")  # the fused kernels give no weights back
    with torch.no_grad():
        output = model(**{k: v.to(model.device) for k, v in encoded.items()}, output_attentions=True)
    if not output.attentions:
        raise BertkitError("this model gives no attention weights back")
    weights = torch.stack([layer[0] for layer in output.attentions]).float().cpu().numpy()
    tokens = tokenizer.convert_ids_to_tokens(encoded["input_ids"][0].tolist())
    if not fast:
        return Attention(tokens, weights), _piece_groups(tokens)
    # each token shown as the characters it covers: a byte-level vocabulary writes "café" as
    # ĠcafÃ©, a SentencePiece one writes ▁ for the space (a token of white space alone: ␣)
    sequences, sources = encoded.sequence_ids(0), [text, pair]
    places = [
        None if sequence is None or end <= start else (sources[sequence], start, end)
        for sequence, (start, end) in zip(sequences, offsets, strict=True)
    ]
    shown = [
        token if sequence is None else (place[0][place[1] : place[2]].strip() if place else "") or "␣"
        for token, sequence, place in zip(tokens, sequences, places, strict=True)
    ]
    groups = _word_groups(encoded, tokens)
    words = [_word_text([places[i] for i in group]) or "".join(shown[i] for i in group) for group in groups]
    return Attention(shown, weights, words), groups


def _word_text(places: list) -> str | None:
    """The characters a word's tokens cover (None: no token covers any, as for a special token)."""
    known = [place for place in places if place is not None]
    if not known:
        return None
    source = known[0][0]
    return source[min(p[1] for p in known) : max(p[2] for p in known)].strip() or None


def _word_groups(encoded, tokens: list[str]) -> list[list[int]]:
    """Token positions of each word, from the fast tokenizer's word ids (a pair's words kept apart)."""
    words, sequences = encoded.word_ids(0), encoded.sequence_ids(0)
    groups: list[list[int]] = []
    last = None
    for position, (word, sequence) in enumerate(zip(words, sequences, strict=True)):
        key = None if word is None else (sequence, word)
        if key is not None and key == last:
            groups[-1].append(position)
        else:
            groups.append([position])
        last = key
    return groups


def _piece_groups(tokens: list[str]) -> list[list[int]]:
    """Token positions of each word for a slow WordPiece tokenizer: a `##` piece joins the word before."""
    groups: list[list[int]] = []
    for position, token in enumerate(tokens):
        if token.startswith("##") and groups:
            groups[-1].append(position)
        else:
            groups.append([position])
    return groups


def merge_words(attention: Attention, groups: list[list[int]]) -> Attention:
    """Pieces merged into words (see the module): columns summed, rows averaged."""
    weights = attention.weights
    columns = np.stack([weights[..., group].sum(axis=-1) for group in groups], axis=-1)
    rows = np.stack([columns[..., group, :].mean(axis=-2) for group in groups], axis=-2)
    words = attention.words or ["".join(_bare(attention.tokens[i], k) for k, i in enumerate(group)) for group in groups]
    return Attention(words, rows)


def _bare(token: str, index: int) -> str:
    """A slow WordPiece tokenizer's piece as text: a continuing piece without its ##."""
    return token[2:] if index and token.startswith("##") else token


def select(attention: Attention, layer: int | str, head: int | str) -> tuple[np.ndarray, list[str]]:
    """The matrices to draw and their titles: one head, every head of a layer, each layer's mean,
    or (both `all`) every head of every layer."""
    layers, heads = attention.weights.shape[:2]
    if layer == "all":
        if head == "all":
            titles = [f"layer {n}, head {h}" for n in range(layers) for h in range(heads)]
            return attention.weights.reshape(layers * heads, *attention.weights.shape[2:]), titles
        if str(head) != "0":
            raise BertkitError(
                "--layer all draws each layer's mean over its heads (leave --head out), or with --head all "
                "every head of every layer"
            )
        return attention.weights.mean(axis=1), [f"layer {n} (mean of {heads} heads)" for n in range(layers)]
    index = _index(layer, layers, "--layer")
    if head == "all":
        return attention.weights[index], [f"layer {index}, head {h}" for h in range(heads)]
    chosen = _index(head, heads, "--head")
    return attention.weights[index, chosen][None], [f"layer {index}, head {chosen}"]


def _index(value, count: int, option: str) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise BertkitError(f"{option} {value}: give a number (or all)") from None
    if not -count <= number < count:
        raise BertkitError(
            f"{option} {value}: the model has {count} ({option[2:]}s 0 to {count - 1}, or -1 for the last)"
        )
    return number % count


def draw(matrices: np.ndarray, titles: list[str], tokens: list[str], path: Path) -> None:
    """Heatmaps with the tokens on both axes; for a single head, the [CLS] row as a bar chart below."""

    plt = pyplot()
    count = len(matrices)
    single = count == 1
    size = max(4.0, 0.32 * len(tokens) + 2)
    across = 1 if single else min(count, 4)
    down = 2 if single else -(-count // across)
    fig, axes = plt.subplots(
        down,
        across,
        figsize=(size * across, size * (1.35 if single else down)),
        squeeze=False,
        gridspec_kw={"height_ratios": [3, 1]} if single else None,
    )
    for k, (matrix, title) in enumerate(zip(matrices, titles, strict=True)):
        ax = axes[k // across][k % across]
        image = ax.imshow(matrix, cmap="viridis", vmin=0, vmax=max(float(matrix.max()), 1e-9))
        ax.set_xticks(range(len(tokens)), tokens, rotation=90, fontsize=8)
        ax.set_yticks(range(len(tokens)), tokens, fontsize=8)
        ax.set_xlabel("attended to")
        ax.set_ylabel("attending")
        ax.set_title(title)
        fig.colorbar(image, ax=ax, fraction=0.046)
    if single:
        ax = axes[1][0]
        ax.bar(range(len(tokens)), matrices[0][0])
        ax.set_xticks(range(len(tokens)), tokens, rotation=90, fontsize=8)
        ax.set_ylabel("weight")
        ax.set_title(f"what {tokens[0]} attends to")
    else:
        for k in range(count, down * across):
            axes[k // across][k % across].axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=110, format="png")
    plt.close(fig)


def attention_file(
    model: str,
    text: str,
    pair: str | None = None,
    layer: int | str = -1,
    head: int | str = 0,
    words: bool = False,
    picture: str | None = None,
    json_path: str | None = None,
    trust_remote_code: bool = False,
) -> Attention:
    """Load `model`, compute its attention on `text`, and write the picture and the JSON; every
    output is checked before the model loads."""

    if not text.strip():
        raise BertkitError("--text is empty: give the text to look at")
    if pair is not None and not pair.strip():
        raise BertkitError("--text-pair is empty: give the second text, or leave --text-pair out")
    if picture is not None:
        if Path(picture).suffix.lower() != ".png":
            raise BertkitError(f"--output {picture}: the picture is a PNG; name it NAME.png")
        check_output_file(picture, *bundle_inputs(model), example="attention.png")
    if json_path not in (None, "-"):
        check_output_file(json_path, *bundle_inputs(model), example="attention.json", flag="--json")
    import transformers


    source = models.resolve(model)  # any encoder will do: a bundle, a plain model folder, a Hub id
    if (Path(source) / "model.onnx").is_file() and not any(Path(source).glob("*.safetensors")):
        raise BertkitError(
            f"{model} is an ONNX bundle, whose graph gives no attention weights back: look at the bundle it "
            "was exported from"
        )
    tokenizer = load_tokenizer(source, trust_remote_code=trust_remote_code)
    models.quiet_transformers()

    network = load_weights(transformers.AutoModel, source, trust_remote_code).eval()
    attention, groups = attention_of(network, tokenizer, text, pair)
    if words:
        attention = merge_words(attention, groups)
    matrices, titles = select(attention, layer, head)
    if picture is not None:
        with atomic_path(Path(picture)) as tmp:
            draw(matrices, titles, attention.tokens, tmp)
    if json_path is not None:
        with atomic_text(json_path) as handle:
            handle.write(json_line(attention.to_json()) + "\n")
    return attention
