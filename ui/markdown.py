"""Making document text and model output safe to show as Markdown.

Both are data, possibly written by someone hostile (a PDF can say anything, and a model
can be talked into repeating it). Streamlit already shows raw HTML as text and blanks
``javascript:`` links, but a Markdown image is fetched as soon as it is drawn (a
tracking pixel that leaks what was asked), and Streamlit's own directives (``:red[..]``,
``:material/..:``, emoji shortcodes) would let text restyle the page. So:

- ``escape_markdown`` turns any text into Markdown that shows exactly that text
  (for labels and captions).
- ``inert_markdown`` keeps an answer's formatting (lists, bold, code) but neutralises
  HTML, images, links to anything but http(s)/mailto, directives and math. Code spans
  and fenced blocks are left alone: nothing inside them is interpreted. Given ``cite``,
  it turns the answer's citation markers (``[1]``, ``[2, 3]``) into links that this app
  writes itself (the model's text never chooses where a link goes).
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable

_CODE = re.compile(
    r"(^[ \t]*(?P<fence>`{3,}|~{3,})[^\n]*\n.*?(?:^[ \t]*(?P=fence)[ \t]*$|\Z)"  # fenced block (maybe unclosed)
    r"|(?P<ticks>`+)(?!`).*?(?<!`)(?P=ticks)(?!`))",  # inline code span
    re.S | re.M,
)
_LINK = re.compile(r"\[(?P<text>[^\]\n]*)\]\((?P<dest>[^)\n]*)\)")
_REF_DEFINITION = re.compile(r"^([ ]{0,3})\[(?=[^\]\n]+\]:)", re.M)
_SAFE_SCHEMES = ("http://", "https://", "mailto:")
_PUNCTUATION = re.compile(r"([\\`*_{}\[\]()|~$])")
_LINE_START = re.compile(r"^([ \t]*)(\d+)?([#>+=.)-])", re.M)  # headings, quotes, lists
_CITATION = re.compile(r"(?<!\\)\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\](?![(\[])")  # [1] or [1, 3], not a link


def escape_markdown(text: str) -> str:
    """Markdown that renders as ``text``, character for character."""
    text = str(text).replace("&", "&amp;")
    text = _PUNCTUATION.sub(r"\\\1", text)
    text = _LINE_START.sub(lambda m: f"{m.group(1)}{m.group(2) or ''}\\{m.group(3)}", text)
    return _neutralise_prose_html(text)


def inert_markdown(text: str, cite: Callable[[int], str | None] | None = None) -> str:
    """Model output as Markdown with nothing active left in it (see the module docstring).

    ``cite(n)`` gives the address a citation marker ``[n]`` links to (None: no link)."""
    out, pos = [], 0
    for match in _CODE.finditer(text):
        out.append(_inert_prose(text[pos : match.start()], cite))
        out.append(match.group(0))
        pos = match.end()
    out.append(_inert_prose(text[pos:], cite))
    return "".join(out)


def _link_citations(text: str, cite: Callable[[int], str | None]) -> str:
    def one(n: str) -> str:
        href = cite(int(n))
        return f"[{n}]({href})" if href else n

    def marker(match: re.Match[str]) -> str:
        numbers = re.split(r"\s*,\s*", match.group(1))
        return "\\[" + ", ".join(one(n) for n in numbers) + "\\]"

    return _CITATION.sub(marker, text)


def _inert_prose(text: str, cite: Callable[[int], str | None] | None = None) -> str:
    text = _LINK.sub(_safe_link, text)
    text = text.replace("![", "!\\[")
    text = _REF_DEFINITION.sub(r"\1\\[", text)
    text = text.replace("$", "\\$")
    text = _neutralise_prose_html(text)
    return _link_citations(text, cite) if cite else text


def _neutralise_prose_html(text: str) -> str:
    # An entity renders as the character but can no longer open a tag or a directive.
    text = text.replace("<", "&lt;")
    return text.replace(":", "&#58;")


def _safe_link(match: re.Match[str]) -> str:
    """Keep a link only when its target is a plain web or mail address; else keep its text."""
    dest = html.unescape(match.group("dest"))
    dest = re.sub(r"[\s\x00-\x1f\\<>]", "", dest).lower()
    if dest.startswith(_SAFE_SCHEMES):
        return match.group(0)
    return match.group("text")
