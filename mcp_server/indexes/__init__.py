"""Indexes: building, storing, sharing and caching each document's ``DocumentIndex``.

The lifespan builds ``IndexManager(settings, models, shared=...)`` (a ``SharedIndexStore``:
``redis.index_store.RedisIndexStore`` with ``MCP_INDEX_STORE=redis``, else None);
``retrieve_chunks`` calls ``open`` then ``search``. ``manager.py`` finds an index in memory, on disk
or in the shared store, else has it built (``builds.py``: in the call, or a partial one first —
``partial.py`` — and the complete one in the background); ``store.py`` writes and reads the folder atomically,
``shared.py`` is the store every host reads, ``tiers.py`` the two behind one lease,
``cache_layers.py`` puts the embedders' vector caches under the memory budget.
"""

from mcp_server.indexes.manager import IndexManager, make_index_key
from mcp_server.indexes.shared import MemoryIndexStore, SharedIndexStore
from mcp_server.indexes.store import IndexStore

__all__ = ["IndexManager", "IndexStore", "MemoryIndexStore", "SharedIndexStore", "make_index_key"]
