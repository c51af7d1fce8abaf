"""Archival PDF: the audit's PDF/A-3b (XMP identification, sRGB output intent, embedded fonts, the JSON and the
model card as associated files, no encryption, no external references, a stable file identifier, tags)."""

import dataclasses
import hashlib
import io
import json

import pytest
from sklearn.datasets import load_diabetes
from sklearn.ensemble import RandomForestRegressor

from xai_plugins.errors import InputError
from xai_plugins.report import AuditOptions, audit

pikepdf = pytest.importorskip("pikepdf")

PDFAID = "{http://www.aiim.org/pdfa/ns/id/}"
CARD = {"name": "Diabetes forest", "version": "2.1", "owner": "Risk team", "intended use": "tests",
        "out-of-scope uses": "anything else", "data provenance": "scikit-learn's diabetes data"}


@pytest.fixture(scope="module")
def card_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("card") / "card.json"
    path.write_text(json.dumps(CARD, indent=1), encoding="utf-8")
    return path


def _tiny_audit(card_file, rows=slice(300, 330), **options):
    X, y = load_diabetes(return_X_y=True, as_frame=True)
    model = RandomForestRegressor(n_estimators=4, max_depth=3, random_state=0).fit(X[:300], y[:300])
    return audit(model, X[rows], y[rows], X_train=X[:300], y_train=y[:300], sections=["explanations"],
                 explainers=["pg2"], max_rows=8, mc_pairs=0, progress=False, model_card=card_file,
                 title="Tiny archival audit", **options)


@pytest.fixture(scope="module")
def tiny(card_file):
    return _tiny_audit(card_file)


@pytest.fixture(scope="module")
def pdf(tiny, tmp_path_factory):
    """The PDF/A as pikepdf opens it, and the bytes ``to_pdf`` wrote to ``tiny.pdf``."""
    path = tmp_path_factory.mktemp("out") / "tiny.pdf"
    data = tiny.to_pdf(path)
    assert path.read_bytes() == data
    return pikepdf.open(io.BytesIO(data)), data


def _xmp(doc) -> dict:
    with doc.open_metadata(set_pikepdf_as_editor=False, update_docinfo=False) as meta:
        return dict(meta)


def _assert_pdfa3b(doc) -> None:
    xmp = _xmp(doc)
    assert xmp.get(PDFAID + "part") == "3" and xmp.get(PDFAID + "conformance") == "B", xmp


def test_the_default_is_pdfa3b_and_the_option_is_checked():
    assert AuditOptions().pdf_variant == "pdf/a-3b"
    assert AuditOptions(pdf_variant=None).pdf_variant is None
    with pytest.raises(InputError, match="pdf_variant"):
        AuditOptions(pdf_variant="pdf/x-4")
    from xai_plugins.cli import build_parser

    assert build_parser().parse_args(["--pdf-variant", "none"]).pdf_variant is None
    assert build_parser().parse_args(["--pdf-variant", "pdf/a-3u"]).pdf_variant == "pdf/a-3u"


def test_xmp_identifies_pdfa3b_and_carries_the_document_metadata(pdf, tiny):
    doc, _ = pdf
    _assert_pdfa3b(doc)                                       # ISO 19005-3, 6.6.4: pdfaid:part, pdfaid:conformance
    xmp = _xmp(doc)
    assert xmp["{http://purl.org/dc/elements/1.1/}title"] == "Tiny archival audit"
    description = xmp["{http://purl.org/dc/elements/1.1/}description"]
    assert "Diabetes forest version 2.1" in description
    from xai_plugins.report.render import content_digest

    audit_id = f"sha256:{content_digest(tiny)[:16]}"
    assert audit_id in description and audit_id in xmp["{http://ns.adobe.com/pdf/1.3/}Keywords"]
    day, hour = tiny.created[:10], tiny.created[11:16]
    assert xmp["{http://ns.adobe.com/xap/1.0/}CreateDate"] == f"{day}T{hour}Z"
    info = doc.docinfo                                        # 6.6.2.3: the information dictionary agrees with XMP
    assert str(info.Title) == "Tiny archival audit" and str(info.Subject) == description
    assert str(info.CreationDate) == "D:" + day.replace("-", "") + hour.replace(":", "") + "00Z"
    assert (str(info.ModelName), str(info.ModelVersion), str(info.AuditId)) == ("Diabetes forest", "2.1", audit_id)


def test_the_run_id_is_the_audit_id(card_file):
    doc = pikepdf.open(io.BytesIO(_tiny_audit(card_file, run_id="R-17").to_pdf()))
    _assert_pdfa3b(doc)
    assert str(doc.docinfo.AuditId) == "R-17"


def test_an_srgb_output_intent(pdf):
    doc, _ = pdf
    _assert_pdfa3b(doc)
    intents = doc.Root.OutputIntents                          # 6.2.3: a PDF/A output intent with an ICC profile
    assert len(intents) == 1 and intents[0].S == "/GTS_PDFA1"
    profile = intents[0].DestOutputProfile
    assert int(profile.N) == 3
    icc = profile.read_bytes()
    assert icc[36:40] == b"acsp" and icc[16:20] == b"RGB " and b"sRGB" in icc
    assert "sRGB" in str(intents[0].OutputConditionIdentifier)


def test_every_font_is_embedded(pdf):
    doc, _ = pdf
    _assert_pdfa3b(doc)
    descriptors = [o for o in doc.objects if isinstance(o, pikepdf.Dictionary) and o.get("/Type") == "/FontDescriptor"]
    fonts = [o for o in doc.objects if isinstance(o, pikepdf.Dictionary) and o.get("/Type") == "/Font"]
    assert descriptors and fonts                              # 6.2.11.4: every font program embedded
    for descriptor in descriptors:
        assert any(k in descriptor for k in ("/FontFile", "/FontFile2", "/FontFile3")), descriptor.FontName
    for font in fonts:
        assert font.Subtype != "/Type3" or "/Resources" in font
        assert font.Subtype in ("/Type0", "/Type3") or "/FontDescriptor" in font


def test_the_json_and_the_model_card_are_associated_files(pdf, tiny, card_file):
    doc, _ = pdf
    _assert_pdfa3b(doc)
    files = doc.attachments
    assert set(files) == {"tiny.json", "card.json"}
    expected = {"tiny.json": (tiny.to_json().encode("utf-8"), "/Data"),
                "card.json": (card_file.read_bytes(), "/Source")}
    af = {spec.objgen for spec in doc.Root.AF}                # 6.8: every embedded file is an associated file
    assert len(af) == len(doc.Root.AF) == 2
    for name, (content, relationship) in expected.items():
        spec = files[name]
        assert spec.obj.objgen in af
        assert spec.obj.AFRelationship == relationship
        embedded = spec.get_file()
        assert embedded.read_bytes() == content               # exactly the bytes to_json() writes
        stream = embedded.obj
        assert stream.Subtype == "/application/json"          # 6.8: a MIME type and a modification date
        params = stream.Params
        assert bytes(params.CheckSum) == hashlib.md5(content).digest()
        assert int(params.Size) == len(content) and "/ModDate" in params


def test_no_encryption_and_no_external_references(pdf):
    doc, data = pdf
    _assert_pdfa3b(doc)
    assert not doc.is_encrypted and "/Encrypt" not in doc.trailer
    for obj in doc.objects:
        if not isinstance(obj, pikepdf.Dictionary):
            continue
        assert obj.get("/S") not in ("/URI", "/Launch", "/GoToR", "/JavaScript", "/ImportData", "/SubmitForm")
        assert "/JS" not in obj and "/URI" not in obj
        if obj.get("/Type") == "/Filespec":                     # embedded, never a reference to a file outside
            assert "/EF" in obj and "/FS" not in obj
    assert b"http://" not in doc.Root.Metadata.read_bytes().replace(b"http://ns.adobe.com", b"").replace(
        b"http://purl.org", b"").replace(b"http://www.w3.org", b"").replace(b"http://www.aiim.org", b"")


def test_the_same_audit_content_gives_the_same_identifier(pdf, tiny, card_file):
    doc, _ = pdf
    _assert_pdfa3b(doc)
    again = pikepdf.open(io.BytesIO(_tiny_audit(card_file).to_pdf()))
    first = bytes(doc.trailer.ID[0])
    from xai_plugins.report.render import pdf_identifier

    assert first == bytes(again.trailer.ID[0]) == pdf_identifier(tiny)
    other = pikepdf.open(io.BytesIO(_tiny_audit(card_file, rows=slice(330, 360)).to_pdf()))
    assert bytes(other.trailer.ID[0]) != first                # other test data: another identifier


def test_the_pdf_is_tagged(pdf):
    doc, _ = pdf
    _assert_pdfa3b(doc)
    assert doc.Root.MarkInfo.Marked and str(doc.Root.Lang) == "en"
    kinds, alts = set(), []

    def walk(element):
        if isinstance(element, pikepdf.Dictionary) and "/S" in element:
            kinds.add(str(element.S))
            if element.S == "/Figure":
                alts.append(str(element.get("/Alt", "")))
        children = element.get("/K") if isinstance(element, pikepdf.Dictionary) else None
        for child in (children if isinstance(children, pikepdf.Array) else [children]):
            if isinstance(child, pikepdf.Dictionary):
                walk(child)

    walk(doc.Root.StructTreeRoot)
    assert {"/H1", "/H2", "/TH", "/Table", "/Figure"} <= kinds
    assert alts and all(alts)                                 # figures carry their caption as alternate text


def test_pdf_variant_none_gives_a_plain_pdf(tiny):
    plain = dataclasses.replace(tiny, options=tiny.options.replace(pdf_variant=None))
    doc = pikepdf.open(io.BytesIO(plain.to_pdf()))
    assert "/Metadata" not in doc.Root and "/OutputIntents" not in doc.Root and "/AF" not in doc.Root
    assert not doc.attachments and "/StructTreeRoot" not in doc.Root
    assert len(doc.pages) > 1
