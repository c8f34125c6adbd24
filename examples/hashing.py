"""Hashing and secrets: digests, HMAC, UUIDs, passwords, random tokens, JWT inspection."""

import base64
import binascii
import hashlib
import hmac
import json
import math
import secrets
import string
import uuid
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import Field

from ._common import ensure_max_length, json_ready

__all__ = [
    "hash_text",
    "hmac_sign",
    "hmac_verify",
    "generate_uuid",
    "uuid_from_name",
    "validate_uuid",
    "generate_password",
    "check_password_strength",
    "generate_random_token",
    "decode_jwt_unverified",
]

Algorithm = Literal["md5", "sha1", "sha224", "sha256", "sha384", "sha512", "sha3_256", "sha3_512", "blake2b", "blake2s"]
HmacAlgorithm = Literal["md5", "sha1", "sha256", "sha384", "sha512"]


def hash_text(
    text: Annotated[str, Field(description="Text to hash (encoded as UTF-8).")],
    algorithm: Annotated[Algorithm, Field(description="Hash function: md5, sha1, sha256, sha512, sha3_256, blake2b, ...")] = "sha256",
) -> dict[str, str]:
    """Compute the MD5, SHA-1, SHA-256, SHA-512, SHA-3 or BLAKE2 hash (checksum, digest) of a text."""
    ensure_max_length(text, "text", 10_000_000)
    if algorithm not in hashlib.algorithms_available:
        raise ValueError(f"unsupported algorithm {algorithm!r}")
    digest = hashlib.new(algorithm, text.encode("utf-8")).digest()
    return {"algorithm": algorithm, "hex": digest.hex(), "base64": base64.b64encode(digest).decode("ascii")}


def hmac_sign(
    message: Annotated[str, Field(description="Message to authenticate.")],
    key: Annotated[str, Field(description="Secret key (UTF-8 text).")],
    algorithm: Annotated[HmacAlgorithm, Field(description="Underlying hash function.")] = "sha256",
) -> dict[str, str]:
    """Compute an HMAC signature of a message with a secret key (e.g. HMAC-SHA256 for webhook signatures)."""
    ensure_max_length(message, "message", 10_000_000)
    mac = hmac.new(key.encode("utf-8"), message.encode("utf-8"), algorithm).digest()
    return {"algorithm": f"hmac-{algorithm}", "hex": mac.hex(), "base64": base64.b64encode(mac).decode("ascii")}


def hmac_verify(
    message: Annotated[str, Field(description="Message that was signed.")],
    key: Annotated[str, Field(description="Secret key (UTF-8 text).")],
    signature: Annotated[str, Field(description="Expected signature in hex or base64 (an optional 'sha256=' prefix is ignored).")],
    algorithm: Annotated[HmacAlgorithm, Field(description="Underlying hash function.")] = "sha256",
) -> dict[str, bool]:
    """Verify an HMAC signature of a message against a secret key in constant time."""
    expected = hmac.new(key.encode("utf-8"), message.encode("utf-8"), algorithm).digest()
    given = signature.strip().split("=", 1)[1] if signature.strip().startswith(f"{algorithm}=") else signature.strip()
    try:
        raw = bytes.fromhex(given)
    except ValueError:
        try:
            raw = base64.b64decode(given, validate=True)
        except binascii.Error:
            raise ValueError("signature must be hex or base64") from None
    return {"valid": hmac.compare_digest(raw, expected)}


def generate_uuid(
    count: Annotated[int, Field(description="How many UUIDs to generate.", ge=1, le=1000)] = 1,
    uppercase: Annotated[bool, Field(description="Use upper-case hex digits.")] = False,
) -> list[str]:
    """Generate one or more new random UUIDs (version 4 UUID, also called GUID)."""
    if not 1 <= count <= 1000:
        raise ValueError("count must be between 1 and 1000")
    ids = [str(uuid.uuid4()) for _ in range(count)]
    return [i.upper() for i in ids] if uppercase else ids


_NAMESPACES = {"dns": uuid.NAMESPACE_DNS, "url": uuid.NAMESPACE_URL, "oid": uuid.NAMESPACE_OID, "x500": uuid.NAMESPACE_X500}


def uuid_from_name(
    name: Annotated[str, Field(description="The name to derive the UUID from, e.g. 'example.com'.")],
    namespace: Annotated[str, Field(description="'dns', 'url', 'oid', 'x500' or any UUID to use as namespace.")] = "dns",
) -> str:
    """Generate a deterministic name-based version-5 UUID (same name and namespace always give the same UUID)."""
    space = _NAMESPACES.get(namespace.lower())
    if space is None:
        try:
            space = uuid.UUID(namespace)
        except ValueError:
            raise ValueError("namespace must be dns, url, oid, x500 or a UUID") from None
    return str(uuid.uuid5(space, name))


def validate_uuid(
    value: Annotated[str, Field(description="Text that should be a UUID.")],
) -> dict[str, Any]:
    """Check whether a text is a valid UUID and report its version, variant and canonical form."""
    try:
        parsed = uuid.UUID(value.strip())
    except ValueError:
        return {"valid": False, "version": None, "variant": None, "canonical": None}
    return {"valid": True, "version": parsed.version, "variant": parsed.variant, "canonical": str(parsed)}


_AMBIGUOUS = set("Il1O0o|`'\"")
_SYMBOLS = "!#$%&*+-.:=?@^_~"


def generate_password(
    length: Annotated[int, Field(description="Number of characters.", ge=8, le=256)] = 20,
    uppercase: Annotated[bool, Field(description="Include upper-case letters.")] = True,
    digits: Annotated[bool, Field(description="Include digits.")] = True,
    symbols: Annotated[bool, Field(description="Include punctuation symbols.")] = True,
    exclude_ambiguous: Annotated[bool, Field(description="Leave out look-alike characters such as I, l, 1, O, 0.")] = False,
) -> dict[str, Any]:
    """Generate a cryptographically secure random password with chosen character classes."""
    if not 8 <= length <= 256:
        raise ValueError("length must be between 8 and 256")
    classes = [string.ascii_lowercase]
    classes += [string.ascii_uppercase] if uppercase else []
    classes += [string.digits] if digits else []
    classes += [_SYMBOLS] if symbols else []
    if exclude_ambiguous:
        classes = ["".join(c for c in group if c not in _AMBIGUOUS) for group in classes]
    alphabet = "".join(classes)
    # Guarantee one character from every requested class, then shuffle so positions are random.
    chars = [secrets.choice(group) for group in classes]
    chars += [secrets.choice(alphabet) for _ in range(length - len(chars))]
    secrets.SystemRandom().shuffle(chars)
    return {"password": "".join(chars), "entropy_bits": round(length * math.log2(len(alphabet)), 1)}


_COMMON = {"password", "123456", "12345678", "qwerty", "letmein", "admin", "welcome", "iloveyou", "monkey", "dragon", "abc123", "111111", "passw0rd"}


def check_password_strength(
    password: Annotated[str, Field(description="The password to assess (it is not stored or logged).")],
) -> dict[str, Any]:
    """Estimate how strong a password is (score 0-4, entropy bits) and list what would make it stronger."""
    ensure_max_length(password, "password", 1000)
    pools = [
        (string.ascii_lowercase, 26), (string.ascii_uppercase, 26), (string.digits, 10), (string.punctuation + " ", 33),
    ]
    pool = sum(size for chars, size in pools if any(c in chars for c in password))
    pool += 100 if any(ord(c) > 127 for c in password) else 0
    # Repeated characters add little, so entropy is based on distinct characters, capped by length.
    effective = min(len(password), len(set(password)) * 2)
    entropy = effective * math.log2(pool) if pool else 0.0
    issues = []
    if len(password) < 12:
        issues.append("use at least 12 characters")
    for (chars, _), label in zip(pools, ("lower-case letters", "upper-case letters", "digits", "symbols")):
        if not any(c in chars for c in password):
            issues.append(f"add {label}")
    if password.lower() in _COMMON or password.lower().rstrip("0123456789!") in _COMMON:
        issues.insert(0, "this is a very common password")
        entropy = min(entropy, 10.0)
    score = 0 if entropy < 28 else 1 if entropy < 36 else 2 if entropy < 60 else 3 if entropy < 80 else 4
    labels = ["very weak", "weak", "fair", "strong", "very strong"]
    return {"score": score, "rating": labels[score], "entropy_bits": round(entropy, 1), "length": len(password), "suggestions": issues}


def generate_random_token(
    num_bytes: Annotated[int, Field(description="Number of random bytes.", ge=8, le=1024)] = 32,
    encoding: Annotated[Literal["hex", "urlsafe_base64"], Field(description="Output text encoding.")] = "hex",
) -> str:
    """Generate a cryptographically secure random token or API key in hex or URL-safe base64."""
    if not 8 <= num_bytes <= 1024:
        raise ValueError("num_bytes must be between 8 and 1024")
    return secrets.token_hex(num_bytes) if encoding == "hex" else secrets.token_urlsafe(num_bytes)


_MAX_JWT_DEPTH = 100


def _b64url_json(segment: str, what: str) -> Any:
    try:
        raw = base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
        value = json.loads(raw)
    except (binascii.Error, ValueError):
        raise ValueError(f"JWT {what} is not valid base64url-encoded JSON") from None
    except RecursionError:
        raise ValueError(f"JWT {what} is nested too deeply (limit is {_MAX_JWT_DEPTH} levels)") from None
    # json.loads accepts about 1,000 levels, more than the serialisers further on: a 950-deep payload ended the
    # call with a protocol error instead of a tool error.
    stack = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > _MAX_JWT_DEPTH:
            raise ValueError(f"JWT {what} is nested too deeply (limit is {_MAX_JWT_DEPTH} levels)")
        if isinstance(node, dict):
            stack.extend((child, depth + 1) for child in node.values())
        elif isinstance(node, list):
            stack.extend((child, depth + 1) for child in node)
    # Lone surrogates ("\ud800" escapes) cannot be sent as UTF-8: show them as the escape text.
    return json_ready(value)


def decode_jwt_unverified(
    token: Annotated[str, Field(description="A JSON Web Token 'header.payload.signature'.")],
) -> dict[str, Any]:
    """Decode a JWT (JSON Web Token) header and payload WITHOUT verifying its signature, showing claims and expiry."""
    ensure_max_length(token, "token", 100_000)
    parts = token.strip().removeprefix("Bearer ").strip().split(".")
    if len(parts) != 3:
        raise ValueError(f"a JWT has 3 dot-separated parts, got {len(parts)}")
    header, payload = _b64url_json(parts[0], "header"), _b64url_json(parts[1], "payload")
    if not isinstance(header, dict) or not isinstance(payload, dict):
        raise ValueError("JWT header and payload must be JSON objects")
    times = {}
    for claim in ("iat", "nbf", "exp"):
        if isinstance(payload.get(claim), (int, float)):
            try:
                times[claim] = datetime.fromtimestamp(payload[claim], UTC).isoformat()
            except (OverflowError, OSError, ValueError):
                times[claim] = None
    exp = payload.get("exp")
    expired = exp < datetime.now(UTC).timestamp() if isinstance(exp, (int, float)) else None
    return {
        "verified": False,
        "warning": "Signature NOT verified: do not trust these claims for authentication.",
        "header": header,
        "payload": payload,
        "claim_times_utc": times,
        "expired": expired,
        "has_signature": bool(parts[2]),
    }
