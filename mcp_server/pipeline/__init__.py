"""The document pipelines the tools call: fetch -> parse -> chunk -> index, for one document and for many.

- ``service``: ``DocumentService``, one document through the stages, with the download and document caches.
- ``research``: ``Research``, search across documents, passage lookup, token budgets.
- ``reading``, ``read_windows``: ``Reading`` (read_document, verify_quote, get_page_image) on the service.
"""
