"""The rerank task: a cross-encoder that scores (query, passage) pairs, trained on groups of one
positive and several negatives per query (listwise loss) or on labelled pairs (binary
cross-entropy), and used by `bertkit search --rerank` to re-order a bi-encoder's hits."""
