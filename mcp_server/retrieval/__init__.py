"""Retrieval: searching an index and ranking what it finds.

``DocumentIndex`` (``index.py``) is one document's hybrid index — dense sentence vectors
(FAISS, ``vectors.py``; the sentences that carry a query's match, ``focus.py``) and BM25
(``bm25.py``) — and its search, a hit grown by its neighbours (``citations/neighbours.py``);
``ranking.py`` holds every ranking rule (fusion, the rerank of the head,
duplicate-dropping), ``pool.py`` ranks many documents' chunks as one list, ``search.py`` searches
an index for a tool's query in a model slot (``Searcher``), ``naming.py`` keeps a document's name
(and ``ranking.TEMPLATE_PRIOR`` its repeated boilerplate, found by ``text/templates.py``) from
deciding a rank.
Building, storing and sharing indexes is ``indexes/``'s job; the models are ``encoders/``'s and
``embedding/``'s; passage ids, neighbour blocks and quote checks ``citations/``'s.
"""

from mcp_server.retrieval.index import MAX_NEIGHBORS, MAX_TOP_K, DocumentIndex

__all__ = ["MAX_NEIGHBORS", "MAX_TOP_K", "DocumentIndex"]
