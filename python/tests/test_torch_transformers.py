"""The transformers matrix (transformers_matrix.py): GPT-2, BERT, Llama, Mistral, Qwen2, T5 and
ViT from small configs with random weights, in both modes: forward at two sequence lengths
with dynamic=True (one compilation), greedy generate with the default and the static cache.
In graph-engine mode fallback="error": every graph runs whole in Estuary, or the case fails."""
import pytest

from transformers_matrix import cases, run

TOLERANCE = 1e-4

pytestmark = pytest.mark.usefixtures("fresh_dynamo")


# (model, attention implementation): the fusions each mode's debug log must report for the
# 2-layer configs, "pass (count)" for graph-engine mode's IR passes, FX mode's own counts.
FUSIONS = {
    ("llama", "eager"): (["recognize_rotary_embedding (4)", "recognize_attention (4)", "recognize_rms_norm (5)",
                          "fuse_add_rms_norm (4)"],
                         "2 attention(s) fused into scaled_dot_product_attention, 15 decomposed linear/matmul(s) made "
                         "whole, 5 RMSNorm(s) into Estuary's kernel (4 with the residual Add), 4 rotary embedding(s) "
                         "and 2 SiLU-gated product(s) into Estuary's kernels"),
    ("llama", "sdpa"): (["recognize_rotary_embedding (4)", "recognize_rms_norm (5)"],
                        "0 attention(s) fused into scaled_dot_product_attention, 15 decomposed linear/matmul(s) made "
                        "whole, 5 RMSNorm(s) into Estuary's kernel (4 with the residual Add), 4 rotary embedding(s) "
                        "and 2 SiLU-gated product(s) into Estuary's kernels"),
    ("mistral", "eager"): (["recognize_attention (4)"], "2 attention(s) fused"),
    ("gpt2", "eager"): (["recognize_attention (2)"], "2 attention(s) fused"),
    ("bert", "eager"): (["recognize_attention (2)"], "2 attention(s) fused"),
    ("vit", "eager"): (["recognize_attention (2)"], "2 attention(s) fused"),
    # T5 adds a relative position bias, then its mask: 2 encoder, 2 decoder self- and 2 cross-attentions.
    ("t5", "eager"): (["recognize_attention (6)"], "6 attention(s) fused"),
}


@pytest.mark.parametrize("name,mode,what,attention", list(cases()))
def test_matches_eager_with_nothing_left_to_pytorch(name, mode, what, attention, tmp_path):
    # The forward cases of FUSIONS' (model, attention) pairs also check that the fusions fired,
    # from the debug log of the same run.
    checks_fusions = what == "forward" and (name, attention) in FUSIONS
    outcome = run(name, mode, what, attention, **({"debug_dir": str(tmp_path)} if checks_fusions else {}))
    assert outcome.warnings == () and outcome.failures == ()
    if what == "forward":
        assert outcome.max_error < TOLERANCE
        assert outcome.graphs >= 1 and outcome.graph_breaks == 0
    else:
        assert outcome.same_tokens
    if checks_fusions:
        expect_fusions(name, mode, attention, tmp_path)


def expect_fusions(name, mode, attention, debug_dir):
    """The fusions FUSIONS lists for (name, attention) fired in a run whose dumps are in debug_dir."""
    graph_engine, fx = FUSIONS[(name, attention)]
    log = (debug_dir / "estuary" / "debug.log").read_text()
    if mode == "ge":
        changed = next(line for line in log.splitlines() if "passes that changed the IR" in line)
        for count in graph_engine:
            assert count in changed
        if name == "llama":  # the gated MLP: silu and the product with the up projection in the gate's matmul
            plan = next(line for line in log.splitlines() if "plan for input shapes" in line)
            assert "4 node(s) fused" in plan and "Swish" not in plan and "estuary::FusedMatMul x2" in plan
    else:
        assert f"pattern_fusion_pass: {fx}" in log
        if name in ("llama", "mistral") and attention == "eager":  # grouped-query: K and V un-repeated
            optimized = next((debug_dir / "estuary").glob("model__*/forward/*_optimized.txt")).read_text()
            assert optimized.count("enable_gqa = True") == 2
