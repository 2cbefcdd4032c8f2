"""Evaluation measures as named values, ir_measures style: ``nDCG@10``, ``RR@10``, ``R@1000(rel=2)``, ``MAP``.

A name is ``FAMILY[@CUTOFF][(rel=LEVEL)]`` (ir_measures' ``FAMILY(rel=LEVEL)@CUTOFF`` is accepted too), or a trec_eval
name (``ndcg_cut_10`` or ``ndcg_cut.10``, ``recall_1000``, ``P_10``, ``map``, ``map_cut_100``, ``recip_rank``,
``set_recall``, ``set_P``, ``ndcg``; see :data:`TREC_EVAL_NAMES`). ``@k`` keeps the first k documents of each
ranking; no cutoff means the whole ranking. ``rel=LEVEL`` (binary measures only) calls a
document relevant when its grade is >= LEVEL, as ``trec_eval -l LEVEL``; the default level is 1. Each family maps to
one ranx metric (a function of ``ranx.metrics``, whose formula :mod:`.evaluate` follows) and to the trec_eval
measure it reproduces (with ``trec_eval -c``, see :mod:`.evaluate`).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Iterable

from lsr_eval.errors import ConfigError
from lsr_eval.settings import SettingError, setting, validate

#: Relevance level of binary measures when the name gives none (trec_eval's default ``-l 1``).
DEFAULT_REL_LEVEL = 1

#: Measures reported when the user names none.
DEFAULT_MEASURES = ("nDCG@10", "RR@10", "R@100", "R@1000", "MAP")


@dataclass(frozen=True, slots=True)
class Family:
    """A measure family: canonical spelling, the ranx metric that computes it, the trec_eval measure it equals."""

    name: str
    ranx: str  #: function of ``ranx.metrics``, called as ``f(qrels, run, k, rel_lvl)``
    trec_eval: str
    graded: bool  #: uses grades as gains (no relevance level); otherwise binary (grade >= level)
    description: str


FAMILIES: dict[str, Family] = {f.name: f for f in (
    Family("nDCG", "ndcg", "ndcg_cut.k (ndcg without cutoff)", True,
           "normalised DCG, gain = grade, discount log2(rank + 1) (Järvelin & Kekäläinen, TOIS 2002)"),
    Family("RR", "reciprocal_rank", "recip_rank (on the top k)", False,
           "reciprocal rank of the first relevant document"),
    Family("R", "recall", "recall.k (set_recall without cutoff)", False,
           "relevant retrieved in the top k / all relevant"),
    Family("P", "precision", "P.k (set_P without cutoff)", False, "relevant retrieved in the top k / k"),
    Family("MAP", "average_precision", "map_cut.k (map without cutoff)", False,
           "mean of the precisions at each relevant retrieved document / all relevant"),
)}

#: trec_eval's names of each family: (with a cutoff k, printed ``<name>_k``; without one). trec_eval has no cutoff
#: form of ``recip_rank``: RR@k is ``trec_eval -M k -m recip_rank``, printed ``recip_rank``.
TREC_EVAL_NAMES: dict[str, tuple[str | None, str]] = {
    "nDCG": ("ndcg_cut", "ndcg"), "R": ("recall", "set_recall"), "P": ("P", "set_P"), "MAP": ("map_cut", "map"),
    "RR": (None, "recip_rank"),
}

#: Other spellings accepted for a family (matched case-insensitively, like the canonical names).
ALIASES: dict[str, str] = {"ndcg_cut": "nDCG", "mrr": "RR", "recip_rank": "RR", "recall": "R", "precision": "P",
                           "ap": "MAP", "map_cut": "MAP", "set_recall": "R", "set_p": "P"}

_LOOKUP: dict[str, str] = {**{n.lower(): n for n in FAMILIES}, **ALIASES}

#: A trec_eval name with a cutoff (``ndcg_cut_10``, ``ndcg_cut.10``, ``P_10``), optionally ``(rel=LEVEL)``.
_TREC_CUT_RE = re.compile(
    "^(?P<family>" + "|".join(cut for cut, _ in TREC_EVAL_NAMES.values() if cut) + r")[._](?P<cutoff>\d+)"
    r"(?P<rest>\([^)]*\))?$", re.IGNORECASE)

_NAME_RE = re.compile(
    r"^(?P<family>[A-Za-z_][A-Za-z0-9_]*)(?:\((?P<pre>[^)]*)\))?(?:@(?P<cutoff>[^()\s]*))?(?:\((?P<post>[^)]*)\))?$")


@dataclass(frozen=True, slots=True)
class Measure:
    """A parsed measure: family name (canonical), cutoff (None: whole ranking) and relevance level."""

    family: str
    cutoff: int | None = setting(None, ge=1, help="rank cutoff (null: the whole ranking)")
    rel: int = setting(DEFAULT_REL_LEVEL, ge=1, help="the least relevance level that counts as relevant")

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ConfigError(f"unknown measure family {self.family!r}; known: {', '.join(FAMILIES)}")
        try:
            validate(self)
        except SettingError as e:
            raise e.at(self.family) from None
        if FAMILIES[self.family].graded and self.rel != DEFAULT_REL_LEVEL:
            raise ConfigError(f"{self.family} uses graded relevance and takes no rel level")

    @property
    def name(self) -> str:
        """Canonical name, e.g. ``nDCG@10`` or ``R@1000(rel=2)``."""
        cut = f"@{self.cutoff}" if self.cutoff is not None else ""
        rel = f"(rel={self.rel})" if self.rel != DEFAULT_REL_LEVEL else ""
        return f"{self.family}{cut}{rel}"

    def __str__(self) -> str:
        return self.name

    @property
    def trec_eval_name(self) -> str:
        """The name trec_eval prints for this measure (``ndcg_cut_10``, ``recall_1000``, ``map``; the relevance
        level is trec_eval's ``-l`` option, not part of the name)."""
        cut, full = TREC_EVAL_NAMES[self.family]
        return f"{cut}_{self.cutoff}" if self.cutoff is not None and cut else full


def _parse_params(text: str, name: str) -> dict[str, str]:
    params: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, eq, value = part.partition("=")
        if not eq or key.strip() != "rel":
            raise ConfigError(f"measure {name!r}: unknown parameter {part!r} (allowed: rel=LEVEL)")
        params["rel"] = value.strip()
    return params


def parse_measure(name: str | Measure, *, suggestions: bool = True) -> Measure:
    """Parse a measure name (see module doc); a :class:`Measure` is returned unchanged. An error names the closest
    known measures unless ``suggestions`` is False (they take a fuzzy match over every spelling)."""
    if isinstance(name, Measure):
        return name
    hint = _did_you_mean if suggestions else (lambda _: "")
    text = name.strip()
    trec = _TREC_CUT_RE.match(text)
    if trec is not None:  # trec_eval's ndcg_cut_10 / ndcg_cut.10 -> ndcg_cut@10
        text = f"{trec['family']}@{trec['cutoff']}{trec['rest'] or ''}"
    m = _NAME_RE.match(text)
    if m is None:
        raise ConfigError(f"cannot parse measure {name!r}: expected FAMILY[@CUTOFF][(rel=LEVEL)] or a trec_eval "
                          f"name, e.g. nDCG@10, R@1000(rel=2), ndcg_cut_10{hint(name)}")
    family = _LOOKUP.get(m["family"].lower())
    if family is None:
        known = ", ".join(f"{f.name} ({f.description})" for f in FAMILIES.values())
        raise ConfigError(f"unknown measure {name!r}{hint(name)}; known families: {known}; trec_eval "
                          "names are accepted too (ndcg_cut_10, recall_1000, P_10, map, recip_rank)")
    if m["pre"] is not None and m["post"] is not None:
        raise ConfigError(f"measure {name!r}: give parameters once")
    params = _parse_params(m["pre"] or m["post"] or "", name)
    cutoff: int | None = None
    if m["cutoff"] is not None:
        if not (m["cutoff"].isascii() and m["cutoff"].isdigit()):
            raise ConfigError(f"measure {name!r}: cutoff {m['cutoff']!r} is not a positive integer")
        cutoff = int(m["cutoff"])
    rel = DEFAULT_REL_LEVEL
    if "rel" in params:
        if not (params["rel"].isascii() and params["rel"].isdigit()):
            raise ConfigError(f"measure {name!r}: rel {params['rel']!r} is not a positive integer")
        rel = int(params["rel"])
    try:
        return Measure(family, cutoff, rel)
    except ConfigError as e:
        raise ConfigError(f"measure {name!r}: {e}") from None


def find_measure(name: str) -> Measure | None:
    """The measure ``name`` names, or None where it names none: for telling measure names from other keys (table
    columns, manifest fields) without the suggestions of :func:`parse_measure`'s errors."""
    try:
        return parse_measure(name, suggestions=False)
    except ConfigError:
        return None


def suggest(name: str, n: int = 3) -> list[str]:
    """Up to ``n`` known measure names closest to ``name`` (canonical and trec_eval spellings, with the cutoff that
    ``name`` gives, if any), best first."""
    digits = re.findall(r"\d+", name)
    cutoff = int(digits[0]) if digits else None
    candidates: dict[str, str] = {}
    for family in FAMILIES:
        measure = Measure(family, cutoff if cutoff else None)
        for spelling in (measure.name, measure.trec_eval_name, *(a for a, f in ALIASES.items() if f == family
                                                                   and cutoff is None)):
            candidates.setdefault(spelling.lower(), spelling)
    return [candidates[c] for c in difflib.get_close_matches(name.strip().lower(), list(candidates), n=n,
                                                              cutoff=0.5)]


def _did_you_mean(name: str) -> str:
    close = suggest(name)
    return f" (did you mean {' or '.join(close)}?)" if close else ""


def parse_measures(names: Iterable[str | Measure]) -> list[Measure]:
    """Parse several names (or one), dropping repeats of the same canonical measure (first occurrence kept)."""
    if isinstance(names, (str, Measure)):
        names = [names]
    out: dict[str, Measure] = {}
    for n in names:
        m = parse_measure(n)
        out.setdefault(m.name, m)
    if not out:
        raise ConfigError("no measures given")
    return list(out.values())
