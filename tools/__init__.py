"""Developer tools run on demand (not shipped in the wheel): mutation testing."""
