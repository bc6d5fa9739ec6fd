// @ts-check
// An agent loop with long-term memory: before each answer it asks engram for the
// context of the user's message, after it remembers both turns.
//
//   ENGRAM_API_KEY=... ENGRAM_BASE_URL=http://127.0.0.1:8080 node agent_loop.mjs alice
//
// Type messages; an empty line ends. With OPENAI_BASE_URL (and OPENAI_MODEL,
// OPENAI_API_KEY) set, an OpenAI-compatible model answers; without, the agent says what
// it remembers.

import { randomUUID } from "node:crypto";
import { createInterface } from "node:readline";

import { Engram } from "engram-client";

/**
 * The model's reply to `message`, with engram's context in its system prompt.
 * @param {string} message
 * @param {string} context
 * @returns {Promise<string>}
 */
async function answer(message, context) {
  const baseUrl = process.env.OPENAI_BASE_URL;
  if (!baseUrl) {
    const remembered = context.split("\n").filter((line) => line.startsWith("- "));
    return remembered.length ? `I remember: ${remembered.join(" | ")}` : "I don't know anything about that yet.";
  }
  const response = await fetch(`${baseUrl.replace(/\/+$/, "")}/chat/completions`, {
    method: "POST",
    headers: { Authorization: `Bearer ${process.env.OPENAI_API_KEY ?? ""}`, "Content-Type": "application/json" },
    body: JSON.stringify({
      model: process.env.OPENAI_MODEL ?? "gpt-4o-mini",
      messages: [
        { role: "system", content: `What you know about the user:\n${context}` },
        { role: "user", content: message },
      ],
    }),
  });
  if (!response.ok) throw new Error(`the model answered HTTP ${response.status}`);
  const body = await response.json();
  return body.choices[0].message.content;
}

const userId = process.argv[2] ?? "demo-user";
const sessionId = `chat-${randomUUID().slice(0, 8)}`;
const engram = new Engram();
let turn = 0;
for await (const line of createInterface({ input: process.stdin })) {
  const message = line.trim();
  if (!message) break;
  const context = await engram.context(userId, message, { maxTokens: 400, sessionId });
  const reply = await answer(message, context.text);
  console.log(`agent: ${reply}`);
  // Ids make the call safe to retry: a turn sent twice is stored once.
  await engram.addEvents([
    { user_id: userId, session_id: sessionId, role: "user", content: message, id: `${sessionId}-${turn}-user` },
    { user_id: userId, session_id: sessionId, role: "assistant", content: reply, id: `${sessionId}-${turn}-assistant` },
  ]);
  turn += 1;
}
