"""bertkit: fine-tune and run BERT-family models from the command line."""

__version__ = "0.1.0"
