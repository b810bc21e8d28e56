"""What the controllers call: engine and storage operations, scoped to the caller's tenant, returning DTOs."""
