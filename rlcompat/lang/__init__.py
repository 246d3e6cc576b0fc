"""Front ends: one per file language. Each parses a file once and runs every applicable rule over it."""
