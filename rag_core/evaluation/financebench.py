"""FinanceBench's open-source sample as a questions set, split once by company.

The folder (``../shared/data/eval/financebench``) holds ``financebench_dev.jsonl`` (42 analyst
questions with gold answers and evidence pages counted from 0), ``document_information.jsonl``
and ``pdfs/`` (25 filings of 13 companies). Each question becomes an ``EvalQuestion`` whose
gold pages count from 1, whose ``entity_files`` are every filing of its company, whose
``kind`` is the dataset's question type and whose ``group`` is its company's half:

- ``tune``: the half whose answers and failures may be read while improving Docent;
- ``held-out``: the half whose figures are reported before and after a change, never its
  answers, until the change is final. A change that raises the tune half and not this one
  comes out again.

Asked as a user would: ``python -m rag_core eval --corpus <folder>/pdfs --questions <folder>
--modes answer`` (all 25 filings in one library, each question once through the chat).
"""

from __future__ import annotations

import json
from pathlib import Path

from rag_core.errors import ConfigError
from rag_core.evaluation.questions import EvalQuestion

QUESTIONS_FILE = "financebench_dev.jsonl"
DOCUMENTS_FILE = "document_information.jsonl"
TUNE = ("3M", "Activision Blizzard", "AMD", "American Express", "American Water Works", "Coca-Cola", "Corning")
HELD_OUT = ("CVS Health", "JPMorgan", "Kraft Heinz", "Lockheed Martin", "Verizon", "Walmart")


def is_financebench(path: Path | str) -> bool:
    """A FinanceBench folder (its questions file inside), not a questions file."""
    return Path(path).is_dir() and (Path(path) / QUESTIONS_FILE).is_file()


def half_of(company: str) -> str:
    if company in TUNE:
        return "tune"
    if company in HELD_OUT:
        return "held-out"
    raise ConfigError(f"FinanceBench company {company!r} is in neither half; add it to TUNE or HELD_OUT")


def _lines(path: Path) -> list[dict[str, object]]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"Cannot read {path}: {e}") from e
    out = []
    for no, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                out.append(json.loads(line))
            except ValueError as e:
                raise ConfigError(f"{path.name}:{no}: not JSON ({e})") from None
    return out


def load_financebench(folder: Path | str, group: str | None = None) -> list[EvalQuestion]:
    """The set's questions (only ``group``'s half when given), in the dataset's order."""
    folder = Path(folder)
    filings: dict[str, list[str]] = {}
    docs = folder / DOCUMENTS_FILE
    for doc in _lines(docs) if docs.is_file() else []:
        filings.setdefault(str(doc["company"]), []).append(f"{doc['doc_name']}.pdf")
    out = []
    for no, rec in enumerate(_lines(folder / QUESTIONS_FILE), 1):
        company, doc_name = str(rec["company"]), str(rec["doc_name"])
        half = half_of(company)
        if group and half != group:
            continue
        evidence = rec.get("evidence") or []
        assert isinstance(evidence, list)
        pages = sorted({int(e["evidence_page_num"]) + 1 for e in evidence})
        files = sorted({f"{e.get('doc_name') or doc_name}.pdf" for e in evidence} | {f"{doc_name}.pdf"})
        q = EvalQuestion.from_json(
            {
                "id": rec.get("financebench_id") or f"financebench:{no}",
                "question": rec["question"],
                "gold_answer": rec.get("answer"),
                "gold_files": files,
                "gold_pages": pages,
                "entity_files": filings.get(company) or [f"{doc_name}.pdf"],
                "group": half,
                "kind": rec.get("question_type") or "",
            },
            f"{QUESTIONS_FILE}:{no}",
        )
        out.append(q)
    if not out:
        raise ConfigError(f"{folder}: no FinanceBench questions{f' in the {group} half' if group else ''}")
    return out
