"""A self-contained HTML document: sections of text, tables and images inline (base64 PNG), no external asset.

The page is at most 60 em wide and every image is scaled to the column (``max-width: 100%``), so that a
report opened in a browser never scrolls sideways; a wide table scrolls inside its own box.
"""

from __future__ import annotations

import base64
import html
import io
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure as MplFigure

__all__ = ["Document", "figure_png", "format_value", "html_writer", "write_html"]

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 0 auto;
       max-width: 60em; padding: 1em 1.5em 3em; color: #1b1b1b; line-height: 1.45; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { border-bottom: 2px solid #ddd; padding-bottom: 0.2em;
     margin-top: 2em; } h3 { margin-bottom: 0.3em; }
.verdict { font-size: 1.1em; padding: 0.6em 0.9em; border-radius: 4px; margin: 1em 0; }
.passed { background: #e6f4ea; border-left: 6px solid #1e7b34; }
.failed { background: #fdecea; border-left: 6px solid #b3261e; }
.unjudged { background: #eceff3; border-left: 6px dashed #4a5563; }
.private { background: #fff4e5; border-left: 6px solid #b26a00; padding: 0.5em 0.9em; font-size: 0.95em; }
figure { margin: 1em 0; } figure img { max-width: 100%; height: auto; display: block; }
figcaption { font-size: 0.9em; color: #444; margin-top: 0.3em; }
.grid { display: flex; flex-wrap: wrap; gap: 0 2%; } .grid figure { flex: 0 1 49%; min-width: 18em; }
.table { overflow-x: auto; max-width: 100%; margin: 0.6em 0 1em; }
table { border-collapse: collapse; font-size: 0.88em; }
th, td { border-bottom: 1px solid #e3e3e3; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; } th { background: #f5f5f5; }
details { margin: 0.6em 0 1em; } summary { cursor: pointer; color: #333; }
nav ol { columns: 2; font-size: 0.95em; } p.note { color: #444; font-size: 0.95em; }
"""


def write_html(path: str | os.PathLike[str], text: str) -> Path:
    """Write a page whole: to a hidden file beside ``path`` (its folder created), then renamed over it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)
    return path


def html_writer(render: Callable[[], str]) -> Callable[[Path], None]:
    """A writer of the page ``render()`` returns, rendered when written (for
    :meth:`bayessdc.synthesis.output.OutputFolder.write_private_file`, beside its JSON and Parquet writers)."""
    return lambda path: Path(path).write_text(render(), encoding="utf-8")


def figure_png(figure: MplFigure, dpi: int = 110) -> str:
    """The figure as a ``data:`` URI of a PNG (closed afterwards, so that figures do not pile up in memory)."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def format_value(value: Any) -> str:
    """A number or value as a table shows it (4 significant digits, thousands separated)."""
    if value is None:
        return "n/a"
    if isinstance(value, bool | np.bool_):
        return "yes" if value else "no"
    if isinstance(value, int | np.integer):
        return f"{int(value):,}"
    if isinstance(value, float | np.floating):
        value = float(value)
        if not np.isfinite(value):
            return "n/a" if np.isnan(value) else str(value)
        if value != 0 and (abs(value) >= 1e6 or abs(value) < 1e-3):
            return f"{value:.3e}"
        return f"{value:,.4g}"
    if isinstance(value, list | tuple):
        text = ", ".join(format_value(v) for v in value[:12])
        return text + (f", ... ({len(value)} in all)" if len(value) > 12 else "")
    if isinstance(value, Mapping):  # a description's nested part (a policy's criterion): read as words, not a repr
        return "(" + "; ".join(f"{k}: {format_value(v)}" for k, v in value.items()) + ")"
    return str(value)


@dataclass
class Document:
    """An HTML report built section by section.

    Parameters
    ----------
    title
        The page's title and first heading.
    """

    title: str
    parts: list[str] = field(default_factory=list)
    toc: list[tuple[str, str]] = field(default_factory=list)

    def heading(self, text: str, level: int = 2) -> None:
        """A heading; level-2 headings are listed in the contents."""
        anchor = f"s{len(self.toc) + 1}"
        if level == 2:
            self.toc.append((anchor, text))
            self.parts.append(f'<h2 id="{anchor}">{html.escape(text)}</h2>')
        else:
            self.parts.append(f"<h{level}>{html.escape(text)}</h{level}>")

    def paragraph(self, text: str, css: str = "") -> None:
        """A paragraph of plain text (escaped)."""
        klass = f' class="{css}"' if css else ""
        self.parts.append(f"<p{klass}>{html.escape(text)}</p>")

    def raw(self, markup: str) -> None:
        """Markup added as it is (built by this module's callers from escaped parts only)."""
        self.parts.append(markup)

    def verdict(self, text: str, passed: bool | None) -> None:
        """A verdict, boxed in green (passed), red (failed) or grey with a dashed edge (``None``: judged by
        nothing, so that a release no criterion applied to never looks like one that met its criteria)."""
        css = "unjudged" if passed is None else "passed" if passed else "failed"
        self.parts.append(f'<div class="verdict {css}">{html.escape(text)}</div>')

    def figure(self, figure: MplFigure, caption: str = "", alt: str = "") -> None:
        """An image of a matplotlib figure, inline."""
        self.parts.append(_figure_markup(figure, caption, alt))

    def figures(self, figures: Iterable[tuple[MplFigure, str, str]]) -> None:
        """Several small figures side by side (two per row on a wide screen)."""
        self.parts.append('<div class="grid">' + "".join(_figure_markup(f, c, a) for f, c, a in figures) + "</div>")

    def table(
        self, frame: pd.DataFrame | Mapping[str, Any], caption: str = "", index: bool = False, folded: bool = False
    ) -> None:
        """A table of a DataFrame, or of a mapping as two columns (what, value); ``folded``: shown on a click
        on its caption (a long table the reader may skip)."""
        aligned = not isinstance(frame, Mapping)  # numbers right-aligned in a column of numbers only
        if isinstance(frame, Mapping):
            frame = pd.DataFrame({"": list(frame), "value": list(frame.values())})
        head = ([frame.index.name or ""] if index else []) + [str(c) for c in frame.columns]
        rows = []
        for key, row in frame.iterrows():
            cells = [f"<td>{html.escape(format_value(key))}</td>"] if index else []
            for value in row:
                numeric = aligned and isinstance(value, int | float | np.integer | np.floating) and not isinstance(
                    value, bool
                )
                klass = ' class="num"' if numeric else ""
                cells.append(f"<td{klass}>{html.escape(format_value(value))}</td>")
            rows.append("<tr>" + "".join(cells) + "</tr>")
        header = "<tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr>"
        body = f"<thead>{header}</thead><tbody>{''.join(rows)}</tbody>"
        if folded:
            self.parts.append(f'<details><summary>{html.escape(caption)}</summary><div class="table"><table>{body}'
                              "</table></div></details>")
        else:
            cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
            self.parts.append(f'<div class="table"><table>{cap}{body}</table></div>')

    def render(self) -> str:
        """The whole page."""
        contents = "".join(f'<li><a href="#{a}">{html.escape(t)}</a></li>' for a, t in self.toc)
        return (
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{html.escape(self.title)}</title><style>{STYLE}</style></head><body>"
            f"<h1>{html.escape(self.title)}</h1><nav><ol>{contents}</ol></nav>"
            + "\n".join(self.parts)
            + "</body></html>\n"
        )


def _figure_markup(figure: MplFigure, caption: str, alt: str) -> str:
    uri = figure_png(figure)
    cap = f"<figcaption>{html.escape(caption)}</figcaption>" if caption else ""
    return f'<figure><img src="{uri}" alt="{html.escape(alt or caption)}">{cap}</figure>'
