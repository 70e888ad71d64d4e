"""Follow-ups that need no LLM to stand alone: the self-contained ones, and the elliptical
"And for 2023?" / "What about Microsoft?" shapes completed from the previous question.

The condense call costs a follow-up several seconds of prompt reading on two cores, and a
1.5B model often returns an elliptical follow-up unchanged. Two rules run first:

- ``self_contained``: a question with its own subject (three or more content words) and no
  word that points back (it, they, this, that one, the same, 它, 这...) nor an opening that
  continues the last one ("And ...", "What about ...") is searched as typed.
- ``complete_ellipsis``: "And for the quarter ended December 31, 2022?" after "What were
  Apple's total net sales for the quarter ended June 25, 2022?" becomes the previous question
  with its period replaced; "What about Microsoft?" replaces its one company or product name;
  "And in Europe?" its last phrase opened by the same preposition. When the replacement is
  not unambiguous the rule gives up and the LLM rewrites.

docs/evaluation.md has what each rule measured on CAsT and on elliptical SEC follow-ups.
"""

from __future__ import annotations

import re

from rag_core.entities.names import NUMBER_LED
from rag_core.text import CJK_RUN, is_period_token, query_terms

_POINTERS = frozenset(
    "it its itself they them their theirs themselves this that these those he him his she her hers there "
    "former latter same such both either neither one ones other others another above previous first second "
    "third last next again else too specific example".split()
)
_CJK_POINTERS = ("它", "他", "她", "其", "这", "那", "该", "此")
_CONTINUES = re.compile(
    r"^\s*(?:and|but|also|so|then|plus|ok(?:ay)?|now|what\s+else|anything\s+else)\b|^\s*(?:what|how)\s+about\b"
    r"|^\s*same\s+(?:for|with|in|as)\b|^\s*(?:why|how)\s*\??\s*$",
    re.IGNORECASE,
)
_ELLIPSIS = re.compile(
    r"^\s*(?:(?:and|but|ok(?:ay)?|so|now)[\s,]+)?(?:(?:what|how)\s+about|same\s+(?:for|with|in)|and)\s+",
    re.IGNORECASE,
)
_WORD = re.compile(r"[\w'’-]+", re.UNICODE)
_PREPOSITIONS = ("for", "in", "at", "on", "during", "from", "to", "with", "by", "of", "over", "across", "within")
_MONTH = r"(?:January|February|March|April|May|June|July|August|September|October|November|December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)\.?"
_PERIOD = re.compile(
    r"(?:the\s+)?(?:(?:three|six|nine|twelve)\s+months|quarter|year|fiscal\s+year|period|half)\s+ended\s+"
    + _MONTH
    + r"\s+\d{1,2},?\s+(?:19|20)\d{2}"
    + r"|(?:the\s+)?(?:first|second|third|fourth|1st|2nd|3rd|4th)\s+quarter(?:\s+of)?(?:\s+(?:fiscal\s+)?(?:19|20)\d{2})?"
    + r"|\b(?:Q[1-4]|H[12])\s*(?:FY\s*)?(?:(?:19|20)\d{2})?\b|\bFY\s*(?:19|20)?\d{2}\b"
    + r"|"
    + _MONTH
    + r"\s+\d{1,2},?\s+(?:19|20)\d{2}|(?:fiscal\s+(?:year\s+)?)?\b(?:19|20)\d{2}\b",
    re.IGNORECASE,
)
# A report named: "the latest 10-Q", "its Q2 2023 10-Q", "Apple's most recent quarterly report"
# (the determiner or owner before it is not part of it: the previous question's is kept)
_REPORT = re.compile(
    r"\b(?P<which>(?:latest|most\s+recent|newest|last|previous|prior)\s+"
    r"|(?:Q[1-4]|[1-4]Q)\s*(?:FY\s*)?'?(?:19|20)?\d{2}\s+|(?:19|20)\d{2}\s+Q[1-4]\s+"
    r"|(?:first|second|third|fourth)\s+quarter\s+(?:of\s+)?(?:fiscal\s+)?(?:19|20)\d{2}\s+)?"
    r"(?:(?:quarterly|annual)\s+)?(?:10-?[QK]|8-?K|report|filing|(?:earnings\s+)?release)\b",
    re.IGNORECASE,
)
_QUESTION_OPENERS = frozenset(
    "what which who whom whose when where why how is are was were do does did can could will would should "
    "has have had tell list give show describe explain compare".split()
)


def _words(text: str) -> list[str]:
    """Lower-cased words, a clitic cut off ("that’s" → "that")."""
    return [re.split(r"['’]", w.lower())[0] for w in _WORD.findall(text)]


def points_back(question: str) -> bool:
    """The question leans on the conversation: a pointing word, or an opening that continues."""
    if _CONTINUES.search(question):
        return True
    if any(p in question for p in _CJK_POINTERS):
        return True
    return any(w in _POINTERS for w in _words(question))


def self_contained(question: str) -> bool:
    """Plainly understandable alone: a question, with its own subject, and nothing that points back."""
    if not question.strip().endswith(("?", "？")) or points_back(question):
        return False
    if CJK_RUN.search(question):
        return len(question.strip()) >= 6
    return len(query_terms(question)) >= 3


# A name: capitalised words ("Microsoft", "AT&T"), a word capitalised inside ("iPad"), or a number and
# capitals, as ``entities.names`` reads one ("3M", "7-Eleven"; not "10-K" or "2Q23"), never inside a word
# ("10-K" holds no name "K")
_NAME = re.compile(rf"(?<![\w&.-])(?:[A-Z][\w&.-]*|[a-z]+[A-Z][\w-]*|{NUMBER_LED})(?:\s+(?:[A-Z][\w&.-]*))*")
# a number right after a name, part of it: "Base 256", "iPhone 15", "Windows 11"
_NUMBERED = re.compile(_NAME.pattern + r"\s+(?P<number>\d+(?:\.\d+)?)\b(?![.,]\d|\s*%)")


def _names(text: str) -> list[re.Match[str]]:
    """Company or product names: words with a capital letter (or several), not the first word
    of the question, not a period word; "Apple's" counts as "Apple". A number right after a
    name is part of it ("Base 256" among "Base 128" and "Base 512", "iPhone 15"), unless it is
    a year or a day ("Apple 2023", "June 25")."""
    out = []
    for m in _NAME.finditer(text):
        opener, _, rest = m.group(0).partition(" ")
        if m.start() == 0 and rest and opener.lower() in _QUESTION_OPENERS:  # "Is Corning …": the name after it
            m = _NAME.match(text, len(opener) + 1) or m
        numbered = _NUMBERED.match(text, m.start())
        if numbered and numbered.start("number") > m.end():
            last = m.group(0).split()[-1]
            if not re.fullmatch(r"(?:19|20)\d{2}", numbered.group("number")) and not re.fullmatch(
                _MONTH, last, flags=re.IGNORECASE
            ):
                m = numbered
        word = m.group(0)
        if m.start() == 0 or word.lower() in _QUESTION_OPENERS or _PERIOD.fullmatch(word) or is_period_token(word):
            continue
        if re.fullmatch(_MONTH, word, flags=re.IGNORECASE) or word in ("I", "Q", "FY"):
            continue
        out.append(m)
    return out


def complete_ellipsis(question: str, previous: str) -> str | None:
    """``question`` ("And for 2023?") written out from ``previous``, or None when the rule
    cannot tell what to replace unambiguously."""
    m = _ELLIPSIS.match(question)
    if not m or not previous.strip():
        return None
    part = question[m.end() :].strip().rstrip("?？.!").strip()
    words = _words(part)
    if not words or any(w in _POINTERS for w in words) or len(words) > 8 or re.search(r"[?？.!]", part):
        return None
    if words[0] in _QUESTION_OPENERS:  # "And how is tea made?": a question of its own, not an ellipsis
        return None
    prev = previous.strip().rstrip("?？.!").strip()
    ending = "?" if previous.strip().endswith(("?", "？")) or question.strip().endswith("?") else ""

    # 1. A report replaces the previous question's report ("And in the latest 10-Q?" after
    #    "... in its Q2 2023 10-Q?"), its period with it; then a period, the previous period.
    new_report = _REPORT.search(part)
    old_reports = list(_REPORT.finditer(prev))
    if new_report and new_report.group("which") and len(old_reports) == 1:  # a report said which
        old = old_reports[0]
        return prev[: old.start()] + new_report.group(0) + prev[old.end() :] + ending
    new_period = _PERIOD.search(part)
    old_periods = list(_PERIOD.finditer(prev))
    if new_period and len(old_periods) == 1:
        old, period = old_periods[0], new_period.group(0).strip()
        year = re.search(r"(?:19|20)\d{2}", old.group(0))
        if year and not re.search(r"(?:19|20)\d{2}|FY\s*\d{2}", period):  # "And Q2?" keeps "2023"
            period += " " + year.group(0)
        return prev[: old.start()] + period + prev[old.end() :] + ending

    # 2. A name (company, product, segment) replaces the previous question's name of its kind:
    #    "the iPad" (an article: a thing, not a company) the one name not in a possessive,
    #    "Microsoft's" the one in a possessive, a bare name the only name there is.
    new_names = _names(" " + part)
    old_names = _names(prev)
    if new_names and not new_period and len(new_names) == 1:
        new = new_names[0]
        owner = [m for m in old_names if prev[m.end() : m.end() + 2] in ("'s", "’s")]
        other = [m for m in old_names if m not in owner]
        if re.match(rf"(?:(?:{'|'.join(_PREPOSITIONS)})\s+)?the\s", part, re.IGNORECASE):
            candidates = other
        elif part.endswith(("'s", "’s")):
            candidates = owner
        else:
            candidates = old_names
        if len(candidates) == 1:
            old = candidates[0]
            return prev[: old.start()] + new.group(0) + prev[old.end() :] + ending

    # 3. "And in Europe?": the previous question's phrase opened by the same preposition (not a
    #    period: "for the Mac" does not replace "for the quarter ended ...").
    #    "And with 6 g of inhibitor?" replaces "without inhibitor" too: its opposite.
    first = part.split()[0].lower()
    if first in (*_PREPOSITIONS, "without") and not new_period:
        opposite = {"with": "without", "without": "with"}.get(first, first)
        spots = [p for p in re.finditer(rf"\b(?:{first}|{opposite})\b", prev, flags=re.IGNORECASE)]
        if len(spots) == 1:
            start, said = spots[0].start(), spots[0].group(0)
            end = _phrase_end(prev, start + len(said))
            if prev[start + len(said) : end].strip() and not _PERIOD.search(prev[start:end]):
                return (prev[:start] + part + " " + prev[end:].lstrip()).rstrip() + ending
    return None


# The pointing words a follow-up may lean on the previous question with, each for one of its parts:
# "its" / "their" its one owner ("Corning's"), "that year" its one period ("FY2022").
_OWNER_POINTER = re.compile(r"\b(?:its|their)\b", re.IGNORECASE)
_PERIOD_POINTER = re.compile(
    r"\b(?:(?P<prep>in|for|during|of|over)\s+)?(?:that|the\s+same)\s+(?:fiscal\s+)?(?:year|quarter|period)\b", re.I
)
_OPENER = re.compile(r"^(?:what|how\s+much|how\s+many)\s+(?:is|was|were|are|did)\s+(?:the\s+)?$", re.IGNORECASE)
_LEAD = re.compile(r"^\s*(?:(?:and|but|also|so|now|ok(?:ay)?)[\s,]+)?(?:(?:what|how)\s+about\s+)?", re.IGNORECASE)


def resolve_pointers(question: str, previous: str) -> str | None:
    """``question`` with "its" / "their" and "that year" written as the previous question's one
    owner and one period ("And its R&D as a % of revenue that year?" after "What was Corning's
    dividend payout ratio in FY2022?" → "What was Corning's R&D as a % of revenue in FY2022?"),
    or None when it points back with any other word, or the previous question has not exactly
    one owner (a name with "'s") or one period for the words that point to them."""
    prev = previous.strip().rstrip("?？.!").strip()
    part = question[_LEAD.match(question).end() :].strip().rstrip("?？.!").strip()  # type: ignore[union-attr]
    owners = [m for m in _names(prev) if prev[m.end() : m.end() + 2] in ("'s", "’s")]
    pointing = _OWNER_POINTER.search(part) or _PERIOD_POINTER.search(part)
    if not prev or not pointing or len(owners) > 1:
        return None
    if _OWNER_POINTER.search(part):
        if len(owners) != 1:
            return None
        part = _OWNER_POINTER.sub(prev[owners[0].start() : owners[0].end() + 2], part)
    if _PERIOD_POINTER.search(part):
        periods = list(_PERIOD.finditer(prev))
        if len(periods) != 1:
            return None
        period = periods[0].group(0).strip()
        part = _PERIOD_POINTER.sub(
            lambda m: period if part[m.end() : m.end() + 2] in ("'s", "’s") else f"{m.group('prep') or 'in'} {period}",
            part,
        )
    if any(w in _POINTERS for w in _words(part)) or not part:
        return None  # another word points back ("that one", "the other"): the model reads the conversation
    if _words(part)[0] not in _QUESTION_OPENERS:  # a noun phrase: asked as the previous question asks
        opener = prev[: owners[0].start()] if owners else ""
        if not _OPENER.match(opener) or prev[owners[0].start() : owners[0].end()] not in part:
            return None  # asked otherwise, or of no one ("And that year's capex?"): the model rewrites
        periods = list(_PERIOD.finditer(prev))
        if len(periods) == 1 and not _PERIOD.search(part):  # "And its net income?": of the period asked before
            lead = re.search(r"(?:\b(?:in|for|during|as\s+of|at\s+the\s+end\s+of)\s+)?$", prev[: periods[0].start()])
            part += " " + prev[lead.start() if lead else periods[0].start() : periods[0].end()].strip()
        part = opener + part
    return part[:1].upper() + part[1:] + "?"


def _phrase_end(text: str, after: int) -> int:
    """Where the phrase that starts before ``after`` ends: at the next preposition or period."""
    ends = [len(text)]
    for prep in _PREPOSITIONS:
        m = re.search(rf"\s{prep}\s", text[after:], flags=re.IGNORECASE)
        if m:
            ends.append(after + m.start())
    period = _PERIOD.search(text, after)
    if period:
        ends.append(period.start())
    return min(ends)
