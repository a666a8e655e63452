"""bayessdc.models."""
