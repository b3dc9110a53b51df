"""Text: what the later layers read in a document's words, with no model and no index.

``language.py`` detects languages (and scripts) of a text or its passages; ``analysis.py`` builds
each language's BM25 analyzer (``lexical.py`` the tokens every analyzer starts from);
``sentences.py`` cuts a chunk into the units a dense vector embeds (sentences, table rows);
``templates.py`` finds the passages a document repeats as a form (near-duplicates, index pages);
``analysed.py`` holds a document's chunks as BM25 reads them (token ids over one vocabulary).
Nothing is imported here: a parser's worker process loads only ``language``.
"""
