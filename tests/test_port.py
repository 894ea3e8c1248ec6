"""``subclass-kit port``: the rewrite of each table row on hand-picked sources, warnings with their
lines, the command line (-w, --diff, exit status), the rename table against docs/porting.md and
the installed names, and the ported examples (committed port == the tool's output; each prints
what its PyTorch original prints)."""

from __future__ import annotations

import io
import os
import runpy
import subprocess
import sys
import tokenize

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from subclass_kit import port_table
from subclass_kit.cli import main
from subclass_kit.port import _exists, lookup, port_source

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PORTED = os.path.join(ROOT, "examples", "ported")
EXAMPLES = ["complex_pair_tensor", "custom_function", "custom_parameter", "empty_tensor",
            "inner_autograd_tensor", "logging_mode", "memory_debugging_tensor",
            "negative_tensor", "progressive_lowering_tensor", "python_meta_tensor",
            "quantized_tensor", "trivial_tensors", "uint4_tensor", "use_cpu_for_rng"]

# (PyTorch source, its port): one or more table rows each.
CASES = [
    ("import torch\nop = torch.ops.aten.add.Tensor\n",
     "import subclass_kit as sk\nop = sk.ops.add.Tensor\n"),
    ("import torch as th\nx = th.zeros(2, dtype=th.float64)\n",
     "import subclass_kit as th\nx = th.zeros(2, dtype=th.float64)\n"),
    ("import torch, numpy as np\n", "import subclass_kit as sk, numpy as np\n"),
    ("import torch\nimport torch.overrides\nx = 1\n", "import subclass_kit as sk\nx = 1\n"),
    ("import torch.nn.functional as F\ny = F.relu\n",
     "import subclass_kit.nn.functional as F\ny = F.relu\n"),
    ("from torch.utils._python_dispatch import TorchDispatchMode\n\n\n"
     "class M(TorchDispatchMode):\n"
     "    def __torch_dispatch__(self, func, types, args=(), kwargs=None):\n"
     "        return func(*args, **(kwargs or {}))\n",
     "from subclass_kit import DispatchMode\n\n\n"
     "class M(DispatchMode):\n"
     "    def __tensor_dispatch__(self, func, types, args=(), kwargs=None):\n"
     "        return func(*args, **(kwargs or {}))\n"),
    ("from torch.utils import _pytree as pytree\nfrom torch.utils._pytree import tree_map\n",
     "from subclass_kit import pytree\nfrom subclass_kit.pytree import tree_map\n"),
    ("import torch.utils._pytree as pytree\n", "import subclass_kit.pytree as pytree\n"),
    ("from torch.utils._python_dispatch import (\n    _get_current_dispatch_mode_stack,\n"
     "    return_and_correct_aliasing as fix,\n)\nn = len(_get_current_dispatch_mode_stack())\n",
     "from subclass_kit import get_mode_stack, return_and_correct_aliasing as fix\n"
     "n = len(get_mode_stack())\n"),
    ('"""Doc."""\nfrom __future__ import annotations\n\n\nclass W:\n'
     "    def __new__(cls, e):\n        return cls._make_wrapper_subclass(cls, e.shape)\n",
     '"""Doc."""\nfrom __future__ import annotations\n\n\nimport subclass_kit as sk\nclass W:\n'
     "    def __new__(cls, e):\n        return sk.make_wrapper_subclass(cls, e.shape)\n"),
    ("import torch\nt = torch.Tensor._make_subclass(cls, e, require_grad=True)\n",
     "import subclass_kit as sk\nt = sk.make_subclass(cls, e, requires_grad=True)\n"),
    ("from torch import Tensor\nclass N(Tensor):\n    def __new__(cls, e):\n"
     "        return Tensor._make_subclass(cls, e, e.requires_grad)\n",
     "import subclass_kit as sk\nfrom subclass_kit import Tensor\nclass N(Tensor):\n"
     "    def __new__(cls, e):\n        return sk.make_subclass(cls, e, e.requires_grad)\n"),
    ("import torch\n__torch_function__ = torch._C._disabled_torch_function_impl\n",
     "import subclass_kit as sk\n__tensor_function__ = sk.disabled_tensor_function\n"),
    ("import torch\nlazy = torch.Tag.inplace_view in func.tags\n",
     'import subclass_kit as sk\nlazy = "inplace_view" in func.tags\n'),
    ("import torch\nop = torch.library.define('mylib::f', '(Tensor x) -> Tensor')\n",
     "import subclass_kit as sk\nop = sk.library.define('mylib::f(Tensor x) -> Tensor')\n"),
    ("import torch\nwith torch.overrides.enable_reentrant_dispatch():\n    pass\n",
     "import subclass_kit as sk\nwith sk.enable_reentrant_dispatch():\n    pass\n"),
    ("from torch._subclasses.fake_tensor import FakeTensorMode\nwith FakeTensorMode():\n"
     "    pass\n",
     "from subclass_kit.modes import MetaMode\nwith MetaMode():\n    pass\n"),
    ("import torch\nm = torch._subclasses.fake_tensor.FakeTensorMode()\n",
     "import subclass_kit.modes\nimport subclass_kit as sk\nm = sk.modes.MetaMode()\n"),
    ("from torch.utils._python_dispatch import _push_mode\nimport torch\n_push_mode(mode)\n"
     "_push_mode( LoggingMode(torch.float32) , )\n_push_mode(a or b)  # c\n",
     "import subclass_kit as sk\nmode.__enter__()\nLoggingMode(sk.float32).__enter__()\n"
     "(a or b).__enter__()  # c\n"),
    ("w = [a.name for a in func._schema.arguments if a.alias_info and a.alias_info.is_write]\n",
     "w = [a.name for a in func.schema.arguments if a.alias and a.alias.is_write]\n"),
    # comments, spacing, line breaks and strings stay as written
    ("import torch  # the oracle\n\ny = torch.add( a ,\n    b )  # torch.add here\n"
     "s = 'torch.add'\n",
     "import subclass_kit as sk  # the oracle\n\ny = sk.add( a ,\n    b )  # torch.add here\n"
     "s = 'torch.add'\n"),
    ("def f():\n    import torch\n    return torch.ones(1)\n",
     "def f():\n    import subclass_kit as sk\n    return sk.ones(1)\n"),
    ("import torch\n\f\nx = 1  # \u2028\ny = torch.ones(1)\n",      # separators other than \\n
     "import subclass_kit as sk\n\f\nx = 1  # \u2028\ny = sk.ones(1)\n"),
    ("from torch.utils._python_dispatch import TorchDispatchMode as TDM\nclass M(TDM):\n    pass\n",
     "from subclass_kit import DispatchMode as TDM\nclass M(TDM):\n    pass\n"),
    # a duplicate at module level goes; one in a block stays (the block needs a statement)
    ("import torch\nif flag:\n    import torch.overrides\n",
     "import subclass_kit as sk\nif flag:\n    import subclass_kit as sk\n"),
    # torch.autograd's import paths: the same paths under subclass_kit
    ("from torch.autograd import Function\nfrom torch.autograd.graph import saved_tensors_hooks\n",
     "from subclass_kit.autograd import Function\n"
     "from subclass_kit.autograd.graph import saved_tensors_hooks\n"),
    ("import torch.autograd.graph as g\nfrom torch.autograd.grad_mode import no_grad\n",
     "import subclass_kit.autograd.graph as g\n"
     "from subclass_kit.autograd.grad_mode import no_grad\n"),
    # PyTorch's guard that acts when made (the zoo's no_dispatch idiom)
    ("import torch\nguard = torch._C._DisableTorchDispatch()\ndel guard\n",
     "import subclass_kit as sk\nguard = sk.DisableTensorDispatch()\ndel guard\n"),
    ("from torch.utils._mode_utils import no_dispatch\nwith no_dispatch():\n    pass\n",
     "from subclass_kit import DisableTensorDispatch\nwith DisableTensorDispatch():\n    pass\n"),
    # torch._prims_common's shape helpers (the zoo's uint4_tensor.py)
    ("import torch._prims_common as utils\ns = utils.infer_size(s, n)\n",
     "import subclass_kit.utils.prims_common as utils\ns = utils.infer_size(s, n)\n"),
    ("from torch._prims_common import canonicalize_dim\n",
     "from subclass_kit.utils.prims_common import canonicalize_dim\n"),
    ("import torch\nd = torch._prims_common.canonicalize_dim(2, -1)\n",
     "import subclass_kit as sk\nd = sk.utils.prims_common.canonicalize_dim(2, -1)\n"),
    ("@dataclass\nclass A:\n    def f(self):\n        return self._make_subclass(A, x)\n",
     "import subclass_kit as sk\n@dataclass\nclass A:\n    def f(self):\n"
     "        return sk.make_subclass(A, x)\n"),
]


@pytest.mark.parametrize("source, expected", CASES)
def test_port_rewrites_as_the_table_says(source, expected):
    out, _ = port_source(source)
    assert out == expected
    compile(out, "<port>", "exec")
    assert port_source(out)[0] == out          # a port is a fixed point


# (source, [(line, words the warning must contain)])
WARNINGS = [
    ("import torch\n\nf = torch.compile(g)\n", [(3, ["torch.compile", "cannot be ported"])]),
    ("x = y.cuda()\n", [(1, [".cuda", "no CUDA"])]),
    ("from torch.utils._python_dispatch import _pop_mode, TorchDispatchMode\n",
     [(1, ["_pop_mode", "mode.__exit__(None, None, None)"])]),
    ("import torch\nf = torch.overrides._push_mode\n", [(2, ["_push_mode(mode)"])]),
    ("import torch\nz = torch.zeros(1, dtype=torch.complex64)\n",
     [(2, ["torch.complex64", "no complex"])]),
    ("import torch\ns = f'{torch.ops.aten.add.Tensor}'\n", [(2, ["f-string"])]),
    ("x = super()._make_wrapper_subclass(cls, size)\n",
     [(1, ["_make_wrapper_subclass", "sk.make_wrapper_subclass(cls, ...)"])]),
    ("import torch\nw = torch.Tensor._make_wrapper_subclass(\n    cls, s, st, 0, None, d)\n",
     [(2, ["6 positional", "by keyword"])]),
    # a module we lack, imported whole or from
    ("import torch.autograd.forward_ad\n",
     [(1, ["torch.autograd.forward_ad", "not in the installed"])]),
    ("from torch.autograd.forward_ad import dual_level\n",
     [(1, ["torch.autograd.forward_ad", "not in the installed"])]),
    # a torch._prims_common helper we do not have
    ("import torch._prims_common as utils\nk = utils.elementwise_dtypes(a)\n",
     [(2, ["torch._prims_common.elementwise_dtypes", "not in the installed"])]),
    ("import torch\nt = torch.no_such_function_xyz(1)\n",
     [(2, ["torch.no_such_function_xyz", "sk.no_such_function_xyz", "not in the installed"])]),
]


@pytest.mark.parametrize("source, expected", WARNINGS)
def test_port_warns_with_the_line(source, expected):
    out, warnings = port_source(source)
    assert [w.line for w in warnings] == [line for line, _ in expected]
    for w, (_, words) in zip(warnings, expected):
        for word in words:
            assert word in w.message
    if "_pop_mode" in source:     # the unportable name stays, the rest of the import is ported
        assert out == ("from torch.utils._python_dispatch import _pop_mode\n"
                       "from subclass_kit import DispatchMode\n")


PLAIN = ["x = 1", "def f(a, b=2):\n    return a + b", "class C:\n    pass", "import numpy as np",
         "y = np.zeros(3).sum()  # a comment", "s = 'torch.add(x)'", "   # indented comment",
         "", "z = [i for i in range(3)]", "from os import path as p", "t = (1,\n     2)",
         "sk = None", "obj.attribute.chain()", "@decorator\ndef g():\n    ...\n"]


@given(st.lists(st.sampled_from(PLAIN), max_size=8))
def test_code_without_pytorch_names_is_unchanged(parts):
    source = "\n".join(parts) + "\n"
    assert port_source(source) == (source, [])


@given(st.lists(st.sampled_from(CASES), min_size=1, max_size=3),
       st.sampled_from(["", "\n", "# note\n", "\n\n# two\n"]))
def test_ported_code_is_a_fixed_point(cases, gap):
    """Porting the port of any mix of the cases changes nothing more."""
    source = gap.join(src for src, _ in cases)
    try:
        compile(source, "<source>", "exec")
    except SyntaxError:       # e.g. a __future__ import after other code
        assume(False)
    once = port_source(source)[0]
    assert port_source(once)[0] == once
    compile(once, "<port>", "exec")


TRICKY = ["import torch", "import torch; import torch.nn", "from torch import (Tensor,  # c\n"
          "    Size)  # d", "import torch.nn  # e", "from torch.utils._python_dispatch import (\n"
          "    _push_mode,  # f\n    TorchDispatchMode)", "if flag:\n    import torch.overrides", "x = torch.Tag.inplace_view",
          "y = a._make_wrapper_subclass(a, (2,))", "@dec\nclass A(torch.Tensor):\n    pass",
          "def f():\n    from torch.utils import _pytree as p\n    return p.tree_map",
          "z = torch.compile(f)", "w = torch.library.define('a::f', '(Tensor x) -> Tensor')",
          "with torch.overrides.enable_reentrant_dispatch(): pass",
          "m = torch._subclasses.FakeTensorMode", "from torch import *", "v = x.cuda()",
          "from torch.utils._python_dispatch import _push_mode", "_push_mode(m)",
          "if m:\n    from torch.overrides import _push_mode",
          "u = torch.Tensor._make_subclass(cls, e, require_grad=False)", "pass"]


@given(st.lists(st.sampled_from(TRICKY), min_size=1, max_size=6))
def test_the_port_of_valid_code_is_valid_code(parts):
    source = "\n".join(parts) + "\n"
    compile(source, "<source>", "exec")
    out, _ = port_source(source)
    compile(out, "<port>", "exec")
    assert _comments(out) == _comments(source)      # every comment survives, in order


def _comments(text):
    """The words of all comments, in order (moved comments may share a line)."""
    return " ".join(t.string for t in tokenize.generate_tokens(io.StringIO(text).readline)
                    if t.type == tokenize.COMMENT).split()


@given(st.text(alphabet="torch._()[]{},=:;'\"#\n abfimpsTx*\\", max_size=60))
def test_any_text_ports_or_raises_syntax_error(text):
    try:
        out, warnings = port_source(text)
    except SyntaxError:
        return
    assert isinstance(out, str) and all(w.line >= 1 for w in warnings)


@pytest.mark.parametrize("text", ["from", "from torch", "x = 1\nfrom torch.nn\n"])
def test_from_without_import_is_a_syntax_error(text):
    with pytest.raises(SyntaxError, match="'from' without 'import'"):
        port_source(text)


def test_lookup_takes_the_longest_prefix():
    assert lookup("torch.ops.aten.mul.Tensor") == ("rename", "torch.ops.aten",
                                                   "subclass_kit.ops.mul.Tensor")
    assert lookup("torch._C._disabled_torch_function_impl")[0] == "rename"
    assert lookup("torch._C._some_binding")[0] == "cannot"
    assert lookup("numpy.zeros") is None
    assert lookup("torch._utils._get_device_index")[:2] == ("cannot", "torch._utils")


def test_every_table_target_exists():
    """Every name the table writes is in the installed subclass_kit (a missing one is a typo
    in the table)."""
    targets = set(port_table.RENAMES.values()) | set(port_table.RECEIVERLESS.values())
    missing = {t for t in targets if not _exists(t)}
    assert not missing, sorted(missing)


def test_porting_guide_lists_every_table_name():
    with open(os.path.join(ROOT, "docs", "porting.md"), encoding="utf-8") as f:
        guide = f.read()
    names = [*port_table.RENAMES, *port_table.CANNOT_PORT, *port_table.MEMBERS,
             *port_table.RECEIVERLESS, *port_table.LITERALS, *port_table.MEMBER_WARNINGS,
             *port_table.METHOD_CALLS]
    absent = [n for n in names if n not in guide]
    assert not absent, absent
    with open(os.path.join(ROOT, "docs", "differences.md"), encoding="utf-8") as f:
        assert "porting.md" in f.read()


CUSTOM_OPS = """import torch
torch.library.define("mylib::twice", "(Tensor x) -> Tensor")
torch.library.define("aten::my_extra", "(Tensor x) -> Tensor")
a = torch.ops.mylib.twice(x) + torch.ops.mylib.twice.default(x) + torch.ops.otherlib.f(x)
b = torch.ops.aten.my_extra(x) + torch._ops.ops.mylib.twice(x)
c = torch.ops.aten.no_such_op_xyz(x)
d = torch.ops.prims.no_such_prim_xyz(x)
"""


def test_custom_op_namespaces_are_not_checked():
    """``torch.ops.<ns>`` of a namespace PyTorch does not register, or an op the file defines,
    exists only at run time: no warning. Built-in namespaces are still checked."""
    out, warnings = port_source(CUSTOM_OPS)
    assert "b = sk.ops.my_extra(x) + sk.ops.mylib.twice(x)" in out
    assert [(w.line, w.message.split(" ->")[0]) for w in warnings] == [
        (6, "torch.ops.aten.no_such_op_xyz"), (7, "torch.ops.prims.no_such_prim_xyz")]


def test_custom_op_port_runs(tmp_path):
    source = ('import torch\ntorch.library.define("portns::twice", "(Tensor x) -> Tensor")\n'
              'torch.library.impl("portns::twice", "cpu", lambda x: x * 2)\n'
              'y = torch.ops.portns.twice(torch.ones(2))\n')
    out, warnings = port_source(source)
    assert warnings == []
    assert runpy.run_path(_write(tmp_path / "ops.py", out))["y"].tolist() == [2.0, 2.0]


def _write(path, text) -> str:
    path.write_text(text)
    return str(path)


# -- the command line ------------------------------------------------------------------------------
def test_cli_prints_writes_and_diffs(tmp_path, capsys):
    source, expected = CASES[5]
    path = tmp_path / "mode.py"
    path.write_text(source)
    assert main(["port", str(path)]) == 0
    assert capsys.readouterr().out == expected
    assert main(["port", "--diff", str(path)]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"--- {path}\n+++ {path}\n") and "+class M(DispatchMode):" in out
    assert path.read_text() == source          # --diff writes nothing
    assert main(["port", "-w", str(path)]) == 1
    assert path.read_text() == expected
    assert main(["port", "-w", str(path)]) == 0  # nothing left to do
    assert main(["port", "--diff", str(path)]) == 0
    assert capsys.readouterr().out == ""


def test_cli_warnings_errors_and_several_files(tmp_path, capsys):
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("import torch\n\nc = torch.cuda.is_available()\n")
    b.write_text("import torch\n")
    assert main(["port", str(a), str(b)]) == 0
    out, err = capsys.readouterr()
    assert f"{a}:3: warning: torch.cuda" in err
    assert out == (f"# ==> {a} <==\nimport subclass_kit as sk\n\nc = torch.cuda.is_available()\n"
                   f"# ==> {b} <==\nimport subclass_kit as sk\n")
    assert main(["port", str(tmp_path / "missing.py")]) == 2
    assert "missing.py" in capsys.readouterr().err
    bad = tmp_path / "bad.py"
    bad.write_text("x = (1,\n")
    assert main(["port", str(bad)]) == 2
    assert main(["port", "-w", "--diff", str(b)]) == 2     # one or the other


# -- the examples: ported by the tool alone, run against their PyTorch originals ---------------
def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


@pytest.mark.parametrize("name", EXAMPLES)
def test_committed_port_is_the_tools_output(name):
    source = _read(os.path.join(PORTED, "torch_src", f"{name}.py"))
    out, warnings = port_source(source)
    assert warnings == []
    assert out == _read(os.path.join(PORTED, f"{name}.py")), (
        f"regenerate: subclass-kit port examples/ported/torch_src/{name}.py "
        f"> examples/ported/{name}.py")


def _run(path) -> str:
    """What the program at ``path`` prints, run in a fresh interpreter: an example defines
    custom ops and subclasses, and torch's dispatch state is process-wide, so one test's
    leftovers must not change another example's output."""
    done = subprocess.run([sys.executable, path], capture_output=True, text=True, timeout=300,
                          cwd=os.path.dirname(path))
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.parametrize("name", EXAMPLES)
def test_ported_example_prints_what_pytorch_prints(name, torch):
    ours = _run(os.path.join(PORTED, f"{name}.py"))
    theirs = _run(os.path.join(PORTED, "torch_src", f"{name}.py"))
    assert ours.count("\n") >= 8
    assert ours == theirs
