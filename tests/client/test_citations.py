"""The agent checks every quote of its answer with verify_quote (a scripted model; a real server)."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage

from client.agent import SYSTEM_PROMPT
from client.citations import QuoteCheck, documents_named, quotes_in, report
from client.fake_llm import ScriptedChatModel
from tests.client._rag import FileServer
from tests.client.helpers import call, say
from tests.client.test_agent import run_agent

PDF = "docs/pdf/multi_page.pdf"
EXACT = "Programs like Scrivener allowed authors to manage large projects"
CHANGED = "Programs like Scrivener allowed authors to manage huge projects"
INVENTED = "Scrivener was first written on clay tablets by Sumerian monks"


def test_quotes_are_the_double_quoted_passages_of_three_words_or_more() -> None:
    answer = ('It says “the typewriter laid the groundwork” and "WordStar" was "first", and again '
              '"the typewriter   laid the\ngroundwork", then "word processing was born, in 1964".')
    assert quotes_in(answer) == ["the typewriter laid the groundwork", "word processing was born, in 1964"]


def test_the_documents_checked_are_those_the_tool_calls_named() -> None:
    messages = [
        HumanMessage("q"),
        AIMessage("", tool_calls=[{"name": "retrieve_chunks", "args": {"document_url": "http://a/x.pdf"}, "id": "1"}]),
        AIMessage("", tool_calls=[{"name": "search_documents", "args": {"document_urls": ["http://b/y.pdf",
                                                                                           "http://a/x.pdf"]},
                                   "id": "2"}]),
    ]
    assert documents_named(messages) == ["http://a/x.pdf", "http://b/y.pdf"]


def test_the_report_says_where_a_quote_stands_what_the_document_says_or_that_it_is_missing() -> None:
    text = report([
        QuoteCheck(quote="a b c", match="exact", document_url="http://h/r.pdf", pages=(4,)),
        QuoteCheck(quote="d e f", match="close", document_url="http://h/r.pdf", pages=(2,), similarity=0.91,
                   wording="d e g"),
        QuoteCheck(quote="x y z", match="none", document_url="http://h/r.pdf"),
    ])
    assert '"a b c": found exactly (page 4, r.pdf)' in text
    assert 'NOT exact, similarity 0.91 (page 2, r.pdf); the document says: "d e g"' in text
    assert '"x y z": NOT FOUND' in text


def test_the_prompt_teaches_verifying_quotes_and_reading_by_cursor() -> None:
    for name in ("verify_quote(document_url, quote)", "read_document(", "next_cursor", "get_page_image("):
        assert name in SYSTEM_PROMPT, name


def test_every_quote_of_an_answer_is_verified_against_the_documents_the_agent_read(
    rag_server: str, corpus_server: FileServer,
) -> None:
    pdf = corpus_server.url(PDF)
    model = ScriptedChatModel(script=[
        call("retrieve_chunks", document_url=pdf, query="Which program helped authors manage large projects?"),
        say(f'The document says "{EXACT}" (page 4), that "{CHANGED}", and that "{INVENTED}".'),
    ])

    code, out, err = run_agent([f"What helped authors in {pdf}?"], rag_server, model)

    assert (code, err) == (0, "")
    assert "Quotes checked against the documents (verify_quote):" in out
    assert f'- "{EXACT}": found exactly (page 4, multi_page.pdf)' in out
    assert f'- "{CHANGED}": NOT exact' in out and "the document says: \"Programs like Scrivener allowed authors " \
        "to manage large projects\"" in out
    assert f'- "{INVENTED}": NOT FOUND in the documents consulted' in out
    # the model's own message is kept as it said it; the check is for the user
    assert len(model.received) == 2


def test_an_answer_without_quotes_gets_no_report(rag_server: str, corpus_server: FileServer) -> None:
    pdf = corpus_server.url(PDF)
    model = ScriptedChatModel(script=[
        call("retrieve_chunks", document_url=pdf, query="typewriter"),
        say("Sholes patented the typewriter in 1868 (page 1)."),
    ])
    code, out, _ = run_agent([f"Who patented the typewriter in {pdf}?"], rag_server, model)
    assert code == 0 and "Quotes checked" not in out
