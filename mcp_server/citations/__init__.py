"""Citations: what lets an agent cite a passage and check what it quotes.

``passages.py`` names a chunk of an index so that it can be found again without a download (the
passage ids every search result carries and ``get_passage`` reads); ``quotes.py`` aligns a quote
with one document's wording (``verify_quote``: exact, close or none, and where); ``neighbours.py``
grows a hit into the passage returned, the chunks beside it joined once. None reads a model or an
index: the layers above hand them keys, positions and texts.
"""
