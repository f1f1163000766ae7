"""Sentence vectors: the encoder that pools a model's tokens into one vector a text (encoder), the
`bertkit embed` command's writer (embed), and similarity and semantic search over them (search)."""
