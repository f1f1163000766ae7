"""Text classification: single texts or pairs; single-label, multi-label or regression.

Everything particular to classification lives here: label discovery and encoding, the three
truncation modes, class weights, metrics and the shape of a prediction record.
"""
