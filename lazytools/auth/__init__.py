"""OAuth 2.1 on both sides of lazytools: checking the tokens clients bring (a resource server: issuer metadata,
JWKS, JWT checks, RFC 7662 introspection) and getting tokens for upstreams on a user's behalf (RFC 8693)."""
