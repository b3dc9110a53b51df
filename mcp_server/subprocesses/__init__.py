"""Child processes: how each is started, stopped and killed (``processes``), and the parser pool
that one server's ``--workers`` share, run by the supervisor (``process_pool``)."""
