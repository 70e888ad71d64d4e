"""Evaluate: how often retrieval finds the right document for a file of questions, and,
in the answer mode, how often the chat's answer holds the gold figure.

The same measurement as ``python -m rag_core eval`` (``rag_core.evaluation.run_eval``),
over the documents already indexed here instead of a corpus folder. The retrieval modes
generate no answer; ``answer`` asks each question through the chat's own path with the
configured LLM. The questions file and the figures are described in docs/evaluation.md.
The last result is kept in ``st.session_state`` across reruns.
"""

from __future__ import annotations

import json
from typing import Any

import streamlit as st

from rag_core import AppContext, DocentError, DocumentRecord
from rag_core.evaluation import ANSWER, KNOWN_MODES, MODES, EvalQuestion, file_matches, parse_questions, run_eval
from ui.context import require_context
from ui.markdown import escape_markdown
from ui.navigation import UPLOAD_PAGE
from ui.progress import ensure_llm, progress_bar
from ui.rebuild import mismatch_notice

RESULT = "eval_result"  # {"result": run_eval's dict, "details": [...], "file": name}
CONDENSE_CACHE = "condense-cache.jsonl"  # in the data folder: a rerun reuses the LLM's rewrites

# figure -> column label; "{k}" is the k of the run
COLUMNS = {
    "recall": "recall@{k}",
    "mrr": "MRR",
    "coverage": "coverage",
    "page_recall": "page recall",
    "page_mrr": "page MRR",
    "answer_recall": "answer recall",
    "rewrite_f1": "rewrite F1",
    "false_refusals": "false refusals",
    "correct_refusals": "correct refusals",
    "answer_accuracy": "answer accuracy",
    "answer_accuracy_page_retrieved": "accuracy, page retrieved",
    "citation_page": "cited gold page",
    "refusal_rate": "refused (unanswerable)",
    "false_refusal_rate": "refused (answerable)",
    "figures_checked": "figures checked",
    "figures_unsupported": "figures not in sources",
    "wrong_answers_marked": "wrong answers marked",
    "right_answers_marked": "right answers marked",
}

FORMAT_HELP = """
One JSON object per line (JSON Lines, UTF-8). Only `question` is required:

| field | meaning |
| --- | --- |
| `question` | the question, as a user would type it |
| `history` | earlier turns, oldest first, alternating user and assistant: `["question", "answer", ...]` |
| `gold_rewrite` | the follow-up written out as a self-contained question |
| `gold_files` | the indexed documents (by file name, as listed on the Upload page) that answer it |
| `gold_pages` | pages (1-based) of those documents that answer it |
| `gold_answer` | a short answer span (at most 100 characters) expected in the retrieved text |
| `answerable` | `false` for a question the documents cannot answer |

Questions without `gold_files` are not counted in recall and MRR.
"""

MODES_HELP = (
    "raw: the question as typed. condensed: the question rewritten from its history by the "
    "LLM, as the chat does. gold: the `gold_rewrite` (the best a rewrite could do). answer: each "
    "question asked through the chat with the configured LLM, its answer scored against `gold_answer`."
)


# ============================================================================ the questions file
def example_file(docs: list[DocumentRecord]) -> str:
    """A small questions file naming the documents indexed here (their questions to be rewritten)."""
    lines: list[dict[str, Any]] = []
    for doc in docs[:2]:
        first = f"What does {doc.name} say?"
        pages = {"gold_pages": [1]} if doc.pages else {}
        lines.append({"id": f"q{len(lines) + 1}", "question": first, "gold_files": [doc.name], **pages})
    doc = docs[0]
    lines.append(
        {
            "id": f"q{len(lines) + 1}",
            "question": "And when was it written?",
            "history": [f"What does {doc.name} say?", "(the answer the chat gave)"],
            "gold_rewrite": f"When was {doc.name} written?",
            "gold_files": [doc.name],
        }
    )
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)


def questions_input(docs: list[DocumentRecord]) -> tuple[list[EvalQuestion], str] | None:
    """The uploader; the parsed questions and the file name, or None (an error is shown)."""
    upload = st.file_uploader(
        "Questions file (.jsonl)",
        type=["jsonl", "json", "txt"],
        key="eval_questions_file",
        help='One JSON object per line, with at least a "question".',
    )
    if upload is None:
        return None
    try:
        questions = parse_questions(upload.getvalue(), upload.name)
    except DocentError as e:
        st.error(escape_markdown(str(e)))
        return None
    describe_questions(questions, [d.name for d in docs])
    return questions, upload.name


def describe_questions(questions: list[EvalQuestion], names: list[str]) -> None:
    graded = sum(1 for q in questions if q.answerable and q.gold_files)
    follow_ups = sum(1 for q in questions if q.history)
    unanswerable = sum(1 for q in questions if not q.answerable)
    st.caption(
        f"{len(questions)} question(s): {graded} with gold files, {follow_ups} follow-up(s) with history, "
        f"{unanswerable} marked unanswerable."
    )
    missing = sorted({g for q in questions for g in q.gold_files if not any(file_matches(n, g) for n in names)})
    if missing:
        shown = ", ".join(missing[:10]) + (f" and {len(missing) - 10} more" if len(missing) > 10 else "")
        st.warning(
            escape_markdown(f"Not indexed here, so never found (each counts as a miss): {shown}"),
            icon="⚠️",
        )
    if not graded:
        st.info("No question has gold_files: recall and MRR cannot be measured, only refusals.")


# ============================================================================ the run
def run(ctx: AppContext, questions: list[EvalQuestion], name: str, k: int, limit: int, modes: list[str]) -> None:
    """Run the evaluation and keep its result (and the per-question details) in session_state."""
    details: list[dict[str, Any]] = []
    try:
        follow_ups = any(q.history for q in questions[: limit or None])
        if ANSWER in modes or ("condensed" in modes and ctx.settings.condense and follow_ups):
            ensure_llm(ctx)  # the local model loads behind a visible status, not inside the run
        result = run_eval(
            ctx,
            questions,
            k=k,
            modes=modes,
            limit=limit or None,
            progress=progress_bar("Evaluating…"),
            condense_cache=ctx.settings.data_dir / CONDENSE_CACHE,
            details=details,
        )
    except DocentError as e:
        st.error(escape_markdown(str(e)))
        return
    st.session_state[RESULT] = {"result": result, "details": details, "file": name}


def figures_table(result: dict[str, Any]) -> dict[str, list[Any]]:
    """One row per mode; only the columns some mode has."""
    modes = result["modes"]
    present = [c for c in COLUMNS if any(c in figures for figures in modes.values())]
    table: dict[str, list[Any]] = {"mode": list(modes)}
    for column in present:
        table[COLUMNS[column].format(k=result["k"])] = [figures.get(column) for figures in modes.values()]
    return table


TRUST_ROWS = {
    "right": "right",
    "right_marked": "right but marked",
    "wrong_marked": "wrong but marked",
    "wrong_unmarked": "wrong and unmarked",
    "refused": "refused",
}


def trust_rows(trust: dict[str, Any]) -> dict[str, list[Any]]:
    """The trust table (answer mode): one row per slice (all, figure questions, each group and
    kind), the five outcomes as counts, and the share with a gold page among the sources."""
    slices: list[tuple[str, dict[str, Any]]] = [("all", trust["all"])]
    every = trust["all"]
    slices.append(
        ("figure questions", {r: every[f"figure_{r}"] for r in TRUST_ROWS} | {"scored": every["figure_questions"]})
    )
    for field in ("by_group", "by_kind"):
        slices += [(name, t) for name, t in trust.get(field, {}).items()]
    table: dict[str, list[Any]] = {"questions": [name for name, _ in slices]}
    table["scored"] = [t["scored"] for _, t in slices]
    for row, label in TRUST_ROWS.items():
        table[label] = [t[row] for _, t in slices]
    table["gold page in sources"] = [t.get("page_in_sources") for _, t in slices]
    return table


def show_result(saved: dict[str, Any]) -> None:
    result = saved["result"]
    st.subheader("Result")
    st.caption(
        escape_markdown(
            f"{result['n']} question(s) from {saved['file']}, k = {result['k']}, {result['seconds']} s"
            + (f" (rewriting {result['timings']['condense_s']} s)" if result["timings"].get("condense_s") else "")
        )
    )
    table = figures_table(result)
    st.dataframe(
        table,
        hide_index=True,
        column_config={label: st.column_config.NumberColumn(format="%.3f") for label in table if label != "mode"},
    )
    trust = result["modes"].get("answer", {}).get("trust")
    if trust:
        st.markdown("**Trust table** (answerable questions: what a reader relying on the answers gets)")
        st.dataframe(trust_rows(trust), hide_index=True)
    errors = {mode: f["condense_errors"] for mode, f in result["modes"].items() if f.get("condense_errors")}
    if errors.get("condensed"):
        st.warning(
            f"{errors['condensed']} rewrite(s) failed; those questions were searched as typed.",
            icon="⚠️",
        )
    st.caption(
        "recall@k: share of questions with a gold file among the top k sources. MRR: mean of 1/rank of the "
        "first such source. answer recall: the gold answer is in the retrieved text. rewrite F1: the rewrite "
        "against gold_rewrite. false refusals: nothing retrieved for an answerable question. answer accuracy: "
        "the gold answer (its figures, number formats normalised) is in the chat's answer; accuracy, page "
        "retrieved: the same over questions whose gold page was among the sources. cited gold page: a cited "
        "source is a gold page. refused: the answer says the documents don't cover it. Trust table: right, or "
        "right but marked by the figure check (a false alarm), wrong but marked, wrong and unmarked, refused; "
        "scored without a model. See docs/evaluation.md."
    )
    details = "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in saved["details"])
    st.download_button(
        "Download the per-question details (.jsonl)",
        details,
        file_name="eval-details.jsonl",
        mime="application/jsonl",
        key="eval_details",
    )
    with st.expander("Settings used"):
        st.json(result["settings"])


# ============================================================================ the page
ctx = require_context()
st.title("📏 Evaluate")
st.caption(
    "How often retrieval finds the right document for your questions, over the documents indexed "
    "here: the same measurement as `python -m rag_core eval`. The answer mode also asks the model and "
    "scores its answers."
)
if mismatch_notice(ctx):
    st.stop()

docs = ctx.ingestion.documents()
if not docs:
    st.info("No document is indexed yet. Upload the documents your questions are about first, then evaluate.")
    st.page_link(UPLOAD_PAGE, label="Upload documents", icon="📤")
    st.stop()

with st.expander("The questions file", expanded=RESULT not in st.session_state):
    st.markdown(FORMAT_HELP)
    st.download_button(
        "Download an example for the documents indexed here",
        example_file(docs),
        file_name="questions-example.jsonl",
        mime="application/jsonl",
        key="eval_example",
        help="Replace its questions with real ones that these documents answer.",
    )

chosen = questions_input(docs)
left, right = st.columns(2)
with left:
    k = st.number_input("Sources per question (k)", min_value=1, max_value=20, value=5, step=1, key="eval_k")
with right:
    limit = st.number_input("Only the first N questions (0 = all)", min_value=0, value=0, step=1, key="eval_limit")
modes = st.multiselect("Modes", list(KNOWN_MODES), default=list(MODES), key="eval_modes", help=MODES_HELP)
if chosen and ANSWER in modes:
    asked = len(chosen[0][: limit or None])
    st.warning(
        f"answer asks the model once per question ({asked} here): 15-40 s each with the local model on "
        "2 cores. Try it on the first few questions (N above) first.",
        icon="⏱️",
    )
if chosen and "condensed" in modes:
    follow_ups = sum(1 for q in chosen[0][: limit or None] if q.history)
    if follow_ups and ctx.settings.condense:
        st.warning(
            f"condensed calls the LLM once per follow-up ({follow_ups} here): about 10 s each with the "
            "local model. Rewrites are cached, so a second run is quick.",
            icon="⏱️",
        )
    elif follow_ups:
        st.info("Rewriting follow-ups is off in the settings: condensed searches the questions as typed.")

if st.button("Run the evaluation", key="eval_run", type="primary", disabled=not chosen or not modes) and chosen:
    run(ctx, chosen[0], chosen[1], int(k), int(limit), modes)

if RESULT in st.session_state:
    show_result(st.session_state[RESULT])
