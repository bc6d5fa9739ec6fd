"""A LangGraph graph whose long-term memory is engram, through `EngramStore`: the node
recalls what the store holds about the user before it answers, and stores what the
user asks it to remember.

    ENGRAM_API_KEY=... ENGRAM_BASE_URL=http://127.0.0.1:8080 python langgraph_store.py alice \
        "remember that I ride a green bicycle" "what do I ride?"

Each argument after the user is one message; the replies are printed one per line. The
answering is a stand-in that says what it recalled; a chat model goes in its place.
"""

from __future__ import annotations

import sys
import uuid
from typing import Annotated, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.config import get_config, get_store
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

from engram_client.langgraph import EngramStore


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def chat(state: State) -> dict:
    store = get_store()
    namespace = ("memories", get_config()["configurable"]["user_id"])
    message = str(state["messages"][-1].content)
    if message.lower().startswith("remember that "):
        store.put(namespace, str(uuid.uuid4()), {"content": message[len("remember that "):]})
        return {"messages": [AIMessage("Noted.")]}
    recalled = store.search(namespace, query=message, limit=3)
    if not recalled:
        return {"messages": [AIMessage("I don't know anything about that yet.")]}
    return {"messages": [AIMessage("From memory: " + " | ".join(item.value["content"] for item in recalled))]}


def build_graph(store: EngramStore):
    builder = StateGraph(State)
    builder.add_node("chat", chat)
    builder.add_edge(START, "chat")
    builder.add_edge("chat", END)
    return builder.compile(store=store)


def main(user_id: str, messages: list[str]) -> None:
    graph = build_graph(EngramStore(prefix=("memories",)))
    config = {"configurable": {"user_id": user_id}}
    for message in messages:
        reply = graph.invoke({"messages": [HumanMessage(message)]}, config)["messages"][-1].content
        print(reply, flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
