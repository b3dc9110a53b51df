"""Words that name the document say which document, not which passage (retrieval/naming.py)."""

from __future__ import annotations

from mcp_server.embedding import ModelRegistry
from mcp_server.retrieval import DocumentIndex
from mcp_server.retrieval.bm25 import analyse_chunks
from mcp_server.retrieval.naming import file_name_words, identity_of, naming_factors
from tests.retrieval._filing import BODY, CERTIFICATIONS, COVER, SIGNATURES, filing_chunks


def filing_index(registry: ModelRegistry) -> DocumentIndex:
    return DocumentIndex.embed(filing_chunks(), registry.embedder_for(10))


def ask(index: DocumentIndex, registry: ModelRegistry, query: str, top_k: int = 5) -> list[str]:
    vector = index.query_vector(query, registry.embedder_by_id(index.model_id).embed_query)
    return [hit.chunk.text for hit in index.search(vector, query, top_k)]


def test_the_words_that_name_the_document_are_its_names_on_the_first_page() -> None:
    chunks = filing_chunks()
    identity = identity_of(chunks, analyse_chunks(chunks), "en")
    query = "In Northwind Traders' 2022 Form 10-K: what was the gross margin?"
    named = [query[a:b] for a, b in identity.naming_words(query)]
    # the opening clause names the document, with its preposition
    assert named == ["In", "Northwind", "Traders", "2022", "Form", "10-K"]
    assert identity.dense_query(query) == "what was the gross margin?"
    # an owner named inside the question, and a form code
    query = "What was Northwind Traders' gross margin as reported in their latest 10-K?"
    assert [query[a:b] for a, b in identity.naming_words(query)] == ["Northwind", "Traders", "10-K"]


def test_a_clause_that_only_names_the_document_is_not_part_of_what_is_asked() -> None:
    chunks = filing_chunks()
    identity = identity_of(chunks, analyse_chunks(chunks), "en")
    asked = "what was the gross margin of the stores?"
    for query in (f"In Northwind Traders' 2022 Form 10-K: {asked}",
                  f"According to Northwind Traders' 2022 annual report, {asked}",
                  f"From Northwind Traders' 10-K for 2022; {asked}"):
        assert identity.asked(query) == asked, query
    asked = "What was the gross margin of the stores?"
    for query in (f"{asked[:-1]}, according to Northwind Traders' 2022 Form 10-K?",
                  f"{asked} (Northwind Traders' 2022 annual report)"):
        assert identity.asked(query) == asked, query
    for query in (
        "What was Northwind Traders' gross margin as reported in their latest 10-K?",  # one clause: the question
        "In Seattle, what did the stores sell?",  # a place the cover writes, not the document's name
        "In Northwind Traders' 2022 Form 10-K: margin?",  # nothing would remain to ask
        # the owner's noun is what is asked, not the document
        "What was Northwind Traders' revenue in 2022, and how did it change over the prior two years?",
        "How did the stores' margins change over the prior years, and what drove Northwind Traders' 2022 sales?",
        # a cover page writes "stock" too: without a year or a code, no clause names the document
        "What drove the loss of the stores, and how did it affect Northwind Traders' stock?",
    ):
        assert identity.asked(query) == query, query


def test_an_owner_whose_name_starts_with_a_digit_names_the_document() -> None:
    from mcp_server.retrieval.naming import Identity
    from mcp_server.text.analysis import analyzer_for

    cover = "3M COMPANY annual report on Form 10-K for the fiscal year ended December 31, 2022"
    tokens = frozenset(t for ts in analyzer_for("en").tokens(cover.split()) for t in ts)
    identity = Identity(tokens, "en", frozenset({"10-k"}))
    assert identity.asked("In 3M's 2022 10-K: which segment dragged growth down?") == \
        "which segment dragged growth down?"


def test_a_question_after_a_clause_naming_its_document_ranks_as_the_question_alone(
    minilm_registry: ModelRegistry,
) -> None:
    from mcp_server.indexes.partial import partial_view

    index = filing_index(minilm_registry)
    embedder = minilm_registry.embedder_by_id(index.model_id)
    base = DocumentIndex.embed(filing_chunks(), embedder, only=())
    for question in ("what was the gross margin of the stores?", "Who certified the report?"):
        named = "In Northwind Traders' 2022 annual report on Form 10-K: " + question
        assert ask(index, minilm_registry, named, 8) == ask(index, minilm_registry, question, 8)
        views = [partial_view(base, q, embedder, 4) for q in (named, question)]
        assert [ask(view, minilm_registry, q, 8) for view, q in zip(views, (named, question), strict=True)] == \
            [ask(views[1], minilm_registry, question, 8)] * 2


def test_a_form_code_written_without_its_hyphen_names_the_document_as_the_cover_page_writes_it() -> None:
    chunks = filing_chunks()
    identity = identity_of(chunks, analyse_chunks(chunks), "en")
    # agents write "10K" for the cover page's "10-K"; a code the cover does not write names nothing
    query = "What are the three main acquisitions mentioned in this 10K report?"
    assert [query[a:b] for a, b in identity.naming_words(query)] == ["10K"]
    assert identity.naming_codes(query) == identity.naming_codes("in this 10-K report") == {"10-k"}
    assert identity.dense_query(query) == "What are the three main acquisitions mentioned in this report?"
    assert identity.naming_words("What changed in this 10Q report?") == []
    # brackets the naming words filled leave with them
    query = "In Northwind Traders' 2022 annual report (Form 10-K): what was the gross margin?"
    assert identity.dense_query(query) == "what was the gross margin?"


def test_the_words_of_a_file_name_are_its_parts_between_punctuation() -> None:
    assert file_name_words("https://example.com/filings/PFIZER_2021_10K.pdf?v=2") == {"pfizer", "2021", "10k"}
    assert file_name_words("https://example.com/docs/Best%20Buy%20Q2-2024.pdf") == {"best", "buy", "q2", "2024"}
    assert file_name_words("/srv/reports/northwind.annual.report.docx") == {"northwind", "annual", "report"}
    assert file_name_words("https://example.com/") == file_name_words("") == frozenset()


def test_a_capitalised_word_names_the_document_when_its_first_page_and_its_file_name_both_write_it() -> None:
    chunks = filing_chunks()
    identity = identity_of(chunks, analyse_chunks(chunks), "en")
    named = identity.named(file_name_words("https://example.com/filings/Northwind_Kenya_2022_10K.pdf"))
    query = "Does Northwind have a falling gross margin?"
    assert identity.naming_words(query) == []  # no possessive, no opening clause: the subject, for all we know
    assert [query[a:b] for a, b in named.naming_words(query)] == ["Northwind"]
    assert named.dense_query(query) == "Does have a falling gross margin?"
    # the body's Kenya is not on the first page; a lower-case word is a word, not a name
    for query in ("Where does Maria Alvarez source tea, Kenya?", "How did northwind stores do?"):
        assert named.naming_words(query) == []
    # a name of two words that the file name writes as one
    joined = identity.named(file_name_words("https://example.com/NorthwindTraders-annual-2022.pdf"))
    query = "How many stores do Northwind Traders run?"
    assert [query[a:b] for a, b in joined.naming_words(query)] == ["Northwind", "Traders"]
    assert joined.naming_words("How many stores does Northwind run?") == []


def test_a_company_its_file_name_also_names_is_which_document_not_what_is_asked(minilm_registry: ModelRegistry) -> None:
    index = filing_index(minilm_registry)
    named = index.named("https://example.com/filings/Northwind_2022_10K.pdf")
    for query, answer in (("Where does Northwind source its tea?", BODY[5]),
                          ("Does Northwind have a falling gross margin?", BODY[2])):
        plain, found = ask(index, minilm_registry, query), ask(named, minilm_registry, query)
        assert plain.index(answer) > plain.index(COVER), query  # the name counted as the subject
        assert found.index(answer) < found.index(COVER), query


def test_lower_case_words_and_names_only_the_body_uses_are_the_questions_subject() -> None:
    chunks = filing_chunks()
    identity = identity_of(chunks, analyse_chunks(chunks), "en")
    # "stock" and "shares" are on the cover page but written as words, not names; "Commission",
    # "Securities" and "Exchange" too, though capitalised, name no owner; Maria Alvarez and Kenya
    # are named in the body only; a bare number is content
    for query in ("How many shares of common stock were outstanding?", "Where does Maria Alvarez source tea, Kenya?",
                  "What did the Securities and Exchange Commission ask about the 20 stores?"):
        assert identity.naming_words(query) == []
        assert identity.dense_query(query) == query


def test_a_naming_word_weighs_as_much_as_a_word_in_half_the_chunks() -> None:
    factors = naming_factors({"rare", "common"}, {"rare": 2, "common": 50}, 100)
    assert factors["common"] == 1.0
    assert 0.1 < factors["rare"] < 0.3


def test_a_question_naming_its_filing_gets_the_content_not_the_cover_or_the_certifications(
    minilm_registry: ModelRegistry,
) -> None:
    index = filing_index(minilm_registry)
    for query in ("In Northwind Traders' 2022 Form 10-K: what was the gross margin?",
                  "What was Northwind Traders' gross margin as reported in their latest 10-K?"):
        found = ask(index, minilm_registry, query)
        assert found[0] == BODY[1], query
        assert not set(CERTIFICATIONS) & set(found[:3])


def test_who_certified_the_report_still_gets_the_certifications_and_signatures(
    minilm_registry: ModelRegistry,
) -> None:
    index = filing_index(minilm_registry)
    assert set(CERTIFICATIONS) <= set(ask(index, minilm_registry, "Who certified the report?"))
    assert ask(index, minilm_registry, "Who signed the report?")[0] == SIGNATURES


def test_a_person_named_in_the_body_is_still_found_by_name(minilm_registry: ModelRegistry) -> None:
    index = filing_index(minilm_registry)
    assert ask(index, minilm_registry, "What does Maria Alvarez lead at Northwind Traders?")[0] == BODY[5]


def test_a_document_of_one_or_two_pages_has_no_identity_to_discount() -> None:
    chunks = filing_chunks()[:2]
    from mcp_server.encoders import FakeEmbedder

    embedder = FakeEmbedder()
    index = DocumentIndex.build(chunks, embedder.embed([c.text for c in chunks]), model_id=embedder.model_id)
    query = "In Northwind Traders' 2022 Form 10-K: what was the gross margin?"
    assert index.identity is None and index.dense_query(query) == query


def test_a_first_answer_to_a_named_question_embeds_the_content_not_the_pages_that_repeat_the_name() -> None:
    from mcp_server.encoders import FakeEmbedder
    from mcp_server.indexes.partial import partial_candidates, partial_view

    embedder = FakeEmbedder()
    base = DocumentIndex.embed(filing_chunks(), embedder, only=())
    query = "In Northwind Traders' 2022 annual report on Form 10-K: what was the gross margin of the stores?"
    # the whole question's best BM25 chunks are the answer and then the pages that repeat the name...
    assert set(CERTIFICATIONS) <= {base.chunks[p].text for p in base.lexical.top(query, 4)}
    assert not set(CERTIFICATIONS) & {base.chunks[p].text for p in partial_candidates(base, query, 4)}
    # ...the partial index embeds those of what it asks: the answer, the income statement, the body
    view = partial_view(base, query, embedder, 4)
    covered = [c.text for c, has in zip(view.chunks, view._vectors.covered, strict=True) if has]
    assert BODY[1] in covered and BODY[2] in covered
    assert not set(CERTIFICATIONS) & set(covered)
