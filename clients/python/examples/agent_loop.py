"""An agent loop with long-term memory: before each answer it asks engram for the
context of the user's message, after it remembers both turns.

    ENGRAM_API_KEY=... ENGRAM_BASE_URL=http://127.0.0.1:8080 python agent_loop.py alice

Type messages; an empty line ends. With OPENAI_BASE_URL (and OPENAI_MODEL, OPENAI_API_KEY)
set, an OpenAI-compatible model answers; without, the agent says what it remembers.
"""

from __future__ import annotations

import os
import sys
import uuid

import httpx

from engram_client import Engram


def answer(message: str, context: str) -> str:
    """The model's reply to `message`, with engram's context in its system prompt."""
    base_url = os.environ.get("OPENAI_BASE_URL")
    if not base_url:
        remembered = [line for line in context.splitlines() if line.startswith("- ")]
        return "I remember: " + " | ".join(remembered) if remembered else "I don't know anything about that yet."
    response = httpx.post(
        f"{base_url.rstrip('/')}/chat/completions",
        headers={"Authorization": f"Bearer {os.environ.get('OPENAI_API_KEY', '')}"},
        json={"model": os.environ.get("OPENAI_MODEL", "gpt-4o-mini"), "messages": [
            {"role": "system", "content": f"What you know about the user:\n{context}"},
            {"role": "user", "content": message},
        ]},
        timeout=120,
    )
    response.raise_for_status()
    return response.json()["choices"][0]["message"]["content"]


def main(user_id: str) -> None:
    session_id = f"chat-{uuid.uuid4().hex[:8]}"
    with Engram() as engram:
        for turn, message in enumerate(iter(sys.stdin.readline, "")):
            message = message.strip()
            if not message:
                break
            context = engram.context(user_id, message, max_tokens=400, session_id=session_id)
            reply = answer(message, context.text)
            print(f"agent: {reply}", flush=True)
            # Ids make the call safe to retry: a turn sent twice is stored once.
            engram.add_events([
                {"user_id": user_id, "session_id": session_id, "role": "user", "content": message,
                 "id": f"{session_id}-{turn}-user"},
                {"user_id": user_id, "session_id": session_id, "role": "assistant", "content": reply,
                 "id": f"{session_id}-{turn}-assistant"},
            ])


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "demo-user")
