"""The REST API: Litestar controllers by resource, msgspec DTOs, authentication and error mapping."""
