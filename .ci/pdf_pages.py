"""Renders every page of the given audit PDFs to PNG (pypdfium2), for a person to look at.

Usage: python .ci/pdf_pages.py [PDF ...] [--out DIR] [--scale S]
Without PDFs it renders reports/*.pdf (the demo audits `make demo` writes); pages go to
DIR/<pdf stem>/page-NN.png (default DIR: reports/pages). Not a test: it checks nothing by itself.
"""

import argparse
from pathlib import Path

import pypdfium2 as pdfium


def render(pdf_path: Path, out: Path, scale: float) -> list[Path]:
    """Writes each page of ``pdf_path`` as ``out/<stem>/page-NN.png``; returns the paths."""
    folder = out / pdf_path.stem
    folder.mkdir(parents=True, exist_ok=True)
    document = pdfium.PdfDocument(str(pdf_path))
    paths = []
    for number, page in enumerate(document, start=1):
        path = folder / f"page-{number:02d}.png"
        page.render(scale=scale).to_pil().save(path)
        paths.append(path)
    document.close()
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pdfs", nargs="*", type=Path)
    parser.add_argument("--out", type=Path, default=Path("reports/pages"))
    parser.add_argument("--scale", type=float, default=1.5, help="pixels per PDF point (default 1.5)")
    args = parser.parse_args()
    pdfs = args.pdfs or sorted(Path("reports").glob("*.pdf"))
    if not pdfs:
        parser.error("no PDF given and none in reports/: run `make demo` first")
    for pdf in pdfs:
        paths = render(pdf, args.out, args.scale)
        print(f"{pdf}: {len(paths)} pages -> {paths[0].parent}/")


if __name__ == "__main__":
    main()
