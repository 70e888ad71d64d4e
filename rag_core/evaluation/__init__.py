"""Evaluation: how often retrieval finds the passage that answers a question.

A questions file (``questions``) has one JSON object per line; ``answerable: false`` marks
a question the corpus cannot answer (the relevance gate should refuse it).

Each question is searched in up to three *modes*: ``raw`` (as typed), ``condensed`` (the
engine's rewrite from the history, ``ChatService.condense``, searched as the chat engine
searches a follow-up: with its conversation when ``history_search`` is on) and ``gold``
(the human rewrite alone: the upper bound of condensing). Per mode:

- ``recall``: share of answerable questions with a gold file among the top ``k`` sources;
  ``mrr``: mean reciprocal rank of the first such source (0 beyond ``k``);
  ``page_recall``/``page_mrr``: the same for (file, page) where gold pages are given;
- ``coverage``: mean share of a question's gold files found (differs from recall only for
  questions with several gold files);
- ``answer_recall``: share of questions whose short ``gold_answer`` (a span of at most
  ``SPAN_MAX`` characters) appears in the retrieved text;
- ``rewrite_f1`` (condensed): token F1 of the rewrite against ``gold_rewrite``;
- ``foreign_sources``: mean share of the sources from a document about another entity than
  the question's (questions with ``entity_files``); ``foreign_questions``: share of those
  questions with at least one such source;
- ``false_refusals``: share of answerable questions for which nothing was retrieved;
  ``correct_refusals``: share of unanswerable ones for which nothing was retrieved.

The ``answer`` mode (not in the default modes: it costs one LLM answer per question) asks
each question through the chat's own path with the configured LLM, its history as the
conversation, and scores the answer (``answers``): ``answer_accuracy`` (the gold figures or
short span in the answer, numbers compared as numbers), ``answer_accuracy_page_retrieved``
(the same where a gold page was among the sources), ``citation_page`` (a cited source is a
gold page), ``refusal_rate`` / ``false_refusal_rate`` (the answer says the documents don't
say, for unanswerable / answerable questions), besides the retrieval figures of its sources.

Retrieval only: no answer is generated, so an evaluation costs one search per question
and mode, plus one LLM call per follow-up for ``condensed``. The CLI indexes a corpus
folder into a cache keyed by the files and the settings that shape the index, so a second
run (or a run with other retrieval settings) starts at once (``corpus``). ``metrics``
scores one search and summarises a mode; ``runner`` runs the whole thing.
"""

from rag_core.evaluation.corpus import CACHE_VERSION, READY_MARKER, corpus_key, eval_settings, prepare_corpus
from rag_core.evaluation.metrics import SPAN_MAX, f1_tokens, file_matches, score_sources, summarise, token_f1
from rag_core.evaluation.questions import EvalQuestion, as_questions, load_questions, parse_questions
from rag_core.evaluation.runner import ANSWER, KNOWN_MODES, MODES, CondenseCache, format_table, run_eval

__all__ = [
    "ANSWER",
    "CACHE_VERSION",
    "KNOWN_MODES",
    "MODES",
    "READY_MARKER",
    "SPAN_MAX",
    "CondenseCache",
    "EvalQuestion",
    "as_questions",
    "corpus_key",
    "eval_settings",
    "f1_tokens",
    "file_matches",
    "format_table",
    "load_questions",
    "parse_questions",
    "prepare_corpus",
    "run_eval",
    "score_sources",
    "summarise",
    "token_f1",
]
