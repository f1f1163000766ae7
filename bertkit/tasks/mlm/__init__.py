"""Masked-LM training on a user's text: continued pre-training of a model on its domain
(`mlm-adapt`), or pre-training a new small BERT from scratch with a vocabulary learnt from the
corpus. The bundle is a plain base model for the other tasks, and predicts by filling in [MASK]s.

Validation text is masked once with a fixed seed, so the perplexity before training and after it
(the point of the job) are measured on the same positions.
"""
