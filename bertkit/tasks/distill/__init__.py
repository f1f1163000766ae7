"""The distill task: a student (the teacher's own architecture with fewer layers, or another model
with the same tokenizer) trained on a classify or ner bundle's soft outputs and the labels. The
student is an ordinary bundle of the teacher's task."""
