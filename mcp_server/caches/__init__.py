"""The worker's in-memory caches: the TTL cache layers (``layers.py``), every one of them made once
from one table of bounds by the registry the lifespan owns (``registry.py``), and the one byte
budget they share, with the admission of index builds and the idle trim that gives memory back
(``budget.py``)."""
