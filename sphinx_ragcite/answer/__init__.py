"""Hits -> a grounded answer whose every citation its passage supports."""
