"""bayessdc.cta."""
