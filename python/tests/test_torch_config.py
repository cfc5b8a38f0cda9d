"""estuary.torch.CompilerConfig: values are checked, and options of the other mode are errors."""
import pytest

import estuary.torch as et


def test_defaults_per_mode():
    config = et.CompilerConfig()
    assert (config.mode, config.effective_pipeline, config.effective_recompile_limit) == ("ge", "O2", 64)
    assert config.effective_fallback == "eager" and config.effective_dynamic


@pytest.mark.parametrize("option", ["inplace_pass", "input_inplace_pass", "pattern_fusion_pass"])
def test_fx_pass_switches_are_errors_in_graph_engine_mode(option):
    with pytest.raises(ValueError, match=f"option '{option}' has no effect in mode 'ge' \\(it applies in mode 'fx'"):
        et.CompilerConfig(mode="ge", **{option: False})


@pytest.mark.parametrize("option,value", [("pipeline", "O1"), ("threads", 2), ("dynamic", False),
                                          ("recompile_limit", 8), ("fallback", "error")])
def test_graph_engine_options_are_errors_in_fx_mode(option, value):
    with pytest.raises(ValueError, match=f"option '{option}' has no effect in mode 'fx' \\(it applies in mode 'ge'"):
        et.CompilerConfig(mode="fx", **{option: value})


@pytest.mark.parametrize("options,message", [
    (dict(mode="npu"), "mode must be one of"),
    (dict(fallback="maybe"), "fallback must be one of"),
    (dict(recompile_limit=0), "recompile_limit must be an integer >= 1"),
    (dict(threads=-1), "threads must be an integer >= 0"),
])
def test_bad_values_are_errors(options, message):
    with pytest.raises(ValueError, match=message):
        et.CompilerConfig(**options)


def test_backend_takes_keyword_options_and_refuses_unknown_ones():
    assert callable(et.backend(pipeline="O1"))
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['capture_limit'\]; known options: \['mode'"):
        et.backend(capture_limit=64)
    with pytest.raises(ValueError, match="either a CompilerConfig or keyword options"):
        et.backend(et.CompilerConfig(), pipeline="O1")
