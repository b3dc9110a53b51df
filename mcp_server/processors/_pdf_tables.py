"""Borderless tables found in a page's text layer: aligned columns of numbers under a header.

Statements and data tables in reports are rarely ruled: what makes them tables is that their
rows hold numbers standing in columns. So a table starts at a *data row* (a row with a number
after its first cell), grows down over data rows and the label-only rows between them (section
labels, the first line of a wrapped label), and takes as its header the rows just above it that
hold short cells, years, or a caption centred over the number columns ("Three Months Ended").
Columns are the x-ranges the body's value cells cover; header cells are placed on the columns
they stand over (widened to the rule drawn under them when there is one), and several header
lines are merged into one Markdown header row.

Nothing here knows a word of any language: only positions, numbers and letter case.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from mcp_server.processors._markdown import markdown_table
from mcp_server.processors._pdf_layout import Cell, PageWords, Row

__all__ = ["Rules", "Table", "detect_tables", "inherit_header"]

_MAX_GAP = 2.6  # rows further apart than this many line heights do not belong to one table
_HEADER_GAP = 2.2
_MAX_HEADER_ROWS = 6
_INDENT = 4.0  # label cells start within this many line heights of the leftmost label
_SHORT_CHARS = 40  # a value or header cell is short text
_SHORT_WORDS = 6

# (x0, x1, y) of a horizontal rule on the page; fetched only when a header needs it.
Rules = Sequence[tuple[float, float, float]]


@dataclass
class Table:
    header_rows: list[Row]
    body_rows: list[Row]
    columns: list[tuple[float, float]]  # value columns, left to right
    has_labels: bool
    header: list[str] = field(default_factory=list)  # label header + one per column
    grid: list[list[str]] = field(default_factory=list)

    @property
    def rows(self) -> list[Row]:
        return self.header_rows + self.body_rows

    @property
    def top(self) -> float:
        return self.rows[0].y0

    @property
    def width(self) -> int:
        return len(self.columns) + (1 if self.has_labels else 0)

    @property
    def has_header(self) -> bool:
        return any(self.header)

    def markdown(self) -> str:
        return markdown_table([self.header, *self.grid])


def detect_tables(page: PageWords, skip: set[int], rules: Callable[[], Rules]) -> list[Table]:
    """The page's tables, top to bottom; rows whose index is in ``skip`` are not looked at."""
    rows = [row for row in page.rows if row.index not in skip]
    kinds = [_kind(row) for row in rows]
    lh = page.line_height
    tables: list[Table] = []
    taken = -1  # rows up to this position belong to an earlier table
    position = 0
    while position < len(rows):
        if kinds[position] != "N":
            position += 1
            continue
        body, last = _grow_body(rows, kinds, position, lh)
        headers, lead = _scan_headers(rows, kinds, position, taken, body, lh)
        body = lead + body
        data_rows = sum(1 for index in body if kinds[index] == "N")
        if data_rows >= 2 or (data_rows == 1 and headers):
            table = _build(rows, headers, body, lh, rules)
            if table is not None and (data_rows >= 2 or len(table.columns) >= 2):
                tables.append(table)
                taken = last
        position = last + 1
    return tables


def _kind(row: Row) -> str:
    """N: data row; Y: years over columns (a header); M: short text cells; S: one cell; P: prose."""
    cells = row.cells
    if len(cells) == 1:
        return "S"
    rest = cells[1:]
    if any(cell.numeric and not cell.year for cell in rest):
        return "N"
    if not all(_short(cell) for cell in rest):
        return "P"
    if any(cell.year for cell in rest):
        return "Y"
    return "M"


def _short(cell: Cell) -> bool:
    return len(cell.text) <= _SHORT_CHARS and cell.text.count(" ") < _SHORT_WORDS


def _grow_body(rows: list[Row], kinds: list[str], start: int, lh: float) -> tuple[list[int], int]:
    """Data rows from ``start`` down, with the label rows between them; ends at a data row."""
    body = [start]
    last = start
    left = rows[start].cells[0].x0
    value0 = _value_start(rows[start])
    for index in range(start + 1, len(rows)):
        row, kind = rows[index], kinds[index]
        if row.y0 - rows[index - 1].y1 > _MAX_GAP * lh:
            break
        if kind == "N":
            first = row.cells[0]
            if not first.numeric or first.year:
                left = min(left, first.x0)
            value0 = min(value0, _value_start(row))
            body.append(index)
            last = index
        elif kind in "SM" and _label_row(row, left, value0, lh):
            body.append(index)
        else:
            break
    return [index for index in body if index <= last], last


def _value_start(row: Row) -> float:
    return min((cell.x0 for cell in row.cells[1:] if cell.numeric), default=row.x1)


def _label_row(row: Row, left: float, value0: float, lh: float) -> bool:
    """A section label (in the label column, or a lone line ending before the values), or a
    label with one text value."""
    first = row.cells[0]
    if first.numeric:
        return False
    if len(row.cells) == 1:  # a label stays left of the numbers; running text crosses them
        return first.x1 < value0 + lh and (first.x0 <= left + _INDENT * lh or first.x1 < value0)
    return len(row.cells) == 2 and first.x0 <= left + _INDENT * lh


def _scan_headers(rows: list[Row], kinds: list[str], start: int, taken: int, body: list[int],
                  lh: float) -> tuple[list[int], list[int]]:
    """Header rows directly above the body (short cells, years, or a caption over the values),
    and the label rows between them and the body ("Current assets"), which join the body."""
    values = [cell for index in body for cell in rows[index].cells[1:] if cell.numeric]
    if not values:
        return [], []
    value0 = min(cell.x0 for cell in values)
    value1 = max(cell.x1 for cell in values)
    table0 = min(rows[index].cells[0].x0 for index in body)
    spans = [(cell.x0, cell.x1) for index in body for cell in rows[index].cells[1:]]
    headers: list[int] = []
    pending: list[int] = []  # label-column lines: section labels, or a title when no header follows
    lead: list[int] = []
    below = rows[start]
    for index in range(start - 1, taken, -1):
        row, kind = rows[index], kinds[index]
        if below.y0 - row.y1 > _HEADER_GAP * lh or len(headers) + len(pending) >= _MAX_HEADER_ROWS:
            break
        if (kind in "MY" and all(_over(cell, spans, lh) for cell in row.cells[1:])) or (
                kind == "S" and _caption_over_values(row.cells[0], value0, value1, table0, lh)):
            if headers:
                headers[:0] = pending
            else:
                lead = pending
            pending = []
            headers.insert(0, index)
        elif kind == "S" and row.x1 < value0:
            pending.insert(0, index)
        else:
            break
        below = row
    return headers, lead


def _over(cell: Cell, spans: list[tuple[float, float]], lh: float) -> bool:
    """Whether a header cell stands over some cell of the body (not over empty space)."""
    return any(min(cell.x1, x1) - max(cell.x0, x0) > -lh for x0, x1 in spans)


def _caption_over_values(cell: Cell, value0: float, value1: float, table0: float, lh: float) -> bool:
    """A lone cell centred over the number columns rather than over the whole table."""
    if cell.x0 < value0 - lh or cell.x1 > value1 + 2 * lh:
        return False
    centre = (cell.x0 + cell.x1) / 2
    return abs(centre - (value0 + value1) / 2) < abs(centre - (table0 + value1) / 2) or cell.x0 >= value0


def _build(rows: list[Row], header_index: list[int], body_index: list[int], lh: float,
           rules: Callable[[], Rules]) -> Table | None:
    body = [rows[index] for index in body_index]
    headers = [rows[index] for index in header_index]
    labels = _label_cells(body, lh)
    columns = _columns([cell for row in body for cell in row.cells if id(cell) not in labels])
    if not columns:
        return None
    # Where labels end, read from rows with values (a label alone on its row may run on).
    label_right = max((row.cells[0].x1 for row in body if id(row.cells[0]) in labels and len(row.cells) > 1),
                      default=0.0)
    label_header, column_headers = _header(headers, _extents(body, columns, labels), label_right, lh, rules)
    has_labels = bool(labels) or bool(label_header)
    table = Table(header_rows=headers, body_rows=body, columns=columns, has_labels=has_labels)
    table.grid = _grid(body, columns, labels, has_labels)
    table.header = ([label_header] if has_labels else []) + column_headers
    return table


def _label_cells(body: list[Row], lh: float) -> set[int]:
    """ids of the cells that are row labels: a lone text cell, or a first cell of text (or a
    year) starting near the leftmost label."""
    firsts = [row.cells[0] for row in body if len(row.cells) > 1 and (not row.cells[0].numeric or row.cells[0].year)]
    labels = {id(row.cells[0]) for row in body if len(row.cells) == 1 and not row.cells[0].numeric}
    if firsts:
        left = min(cell.x0 for cell in firsts)
        labels |= {id(cell) for cell in firsts if cell.x0 <= left + _INDENT * lh}
    return labels


def _columns(cells: list[Cell]) -> list[tuple[float, float]]:
    """x-ranges covered by the value cells' cores: overlapping cores share a column."""
    spans = sorted((cell.core0, cell.core1) for cell in cells)
    columns: list[tuple[float, float]] = []
    for x0, x1 in spans:
        if columns and x0 < columns[-1][1]:
            columns[-1] = (columns[-1][0], max(columns[-1][1], x1))
        else:
            columns.append((x0, x1))
    return columns


def _extents(body: list[Row], columns: list[tuple[float, float]], labels: set[int]) -> list[tuple[float, float]]:
    """Each column's full width, currency signs included: what a header above it may overlap."""
    extents = list(columns)
    for row in body:
        for cell in row.cells:
            if id(cell) not in labels:
                index = _column_of(cell.core0, cell.core1, columns)
                extents[index] = (min(extents[index][0], cell.x0), max(extents[index][1], cell.x1))
    return extents


def _column_of(x0: float, x1: float, columns: list[tuple[float, float]]) -> int:
    best, best_overlap = 0, -1.0
    for index, (c0, c1) in enumerate(columns):
        overlap = min(x1, c1) - max(x0, c0)
        if overlap > best_overlap:
            best, best_overlap = index, overlap
    if best_overlap > 0:
        return best
    centre = (x0 + x1) / 2
    return min(range(len(columns)), key=lambda i: abs(centre - (columns[i][0] + columns[i][1]) / 2))


def _grid(body: list[Row], columns: list[tuple[float, float]], labels: set[int], has_labels: bool) -> list[list[str]]:
    grid: list[list[str]] = []
    previous_gap_ok = False
    for row_number, row in enumerate(body):
        label = " ".join(cell.text for cell in row.cells if id(cell) in labels)
        values: list[list[str]] = [[] for _ in columns]
        for cell in row.cells:
            if id(cell) not in labels:
                values[_column_of(cell.core0, cell.core1, columns)].append(cell.text)
        cells = [" ".join(parts) for parts in values]
        line = ([label] if has_labels else []) + cells
        if grid and has_labels and _continues(label, previous_gap_ok):
            previous = grid[-1]
            if not any(previous[1:]):  # "Adjustments to reconcile ..." / "activities  5,591"
                grid[-1] = [f"{previous[0]} {label}", *cells]
                continue
            if not any(cells):  # the wrapped end of the previous row's label
                previous[0] = f"{previous[0]} {label}"
                continue
        grid.append(line)
        previous_gap_ok = row_number + 1 < len(body) and body[row_number + 1].y0 - row.y1 < row.height
    return grid


def _continues(label: str, close: bool) -> bool:
    return close and bool(label) and label[0].islower()


def _header(headers: list[Row], columns: list[tuple[float, float]], label_right: float, lh: float,
            rules: Callable[[], Rules]) -> tuple[str, list[str]]:
    """The label column's header and one per column: header lines top to bottom, captions repeated."""
    label_parts: list[str] = []
    parts: list[list[str]] = [[] for _ in columns]
    for number, row in enumerate(headers):
        cells = []
        for cell in row.cells:
            if cell.x0 < label_right or cell.x1 <= columns[0][0] - 2 * lh:
                label_parts.append(cell.text)
            else:
                cells.append(cell)
        wide = any(len(_overlapped(cell.x0, cell.x1, columns)) > 1 for cell in cells)
        if 2 <= len(cells) < len(columns) and wide:
            # Fewer captions than columns, some over several ("Three Months Ended", "Six Months
            # Ended"): each column sits under one of them, the one above it or else the nearest.
            for index, (c0, c1) in enumerate(columns):
                parts[index].append(min(cells, key=lambda cell: _distance(cell.x0, cell.x1, c0, c1)).text)
            continue
        # The last header line stands on the table's own rule, which spans every column.
        row_rules = rules if number < len(headers) - 1 else _no_rules
        for cell in cells:
            for index in _spanned(cell, row, columns, label_right, lh, row_rules):
                parts[index].append(cell.text)
    return " ".join(label_parts), [" ".join(texts) for texts in parts]


def _overlapped(x0: float, x1: float, columns: list[tuple[float, float]]) -> list[int]:
    return [index for index, (c0, c1) in enumerate(columns) if min(x1, c1) - max(x0, c0) > 0]


def _distance(x0: float, x1: float, c0: float, c1: float) -> float:
    """How far apart two x-ranges are; overlapping ranges score below zero by their overlap."""
    return max(x0, c0) - min(x1, c1)


def _no_rules() -> Rules:
    return ()


def _spanned(cell: Cell, row: Row, columns: list[tuple[float, float]], label_right: float, lh: float,
             rules: Callable[[], Rules]) -> list[int]:
    """The columns a header cell stands over: those it overlaps, widened to a rule drawn under it."""
    x0, x1 = cell.x0, cell.x1
    centre = (x0 + x1) / 2
    # A rule reaching into the label column underlines the whole table, not this caption.
    under = [(y, r0, r1) for r0, r1, y in rules()
             if row.y1 - 0.5 * lh <= y <= row.y1 + lh and label_right <= r0 <= centre <= r1 and r1 - r0 > x1 - x0]
    if under:
        _, r0, r1 = min(under)
        x0, x1 = min(x0, r0), max(x1, r1)
    return _overlapped(x0, x1, columns) or [_column_of(x0, x1, columns)]


def inherit_header(previous: Table, table: Table, lh: float) -> None:
    """A table continued (on the next page, or below a line of text) without its header takes
    the header and the columns of the table it continues, when its numbers stand in them."""
    if table.has_header or not previous.has_header or table.has_labels != previous.has_labels:
        return
    labels = _label_cells(table.body_rows, lh)
    cells = [cell for row in table.body_rows for cell in row.cells if id(cell) not in labels]
    if not all(any(c0 - lh < cell.core1 and cell.core0 < c1 + lh for c0, c1 in previous.columns) for cell in cells):
        return
    table.columns = previous.columns
    table.grid = _grid(table.body_rows, previous.columns, labels, table.has_labels)
    table.header = list(previous.header)
