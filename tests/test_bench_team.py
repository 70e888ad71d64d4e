"""``bench --team``'s parts that decide its figures: the conversations asked, one person's
turns timed in their own session, and the read-back that says whether every turn is stored,
in order, in the right person's session (a wrong session or order must not count)."""

from __future__ import annotations

import json

from rag_core.bench.team import FOLLOW_UPS, SECOND_FOLLOW_UP, conversations, stored_in_order
from rag_core.bench.team_worker import person_asks
from rag_core.context import build_context


def test_conversations_are_a_question_and_two_follow_ups_over_two_filings():
    chats, files = conversations(7)
    assert len(chats) == 7 and all(len(c) == 3 for c in chats)
    assert len(files) == 2 and all(name.endswith(".pdf") for name in files)
    assert len({c[0] for c in chats}) > 1  # not one conversation repeated
    pairs = [json.loads(line) for line in FOLLOW_UPS.read_text(encoding="utf-8").splitlines() if line.strip()]
    asked = {(p["history"][0], p["question"]): set(p["gold_files"]) for p in pairs}
    assert all(asked[(c[0], c[1])] <= files for c in chats)  # a question and its own follow-up, over those files
    assert all(c[2] == SECOND_FOLLOW_UP for c in chats)


def test_turns_are_timed_and_stored_in_each_persons_session(make_settings, llm, three_docs, capsys):
    ctx = build_context(make_settings(), llm=llm)
    ctx.ingestion.ingest_paths([three_docs])
    people = [
        {"person": "ana@bench.example.org", "questions": ["What colour are bananas?", "And tea?", "How is it made?"]},
        {"person": "ben@bench.example.org", "questions": ["How is green tea made?", "And bananas?", "Where?"]},
    ]
    for p in people:
        mine = ctx.for_person(p["person"])
        person_asks(mine, mine.sessions.create("bench").id, p["questions"], start_at=0.0)
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["person"], r["turn"]) for r in rows] == [(p["person"], n) for p in people for n in range(3)]
    assert all("error" not in r and r["stored"] for r in rows)
    assert all(0 < r["sources_s"] <= r["first_token_s"] <= r["total_s"] for r in rows)
    assert stored_in_order(ctx, rows, people) == {"turns_stored_in_order": 6, "problems": []}

    swapped = [{**r, "session": rows[3]["session"]} if r["person"] == people[0]["person"] else r for r in rows]
    found = stored_in_order(ctx, swapped, people)  # Ana's turns looked for in Ben's session
    assert found["turns_stored_in_order"] == 3 and found["problems"][0].startswith("ana@")
    reordered = [{**p, "questions": list(reversed(p["questions"]))} for p in people]
    assert stored_in_order(ctx, rows, reordered)["turns_stored_in_order"] == 0
