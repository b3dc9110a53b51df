"""Redis wiring, all of it: what several worker processes and hosts share when ``REDIS_URL`` is set.

Each class here implements an interface of a lower layer (the rate limiter of ``middleware``, the
cache layer of ``caches.layers``, the shared index store of ``indexes``) and is plugged in by the
server's lifespan through ``backends.open_redis_backends``; no lower layer imports this package.
``store`` holds the clients, the key namespace and the outage bookkeeping they share.
"""
