"""A questions file: one JSON object per line (JSON Lines, UTF-8)::

    {"id": "q1", "question": "And how likely is it to spread?",
     "history": ["What are the common types of breast cancer?", "Ductal carcinoma ..."],
     "gold_rewrite": "How likely is lobular carcinoma to spread?",
     "gold_files": ["t106_p2.txt"], "gold_pages": [3], "gold_answer": "20% to 40%",
     "answerable": true}

Only ``question`` is required. ``history`` alternates user and assistant turns, oldest
first. ``gold_pages`` are 1-based pages of the ``gold_files``. ``answerable: false`` marks
a question the corpus cannot answer. ``entity_files``: every document about what the question
names (a company's filings); a source from any other is another entity's. A bad line is
reported by file and line number.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, StrictStr, ValidationError, field_validator

from rag_core.errors import ConfigError

# What each field must be, in the words an error message uses.
_EXPECTED = {
    "question": 'a non-empty "question"',
    "history": '"history" must be a list of strings (user, assistant, user, ...)',
    "gold_files": '"gold_files" must be a list of file names',
    "gold_pages": '"gold_pages" must be a list of page numbers',
    "entity_files": '"entity_files" must be a list of file names',
}


class EvalQuestion(BaseModel):
    """One line of a questions file."""

    model_config = ConfigDict(extra="ignore")

    id: str = ""
    question: str
    history: list[StrictStr] = []
    gold_rewrite: str | None = None
    gold_files: list[StrictStr] = []
    gold_pages: list[int] = []
    gold_answer: str | None = None
    answerable: bool = True
    entity_files: list[StrictStr] = []  # every document about what the question names (any other is foreign)
    group: str = ""  # a set's half ("tune", "held-out"): the trust table is reported per group
    kind: str = ""  # a set's question type: the trust table is reported per kind

    @field_validator("question", mode="before")
    @classmethod
    def _not_blank(cls, value: Any) -> str:
        text = "" if value is None else str(value).strip()
        if not text:
            raise ValueError("empty")
        return text

    @field_validator("answerable", mode="before")
    @classmethod
    def _truthy(cls, value: Any) -> bool:
        return bool(value)

    @field_validator("gold_pages", mode="before")
    @classmethod
    def _pages(cls, value: Any) -> Any:
        """Numbers, or digits in strings ("3"); never booleans."""
        if value is None:
            return []
        if isinstance(value, list):
            return [p.strip() if isinstance(p, str) and p.strip().isdigit() else _strict_int(p) for p in value]
        return value

    @field_validator("gold_rewrite", "gold_answer", mode="before")
    @classmethod
    def _text_or_none(cls, value: Any) -> Any:
        if value in (None, ""):
            return None
        text = str(value)
        return text.strip() or None

    @classmethod
    def from_json(cls, obj: Any, where: str = "") -> EvalQuestion:
        """Validate one decoded line; ``where`` ("file:line") prefixes the error message."""
        if not isinstance(obj, dict):
            raise ConfigError(f'{where}: each line needs a JSON object with a non-empty "question"')
        data = {
            k: ([] if v is None and k in ("history", "gold_files", "gold_pages", "entity_files") else v)
            for k, v in obj.items()
        }
        try:
            q = cls.model_validate(data)
        except ValidationError as e:
            field = str(e.errors()[0]["loc"][0]) if e.errors() and e.errors()[0]["loc"] else "question"
            if field in ("question",) or field not in _EXPECTED:
                raise ConfigError(f'{where}: each line needs a JSON object with a non-empty "question"') from None
            raise ConfigError(f"{where}: {_EXPECTED[field]}") from None
        q.id = str(obj.get("id") or where)
        return q

    def history_pairs(self) -> list[tuple[str, str]]:
        """(role, text) pairs, oldest first, as ``ChatService.condense`` takes them."""
        return [("user" if i % 2 == 0 else "assistant", text) for i, text in enumerate(self.history)]


def _strict_int(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError("not a page number")
    return value


def load_questions(path: Path | str) -> list[EvalQuestion]:
    """Read a questions file (JSONL, UTF-8); blank lines are skipped."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ConfigError(f"Cannot read the questions file {path}: {e}") from e
    return parse_questions(data, path.name)


def parse_questions(data: bytes | str, name: str = "questions") -> list[EvalQuestion]:
    """Questions from the text of a questions file (as uploaded); errors name ``name`` and the line."""
    import json

    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8-sig")
        except UnicodeDecodeError as e:
            raise ConfigError(f"{name}: not UTF-8 text (byte {e.start}); save the file as UTF-8") from None
    out = []
    for no, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as e:
            raise ConfigError(f"{name}:{no}: not JSON ({e})") from None
        out.append(EvalQuestion.from_json(obj, f"{name}:{no}"))
    if not out:
        raise ConfigError(f"{name}: no questions (one JSON object per line)")
    return out


def as_questions(questions: Any) -> list[EvalQuestion]:
    """EvalQuestions from EvalQuestions, dicts in the file format, or a path to a JSONL file."""
    if isinstance(questions, (str, Path)):
        return load_questions(questions)
    return [
        q if isinstance(q, EvalQuestion) else EvalQuestion.from_json(q, f"question {i + 1}")
        for i, q in enumerate(questions)
    ]
