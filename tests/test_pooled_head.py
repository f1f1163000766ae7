"""bertkit/core/pooled_head.py: a sequence-classification model whose head reads the unit-length mean of
the tokens (or [CLS]) gives exactly that arithmetic, keeps it through save and load (the config key),
answers a text the same alone and padded in a batch (padding left out of the mean), and leaves other models alone."""

import pytest
import torch

from bertkit.core import models
from bertkit.core.pooled_head import POOLING_KEY, head_name, pooling_of, use_pooling

TEXTS = ["a great film", "the plot was awful and the staff were boring", "lovely"]


@pytest.fixture
def classifier(tiny_model):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_pretrained(str(tiny_model), num_labels=3).eval()
    return model, AutoTokenizer.from_pretrained(str(tiny_model))


def expected_logits(model, batch, pooling):
    hidden = model.base_model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).float()
    vectors = hidden[:, 0] if pooling == "cls" else (hidden * mask).sum(1) / mask.sum(1)
    vectors = torch.nn.functional.normalize(vectors, dim=-1)
    return model.classifier(vectors)


@pytest.mark.parametrize("pooling", ["mean", "cls"])
def test_the_head_reads_the_unit_sentence_vector(classifier, pooling):
    model, tokenizer = classifier
    batch = tokenizer(TEXTS, padding=True, return_tensors="pt")
    own = model(**batch).logits
    use_pooling(model, pooling)
    with torch.no_grad():
        got = model(**batch).logits
        want = expected_logits(model, batch, pooling)
    assert torch.allclose(got, want, atol=1e-5)
    assert not torch.allclose(got, own, atol=1e-3)  # not the family's own head (pooler over [CLS])
    assert head_name(model) == "classifier"


def test_loss_and_labels_go_through(classifier):
    model, tokenizer = classifier
    use_pooling(model, "mean")
    batch = tokenizer(TEXTS, padding=True, return_tensors="pt")
    out = model(**batch, labels=torch.tensor([0, 2, 1]))
    assert out.loss is not None and torch.isfinite(out.loss)
    out.loss.backward()
    assert model.base_model.embeddings.word_embeddings.weight.grad is not None


def test_saved_and_loaded_it_pools_the_same_way(classifier, tmp_path):
    from transformers import AutoModelForSequenceClassification

    model, tokenizer = classifier
    use_pooling(model, "mean")
    model.save_pretrained(tmp_path)
    batch = tokenizer(TEXTS, padding=True, return_tensors="pt")
    loaded = models.weights_from_pretrained(AutoModelForSequenceClassification, str(tmp_path)).eval()
    assert pooling_of(loaded) == "mean"
    with torch.no_grad():
        assert torch.allclose(loaded(**batch).logits, model(**batch).logits, atol=1e-6)


def test_padding_does_not_enter_the_mean(classifier):
    model, tokenizer = classifier
    use_pooling(model, "mean")
    with torch.no_grad():
        alone = model(**tokenizer(TEXTS[2:], return_tensors="pt")).logits[0]
        padded = model(**tokenizer(TEXTS, padding=True, return_tensors="pt")).logits[2]
    assert torch.allclose(alone, padded, atol=1e-6)


def test_the_bare_encoder_of_such_a_bundle_is_left_alone(classifier, tmp_path):
    from transformers import AutoModel

    model, _ = classifier
    use_pooling(model, "mean")
    model.save_pretrained(tmp_path)
    encoder = models.weights_from_pretrained(AutoModel, str(tmp_path))
    assert "forward" not in encoder.__dict__  # embed pools the tokens itself


def test_an_unknown_pooling_in_config_is_named(classifier, tmp_path):
    from transformers import AutoModelForSequenceClassification

    from bertkit.core.errors import BertkitError

    model, _ = classifier
    setattr(model.config, POOLING_KEY, "max")
    model.save_pretrained(tmp_path)
    with pytest.raises(BertkitError, match="bertkit_pooling.*'max'"):
        models.weights_from_pretrained(AutoModelForSequenceClassification, str(tmp_path))
