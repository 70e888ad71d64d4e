"""The shared evaluation sets as Docent evaluation sets: a corpus folder and JSONL question files
(``python -m rag_core eval-set``; docs/evaluation.md).

Each converter reads the shared eval folder (``../shared/data/eval``) and writes into ``out``:
``corpus/`` (the documents ``eval --corpus`` indexes), ``questions.jsonl`` and
``unanswerable.jsonl`` (the same domain, not in the corpus, ``"answerable": false``), and returns
counts. Corpus files left unchanged keep their mtimes, which key the evaluation's index cache.

- ``convert_cast``: TREC CAsT 2021/2022 turns, every gold passage a ``.txt`` file, with their
  history and human rewrites; the last topics held out.
- ``convert_cmrc``: CMRC 2018 (Simplified Chinese, SQuAD format), a file per paragraph, with
  Chinese follow-ups and self-contained questions made by rule.
- ``rag_core.evaluation.sec10q``: the SEC 10-Q questions over the shared PDFs, and the figure
  questions with page gold.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

CAST_TURNS = Path("cast") / "derived_cast2021_2022_turns.jsonl"
CMRC_DEV = Path("cmrc2018") / "cmrc2018_dev.json"


def safe_name(stem: str) -> str:
    """A file name made of letters, digits, '-', '_' and '.' only."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in stem)


def write_corpus(folder: Path, files: dict[str, str]) -> None:
    """Write the corpus files, leaving unchanged ones untouched (their mtimes key the
    evaluation's index cache) and removing files that are no longer part of it."""
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.iterdir():
        if old.name not in files:
            shutil.rmtree(old) if old.is_dir() else old.unlink()
    for name, text in files.items():
        path = folder / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")


def write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def read_source(shared: Path, relative: Path) -> Path:
    src = shared / relative
    if not src.exists():
        raise FileNotFoundError(f"{src} not found: give the shared eval folder (…/shared/data/eval)")
    return src


# --------------------------------------------------------------------------- CAsT


def _digest(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:12]


def cast_passage(rec: dict[str, Any]) -> tuple[str, str] | None:
    """(file stem, text) of a turn's gold passage (2021) or response (2022), or None."""
    if rec.get("gold_passage"):
        return str(rec.get("gold_passage_id") or _digest(rec["gold_passage"])), rec["gold_passage"]
    if rec.get("gold_response"):
        return f"{rec['source']}_{rec['topic']}_{rec['turn']}", rec["gold_response"]
    return None


def convert_cast(shared: Path, out: Path, holdout_topics: int = 4) -> dict[str, Any]:
    """Every gold passage a file, so a turn's passage sits among every other topic's; one
    question per turn with its history, ``gold_rewrite`` and ``gold_files``. Topics alternate
    between the years (``--limit`` takes whole conversations of both); the 2022 topics are trees
    flattened with duplicates, so a turn is kept once. The last ``holdout_topics`` topics are
    left out of the corpus: their human rewrites are ``unanswerable.jsonl``."""
    src = read_source(shared, CAST_TURNS)
    records = [json.loads(line) for line in src.read_text(encoding="utf-8").splitlines() if line.strip()]
    topics: dict[tuple[str, int], list[dict[str, Any]]] = {}
    seen: set[tuple[str, int, str]] = set()
    for rec in records:
        key = (rec["source"], rec["topic"], str(rec["turn"]))
        if key not in seen:
            seen.add(key)
            topics.setdefault((rec["source"], rec["topic"]), []).append(rec)
    by_year: dict[str, list[tuple[str, int]]] = {}
    for topic in topics:
        by_year.setdefault(topic[0], []).append(topic)
    order: list[tuple[str, int]] = []
    years = sorted(by_year)
    for i in range(max((len(v) for v in by_year.values()), default=0)):
        order.extend(by_year[y][i] for y in years if i < len(by_year[y]))
    held = set(order[len(order) - holdout_topics :]) if holdout_topics else set()

    texts: dict[str, str] = {}  # file name -> text
    file_of_text: dict[str, str] = {}
    questions: list[dict[str, Any]] = []
    unanswerable: list[dict[str, Any]] = []
    for topic in order:
        for rec in topics[topic]:
            qid = f"{rec['source']}_{rec['topic']}_{rec['turn']}"
            if topic in held:
                if rec.get("gold_rewrite"):
                    unanswerable.append(
                        {"id": qid, "question": rec["gold_rewrite"], "history": [], "answerable": False}
                    )
                continue
            found = cast_passage(rec)
            if found is None:
                continue
            stem, text = found
            name = file_of_text.get(text)
            if name is None:
                name = f"{safe_name(stem)}.txt"
                if name in texts:
                    name = f"{safe_name(stem)}_{_digest(text)}.txt"
                texts[name] = text.strip() + "\n"
                file_of_text[text] = name
            questions.append(
                {
                    "id": qid,
                    "question": rec["question"],
                    "history": list(rec.get("history") or []),
                    "gold_rewrite": rec.get("gold_rewrite") or rec["question"],
                    "gold_files": [name],
                }
            )
    write_corpus(out / "corpus", texts)
    write_jsonl(out / "questions.jsonl", questions)
    write_jsonl(out / "unanswerable.jsonl", unanswerable)
    return {
        "files": len(file_of_text),
        "questions": len(questions),
        "unanswerable": len(unanswerable),
        "topics": len(order) - len(held),
    }


# --------------------------------------------------------------------------- CMRC 2018

Paragraph = tuple[str, str, str, list[dict[str, Any]]]  # id, article title, context, qas


def cmrc_paragraphs(data: dict[str, Any]) -> Iterator[Paragraph]:
    """(paragraph id, title, context, qas) for every paragraph, in file order."""
    for article in data.get("data", []):
        for para in article.get("paragraphs", []):
            yield (
                str(para.get("id") or article.get("id")),
                article.get("title", ""),
                para["context"],
                para.get("qas", []),
            )


def _answers(qa: dict[str, Any]) -> list[str]:
    return [a["text"] for a in qa.get("answers", []) if a.get("text")]


def _round_robin(group: list[Paragraph], answerable: bool) -> list[dict[str, Any]]:
    """Every paragraph's first question, then every second one, ...: ``--limit`` samples many."""
    rows: list[dict[str, Any]] = []
    for j in range(max((len(qas) for *_, qas in group), default=0)):
        for pid, _, _, qas in group:
            if j >= len(qas):
                continue
            qa = qas[j]
            row: dict[str, Any] = {
                "id": qa.get("id") or f"{pid}_{j}",
                "question": qa["question"].strip(),
                "history": [],
            }
            if answerable:
                row["gold_files"] = [f"{safe_name(pid)}.txt"]
                if _answers(qa):
                    row["gold_answer"] = _answers(qa)[0]
            else:
                row["answerable"] = False
            rows.append(row)
    return rows


def cmrc_followups(group: list[Paragraph]) -> list[dict[str, Any]]:
    """Second turns whose subject (the article's title) is only in the first: a paragraph's first
    question and answer are the history, a later question naming the title once gets it replaced
    by 它 ("it"); the original question is the ``gold_rewrite``."""
    rows = []
    for pid, title, _, qas in group:
        title = (title or "").strip()
        if len(qas) < 2 or len(title) < 2 or title not in qas[0]["question"]:
            continue
        first = qas[0]
        for qa in qas[1:]:
            q = qa["question"].strip()
            if q.count(title) == 1:
                answer = _answers(first)
                rows.append(
                    {
                        "id": f"{qa.get('id') or pid}_followup",
                        "question": q.replace(title, "它").replace("《它》", "它"),
                        "history": [first["question"].strip(), answer[0] if answer else ""],
                        "gold_rewrite": q,
                        "gold_files": [f"{safe_name(pid)}.txt"],
                    }
                )
                break
    return rows


def cmrc_standalone(group: list[Paragraph]) -> list[dict[str, Any]]:
    """Each paragraph's first question, asked after a turn about the previous paragraph: the
    rewrite should leave it as it is."""
    rows = []
    for (_, _, _, prev_qas), (pid, _, _, qas) in itertools.pairwise(group):
        if not prev_qas or not qas:
            continue
        answer = _answers(prev_qas[0])
        q = qas[0]["question"].strip()
        rows.append(
            {
                "id": f"{qas[0].get('id') or pid}_standalone",
                "question": q,
                "history": [prev_qas[0]["question"].strip(), answer[0] if answer else ""],
                "gold_rewrite": q,
                "gold_files": [f"{safe_name(pid)}.txt"],
            }
        )
    return rows


def convert_cmrc(shared: Path, out: Path, holdout: int = 48, source: Path = CMRC_DEV) -> dict[str, Any]:
    """Each paragraph a file (its article's title on the first line), single-turn questions with
    the paragraph's file and the first reference answer; the last ``holdout`` paragraphs left out
    (their questions are ``unanswerable.jsonl``); ``followups.jsonl`` and ``standalone.jsonl``
    test condensing in Chinese, where no conversational set exists."""
    src = read_source(shared, source)
    paras = list(cmrc_paragraphs(json.loads(src.read_text(encoding="utf-8"))))
    kept, held = (paras[: len(paras) - holdout], paras[len(paras) - holdout :]) if holdout else (paras, [])
    write_corpus(
        out / "corpus", {f"{safe_name(pid)}.txt": f"{title}\n\n{context.strip()}\n" for pid, title, context, _ in kept}
    )
    sets = {
        "questions": _round_robin(kept, True),
        "unanswerable": _round_robin(held, False),
        "followups": cmrc_followups(kept),
        "standalone": cmrc_standalone(kept),
    }
    for name, rows in sets.items():
        write_jsonl(out / f"{name}.jsonl", rows)
    return {"files": len(kept), **{name: len(rows) for name, rows in sets.items()}}
