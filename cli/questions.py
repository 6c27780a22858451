"""MCP servers' questions (elicitation) as `pending` lists them: answered in the inbox, whose form
is generated from the question's schema; the command line only says they wait."""

from __future__ import annotations

from cli.output import short_time, shown, table
from storage import elicitations
from storage.store import ProjectionStore


async def print_questions(store: ProjectionStore) -> None:
    questions = await elicitations.open_questions(store)
    if not questions:
        return
    print(f"\nQuestions from MCP servers, waiting for an answer in the inbox ({len(questions)}):")
    print(
        table(
            ["QUESTION", "ASKED BY", "CONVERSATION", "DECLINED AT", "MESSAGE"],
            [
                [
                    shown(q["question_id"]),
                    shown(q["tool_name"]),
                    shown(q["conversation_id"]),
                    short_time(q["expires_at"]),
                    shown(q["message"]),
                ]
                for q in questions
            ],
        )
    )
