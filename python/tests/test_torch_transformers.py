"""The transformers matrix (transformers_matrix.py): GPT-2, BERT, Llama, Mistral, Qwen2, T5 and
ViT from small configs with random weights, in both modes: forward at two sequence lengths
with dynamic=True (one compilation), greedy generate with the default and the static cache.
In graph-engine mode fallback="error": every graph runs whole in Estuary, or the case fails."""
import pytest

from transformers_matrix import cases, run

TOLERANCE = 1e-4

pytestmark = pytest.mark.usefixtures("fresh_dynamo")


@pytest.mark.parametrize("name,mode,what,attention", list(cases()))
def test_matches_eager_with_nothing_left_to_pytorch(name, mode, what, attention):
    outcome = run(name, mode, what, attention)
    assert outcome.warnings == ()
    if what == "forward":
        assert outcome.max_error < TOLERANCE
        assert outcome.graphs >= 1 and outcome.graph_breaks == 0
    else:
        assert outcome.same_tokens
