"""Reading a report back: its sections (level-2 headings) with their images, tables and text."""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass, field
from html.parser import HTMLParser


@dataclass
class Section:
    title: str
    images: list[bytes] = field(default_factory=list)
    tables: int = 0
    text: str = ""


class ReportParser(HTMLParser):
    """Splits a report into its sections; records every external reference (there must be none)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.sections: list[Section] = [Section("(top)")]
        self.external: list[str] = []
        self.verdicts: list[str] = []
        self._in: list[str] = []
        self._heading: str | None = None
        self._verdict = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "h2":
            self._heading = ""
        if tag == "img":
            src = attrs.get("src", "")
            if src.startswith("data:image/png;base64,"):
                self.sections[-1].images.append(base64.b64decode(src.split(",", 1)[1]))
            else:
                self.external.append(src)
        if tag in ("script", "link", "iframe") or (tag == "a" and attrs.get("href", "#").startswith("http")):
            self.external.append(f"<{tag}> {attrs}")
        if tag == "table":
            self.sections[-1].tables += 1
        if tag == "div" and "verdict" in (attrs.get("class") or ""):
            self._verdict = True
            self.verdicts.append("")

    def handle_endtag(self, tag):
        if tag == "h2" and self._heading is not None:
            self.sections.append(Section(self._heading.strip()))
            self._heading = None
        if tag == "div":
            self._verdict = False

    def handle_data(self, data):
        if self._heading is not None:
            self._heading += data
        else:
            self.sections[-1].text += data
        if self._verdict:
            self.verdicts[-1] += data


def parse_report(text: str) -> ReportParser:
    """Parse a report; every embedded image must be a PNG that Pillow/matplotlib can read."""
    parser = ReportParser()
    parser.feed(text)
    parser.close()
    import matplotlib.image as mpimg

    for section in parser.sections:
        for image in section.images:
            assert image[:8] == b"\x89PNG\r\n\x1a\n"
            array = mpimg.imread(io.BytesIO(image), format="png")
            assert array.shape[0] > 50 and array.shape[1] > 50
    return parser


def by_title(parser: ReportParser) -> dict[str, Section]:
    return {s.title: s for s in parser.sections}
