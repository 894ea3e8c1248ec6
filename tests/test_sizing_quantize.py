"""``--quantize int8|int4 [--group-size G]`` (subclass_kit/sizing/quantize.py) through the
command line: parameter bytes of the packed layout, the JSON section, the errors."""

from __future__ import annotations

import json

import pytest

from subclass_kit import cli, zoo


def linear_shapes(name):
    """[out, in] of the weights torchao's filter quantizes in the zoo's ``name`` (GPT-2's Conv1D
    weights are stored [in, out])."""
    out = []
    for pname, p in zoo.get_model(name).named_parameters():
        if pname.endswith(("c_attn.weight", "c_proj.weight", "c_fc.weight")):
            out.append((p.shape[1], p.shape[0]))
    return out


@pytest.mark.parametrize("scheme,group", [("int8", 128), ("int4", 64)])
def test_gpt2_parameter_bytes_are_the_packed_layouts(capsys, scheme, group):
    assert cli.main(["shapes", "gpt2", "--quantize", scheme, "--group-size", str(group),
                     "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    model = zoo.get_model("gpt2")
    shapes = linear_shapes("gpt2")
    quantized_numel = sum(o * i for o, i in shapes)
    codes = quantized_numel if scheme == "int8" else quantized_numel // 2
    params = (1 if scheme == "int8" else 2) * sum(o * (i // group) for o, i in shapes) * 4
    total = sum(p.numel() for p in model.parameters())
    assert data["parameter_bytes"] == codes + params + (total - quantized_numel) * 4
    assert data["parameters"] == total
    section = data["quantize"]
    assert section == {"scheme": scheme, "group_size": group, "quantized_weights": len(shapes),
                       "quantized_parameters": quantized_numel,
                       "quantized_bytes": codes + params,
                       "unquantized_bytes": quantized_numel * 4}


def test_text_report_line(capsys):
    assert cli.main(["shapes", "gpt2", "--quantize", "int8"]) == 0
    out = capsys.readouterr().out
    assert "quantization      int8, group size 128: 48 Linear weights" in out


def test_group_size_that_does_not_divide_names_the_layer(capsys):
    assert cli.main(["shapes", "gpt2", "--quantize", "int4", "--group-size", "512"]) == 2
    err = capsys.readouterr().err
    assert "h.0.attn.c_attn.weight has in_features=768, not divisible by group_size=512" in err


def test_help_says_what_is_quantized(capsys):
    assert cli.main(["shapes", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "not embeddings, norms, biases" in out and "--group-size G" in out


def test_quantize_with_train_is_refused(capsys):
    assert cli.main(["shapes", "gpt2", "--quantize", "int8", "--train"]) == 2
    assert "--quantize with --train" in capsys.readouterr().err
