"""Bytes whose encoding nobody told us, as text; bytes that are not text at all, refused.

Order: a byte-order mark wins (UTF-8/16/32; bytes that contradict their BOM are refused);
then bytes that are valid UTF-8 without NULs are UTF-8, decoded exactly as Python does;
everything else goes to charset-normalizer (UTF-16/32 without a BOM, GB18030, Shift_JIS,
cp1251...).

One rule sits on top of charset-normalizer: windows-1252 wins whenever it reads the bytes
about as cleanly as the best guess. charset-normalizer breaks ties between equally clean
readings in favour of multi-byte and Central European code pages, so a few accented letters
come out as CJK ("# K\\xf6ln" -> "K闤n" as Big5) or as cp1250/cp1257 ("très" -> "trčs",
"niño" -> "nińo" in docs/fake-html-cp1252.html of the shared corpus). Windows-1252 is what
browsers and Windows use for unlabelled Western text; where it cannot be right (Cyrillic,
Greek, Hebrew, CJK bytes) charset-normalizer finds it unreadable or clearly messier, and its
own guess stands.

Then mojibake is repaired: text that was UTF-8, read once as windows-1252 or Latin-1 and
saved again ("1997â\x80\x932004 Norwich City 278 (84)" in docs/norwich-city.txt of the
shared corpus, where the dash between the years was three letters) becomes what it was
("1997–2004"). ftfy's ``fix_encoding`` does it, and only where its tables say the characters
cannot be meant as they stand; every other file of the shared corpus (the UDHR in hundreds of
scripts among them) comes out unchanged. Left as it was, such text splits a figure's row into
words the search and the figure check do not know, and the model reads the years as noise.
"""

from __future__ import annotations

import codecs

from charset_normalizer import from_bytes
from ftfy import fix_encoding

from rag_core.errors import IngestError

# Decodings whose bytes are self-checking: if charset-normalizer says so, no preference applies.
_UNICODE = ("utf_8", "utf_16", "utf_32", "ascii")
# How much messier (charset-normalizer's "chaos", 0..1) than the best guess windows-1252 may
# read and still be preferred: French in cp1252 scores 0.039 against 0.020 for cp1257's "trčs".
_CP1252_SLACK = 0.05


def decode_text(data: bytes, name: str) -> str:
    """Decode bytes whose encoding nobody told us; refuse bytes that are not text at all."""
    text = repair_mojibake(_decode_text(data, name))
    sample = text[:20000]
    controls = sum(1 for c in sample if c < " " and c not in "\t\n\r\f\x1b")
    if controls > len(sample) // 20:
        raise IngestError(name, "binary file, not text")
    return text


def repair_mojibake(text: str) -> str:
    """``text`` with mojibake undone (see the module's docstring); other text as it is."""
    return fix_encoding(text) if text else text


def _decode_text(data: bytes, name: str) -> str:
    for bom, enc in (
        (codecs.BOM_UTF32_LE, "utf-32"),
        (codecs.BOM_UTF32_BE, "utf-32"),
        (codecs.BOM_UTF8, "utf-8-sig"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    ):
        if data.startswith(bom):
            try:
                return data.decode(enc)
            except UnicodeDecodeError as e:
                raise IngestError(name, f"not valid {enc} text despite its byte-order mark ({e.reason})") from e
    if b"\x00" not in data[:4096]:  # NULs: maybe UTF-16/32 that is also valid UTF-8 (ASCII text)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            pass
    detected = _detect(data)
    # Nothing reads it cleanly: binary, or text too damaged to tell. The control-character
    # share in decode_text says which.
    return detected if detected is not None else data.decode("cp1252", errors="replace")


def _detect(data: bytes) -> str | None:
    best = from_bytes(data).best()
    if best is not None and best.encoding.startswith(_UNICODE):
        return _as_text(data, best.encoding)
    western = from_bytes(data, cp_isolation=["cp1252"]).best()
    if western is not None and (best is None or western.chaos <= best.chaos + _CP1252_SLACK):
        return _as_text(data, "cp1252")
    return _as_text(data, best.encoding) if best is not None else None


def _as_text(data: bytes, encoding: str) -> str:
    # charset-normalizer judges a large file by samples: a bad byte elsewhere becomes U+FFFD.
    return data.decode(encoding, errors="replace")
