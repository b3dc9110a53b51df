"""The bundled LangChain ReAct client of the RAG Document Server (run ``python client/agent.py``)."""
