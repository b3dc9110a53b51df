"""The document pipelines the tools call: fetch -> parse -> chunk -> index, for one document and for many.

- ``service``: ``DocumentService``, one document through the stages, with the download and document caches.
  Its download stage is ``downloads``, its parse stage (and the memory of failed parses) ``parsing``.
- ``research``: ``Research``, search across documents, passage lookup, token budgets.
- ``passages``: a passage id back to its chunk and the window around it (get_passage, get_page_image).
- ``reading``, ``read_windows``: ``Reading`` (read_document, verify_quote, get_page_image) on the service.
"""
