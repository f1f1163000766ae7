"""Sentence-embedding training: contrastive fine-tuning of an encoder on text pairs.

(anchor, positive) pairs train with in-batch negatives: every other positive in the batch is a
negative (copies of the same positive text are not). Scored pairs (e.g. STS 0-5) train with a
CoSENT or cosine-regression loss. Validation is Spearman correlation on scored pairs, and
retrieval recall@k / MRR on plain pairs (each anchor against every distinct positive). The bundle
is the bare encoder with its pooling recorded, which `bertkit embed` uses.
"""
