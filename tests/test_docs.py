"""The docs are checked: links between them and to files resolve, the commands they show are
real (every ``python -m rag_core …`` parses with the CLI's own parser, every ``bash scripts/…``
and ``python tools/…`` exists), every file path they name exists, and docs/README.md says what
each subcommand needs and lists every page."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from rag_core.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted([ROOT / "README.md", ROOT / "tools" / "README.md", *(ROOT / "docs").glob("*.md")])
FENCE = re.compile(r"^```.*?$(.*?)^```", re.S | re.M)
INLINE = re.compile(r"`([^`\n]+)`")
LINK = re.compile(r"\]\(([^)\s]+)\)")
PATH = re.compile(r"^(?:rag_core|tests|tools|scripts|app_pages|ui)/[\w./-]*\w$")  # docs/…: the links are checked


def rel(page: Path) -> str:
    return str(page.relative_to(ROOT))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {slug(m.group(1)) for m in re.finditer(r"^#+ (.+)$", text, re.M)}


def commands(page: Path) -> list[str]:
    """Every command a page shows: the lines of its code blocks (continuations joined) and its
    inline code, without comments."""
    text = page.read_text(encoding="utf-8")
    found = []
    for block in FENCE.findall(text):
        for line in block.replace("\\\n", " ").splitlines():
            found.append(re.sub(r"\s+#\s.*$", "", line).strip())
    found += [m.group(1).strip() for m in INLINE.finditer(FENCE.sub("", text))]
    return found


def rag_core_args(command: str) -> list[list[str]]:
    """A shown ``python -m rag_core`` synopsis as argument lists to parse: an optional part is
    taken, the first of alternatives, a placeholder in capitals replaced by a value."""
    rest = command.split("python -m rag_core", 1)[1]
    out = []
    for alternative in re.split(r"\s\|\s(?![^\[]*\])", rest):
        text = re.sub(r"\[([^\[\]]*?)\s\|\s[^\[\]]*\]", r"\1", alternative)  # [--a | --b] → --a
        while "[" in text:
            text = re.sub(r"\[([^\[\]]*)\]", r"\1", text)
        args = []
        for word in shlex.split(text):
            word = word.split("|")[0] if re.fullmatch(r"[\w,.-]+(\|[\w,.-]+)+", word) else word
            word = word.removesuffix("...").removesuffix("…")
            if re.fullmatch(r"N(,N)*", word):
                word = word.replace("N", "1")  # a number
            args.append("x" if re.fullmatch(r"[A-Z][A-Z_]*(\.\w+)?", word) else word)
        if args and args[0].startswith("-") and out:
            args = [out[0][0], *args]
        elif args and out and args[0] not in SUBCOMMANDS:
            args = [out[0][0], *args]  # "docs list | delete NAME"
        if args:
            out.append(args)
    return out


SUBPARSERS = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
SUBCOMMANDS = set(SUBPARSERS)


def shown_rag_core(blocks: bool = True) -> list[tuple[str, str]]:
    """(page, command) of every ``python -m rag_core`` shown: in code blocks (to run), or inline
    (a mention: ``python -m rag_core eval``)."""
    out = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        spans = commands(page) if blocks else [m.group(1) for m in INLINE.finditer(FENCE.sub("", text))]
        if blocks:
            inline = {m.group(1).strip() for m in INLINE.finditer(FENCE.sub("", text))}
            spans = [c for c in spans if c not in inline]
        out += [(rel(page), c.strip()) for c in spans if c.strip().startswith("python -m rag_core ")]
    return out


def without_globals(args: list[str]) -> list[str]:
    """The arguments after ``-v`` and ``--data-dir DIR``, which come before the subcommand."""
    while args and args[0] in ("-v", "--verbose", "--data-dir"):
        args = args[2:] if args[0] == "--data-dir" else args[1:]
    return args


@pytest.mark.parametrize(("page", "command"), shown_rag_core())
def test_every_rag_core_command_shown_parses(page, command):
    parser = build_parser()
    for args in rag_core_args(command):
        try:
            parser.parse_args(args)
        except SystemExit as e:
            pytest.fail(f"{page}: `{command}` does not parse as {args} (exit {e.code})")


@pytest.mark.parametrize(("page", "command"), shown_rag_core(blocks=False))
def test_every_rag_core_command_mentioned_exists_with_its_flags(page, command):
    """A command named in the text (``python -m rag_core eval``, ``bench --team``): its subcommand
    exists and takes the flags named."""
    for args in rag_core_args(command):
        args = without_globals(args)
        assert args and args[0] in SUBCOMMANDS, f"{page}: `{command}`: no subcommand {args[:1]}"
        options = {o for a in SUBPARSERS[args[0]]._actions for o in a.option_strings}
        unknown = [a for a in args[1:] if a.startswith("-") and a.split("=")[0] not in options]
        assert unknown == [], f"{page}: `{command}`: {args[0]} has no {unknown}"


def test_the_command_parser_of_the_test_reads_synopses():
    assert rag_core_args("python -m rag_core docs list | docs delete NAME...") == [
        ["docs", "list"],
        ["docs", "delete", "x"],
    ]
    assert rag_core_args("python -m rag_core ingest F... [--json] [--replace | --keep-both]") == [
        ["ingest", "x", "--json", "--replace"]
    ]
    assert rag_core_args("python -m rag_core eval-set cast|cmrc|sec10q SHARED OUT") == [["eval-set", "cast", "x", "x"]]
    with pytest.raises(SystemExit):
        build_parser().parse_args(rag_core_args("python -m rag_core eval --no-such-flag")[0])


def test_scripts_and_tools_the_docs_run_exist():
    missing = []
    for page in PAGES:
        for command in commands(page):
            for m in re.finditer(r"\b(?:bash|python|\.venv/bin/python)\s+((?:scripts|tools)/[\w./-]+)", command):
                if not (ROOT / m.group(1)).is_file():
                    missing.append(f"{rel(page)}: {m.group(1)}")
    assert missing == []


def test_file_paths_the_docs_name_exist():
    missing = []
    for page in PAGES:
        for code in INLINE.findall(FENCE.sub("", page.read_text(encoding="utf-8"))):
            path = code.split("::")[0].strip()
            if PATH.match(path) and not (ROOT / path).exists():
                missing.append(f"{rel(page)}: {path}")
    assert missing == []


def test_links_between_docs_and_to_files_resolve():
    broken = []
    for page in PAGES:
        for target in LINK.findall(FENCE.sub("", page.read_text(encoding="utf-8"))):
            if re.match(r"[a-z]+:", target):
                continue  # a web address
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                broken.append(f"{rel(page)}: {target}")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                broken.append(f"{rel(page)}: {target} (no such heading)")
    assert broken == []


def test_the_index_lists_every_page_and_says_what_each_command_needs():
    index = (ROOT / "docs" / "README.md").read_text(encoding="utf-8")
    listed = set(LINK.findall(index))
    unlisted = [p.name for p in (ROOT / "docs").glob("*.md") if p.name != "README.md" and p.name not in listed]
    assert unlisted == []
    needs = index.split("## Commands the pages show", 1)[1]
    every = shown_rag_core() + shown_rag_core(blocks=False)
    shown = {without_globals(args)[0] for _, command in every for args in rag_core_args(command)}
    assert sorted(sub for sub in shown if f"`{sub}`" not in needs) == []


def test_pages_stay_reference_pages():
    """Under 400 lines, and no diary: no issue numbers, no dated sections."""
    long = [f"{rel(p)}: {n}" for p in PAGES if (n := len(p.read_text(encoding="utf-8").splitlines())) >= 400]
    assert long == []
    reference = [p for p in PAGES if p.name != "changelog.md"]
    diary = re.compile(r"^#+ .*(\b20\d\d-\d\d-\d\d\b|\bissue \d)|\(issue \d|issue \d+\.\d", re.M | re.I)
    assert [f"{rel(p)}: {m.group(0)}" for p in reference for m in diary.finditer(p.read_text(encoding="utf-8"))] == []


def test_the_chunker_keeps_together_what_architecture_md_says(tmp_path):
    """docs/architecture.md, "What the chunker keeps together": the ingestion's splitter is
    LlamaIndex's SentenceSplitter with the settings' sizes, whose paragraph separator is
    "\\n\\n\\n": paragraphs one blank line apart are cut at sentences, two blank lines apart kept whole."""
    from types import SimpleNamespace

    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.node_parser import SentenceSplitter
    from llama_index.core.schema import Document

    from rag_core.ingestion.service import IngestionService
    from rag_core.settings import load_settings

    service = IngestionService.__new__(IngestionService)
    service.settings = load_settings({}, data_dir=tmp_path)
    service.index = SimpleNamespace(embed_model=MockEmbedding(embed_dim=8), docstore=None, vector_store=None)
    splitter = service._pipeline(lambda done, total: None).transformations[0]
    assert isinstance(splitter, SentenceSplitter) and splitter.paragraph_separator == "\n\n\n"
    assert (splitter.chunk_size, splitter.chunk_overlap) == (256, 32)
    assert "`chunk_size` (256 tokens) and `chunk_overlap` (32" in (ROOT / "docs" / "architecture.md").read_text()

    paragraphs = [f"Alpha{k} one two. Beta{k} three four. Gamma{k} five six." for k in range(8)]
    small = SentenceSplitter(chunk_size=60, chunk_overlap=0)

    def whole_paragraphs(separator: str) -> bool:
        chunks = [n.text for n in small.get_nodes_from_documents([Document(text=separator.join(paragraphs))])]
        return all(set(c.split(separator)) <= set(paragraphs) for c in chunks)

    assert not whole_paragraphs("\n\n") and whole_paragraphs("\n\n\n")
    rows = [f"Line item {k} 12,{k:03d} 34,{k:03d}" for k in range(30)]
    chunks = [n.text for n in small.get_nodes_from_documents([Document(text="\n".join(rows))])]
    assert any(c.split("\n")[-1] not in rows for c in chunks)  # a row cut inside a figure
