"""Signed audit records: ``xai-audit keygen / sign / verify``, ``--sign KEY --signer NAME`` at the end of a run,
every kind of tampering caught and named, keys refused before any audit work and never written out, and
``--approval`` filling the governance block."""

import base64
import json
import shutil

import pytest
from sklearn.datasets import load_diabetes

import xai_plugins.report as report
from xai_plugins.cli import main
from xai_plugins.report.manifest import write_manifest
from xai_plugins.report.record import load_private_key, sign_manifest, verify_directory

xgboost = pytest.importorskip("xgboost")
serialization = pytest.importorskip("cryptography.hazmat.primitives.serialization")

#: a fast audit: one explainer, a few rows, HTML and JSON only
FAST = ("--no-pdf", "--quiet", "--sections", "explanations", "--explainers", "pg2", "--max-rows", "3")
APPROVAL = ("decision: approved with conditions\nconditions: [monthly drift check, no adverse-action use]\n"
            "date: 2026-11-29\napprover: J. Doe\nrole: Chief risk officer\n")


def _run(capsys, *argv):
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _no_audit(*args, **kwargs):
    raise AssertionError("the audit started before the key was checked")


@pytest.fixture(scope="module")
def signed(tmp_path_factory):
    """Inputs, a key pair and a signed audit (HTML, JSON, manifest, signature) in ``out/``."""
    root = tmp_path_factory.mktemp("record")
    X, y = load_diabetes(return_X_y=True, as_frame=True)
    X = X.iloc[:, :4]
    X.iloc[200:260].assign(y=y.iloc[200:260]).to_csv(root / "test.csv", index=False)
    xgboost.XGBRegressor(n_estimators=5, max_depth=2).fit(X.iloc[:200], y.iloc[:200]).save_model(root / "model.json")
    assert main(["keygen", str(root / "key.pem")]) == 0
    code = main(["--model", str(root / "model.json"), "--data", str(root / "test.csv"), "--target", "y",
                 "--out", str(root / "out"), *FAST, "--sign", str(root / "key.pem"), "--signer", "J. Doe"])
    assert code == 0
    return root


def _copy(signed, tmp_path):
    """A copy of the signed audit and its inputs, to tamper with."""
    for name in ("out", "model.json", "test.csv"):
        (shutil.copytree if name == "out" else shutil.copy)(signed / name, tmp_path / name)
    return tmp_path


def test_a_signed_audit_verifies(signed, capsys):
    """Signed at the end of the run; verify re-hashes outputs and inputs and checks the signature: exit 0, one
    summary line, the embedded key said to be self-asserted."""
    sig = json.loads((signed / "out" / "model.manifest.sig.json").read_text())
    assert sig["signer"] == "J. Doe" and sig["algorithm"] == "Ed25519" and sig["key fingerprint"].startswith("sha256:")
    code, out, err = _run(capsys, "verify", signed / "out", "--model", signed / "model.json",
                          "--data", signed / "test.csv")
    assert (code, err) == (0, "")
    assert "self-asserted" in out and out.strip().splitlines()[-1].endswith("all hold")
    code, out, err = _run(capsys, "verify", signed / "out", "--public-key", signed / "key.pub.pem")
    assert (code, err) == (0, "") and "checked against the given public key" in out


def test_sign_subcommand_signs_a_folder(signed, capsys, tmp_path):
    """``xai-audit sign DIR`` (re)signs every manifest; an encrypted key needs its password from the environment."""
    out = _copy(signed, tmp_path) / "out"
    (out / "model.manifest.sig.json").unlink()
    code, _, err = _run(capsys, "verify", out)
    assert code == 1 and "not signed" in err and "model.manifest.json" in err
    key = load_private_key(signed / "key.pem")
    (tmp_path / "enc.pem").write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                         serialization.BestAvailableEncryption(b"s3cret")))
    code, _, err = _run(capsys, "sign", out, "--key", tmp_path / "enc.pem", "--signer", "A. Reviewer")
    assert code == 2 and "is encrypted" in err and "--key-password-env" in err
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XAI_KEY_PASSWORD", "s3cret")
        code, stdout, _ = _run(capsys, "sign", out, "--key", tmp_path / "enc.pem", "--signer", "A. Reviewer",
                               "--key-password-env", "XAI_KEY_PASSWORD")
    assert code == 0 and "model.manifest.sig.json" in stdout
    assert _run(capsys, "verify", out, "--public-key", signed / "key.pub.pem")[0] == 0


def _edit(path, old: bytes = b"", new: bytes = b" "):
    data = path.read_bytes()
    path.write_bytes(data.replace(old, new, 1) if old else data + new)


@pytest.mark.parametrize("target", ["out/model.html", "out/model.json", "out/model.manifest.json",
                                    "out/model.manifest.sig.json", "model.json", "test.csv"])
def test_every_tampering_fails_and_names_the_file(signed, capsys, tmp_path, target):
    """A changed output, manifest, signature record (its signer), model or data file: exit 1, the file named."""
    root = _copy(signed, tmp_path)
    if target.endswith("sig.json"):
        _edit(root / target, b'"J. Doe"', b'"M. Allory"')
    elif target.endswith("manifest.json"):
        _edit(root / target, b'"bytes": ', b'"bytes": 1')
    else:
        _edit(root / target)
    code, out, err = _run(capsys, "verify", root / "out", "--model", root / "model.json", "--data", root / "test.csv")
    assert code == 1 and "all hold" not in out
    assert any(line.startswith(f"xai-audit: verify: {root / target}:") for line in err.splitlines()), err


def test_a_wrong_public_key_fails(signed, capsys, tmp_path):
    assert main(["keygen", str(tmp_path / "other.pem")]) == 0
    code, _, err = _run(capsys, "verify", signed / "out", "--public-key", tmp_path / "other.pub.pem")
    assert code == 1 and "model.manifest.sig.json" in err and "not by the given public key" in err


@pytest.mark.parametrize("kind, message", [
    ("missing", "does not exist"), ("rsa", "not an Ed25519 private key"), ("public", "not a PEM private key"),
    ("encrypted", "is encrypted")])
def test_an_unusable_key_is_refused_before_any_work(signed, capsys, monkeypatch, tmp_path, kind, message):
    """A missing key file, another kind of key, a public key or an encrypted key without its password: exit 2,
    one stderr line, before the audit starts and before anything is written."""
    from cryptography.hazmat.primitives.asymmetric import rsa

    monkeypatch.setattr(report, "audit", _no_audit)
    key = tmp_path / "key.pem"
    if kind == "rsa":
        rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=1024)
        key.write_bytes(rsa_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                              serialization.NoEncryption()))
    elif kind == "public":
        shutil.copy(signed / "key.pub.pem", key)
    elif kind == "encrypted":
        encrypt = serialization.BestAvailableEncryption(b"pw")
        key.write_bytes(load_private_key(signed / "key.pem").private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encrypt))
    code, out, err = _run(capsys, "--model", signed / "model.json", "--data", signed / "test.csv", "--target", "y",
                          "--out", tmp_path / "out", *FAST, "--sign", key, "--signer", "J. Doe")
    assert code == 2 and out == "" and message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_the_private_key_is_in_no_output_file(signed):
    key = load_private_key(signed / "key.pem")
    raw = key.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption())
    secrets = [(signed / "key.pem").read_bytes(), raw, raw.hex().encode(), base64.b64encode(raw)]
    secrets += [line for line in (signed / "key.pem").read_bytes().splitlines() if b"-----" not in line]
    written = list((signed / "out").iterdir())
    assert len(written) == 4
    for path in written:
        data = path.read_bytes()
        assert not any(secret in data for secret in secrets), path.name


def test_a_pdf_is_verified_and_its_tampering_named(signed, capsys, tmp_path):
    """With the PDF: the PDF's hash (and its embedded JSON, where it embeds one) checked; a changed PDF fails."""
    code = main(["--model", str(signed / "model.json"), "--data", str(signed / "test.csv"), "--target", "y",
                 "--out", str(tmp_path / "out"), *FAST[1:], "--sign", str(signed / "key.pem"), "--signer", "J. Doe"])
    assert code == 0 and (tmp_path / "out" / "model.pdf").is_file()
    capsys.readouterr()
    code, out, err = _run(capsys, "verify", tmp_path / "out")
    assert (code, err) == (0, "") and "3 file hash(es)" in out
    _edit(tmp_path / "out" / "model.pdf", b"%%EOF", b"%%EOF\n% appended\n")
    code, _, err = _run(capsys, "verify", tmp_path / "out")
    assert code == 1 and "model.pdf" in err


def test_a_pdf_whose_embedded_json_differs_is_named(signed, tmp_path):
    """The JSON a PDF embeds must be the JSON beside it, even when the manifest and signature are intact."""
    from pypdf import PdfWriter

    writer = PdfWriter()
    writer.add_blank_page(72, 72)
    writer.add_attachment("a.json", b'{"verdict": "pass"}')
    with open(tmp_path / "a.pdf", "wb") as handle:
        writer.write(handle)
    (tmp_path / "a.json").write_bytes(b'{"verdict": "fail"}')
    manifest = write_manifest(tmp_path / "a.manifest.json", [], [tmp_path / "a.json", tmp_path / "a.pdf"])
    sign_manifest(manifest, load_private_key(signed / "key.pem"), "J. Doe")
    found = verify_directory(tmp_path)
    assert found.failures == [f"{tmp_path / 'a.pdf'}: its embedded a.json differs from {tmp_path / 'a.json'}"]
    (tmp_path / "a.json").write_bytes(b'{"verdict": "pass"}')
    write_manifest(manifest, [], [tmp_path / "a.json", tmp_path / "a.pdf"])
    sign_manifest(manifest, load_private_key(signed / "key.pem"), "J. Doe")
    assert verify_directory(tmp_path).ok


def test_approval_fills_the_governance_block(signed, capsys, tmp_path):
    (tmp_path / "approval.yaml").write_text(APPROVAL)
    code, _, err = _run(capsys, "--model", signed / "model.json", "--data", signed / "test.csv", "--target", "y",
                        "--out", tmp_path / "out", *FAST, "--approval", tmp_path / "approval.yaml")
    assert code == 0, err
    data = json.loads((tmp_path / "out" / "model.json").read_text())
    assert data["sections"]["governance"]["data"]["approval"] == {
        "Approver name": "J. Doe", "Approver role": "Chief risk officer", "Decision": "approved with conditions",
        "Conditions": "monthly drift check; no adverse-action use", "Date of approval": "2026-11-29", "Signature": ""}
    html = (tmp_path / "out" / "model.html").read_text()
    assert html.count("approved with conditions") >= 2 and "Chief risk officer" in html   # page 1 and the section
    manifest = json.loads((tmp_path / "out" / "model.manifest.json").read_text())
    assert [e["role"] for e in manifest["inputs"]] == ["model", "test data", "approval"]


@pytest.mark.parametrize("text, message", [
    ("decision: approved\nsignature: forged\n", "unknown key(s) ['signature']"),
    ("decision: maybe\n", "is not one of"), ("date: next week\n", "is not a date")])
def test_a_bad_approval_is_refused_before_any_work(signed, capsys, monkeypatch, tmp_path, text, message):
    monkeypatch.setattr(report, "audit", _no_audit)
    (tmp_path / "approval.yaml").write_text(text)
    code, _, err = _run(capsys, "--model", signed / "model.json", "--data", signed / "test.csv", "--target", "y",
                        "--out", tmp_path / "out", *FAST, "--approval", tmp_path / "approval.yaml")
    assert code == 2 and message in err and err.startswith("xai-audit: error: --approval:")


def test_approval_from_python_fills_the_block_and_a_bad_one_fails_before_any_work():
    """``audit(..., approval=...)`` is the Python twin of ``--approval``: its own option, not keys smuggled into
    the model card (the card embedded in the PDF stays the owner's)."""
    from sklearn.ensemble import RandomForestRegressor

    from xai_plugins.errors import InputError

    X, y = load_diabetes(return_X_y=True, as_frame=True)
    X = X.iloc[:, :3]
    model = RandomForestRegressor(n_estimators=3, max_depth=2, random_state=0).fit(X[:100], y[:100])
    kwargs = dict(sections=["explanations"], explainers=["local_mdi"], max_rows=3, progress=False)
    a = report.audit(model, X[100:130], y[100:130],
                     approval={"decision": "Approved", "approver": "J. Doe", "date": "2026-11-29"}, **kwargs)
    block = a.sections["governance"].data
    assert block["approval"]["Decision"] == "approved" and block["approval"]["Approver name"] == "J. Doe"
    assert block["approval"]["Date of approval"] == "2026-11-29" and not block["card given"]
    assert "J. Doe" in a.to_html()
    with pytest.raises(InputError, match="unknown key"):
        report.audit(model, X[100:130], y[100:130], approval={"signature": "x"}, **kwargs)
