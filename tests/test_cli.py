"""Command-line rules that need no running server."""

from __future__ import annotations

from mcp_server.__main__ import effective_workers, parse_args


def test_reload_with_several_workers_forces_one() -> None:
    assert effective_workers(4, reload=True) == 1
    assert effective_workers(4, reload=False) == 4


def test_defaults_leave_the_settings_in_charge() -> None:
    args = parse_args([])
    assert (args.transport, args.host, args.port, args.workers, args.reload) == (None, None, None, None, False)
