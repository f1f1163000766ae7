"""`bertkit export`: a trained bundle in another format (ONNX), checked against the original."""
