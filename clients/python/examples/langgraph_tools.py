"""engram as LangGraph tools: a graph that recalls the user's context before the agent
runs, and gives the agent `search_memory` and `remember` to call.

    ENGRAM_API_KEY=... ENGRAM_BASE_URL=http://127.0.0.1:8080 python langgraph_tools.py alice "which database do we use?"

Pass any LangChain chat model with tool calling to `build_graph(model=...)`; without one
the agent is a stand-in that searches memory once and answers with what it found.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any, Optional, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition

from engram_client import Engram


def memory_tools(engram: Engram, user_id: str) -> list[BaseTool]:
    """`search_memory` and `remember` for one user, for any tool-calling model."""

    @tool
    def search_memory(query: str) -> str:
        """Search what is known about the user: facts, preferences and past conversations."""
        found = engram.search(user_id, query, kinds=["fact", "insight", "event"], limit=5)
        return "\n".join(f"- {r.content}" for r in found.results) or "nothing relevant is remembered"

    @tool
    def remember(statement: str) -> str:
        """Store something the user said that should be remembered in later conversations."""
        engram.add_event(user_id, "user", statement)
        return "remembered"

    return [search_memory, remember]


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    context: str


def stand_in(messages: list[AnyMessage]) -> AIMessage:
    """A model stand-in: search memory for the question, then answer with the result."""
    if isinstance(messages[-1], ToolMessage):
        return AIMessage(content=f"From memory:\n{messages[-1].content}")
    question = next(m.content for m in reversed(messages) if isinstance(m, HumanMessage))
    return AIMessage(content="", tool_calls=[{"name": "search_memory", "args": {"query": question}, "id": "call-1"}])


def build_graph(engram: Engram, user_id: str, model: Optional[Any] = None):
    tools = memory_tools(engram, user_id)
    bound = model.bind_tools(tools) if model is not None else None

    def recall(state: State) -> dict:
        question = state["messages"][-1].content
        return {"context": engram.context(user_id, str(question), max_tokens=400).text}

    def agent(state: State) -> dict:
        if bound is None:
            return {"messages": [stand_in(state["messages"])]}
        prompt = [SystemMessage(f"What you know about the user:\n{state['context']}"), *state["messages"]]
        return {"messages": [bound.invoke(prompt)]}

    graph = StateGraph(State)
    graph.add_node("recall", recall)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "recall")
    graph.add_edge("recall", "agent")
    graph.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: END})
    graph.add_edge("tools", "agent")
    return graph.compile()


def main(user_id: str, question: str) -> None:
    with Engram() as engram:
        final = build_graph(engram, user_id).invoke({"messages": [HumanMessage(question)], "context": ""})
        print(final["messages"][-1].content)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
