"""The render kit both PDFs share: vendor text made printable, HTML from our templates,
and PDF/A-3b from HTML with nothing fetched from outside `templates/`.

    clip / printable   vendor text cut to a limit (saying so) and drawable by the font
    render_html        jinja2, autoescape on: vendor text is only ever text
    render_pdf         WeasyPrint with AssetFetcher, the evidence attached, PDF/A-3b, tagged
    render_drawn       the same, with where the layout put every marked field (`drawn`)

Vendor text is untrusted. It never becomes markup (autoescape), URLs (no link is built
from it), styles (CSS classes come from a closed list) or fetches (the fetcher refuses
everything outside the package's `templates/` directory, and charts are inline SVG).
"""

from __future__ import annotations

import functools
import hashlib
import unicodedata
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import jinja2
from markupsafe import Markup
from weasyprint.urls import URLFetcher, URLFetcherResponse

from evalkit.render.drawn import Drawn, fields_of, to_points
from evalkit.resources import data_dir

TEMPLATES_DIR = data_dir("templates")


class AssetFetcher(URLFetcher):  # type: ignore[misc]
    """WeasyPrint URL fetcher that serves only files under `root` and refuses all else.

    Refusing raises, which WeasyPrint turns into a skipped resource; every URL asked
    for is kept in `calls`, and every refusal in `refused`, so tests can prove that a
    hostile document fetched nothing.
    """

    def __init__(self, root: Path = TEMPLATES_DIR) -> None:
        super().__init__(timeout=1, allowed_protocols=("file",), allow_redirects=False)
        self.root = root.resolve()
        self.calls: list[str] = []
        self.refused: list[str] = []

    def local_path(self, url: str) -> Path | None:
        """The file a URL names if it is a plain file:// URL inside root, else None."""
        parts = urlsplit(url)
        if parts.scheme != "file" or parts.netloc not in ("", "localhost") or parts.query:
            return None
        path = Path(unquote(parts.path)).resolve()
        if not path.is_relative_to(self.root) or not path.is_file():
            return None
        return path

    def fetch(self, url: str, headers: object = None) -> URLFetcherResponse:
        """Serve an asset from root, or refuse."""
        self.calls.append(url)
        path = self.local_path(url)
        if path is None:
            self.refused.append(url)
            raise ValueError(f"evalkit report: refusing to fetch {url[:200]!r}")
        mime = {".css": "text/css", ".svg": "image/svg+xml", ".png": "image/png",
                ".ttf": "font/ttf", ".woff2": "font/woff2"}.get(path.suffix, "")
        return URLFetcherResponse(path.as_uri(), path.read_bytes(),
                                  headers={"Content-Type": mime} if mime else None)


# --------------------------------------------------------------------------- vendor text


@functools.lru_cache(maxsize=1)
def _font_coverage() -> frozenset[int]:
    """Code points the scorecard's font (DejaVu Sans, bundled with matplotlib) can draw."""
    from fontTools.ttLib import TTFont
    from matplotlib import font_manager

    return frozenset(TTFont(font_manager.findfont("DejaVu Sans")).getBestCmap())


#: Bidi overrides and isolates: vendor text must not reorder what is printed around it.
_BIDI_CONTROLS = frozenset(range(0x202A, 0x202F)) | frozenset(range(0x2066, 0x206A))


def printable(text: str) -> str:
    """Text the PDF can draw and a reader can copy back out.

    A glyph no local font has (emoji, most CJK) is shown as [U+XXXX]: WeasyPrint would
    otherwise draw a blank box whose broken ToUnicode map garbles the text of the
    whole page. Control characters and bidi overrides are shown the same way, so vendor
    text cannot hide or reorder what is printed. The original bytes stay attached.
    """
    cov = _font_coverage()
    return "".join(
        c if (c in "\n\t" or (ord(c) in cov and ord(c) not in _BIDI_CONTROLS
                               and unicodedata.category(c) != "Cc"))
        else f"[U+{ord(c):04X}]"
        for c in text)


def clip(text: Any, limit: int) -> str:
    """Vendor text cut to `limit` characters, saying so, and made printable."""
    s = text if isinstance(text, str) else str(text)
    if len(s) > limit * 1.2:  # cutting "[3 more characters]" would help nobody
        s = s[:limit] + f"… [{len(s) - limit:,} more characters]"
    return printable(s)


# --------------------------------------------------------------------------- render


def _env() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES_DIR),
        autoescape=True,  # every .j2 here is HTML: vendor text must never become markup
        undefined=jinja2.ChainableUndefined,  # a phase not run is a missing key, not a crash
        trim_blocks=True, lstrip_blocks=True,
    )


def render_html(context: Mapping[str, object], template: str = "scorecard.html.j2") -> str:
    """A page of ours as HTML, stylesheet inlined; every string from the context is escaped."""
    css = Markup((TEMPLATES_DIR / "scorecard.css").read_text(encoding="utf-8"))
    return _env().get_template(template).render(css=css, **context)


def render_pdf(html: str, attachments: Mapping[str, bytes],
               fetcher: AssetFetcher | None = None) -> bytes:
    """HTML to PDF bytes with the given files attached; only `fetcher` may load resources.

    The document's title, author, subject and keywords come from the HTML head (<title>,
    <meta name="author|description|keywords">), written by the template.
    """
    return render_pdf_box(html, attachments, fetcher)[0]


#: the page-one element a signature's visible block is drawn into (templates/*.j2), and
#: its size in mm: the template reserves the box, the signer fills it
SIGNATURE_ANCHOR = "signature-box"
SIGNATURE_BOX_MM = (70.0, 13.0)


def render_pdf_box(html: str, attachments: Mapping[str, bytes],
                   fetcher: AssetFetcher | None = None
                   ) -> tuple[bytes, tuple[float, float, float, float] | None]:
    """`render_pdf`, and where page one's reserved signature box is, as a PDF rectangle
    (x1, y1, x2, y2 in points from the bottom left), or None when the page has none."""
    drawn = render_drawn(html, attachments, fetcher)
    return drawn.pdf, drawn.signature_box


def render_drawn(html: str, attachments: Mapping[str, bytes],
                 fetcher: AssetFetcher | None = None) -> Drawn:
    """HTML to PDF with the files attached, and where the layout put page one's signature
    box and every marked field (`evalkit.render.drawn`): what `report` writes and what
    `verify` draws again, by the same code (the attachments change no page)."""
    from weasyprint import HTML, Attachment

    fetcher = fetcher or AssetFetcher()
    doc = HTML(string=html, base_url=TEMPLATES_DIR.as_uri() + "/", url_fetcher=fetcher)
    # PDF/A-3 says how each file relates to the document: the evidence is the Data the
    # page was drawn from, the manifest a Supplement describing it
    files = [Attachment(string=data, name=name, url_fetcher=fetcher,
                        description=f"sha256 {sha256(data)}",
                        relationship="Supplement" if name == "manifest.json" else "Data")
             for name, data in attachments.items()]
    # PDF/A-3b: the ISO archive format that allows the embedded evidence, fit to file with a
    # contract; tagged, so the document's structure survives for readers and checkers
    options: dict[str, Any] = {"attachments": files, "pdf_variant": "pdf/a-3b",
                               "pdf_tags": True}
    rendered = doc.render(**options)
    box = None
    page = rendered.pages[0] if rendered.pages else None
    if page is not None and SIGNATURE_ANCHOR in page.anchors:
        box = to_points(page.anchors[SIGNATURE_ANCHOR], page.height)
    pdf: bytes = rendered.write_pdf(**options)
    return Drawn(pdf, box, fields_of(rendered.pages))


def write_document(out_pdf: Path, data: bytes, html_text: str,
                   attachments: Mapping[str, bytes], html: bool = False) -> Path:
    """Write a document's JSON (`data`, as FILE.json), its HTML when asked (FILE.html) and
    the PDF made from that HTML with `attachments`; the JSON's path."""
    out_pdf.parent.mkdir(parents=True, exist_ok=True)
    json_path = out_pdf.with_suffix(".json")
    json_path.write_bytes(data)
    if html:
        out_pdf.with_suffix(".html").write_text(html_text, encoding="utf-8")
    out_pdf.write_bytes(render_pdf(html_text, attachments))
    return json_path


def sha256(data: bytes) -> str:
    """Hex SHA-256 of bytes: what the PDF prints for each attachment."""
    return hashlib.sha256(data).hexdigest()
