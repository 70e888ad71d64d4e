"""Making document text and model output safe to show as Markdown.

Both are data, possibly written by someone hostile (a PDF can say anything, and a model
can be talked into repeating it). Streamlit already shows raw HTML as text and blanks
``javascript:`` links, but a Markdown image is fetched as soon as it is drawn (a
tracking pixel that leaks what was asked), any web address in text becomes a link
(GitHub-flavoured Markdown links ``http://…``, ``www.…`` and ``name@host`` by itself, even
when the text was escaped), and Streamlit's own directives (``:red[..]``,
``:material/..:``, emoji shortcodes) would let text restyle the page. So:

- ``escape_markdown`` turns any text into Markdown that shows exactly that text
  (for labels and captions).
- ``inert_markdown`` keeps an answer's formatting (lists, bold, code) but neutralises
  HTML, images, links, directives and math. Code spans and fenced blocks are left alone:
  nothing inside them is interpreted. Given ``cite``, it turns the answer's citation
  markers (``[1]``, ``[2, 3]``) into links that this app writes itself (the model's text
  never chooses where a link goes).

Neither ever makes a link out of the text it is given: a web or mail address is shown
whole, as code (``http://evil.example/phish``), which the reader can copy but not
click, and a Markdown link or image shows its text followed by its full address the
same way (``click (http://evil.example/phish)``), never the image itself.
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
# What Markdown would turn into a link by itself: a scheme (http://, ftp://, …), www., a
# mailto:/xmpp: address, or name@host.tld. Brackets end an address, so that no bracket
# ever sits inside the code span it becomes (a directive's label ends at "]").
_ADDRESS_BODY = r"[^\s<>\[\]`]*"
_ADDRESS_PATTERN = (
    r"(?:\b[a-z][a-z0-9+.\-]*://|\bwww\.|\b(?:mailto|xmpp):)" + _ADDRESS_BODY + r"|[\w.+\-]+@[\w\-]+(?:\.[\w\-]+)+"
)
_ADDRESS = re.compile(_ADDRESS_PATTERN, re.I)
_LINK_OR_ADDRESS = re.compile(
    r"(?P<image>!)?\[(?P<text>[^\]\n]*)\]\((?P<dest>[^)\n]*)\)"  # a Markdown link or image
    r"|(?P<address>" + _ADDRESS_PATTERN + ")",
    re.I,
)
_TRAILING = ".,;:!?'\"*_~"  # punctuation that ends a sentence rather than an address
_REF_DEFINITION = re.compile(r"^([ ]{0,3})\[(?=[^\]\n]+\]:)", re.M)
_PUNCTUATION = re.compile(r"([\\`*_{}\[\]()|~$])")
_LINE_START = re.compile(r"^([ \t]*)(\d+)?([#>+=.)-])", re.M)  # headings, quotes, lists
_CITATION = re.compile(r"(?<!\\)\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\](?![(\[])")  # [1] or [1, 3], not a link


def escape_markdown(text: str) -> str:
    """Markdown that renders as ``text``, character for character; web and mail addresses
    in it are shown as code, so that they are never links."""
    out, pos = [], 0
    text = str(text)
    for match in _ADDRESS.finditer(text):
        address, rest = _split_trailing(match.group(0))
        out.append(_escape_plain(text[pos : match.start()]))
        out.append(code_span(address))
        out.append(_escape_plain(rest))
        pos = match.end()
    out.append(_escape_plain(text[pos:]))
    return "".join(out)


def code_span(text: str) -> str:
    """``text`` as an inline code span: shown exactly, nothing in it interpreted."""
    if not text:
        return ""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text[0] in "` " or text[-1] in "` " else ""
    return f"{fence}{pad}{text}{pad}{fence}"


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


def _escape_plain(text: str) -> str:
    if not text:
        return ""
    text = text.replace("&", "&amp;")
    text = _PUNCTUATION.sub(r"\\\1", text)
    text = _LINE_START.sub(lambda m: f"{m.group(1)}{m.group(2) or ''}\\{m.group(3)}", text)
    return _neutralise_prose_html(text)


def _split_trailing(address: str) -> tuple[str, str]:
    """An address found in prose, without the punctuation that ends its sentence (and a
    closing parenthesis it did not open); that rest is prose again."""
    end = len(address)
    while end and (
        address[end - 1] in _TRAILING
        or (address[end - 1] == ")" and address.count(")", 0, end) > address.count("(", 0, end))
    ):
        end -= 1
    return address[:end], address[end:]


def _inert_prose(text: str, cite: Callable[[int], str | None] | None = None) -> str:
    """Prose between code: links, images and addresses shown as text, the rest made inert."""
    out, pos = [], 0
    for match in _LINK_OR_ADDRESS.finditer(text):
        out.append(_inert_text(text[pos : match.start()], cite))
        if match.group("address"):
            address, rest = _split_trailing(match.group("address"))
            out.append(code_span(address) + _inert_text(rest, cite))
        else:
            out.append(_shown_link(match, cite))
        pos = match.end()
    out.append(_inert_text(text[pos:], cite))
    return "".join(out)


def _shown_link(match: re.Match[str], cite: Callable[[int], str | None] | None) -> str:
    """A link or image as its text and, when it goes to an address, that address in full
    (never a link, never the image). A target that is no address (``javascript:``, a
    relative path) leaves only the text."""
    label = match.group("text").strip()
    dest = html.unescape(match.group("dest")).strip()
    dest = dest[1:].split(">", 1)[0] if dest.startswith("<") else (dest.split() or [""])[0]
    target = dest if dest and _ADDRESS.fullmatch(dest) else None
    shown = _inert_prose(label, cite) if label else ""
    if match.group("image"):
        kind = "image"
        if target is None:
            return f"{shown} (image)" if shown else "(image)"
        return f"{shown} ({kind}: {code_span(target)})" if shown else f"({kind}: {code_span(target)})"
    if target is None:
        return shown
    if not label or label == target or f"mailto:{label}" == target:
        return code_span(target)
    return f"{shown} ({code_span(target)})"


def _inert_text(text: str, cite: Callable[[int], str | None] | None = None) -> str:
    if not text:
        return ""
    text = text.replace("![", "!\\[")
    text = _REF_DEFINITION.sub(r"\1\\[", text)
    text = text.replace("$", "\\$")
    text = _neutralise_prose_html(text)
    return _link_citations(text, cite) if cite else text


def _link_citations(text: str, cite: Callable[[int], str | None]) -> str:
    def one(n: str) -> str:
        href = cite(int(n))
        return f"[{n}]({href})" if href else n

    def marker(match: re.Match[str]) -> str:
        numbers = re.split(r"\s*,\s*", match.group(1))
        return "\\[" + ", ".join(one(n) for n in numbers) + "\\]"

    return _CITATION.sub(marker, text)


def _neutralise_prose_html(text: str) -> str:
    # An entity renders as the character but can no longer open a tag or a directive.
    text = text.replace("<", "&lt;")
    return text.replace(":", "&#58;")
