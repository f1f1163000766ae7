"""Entity tagging schemes: detection, normalisation to IOB2, repair, and entities from tags.

IOB1 (CoNLL-2003's own): I- everywhere, B- only where an entity directly follows another of the
same type. IOB2: every entity starts with B-. BIOES / BILOU: single-token entities are S- / U-
and entities end with E- / L-. bertkit works in IOB2 internally.
"""

from __future__ import annotations

from dataclasses import dataclass

from bertkit.core.errors import BertkitError

SCHEMES = ("IOB1", "IOB2", "BIOES", "BILOU")
_PREFIXES = {"B", "I", "E", "S", "L", "U"}
PREFIXES_OF = {  # the prefixes (and O) each scheme writes
    "IOB1": {"O", "B", "I"},
    "IOB2": {"O", "B", "I"},
    "BIOES": {"O", "B", "I", "E", "S"},
    "BILOU": {"O", "B", "I", "L", "U"},
}


def split_tag(tag: str) -> tuple[str, str | None]:
    """'B-PER' -> ('B', 'PER'); 'O' -> ('O', None); anything else is a ValueError."""
    if tag == "O":
        return "O", None
    if len(tag) > 2 and tag[1] in "-_" and tag[0] in _PREFIXES:
        return tag[0], tag[2:]
    raise ValueError(tag)


def normal_tag(tag: str) -> str:
    """A tag as bertkit writes it, the prefix and type joined by a hyphen: 'B_PER' -> 'B-PER'
    ('O' as it is; anything else is a ValueError). The one spelling that data tags, given
    label lists and tag names in settings are compared in."""
    prefix, kind = split_tag(tag)
    return prefix if kind is None else f"{prefix}-{kind}"


def entity_types(labels: list[str], key: str = "data.labels") -> list[str]:
    """The entity types, sorted, that a given list of tags names (`O, B-PER, I-PER`, in any
    scheme, with `-` or `_`), read as the data's own tags are read; a name that is no tag is an
    error naming `key`."""
    types = set()
    for label in labels:
        try:
            _, kind = split_tag(str(label))
        except ValueError:
            raise BertkitError(
                f"{key}: '{label}' is not a tag: give O and the tags of each entity type, a prefix (B, I, E, S, L "
                "or U), a hyphen or underscore, and the type (B-PER, I_PER, ...), as the data writes them"
            ) from None
        if kind is not None:
            types.add(kind)
    return sorted(types)


def detect_scheme(sequences: list[list[str]]) -> str:
    prefixes = set()
    starts_with_inside = False
    for tags in sequences:
        previous = "O"
        for tag in tags:
            prefix, kind = split_tag(tag)
            prefixes.add(prefix)
            if prefix == "I":
                p_prefix, p_kind = split_tag(previous)
                if p_prefix == "O" or p_kind != kind or p_prefix in ("E", "S", "L", "U"):
                    starts_with_inside = True
            previous = tag
    if prefixes & {"L", "U"}:
        return "BILOU"
    if prefixes & {"E", "S"}:
        return "BIOES"
    return "IOB1" if starts_with_inside else "IOB2"


@dataclass
class Normalised:
    tags: list[str]
    repaired: int = 0  # tags changed because they did not fit the scheme


def to_iob2(tags: list[str], scheme: str) -> Normalised:
    """Convert one sentence's tags to IOB2, repairing what does not fit (counted)."""
    out: list[str] = []
    repaired = 0
    previous_prefix, previous_kind = "O", None
    for tag in tags:
        prefix, kind = split_tag(tag)
        if prefix == "O":
            out.append("O")
        elif scheme in ("BIOES", "BILOU") and prefix in ("S", "U"):
            out.append(f"B-{kind}")
        elif scheme in ("BIOES", "BILOU") and prefix in ("E", "L"):
            if previous_kind != kind or previous_prefix in ("O", "S", "U", "E", "L"):
                repaired += 1
                out.append(f"B-{kind}")
            else:
                out.append(f"I-{kind}")
        elif prefix == "B":
            out.append(f"B-{kind}")
        elif prefix == "I":
            continues = previous_kind == kind and previous_prefix not in ("O", "S", "U", "E", "L")
            if continues:
                out.append(f"I-{kind}")
            else:
                # IOB1: an entity starting with I- is normal; elsewhere it is a repair
                repaired += scheme != "IOB1"
                out.append(f"B-{kind}")
        else:
            raise ValueError(tag)
        previous_prefix, previous_kind = prefix, kind
    return Normalised(out, repaired)


def entities(tags: list[str]) -> list[tuple[str, int, int]]:
    """(type, first, last + 1) word spans of the entities in IOB2 tags."""
    found = []
    start, kind = None, None
    for i, tag in enumerate([*tags, "O"]):
        prefix, this = ("O", None) if tag == "O" else (tag[0], tag[2:])
        if start is not None and (prefix != "I" or this != kind):
            found.append((kind, start, i))
            start, kind = None, None
        if prefix == "B" or (prefix == "I" and start is None):
            start, kind = i, this
    return found


def label_list(types: list[str]) -> list[str]:
    """The IOB2 label set for entity `types`, in a stable order: O, then B-/I- per type."""
    return ["O"] + [f"{p}-{t}" for t in sorted(types) for p in ("B", "I")]


def iob2_over_seen(tags: list[str], seen: list[bool]) -> list[str]:
    """IOB2 tags for a sentence of which the model read only the `seen` words (a word can have
    no sub-word token at all: a lone soft hyphen, zero-width space or combining mark).

    The seen words' tags are made valid IOB2 among themselves, as if the others were not there,
    so a word the model never read changes no other word's tag. An unseen word gets O, except
    between two words of one entity (the next seen word continues it with I-), where it takes the
    entity's I- tag, so that an invisible character does not cut an entity in two.
    """
    # read as BIOES, which takes IOB2 as it is and also a model's own S-/E-/U-/L- labels
    visible = iter(to_iob2([t for t, s in zip(tags, seen, strict=True) if s], "BIOES").tags)
    out: list[str | None] = [next(visible) if s else None for s in seen]
    following: list[str | None] = [None] * len(out)  # the tag of the next seen word
    upcoming = None
    for i in range(len(out) - 1, -1, -1):
        following[i] = upcoming
        if out[i] is not None:
            upcoming = out[i]
    previous = "O"
    for i, tag in enumerate(out):
        if tag is None:
            kind = None if previous == "O" else previous[2:]
            tag = f"I-{kind}" if kind is not None and following[i] == f"I-{kind}" else "O"
            out[i] = tag
        previous = tag
    return out
