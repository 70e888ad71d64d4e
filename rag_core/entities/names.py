"""Names as a question writes them, and how a name is matched with what a document is about.

A name is a capitalised word or run of them inside a sentence ("What was Target's revenue",
"Compare NVIDIA Corporation with Amazon"), a possessive at the start of one ("Target's
revenue?"), or a word in capitals (a ticker: "NVDA"). Case is what tells "Target" the
company from "target" the word, so it is kept until the name is found; from then on a name
is the search terms of its words (``rag_core.text.tokenize``: "Amazon.com, Inc." → amazon,
com, inc) without the legal form ("Inc.", "Corporation", ".com"), which a question seldom
spells the way a cover page does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rag_core.text import is_measure, is_name_word, tokenize

# The legal form of a company's name and a web suffix: not what a question calls it by.
LEGAL_FORMS = frozenset(
    "inc incorporated corporation corp company co ltd limited llc lp plc nv sa ag se gmbh holding group com".split()
)
# First words of company names that say nothing alone ("American" is not American Express).
GENERIC_FIRST = frozenset(
    "american general united first national international global bank new royal southern northern western "
    "eastern pacific atlantic standard capital digital applied advanced public federal central".split()
)
# Capitalised words that are dates or periods, not names.
NOT_NAMES = frozenset(
    "january february march april may june july august september october november december jan feb mar apr "
    "jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday saturday sunday q1 q2 q3 q4 "
    "fy fiscal quarter year h1 h2 ytd".split()
)

# The word before a name that makes it the one the question asks about ("of Gap", "did Visa").
OWNER_CUES = frozenset("of did does do has have had is was were are will would can could should".split())
# Words that start a question or a sentence: never the first word of a name ("What Apple's").
STARTERS = frozenset(
    "what how which who whom whose why when where did does do is are was were has have had can could would should "
    "will shall may might must and but or so then also please compare tell show give list explain describe "
    "according between in on at by for of from to with the a an if whether".split()
)

# A name's word: capitalised ("Tesla", "AT&T"), or a number and capitals ("3M", "7-Eleven";
# not a form: "10-K", "8K"), or initials, each with its dot, before another word of the name
# ("J.P. Morgan", "H. J. Heinz": JPMorgan's and Kraft Heinz's filings write them so). Words of
# one name may be joined by "&" ("Procter & Gamble", "Johnson & Johnson": the cover pages of
# both companies' filings write them so).
NUMBER_LED = r"\d{1,2}-?[A-Z](?:[A-Za-z]+)?(?<!\d-K)(?<!\d-Q)(?<!\dK)(?<!\dQ)(?![\w-])"
_WORD = rf"(?:[A-Z]\.)+(?=[ \t]+[A-Z])|[A-Z][A-Za-z0-9&.\-]*[A-Za-z0-9&]|[A-Z]|{NUMBER_LED}"
_RUN = re.compile(rf"(?<![A-Za-z0-9])(?:{_WORD})(?:['’]s\b)?(?:(?:[ \t]+&)?[ \t]+(?:{_WORD})(?:['’]s\b)?)*")
_SENTENCE_END = (".", "?", "!", ":", ";", '"', "“", "(", "•", "-", "–", "—")
_FIGURE = re.compile(
    r"\bhow (?:much|many)\b|\b(?:revenues?|sales|income|profits?|earnings|margins?|expenses?|costs?|spen[dt]|"
    r"spending|cash|assets|liabilit\w*|debt|dividends?|repurchase[sd]?|buybacks?|eps|per share|growth|price|"
    r"headcount|employees|stores|units|shipments|subscribers|backlog|capex|expenditures?|ebitda|percentage|"
    r"percent|ratio|rate|total|number of|amount|figure|guidance|outlook|forecast)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Name:
    """A name as written in a question (``text``) and its terms without the legal form."""

    text: str
    terms: tuple[str, ...]
    capitals: bool  # written in capitals ("NVDA", "IBM"): may be a ticker
    possessive: bool = False  # "Tesla's revenue": what is asked belongs to it
    # "the net income of Gap", "did Visa report": what is asked is its, as with a possessive
    subject: bool = field(default=False, compare=False)

    @property
    def owner(self) -> bool:
        """What is asked belongs to this name (or is what it did): a page of another company's
        filing that mentions it, or a heading that holds the word, says nothing of that."""
        return self.possessive or self.subject


def terms_of(text: str, initials: bool = False) -> tuple[str, ...]:
    """The search terms of a name, its legal form and a trailing possessive dropped:
    "Amazon.com, Inc." → (amazon,); "NVIDIA's" → (nvidia,); "The Home Depot" → (home, depot).
    A letter alone is no term; with ``initials`` (a question's name), initials before a word
    are one ("J.P. Morgan" → (jp, morgan)). A subject's aliases keep none ("The J. M. Smucker
    Company" → (smucker,)): ``name_matches`` lets a name's initials go."""
    words: list[str] = []
    run = ""
    for t in tokenize(text):
        if len(t) == 1 and t.isalpha():
            run += t if initials else ""
            continue
        if len(run) > 1:
            words.append(run)
        run = ""
        if len(t) > 1 and not t.isdigit():
            words.append(t)
    while words and words[-1] in LEGAL_FORMS:
        words.pop()
    return tuple(words)


def question_names(text: str) -> list[Name]:
    """The names in a question, in order, each once (see the module docstring). A run of
    capitalised words is cut after a possessive: "Tesla's Services segment" names Tesla, and
    Services, which belongs to it."""
    out: list[Name] = []
    seen: set[tuple[str, ...]] = set()
    for match in _RUN.finditer(text or ""):
        words = match.group(0).split()
        before = text[: match.start()].rstrip()
        cue = before.split()[-1].lower() if before.split() else ""
        if not before or before.endswith(_SENTENCE_END):
            # The first word of a sentence is capitalised anyway: a name only if possessive or
            # in capitals ("Target's revenue?", "IBM's margin"); the words after it may be one.
            first = words[0]
            kept = bool(_POSSESSIVE.search(first)) or (first.isupper() and len(first) > 1)
            # "Best Buy's cash?": a possessive run whose first word starts no question is one name
            kept = kept or (len(words) > 1 and bool(_POSSESSIVE.search(words[-1])) and first.lower() not in STARTERS)
            if not kept:
                cue, words = first.lower(), words[1:]
        for part in _cut_after_possessives([w for w in words if not is_measure(w)]):
            raw = " ".join(part)
            terms = tuple(t for t in terms_of(raw, initials=True) if t not in NOT_NAMES and is_name_word(t))
            if not terms or terms in seen:
                continue
            seen.add(terms)
            bare = _POSSESSIVE.sub("", raw).strip()
            capitals = bare.replace(".", "").isupper() and len(bare) <= 6
            possessive = bool(_POSSESSIVE.search(part[-1]))
            out.append(Name(bare, terms, capitals, possessive, subject=cue in OWNER_CUES and part[0] == words[0]))
    return out


_POSSESSIVE = re.compile(r"['’]s$")


def _cut_after_possessives(words: list[str]) -> list[list[str]]:
    parts: list[list[str]] = [[]]
    for word in words:
        parts[-1].append(word)
        if _POSSESSIVE.search(word):
            parts.append([])
    return [p for p in parts if p]


def asks_figure(question: str) -> bool:
    """Whether a question asks for a figure (an amount, a count, a rate) rather than an account:
    for such a question a name that documents mention only in passing is not enough."""
    return bool(_FIGURE.search(question or ""))


def name_matches(name: tuple[str, ...], alias: tuple[str, ...]) -> bool:
    """Whether a question's name (its terms) names what ``alias`` (a subject's terms) names:
    the same terms; the alias followed by more words ("NVIDIA Data Center" → NVIDIA); or the
    first words of a longer alias ("Costco" → Costco Wholesale), unless that word alone says
    nothing ("American" → American Express). Words are compared joined as well: a name written
    with or without spaces, dots or a hyphen between its parts is one name ("JP Morgan", "J.P.
    Morgan" → JPMorgan Chase: JPMorgan's 10-Qs write both; "Wal-Mart" → Walmart: Walmart's
    10-Ks of 2018 and 2020)."""
    if not name or not alias:
        return False
    if name == alias or name[: len(alias)] == alias:
        return True
    if alias[: len(name)] == name and (len(name) > 1 or name[0] not in GENERIC_FIRST):
        return True
    joined = "".join(name)
    if joined in GENERIC_FIRST:
        return False
    if any("".join(alias[:k]) == joined for k in range(1, len(alias) + 1)):
        return True
    if any("".join(name[:k]) == "".join(alias) for k in range(1, len(name) + 1)):
        return True
    return len(name) > 1 and len(name[0]) <= 3 and name[1:] == alias  # "J.M. Smucker" → Smucker
