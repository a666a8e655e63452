"""bayessdc.risk."""
