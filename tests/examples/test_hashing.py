"""Tests for lazytools_examples.hashing."""

import base64
import json
import string
import uuid

import pytest
from lazytools_examples import hashing as h

FOX = "The quick brown fox jumps over the lazy dog"
FOX_HMAC = "f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8"


def test_hash_text() -> None:
    assert h.hash_text("abc")["hex"] == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert h.hash_text("abc", "md5")["hex"] == "900150983cd24fb0d6963f7d28e17f72"
    assert len(h.hash_text("abc", "sha512")["hex"]) == 128
    assert base64.b64decode(h.hash_text("abc", "sha1")["base64"]).hex() == "a9993e364706816aba3e25717850c26c9cd0d89d"


def test_hmac_sign() -> None:
    signed = h.hmac_sign(FOX, "key")
    assert signed["hex"] == FOX_HMAC and signed["algorithm"] == "hmac-sha256"


def test_hmac_verify() -> None:
    b64 = base64.b64encode(bytes.fromhex(FOX_HMAC)).decode()
    assert h.hmac_verify(FOX, "key", FOX_HMAC) == {"valid": True}
    assert h.hmac_verify(FOX, "key", "sha256=" + FOX_HMAC)["valid"] is True
    assert h.hmac_verify(FOX, "key", b64)["valid"] is True
    assert h.hmac_verify(FOX, "other key", FOX_HMAC)["valid"] is False
    with pytest.raises(ValueError, match="hex or base64"):
        h.hmac_verify(FOX, "key", "not a signature!")


def test_generate_uuid() -> None:
    ids = h.generate_uuid(5)
    assert len(set(ids)) == 5
    assert all(uuid.UUID(i).version == 4 for i in ids)
    assert h.generate_uuid(1, uppercase=True)[0].isupper()
    with pytest.raises(ValueError, match="between 1 and 1000"):
        h.generate_uuid(0)


def test_uuid_from_name() -> None:
    assert h.uuid_from_name("python.org") == "886313e1-3b8a-5372-9b90-0c9aee199e5d"
    custom = h.uuid_from_name("x", namespace="886313e1-3b8a-5372-9b90-0c9aee199e5d")
    assert uuid.UUID(custom).version == 5
    with pytest.raises(ValueError, match="namespace"):
        h.uuid_from_name("x", namespace="galaxy")


def test_validate_uuid() -> None:
    good = h.validate_uuid("{886313E1-3B8A-5372-9B90-0C9AEE199E5D}")
    assert good == {"valid": True, "version": 5, "variant": uuid.RFC_4122, "canonical": "886313e1-3b8a-5372-9b90-0c9aee199e5d"}
    assert h.validate_uuid("1234")["valid"] is False


def test_generate_password() -> None:
    result = h.generate_password(length=24, symbols=False)
    password = result["password"]
    assert len(password) == 24 and password.isalnum()
    assert any(c.isupper() for c in password) and any(c.islower() for c in password) and any(c.isdigit() for c in password)
    assert result["entropy_bits"] == pytest.approx(24 * 5.954, abs=0.1)
    no_lookalikes = h.generate_password(length=200, exclude_ambiguous=True)["password"]
    assert not set(no_lookalikes) & set("Il1O0o")
    assert set(h.generate_password(8, uppercase=False, digits=False, symbols=False)["password"]) <= set(string.ascii_lowercase)
    with pytest.raises(ValueError, match="between 8 and 256"):
        h.generate_password(4)


def test_check_password_strength() -> None:
    weak = h.check_password_strength("password1")
    assert weak["score"] == 0 and weak["suggestions"][0] == "this is a very common password"
    strong = h.check_password_strength("vT9#qLm2$wXz8!Rb")
    assert strong["score"] == 4 and strong["suggestions"] == []
    assert h.check_password_strength("aaaaaaaaaaaaaaaa")["rating"] == "very weak"


def test_generate_random_token() -> None:
    token = h.generate_random_token(16)
    assert len(token) == 32 and all(c in string.hexdigits for c in token)
    assert len(h.generate_random_token(32, encoding="urlsafe_base64")) == 43
    with pytest.raises(ValueError, match="between 8 and 1024"):
        h.generate_random_token(2)


def _b64url(obj: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


def test_decode_jwt_unverified() -> None:
    token = f"{_b64url({'alg': 'HS256', 'typ': 'JWT'})}.{_b64url({'sub': '42', 'exp': 1_000_000_000})}.c2ln"
    result = h.decode_jwt_unverified("Bearer " + token)
    assert result["verified"] is False and "NOT verified" in result["warning"]
    assert result["header"]["alg"] == "HS256" and result["payload"]["sub"] == "42"
    assert result["claim_times_utc"]["exp"] == "2001-09-09T01:46:40+00:00"
    assert result["expired"] is True
    with pytest.raises(ValueError, match="3 dot-separated parts"):
        h.decode_jwt_unverified("abc.def")
    with pytest.raises(ValueError, match="payload is not valid"):
        h.decode_jwt_unverified(f"{_b64url({'alg': 'none'})}.!!!.")
