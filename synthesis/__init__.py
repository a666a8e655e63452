"""bayessdc.synthesis."""
