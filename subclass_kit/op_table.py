"""THE list of built-in op schemas, in PyTorch's notation, grouped by family.

Data only: ``registry.define`` parses each string once at import. ``POINTWISE_UNARY``,
``POINTWISE_BINARY`` and ``REDUCTIONS`` are functional schemas from which the in-place
(``name_``) and ``out=`` overloads are derived by ``op_table_derived.derived_schemas``, exactly as
PyTorch's ``native_functions.yaml`` spells them. Composite ops (decomposed before the dispatch level) are
marked in ``COMPOSITE``.
"""

FACTORIES = [
    "empty.memory_format(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool? requires_grad=None, MemoryFormat? memory_format=None) -> Tensor",
    "empty_strided(SymInt[] size, SymInt[] stride, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool? requires_grad=None) -> Tensor",
    "full(SymInt[] size, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool? requires_grad=None) -> Tensor",
    "arange.start_step(Scalar start, Scalar end, Scalar step=1, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool? requires_grad=None) -> Tensor",
    "eye.m(SymInt n, SymInt m, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool? requires_grad=None) -> Tensor",
    "linspace(Scalar start, Scalar end, int steps, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool? requires_grad=None) -> Tensor",
    "logspace(Scalar start, Scalar end, int steps, float base=10., *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool? requires_grad=None) -> Tensor",
    "rand(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool? requires_grad=None) -> Tensor",
    "randn(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool? requires_grad=None) -> Tensor",
    "randint.low(SymInt low, SymInt high, SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool? requires_grad=None) -> Tensor",
    "scalar_tensor(Scalar s, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
    # The overloads PyTorch's bindings pick for the short forms (what handlers see):
    # ``ones(2)``, ``zeros(2)``, ``arange(5)``, ``arange(1, 5)``, ``eye(3)``, ``randint(9, (2,))``.
    "ones(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool? requires_grad=None) -> Tensor",
    "zeros(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool? requires_grad=None) -> Tensor",
    "arange(Scalar end, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool? requires_grad=None) -> Tensor",
    "arange.start(Scalar start, Scalar end, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool? requires_grad=None) -> Tensor",
    "eye(SymInt n, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool? requires_grad=None) -> Tensor",
    "randint(SymInt high, SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool? requires_grad=None) -> Tensor",
    "lift_fresh(Tensor(a) self) -> Tensor(a)",
    "empty_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool? requires_grad=None, MemoryFormat? memory_format=None) -> Tensor",
    "full_like(Tensor self, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool? requires_grad=None, MemoryFormat? memory_format=None) -> Tensor",
    "zeros_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool? requires_grad=None, MemoryFormat? memory_format=None) -> Tensor",
    "ones_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool? requires_grad=None, MemoryFormat? memory_format=None) -> Tensor",
    "rand_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool? requires_grad=None, MemoryFormat? memory_format=None) -> Tensor",
    "randn_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool? requires_grad=None, MemoryFormat? memory_format=None) -> Tensor",
    # ``Tensor.new_*``: dtype and device default to ``self``'s.
    "new_empty(Tensor self, SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool? requires_grad=None) -> Tensor",
    "new_empty_strided(Tensor self, SymInt[] size, SymInt[] stride, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool? requires_grad=None) -> Tensor",
    "new_full(Tensor self, SymInt[] size, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool? requires_grad=None) -> Tensor",
    "new_zeros(Tensor self, SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool? requires_grad=None) -> Tensor",
    "new_ones(Tensor self, SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool? requires_grad=None) -> Tensor",
]

VIEWS = [
    "view(Tensor(a) self, SymInt[] size) -> Tensor(a)",
    "view.dtype(Tensor(a) self, ScalarType dtype) -> Tensor(a)",
    "_unsafe_view(Tensor self, SymInt[] size) -> Tensor",
    "as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor(a)",
    "transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)",
    "t(Tensor(a) self) -> Tensor(a)",
    "permute(Tensor(a) self, int[] dims) -> Tensor(a)",
    "expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)",
    "squeeze.dims(Tensor(a) self, int[] dim) -> Tensor(a)",
    "unsqueeze(Tensor(a) self, int dim) -> Tensor(a)",
    "select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)",
    "slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor(a)",
    "diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) -> Tensor(a)",
    "unfold(Tensor(a) self, int dimension, int size, int step) -> Tensor(a)",
    "split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]",
    "split_with_sizes(Tensor(a -> *) self, SymInt[] split_sizes, int dim=0) -> Tensor(a)[]",
    "unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]",
    "alias(Tensor(a) self) -> Tensor(a)",
    "detach(Tensor(a) self) -> Tensor(a)",
]

# In-place view ops: they change the metadata of ``self`` (PyTorch's ``inplace_view`` tag).
INPLACE_VIEWS = [
    "t_(Tensor(a!) self) -> Tensor(a!)",
    "transpose_(Tensor(a!) self, int dim0, int dim1) -> Tensor(a!)",
    "unsqueeze_(Tensor(a!) self, int dim) -> Tensor(a!)",
    "squeeze_.dims(Tensor(a!) self, int[] dim) -> Tensor(a!)",
    "as_strided_(Tensor(a!) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor(a!)",
    "resize_(Tensor(a!) self, SymInt[] size, *, MemoryFormat? memory_format=None) -> Tensor(a!)",
    "resize_as_(Tensor(a!) self, Tensor the_template, *, MemoryFormat? memory_format=None) -> Tensor(a!)",
    "set_.source_Storage_storage_offset(Tensor(a!) self, Storage source, SymInt storage_offset, SymInt[] size, SymInt[] stride=[]) -> Tensor(a!)",
    "set_.source_Tensor(Tensor(a!) self, Tensor source) -> Tensor(a!)",
]

# Functional counterparts used by functionalization (fresh outputs, no aliasing).
SCATTERS = [
    "slice_scatter(Tensor self, Tensor src, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor",
    "select_scatter(Tensor self, Tensor src, int dim, SymInt index) -> Tensor",
    "diagonal_scatter(Tensor self, Tensor src, int offset=0, int dim1=0, int dim2=1) -> Tensor",
    "as_strided_scatter(Tensor self, Tensor src, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor",
    # the views' backward ops: grad_output written into zeros of input_sizes through the view
    "select_backward(Tensor grad_output, SymInt[] input_sizes, int dim, SymInt index) -> Tensor",
    "slice_backward(Tensor grad_output, SymInt[] input_sizes, int dim, SymInt start, SymInt end, SymInt step) -> Tensor",
    "diagonal_backward(Tensor grad_output, SymInt[] input_sizes, int offset, int dim1, int dim2) -> Tensor",
    # functional variants of in-place ops that have no out-of-place op of their own
    "zero(Tensor self) -> Tensor",
    "uniform(Tensor self, float from=0, float to=1, *, Generator? generator=None) -> Tensor",
    "normal_functional(Tensor self, float mean=0, float std=1, *, Generator? generator=None) -> Tensor",
    "resize(Tensor self, SymInt[] size, *, MemoryFormat? memory_format=None) -> Tensor",
]

# ``<view>_copy``: one per view op above, fresh outputs ("mutations_and_views" replays them).
VIEW_COPIES = [
    "view_copy(Tensor self, SymInt[] size) -> Tensor",
    "view_copy.dtype(Tensor self, ScalarType dtype) -> Tensor",
    "as_strided_copy(Tensor self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor",
    "transpose_copy.int(Tensor self, int dim0, int dim1) -> Tensor",
    "t_copy(Tensor self) -> Tensor",
    "permute_copy(Tensor self, int[] dims) -> Tensor",
    "expand_copy(Tensor self, SymInt[] size, *, bool implicit=False) -> Tensor",
    "squeeze_copy.dims(Tensor self, int[] dim) -> Tensor",
    "unsqueeze_copy(Tensor self, int dim) -> Tensor",
    "select_copy.int(Tensor self, int dim, SymInt index) -> Tensor",
    "slice_copy.Tensor(Tensor self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor",
    "diagonal_copy(Tensor self, int offset=0, int dim1=0, int dim2=1) -> Tensor",
    "unfold_copy(Tensor self, int dimension, int size, int step) -> Tensor",
    "split_copy.Tensor(Tensor self, SymInt split_size, int dim=0) -> Tensor[]",
    "split_with_sizes_copy(Tensor self, SymInt[] split_sizes, int dim=0) -> Tensor[]",
    "unbind_copy.int(Tensor self, int dim=0) -> Tensor[]",
    "alias_copy(Tensor self) -> Tensor",
    "detach_copy(Tensor self) -> Tensor",
    "lift_fresh_copy(Tensor self) -> Tensor",
]

COPIES = [
    "clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor",
    "_to_copy(Tensor self, *, ScalarType? dtype=None, Device? device=None, bool non_blocking=False, MemoryFormat? memory_format=None) -> Tensor",
    "copy(Tensor self, Tensor src, bool non_blocking=False) -> Tensor",
    "copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)",
    "fill.Scalar(Tensor self, Scalar value) -> Tensor",
    "fill_.Scalar(Tensor(a!) self, Scalar value) -> Tensor(a!)",
    "fill.Tensor(Tensor self, Tensor value) -> Tensor",
    "fill_.Tensor(Tensor(a!) self, Tensor value) -> Tensor(a!)",
    "zero_(Tensor(a!) self) -> Tensor(a!)",
    "_local_scalar_dense(Tensor self) -> Scalar",
    # In-place random fills.
    "uniform_(Tensor(a!) self, float from=0., float to=1., *, Generator? generator=None) -> Tensor(a!)",
    "normal_(Tensor(a!) self, float mean=0., float std=1., *, Generator? generator=None) -> Tensor(a!)",
]

# Functional pointwise ops; ``name_`` and ``name.out`` overloads are derived.
POINTWISE_UNARY = [
    "abs(Tensor self) -> Tensor",
    "neg(Tensor self) -> Tensor",
    "exp(Tensor self) -> Tensor",
    "log(Tensor self) -> Tensor",
    "log1p(Tensor self) -> Tensor",
    "sqrt(Tensor self) -> Tensor",
    "rsqrt(Tensor self) -> Tensor",
    "sin(Tensor self) -> Tensor",
    "cos(Tensor self) -> Tensor",
    "tanh(Tensor self) -> Tensor",
    "sigmoid(Tensor self) -> Tensor",
    "relu(Tensor self) -> Tensor",
    "reciprocal(Tensor self) -> Tensor",
    "sign(Tensor self) -> Tensor",
    "floor(Tensor self) -> Tensor",
    "ceil(Tensor self) -> Tensor",
    "round(Tensor self) -> Tensor",
    "logical_not(Tensor self) -> Tensor",
    "bitwise_not(Tensor self) -> Tensor",
    "erf(Tensor self) -> Tensor",
    "gelu(Tensor self, *, str approximate='none') -> Tensor",
    "silu(Tensor self) -> Tensor",
    "clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor",
    "clamp.Tensor(Tensor self, Tensor? min=None, Tensor? max=None) -> Tensor",
    # -- more pointwise unary ops (kernels/pointwise_more.py) --
    "isnan(Tensor self) -> Tensor",
    "isinf(Tensor self) -> Tensor",
    "isposinf(Tensor self) -> Tensor",
    "isneginf(Tensor self) -> Tensor",
    "signbit(Tensor self) -> Tensor",
    "trunc(Tensor self) -> Tensor",
    "frac(Tensor self) -> Tensor",
    "sgn(Tensor self) -> Tensor",
    "clamp_min(Tensor self, Scalar min) -> Tensor",
    "clamp_min.Tensor(Tensor self, Tensor min) -> Tensor",
    "clamp_max(Tensor self, Scalar max) -> Tensor",
    "clamp_max.Tensor(Tensor self, Tensor max) -> Tensor",
    "nan_to_num(Tensor self, float? nan=None, float? posinf=None, float? neginf=None) -> Tensor",
    "tan(Tensor self) -> Tensor",
    "asin(Tensor self) -> Tensor",
    "acos(Tensor self) -> Tensor",
    "atan(Tensor self) -> Tensor",
    "sinh(Tensor self) -> Tensor",
    "cosh(Tensor self) -> Tensor",
    "exp2(Tensor self) -> Tensor",
    "expm1(Tensor self) -> Tensor",
    "log2(Tensor self) -> Tensor",
    "log10(Tensor self) -> Tensor",
    "erfc(Tensor self) -> Tensor",
    "sinc(Tensor self) -> Tensor",
    "rad2deg(Tensor self) -> Tensor",
    "deg2rad(Tensor self) -> Tensor",
    "logit(Tensor self, float? eps=None) -> Tensor",
    "lgamma(Tensor self) -> Tensor",
    "digamma(Tensor self) -> Tensor",
    "erfinv(Tensor self) -> Tensor",
]

POINTWISE_BINARY = [
    "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
    "sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
    "mul.Tensor(Tensor self, Tensor other) -> Tensor",
    "div.Tensor(Tensor self, Tensor other) -> Tensor",
    "div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor",
    "remainder.Tensor(Tensor self, Tensor other) -> Tensor",
    "pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor",
    "maximum(Tensor self, Tensor other) -> Tensor",
    "minimum(Tensor self, Tensor other) -> Tensor",
    "eq.Tensor(Tensor self, Tensor other) -> Tensor",
    "ne.Tensor(Tensor self, Tensor other) -> Tensor",
    "lt.Tensor(Tensor self, Tensor other) -> Tensor",
    "le.Tensor(Tensor self, Tensor other) -> Tensor",
    "gt.Tensor(Tensor self, Tensor other) -> Tensor",
    "ge.Tensor(Tensor self, Tensor other) -> Tensor",
    "logical_and(Tensor self, Tensor other) -> Tensor",
    "logical_or(Tensor self, Tensor other) -> Tensor",
    "bitwise_and.Tensor(Tensor self, Tensor other) -> Tensor",
    "bitwise_or.Tensor(Tensor self, Tensor other) -> Tensor",
    "bitwise_xor.Tensor(Tensor self, Tensor other) -> Tensor",
    "where.self(Tensor condition, Tensor self, Tensor other) -> Tensor",
    "masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor",
    "masked_fill.Tensor(Tensor self, Tensor mask, Tensor value) -> Tensor",
    # -- more pointwise binary ops (kernels/pointwise_more.py) --
    "logical_xor(Tensor self, Tensor other) -> Tensor",
    "atan2(Tensor self, Tensor other) -> Tensor",
    "hypot(Tensor self, Tensor other) -> Tensor",
    "logaddexp(Tensor self, Tensor other) -> Tensor",
    "logaddexp2(Tensor self, Tensor other) -> Tensor",
    "xlogy.Tensor(Tensor self, Tensor other) -> Tensor",
    "fmod.Tensor(Tensor self, Tensor other) -> Tensor",
    "fmax(Tensor self, Tensor other) -> Tensor",
    "fmin(Tensor self, Tensor other) -> Tensor",
    "gcd(Tensor self, Tensor other) -> Tensor",
    "lcm(Tensor self, Tensor other) -> Tensor",
    "heaviside(Tensor self, Tensor values) -> Tensor",
    # what the Python operators call (api/math.py): ``x // y`` and ``2 - x`` (kernels/arith_more.py)
    "floor_divide(Tensor self, Tensor other) -> Tensor",
    "rsub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
    "rsub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor",
    # the Scalar overloads PyTorch's Python API picks for a number: ``x ** 2``, ``2 ** x``,
    # ``x > 0``, ``x % 2``, ``2 % x``, ``x.fmod(2)``, ``x & 1``, ``1 & x`` (kernels/arith_more.py)
    "pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor",
    "pow.Scalar(Scalar self, Tensor exponent) -> Tensor",
    "eq.Scalar(Tensor self, Scalar other) -> Tensor",
    "ne.Scalar(Tensor self, Scalar other) -> Tensor",
    "lt.Scalar(Tensor self, Scalar other) -> Tensor",
    "le.Scalar(Tensor self, Scalar other) -> Tensor",
    "gt.Scalar(Tensor self, Scalar other) -> Tensor",
    "ge.Scalar(Tensor self, Scalar other) -> Tensor",
    "remainder.Scalar(Tensor self, Scalar other) -> Tensor",
    "remainder.Scalar_Tensor(Scalar self, Tensor other) -> Tensor",
    "fmod.Scalar(Tensor self, Scalar other) -> Tensor",
    "bitwise_and.Scalar(Tensor self, Scalar other) -> Tensor",
    "bitwise_or.Scalar(Tensor self, Scalar other) -> Tensor",
    "bitwise_xor.Scalar(Tensor self, Scalar other) -> Tensor",
    "bitwise_and.Scalar_Tensor(Scalar self, Tensor other) -> Tensor",
    "bitwise_or.Scalar_Tensor(Scalar self, Tensor other) -> Tensor",
    "bitwise_xor.Scalar_Tensor(Scalar self, Tensor other) -> Tensor",
    # -- bit shifts (kernels/bitwise.py); the operators' own overloads, as PyTorch's ---------
    "bitwise_left_shift.Tensor(Tensor self, Tensor other) -> Tensor",
    "bitwise_left_shift.Tensor_Scalar(Tensor self, Scalar other) -> Tensor",
    "bitwise_left_shift.Scalar_Tensor(Scalar self, Tensor other) -> Tensor",
    "bitwise_right_shift.Tensor(Tensor self, Tensor other) -> Tensor",
    "bitwise_right_shift.Tensor_Scalar(Tensor self, Scalar other) -> Tensor",
    "bitwise_right_shift.Scalar_Tensor(Scalar self, Tensor other) -> Tensor",
    "__lshift__.Tensor(Tensor self, Tensor other) -> Tensor",
    "__lshift__.Scalar(Tensor self, Scalar other) -> Tensor",
    "__rshift__.Tensor(Tensor self, Tensor other) -> Tensor",
    "__rshift__.Scalar(Tensor self, Scalar other) -> Tensor",
]

# Random sampling (kernels/random.py; ``rand.generator`` & co. in kernels/factories.py). A
# ``generator=`` call of a factory reaches its ``.generator`` overload, as PyTorch's.
RANDOM = [
    "rand.generator(SymInt[] size, *, Generator? generator, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool? requires_grad=None) -> Tensor",
    "randn.generator(SymInt[] size, *, Generator? generator, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool? requires_grad=None) -> Tensor",
    "randint.low_generator(SymInt low, SymInt high, SymInt[] size, *, Generator? generator, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool? requires_grad=None) -> Tensor",
    "randperm(SymInt n, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool? requires_grad=None) -> Tensor",
    "randperm.generator(SymInt n, *, Generator? generator, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool? requires_grad=None) -> Tensor",
    "multinomial(Tensor self, SymInt num_samples, bool replacement=False, *, Generator? generator=None) -> Tensor",
    "multinomial.out(Tensor self, SymInt num_samples, bool replacement=False, *, Generator? generator=None, Tensor(a!) out) -> Tensor(a!)",
    "bernoulli(Tensor self, *, Generator? generator=None) -> Tensor",
    "bernoulli.out(Tensor self, *, Generator? generator=None, Tensor(a!) out) -> Tensor(a!)",
    "bernoulli.p(Tensor self, float p, *, Generator? generator=None) -> Tensor",
    "bernoulli.Tensor(Tensor self, Tensor p, *, Generator? generator=None) -> Tensor",
    "bernoulli_.Tensor(Tensor(a!) self, Tensor p, *, Generator? generator=None) -> Tensor(a!)",
    "bernoulli_.float(Tensor(a!) self, float p=0.5, *, Generator? generator=None) -> Tensor(a!)",
    "normal.Tensor_float(Tensor mean, float std=1., *, Generator? generator=None) -> Tensor",
    "normal.Tensor_float_out(Tensor mean, float std=1., *, Generator? generator=None, Tensor(a!) out) -> Tensor(a!)",
    "normal.float_Tensor(float mean, Tensor std, *, Generator? generator=None) -> Tensor",
    "normal.float_Tensor_out(float mean, Tensor std, *, Generator? generator=None, Tensor(a!) out) -> Tensor(a!)",
    "normal.Tensor_Tensor(Tensor mean, Tensor std, *, Generator? generator=None) -> Tensor",
    "normal.Tensor_Tensor_out(Tensor mean, Tensor std, *, Generator? generator=None, Tensor(a!) out) -> Tensor(a!)",
    "normal.float_float(float mean, float std, SymInt[] size, *, Generator? generator=None, ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, bool? requires_grad=None) -> Tensor",
    "normal.float_float_out(float mean, float std, SymInt[] size, *, Generator? generator=None, Tensor(a!) out) -> Tensor(a!)",
]

# Data-dependent selection (kernels/selection.py): meta kernels raise (the size needs the data).
SELECTION = [
    "repeat_interleave.Tensor(Tensor repeats, *, SymInt? output_size=None) -> Tensor",
    "repeat_interleave.Tensor_out(Tensor repeats, *, SymInt? output_size=None, Tensor(a!) out) -> Tensor(a!)",
    "masked_select(Tensor self, Tensor mask) -> Tensor",
    "masked_select.out(Tensor self, Tensor mask, *, Tensor(a!) out) -> Tensor(a!)",
    "_unique2(Tensor self, bool sorted=True, bool return_inverse=False, bool return_counts=False) -> (Tensor, Tensor, Tensor)",
    "unique_dim(Tensor self, int dim, bool sorted=True, bool return_inverse=False, bool return_counts=False) -> (Tensor, Tensor, Tensor)",
    # composites (decompositions_selection.py): PyTorch's CompositeImplicitAutograd bodies
    "repeat_interleave.self_Tensor(Tensor self, Tensor repeats, int? dim=None, *, SymInt? output_size=None) -> Tensor",
    "repeat_interleave.self_int(Tensor self, SymInt repeats, int? dim=None, *, SymInt? output_size=None) -> Tensor",
]

# Metadata queries a wrapper subclass with ``dispatch_sizes_strides_policy`` answers in its
# handler (subclass_kit/sizes_policy.py); the kernels read the layout.
METADATA_QUERIES = [
    "sym_size(Tensor self) -> SymInt[]",
    "sym_stride(Tensor self) -> SymInt[]",
    "dim(Tensor self) -> int",
    "sym_numel(Tensor self) -> SymInt",
    "sym_storage_offset(Tensor self) -> SymInt",
    "is_contiguous(Tensor self) -> bool", "is_set_to(Tensor self, Tensor tensor) -> bool",
]

# ``x <<= y`` / ``x >>= y`` / ``x //= y`` / ``x **= 2``: in-place overloads whose names ``name_`` + the
# functional's overload would not give (native_functions.yaml names them).
SHIFT_INPLACE = [
    "__ilshift__.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)",
    "__ilshift__.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)",
    "__irshift__.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)",
    "__irshift__.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)",
    "floor_divide_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)",
    "pow_.Scalar(Tensor(a!) self, Scalar exponent) -> Tensor(a!)",
]

# Whole-tensor reductions PyTorch's ``x.sum()`` / ``x.mean()`` dispatch (no derived out=).
REDUCTIONS_ALL = [
    "sum(Tensor self, *, ScalarType? dtype=None) -> Tensor",
    "mean(Tensor self, *, ScalarType? dtype=None) -> Tensor",
]

REDUCTIONS = [
    "sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
    "mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
    "prod.dim_int(Tensor self, int dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
    "var.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor",
    "std.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor",
    "amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor",
    "amin(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor",
    "argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor",
    "argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor",
    "all.dims(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor",
    "any.dims(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor",
    "logsumexp(Tensor self, int[1] dim, bool keepdim=False) -> Tensor",
    "norm.ScalarOpt_dim(Tensor self, Scalar? p, int[1] dim, bool keepdim=False) -> Tensor",
    "cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor",
    "cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor",
    "linalg_vector_norm(Tensor self, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
    # -- more reductions (kernels/reductions_more.py) --
    "count_nonzero.dim_IntList(Tensor self, int[] dim) -> Tensor",
    "count_nonzero(Tensor self, int? dim=None) -> Tensor",
    "nansum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
]

OTHER = [
    "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
    "min.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
    "max(Tensor self) -> Tensor",
    "min(Tensor self) -> Tensor",
    "prod(Tensor self, *, ScalarType? dtype=None) -> Tensor",
    "all(Tensor self) -> Tensor",
    "all.dim(Tensor self, int dim, bool keepdim=False) -> Tensor",
    "any(Tensor self) -> Tensor",
    "any.dim(Tensor self, int dim, bool keepdim=False) -> Tensor",
    "max.dim_max(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) max, Tensor(b!) max_values) -> (Tensor(a!) values, Tensor(b!) indices)",
    "min.dim_min(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) min, Tensor(b!) min_indices) -> (Tensor(a!) values, Tensor(b!) indices)",
    "_softmax(Tensor self, int dim, bool half_to_float) -> Tensor",
    "_log_softmax(Tensor self, int dim, bool half_to_float) -> Tensor",
    "mm(Tensor self, Tensor mat2) -> Tensor",
    "bmm(Tensor self, Tensor mat2) -> Tensor",
    "addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
    "dot(Tensor self, Tensor tensor) -> Tensor",
    "mv(Tensor self, Tensor vec) -> Tensor",
    "mm.out(Tensor self, Tensor mat2, *, Tensor(a!) out) -> Tensor(a!)",
    "bmm.out(Tensor self, Tensor mat2, *, Tensor(a!) out) -> Tensor(a!)",
    "cat(Tensor[] tensors, int dim=0) -> Tensor",
    "cat.out(Tensor[] tensors, int dim=0, *, Tensor(a!) out) -> Tensor(a!)",
    "stack(Tensor[] tensors, int dim=0) -> Tensor",
    "gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) -> Tensor",
    "scatter.src(Tensor self, int dim, Tensor index, Tensor src) -> Tensor",
    "scatter.value(Tensor self, int dim, Tensor index, Scalar value) -> Tensor",
    "scatter_.src(Tensor(a!) self, int dim, Tensor index, Tensor src) -> Tensor(a!)",
    "scatter_.value(Tensor(a!) self, int dim, Tensor index, Scalar value) -> Tensor(a!)",
    "index_select(Tensor self, int dim, Tensor index) -> Tensor",
    "index.Tensor(Tensor self, Tensor?[] indices) -> Tensor",
    "index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor",
    "index_put_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor(a!)",
    "masked_fill_.Scalar(Tensor(a!) self, Tensor mask, Scalar value) -> Tensor(a!)",
    "masked_fill_.Tensor(Tensor(a!) self, Tensor mask, Tensor value) -> Tensor(a!)",
    "tril(Tensor self, int diagonal=0) -> Tensor",
    "triu(Tensor self, int diagonal=0) -> Tensor",
    "embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, bool scale_grad_by_freq=False, bool sparse=False) -> Tensor",
    "native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias, float eps) -> (Tensor, Tensor, Tensor)",
    # backward ops of the nn primitives (what their derivative formulas call, as in PyTorch)
    "_softmax_backward_data(Tensor grad_output, Tensor output, int dim, ScalarType input_dtype) -> Tensor",
    "_log_softmax_backward_data(Tensor grad_output, Tensor output, int dim, ScalarType input_dtype) -> Tensor",
    "native_layer_norm_backward(Tensor grad_out, Tensor input, SymInt[] normalized_shape, Tensor mean, Tensor rstd, Tensor? weight, Tensor? bias, bool[3] output_mask) -> (Tensor, Tensor, Tensor)",
    "embedding_dense_backward(Tensor grad_output, Tensor indices, SymInt num_weights, SymInt padding_idx, bool scale_grad_by_freq) -> Tensor",
    # PyTorch's fused CPU attention (what F.scaled_dot_product_attention calls) and its backward
    "_scaled_dot_product_flash_attention_for_cpu(Tensor query, Tensor key, Tensor value, float dropout_p=0., bool is_causal=False, *, Tensor? attn_mask=None, float? scale=None) -> (Tensor output, Tensor logsumexp)",
    "_scaled_dot_product_flash_attention_for_cpu_backward(Tensor grad_out, Tensor query, Tensor key, Tensor value, Tensor out, Tensor logsumexp, float dropout_p, bool is_causal, *, Tensor? attn_mask=None, float? scale=None) -> (Tensor grad_query, Tensor grad_key, Tensor grad_value)",
    "nonzero(Tensor self) -> Tensor",
    # Copies that rearrange elements (fresh outputs).
    "flip(Tensor self, int[] dims) -> Tensor",
    "roll(Tensor self, SymInt[1] shifts, int[1] dims=[]) -> Tensor",
    "repeat(Tensor self, SymInt[] repeats) -> Tensor",
    "diag_embed(Tensor self, int offset=0, int dim1=-2, int dim2=-1) -> Tensor",
]

# Losses and their backward ops (``reduction``: 0 none, 1 mean, 2 sum), ``softplus``,
# ``constant_pad_nd``: primitives in PyTorch, which modes see (kernels/losses.py).
LOSSES = [
    "nll_loss_forward(Tensor self, Tensor target, Tensor? weight, int reduction, SymInt ignore_index) -> (Tensor output, Tensor total_weight)",
    "nll_loss_backward(Tensor grad_output, Tensor self, Tensor target, Tensor? weight, int reduction, SymInt ignore_index, Tensor total_weight) -> Tensor",
    "mse_loss(Tensor self, Tensor target, int reduction=1) -> Tensor",
    "mse_loss_backward(Tensor grad_output, Tensor self, Tensor target, int reduction) -> Tensor",
    "binary_cross_entropy(Tensor self, Tensor target, Tensor? weight=None, int reduction=1) -> Tensor",
    "binary_cross_entropy_backward(Tensor grad_output, Tensor self, Tensor target, Tensor? weight=None, int reduction=1) -> Tensor",
    "binary_cross_entropy_with_logits(Tensor self, Tensor target, Tensor? weight=None, Tensor? pos_weight=None, int reduction=1) -> Tensor",
    "softplus(Tensor self, Scalar beta=1, Scalar threshold=20) -> Tensor",
    "softplus_backward(Tensor grad_output, Tensor self, Scalar beta, Scalar threshold) -> Tensor",
    "constant_pad_nd(Tensor self, SymInt[] pad, Scalar value=0) -> Tensor",
]

# Index accumulation, blends and sorting. ``name_`` and ``name.out`` overloads of
# ``WITH_INPLACE_AND_OUT`` are derived as for the pointwise ops (``lerp_.Scalar``,
# ``lerp.Scalar_out``, ``index_add.out``...), exactly as native_functions.yaml spells them.
WITH_INPLACE_AND_OUT = [
    "index_add(Tensor self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> Tensor",
    "scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor",
    "index_copy(Tensor self, int dim, Tensor index, Tensor source) -> Tensor",
    "masked_scatter(Tensor self, Tensor mask, Tensor source) -> Tensor",
    "lerp.Scalar(Tensor self, Tensor end, Scalar weight) -> Tensor",
    "lerp.Tensor(Tensor self, Tensor end, Tensor weight) -> Tensor",
    "addcmul(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor",
    "addcdiv(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor",
    "baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
]

SORTING = [
    "sort(Tensor self, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)",
    "sort.stable(Tensor self, *, bool? stable, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)",
    "sort.values(Tensor self, int dim=-1, bool descending=False, *, Tensor(a!) values, Tensor(b!) indices) -> (Tensor(a!) values, Tensor(b!) indices)",
    "sort.values_stable(Tensor self, *, bool? stable, int dim=-1, bool descending=False, Tensor(a!) values, Tensor(b!) indices) -> (Tensor(a!) values, Tensor(b!) indices)",
    "topk(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True) -> (Tensor values, Tensor indices)",
    "topk.values(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True, *, Tensor(a!) values, Tensor(b!) indices) -> (Tensor(a!) values, Tensor(b!) indices)",
    # selection (kernels/sorting.py): lower median and k-th smallest
    "median(Tensor self) -> Tensor",
    "median.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
    "median.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
    "median.dim_values(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) values, Tensor(b!) indices) -> (Tensor(a!) values, Tensor(b!) indices)",
    "nanmedian(Tensor self) -> Tensor",
    "nanmedian.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
    "nanmedian.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
    "nanmedian.dim_values(Tensor self, int dim, bool keepdim=False, *, Tensor(a!) values, Tensor(b!) indices) -> (Tensor(a!) values, Tensor(b!) indices)",
    "kthvalue(Tensor self, SymInt k, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor indices)",
    "kthvalue.values(Tensor self, SymInt k, int dim=-1, bool keepdim=False, *, Tensor(a!) values, Tensor(b!) indices) -> (Tensor(a!) values, Tensor(b!) indices)",
]

# More reductions and comparisons (kernels/reductions_more.py).
REDUCTIONS_MORE = [
    "aminmax(Tensor self, *, int? dim=None, bool keepdim=False) -> (Tensor min, Tensor max)",
    "aminmax.out(Tensor self, *, int? dim=None, bool keepdim=False, Tensor(a!) min, Tensor(b!) max) -> (Tensor(a!) min, Tensor(b!) max)",
    "allclose(Tensor self, Tensor other, float rtol=1e-05, float atol=1e-08, bool equal_nan=False) -> bool",
    "equal(Tensor self, Tensor other) -> bool",
    "cummax(Tensor self, int dim) -> (Tensor values, Tensor indices)",
    "cummax.out(Tensor self, int dim, *, Tensor(a!) values, Tensor(b!) indices) -> (Tensor(a!) values, Tensor(b!) indices)",
    "cummin(Tensor self, int dim) -> (Tensor values, Tensor indices)",
    "cummin.out(Tensor self, int dim, *, Tensor(a!) values, Tensor(b!) indices) -> (Tensor(a!) values, Tensor(b!) indices)",
    "logcumsumexp(Tensor self, int dim) -> Tensor",
    "logcumsumexp.out(Tensor self, int dim, *, Tensor(a!) out) -> Tensor(a!)",
]

# More shape, search and linear-algebra primitives (PyTorch's CompositeExplicitAutograd or
# backend kernels: modes see the op itself).
SHAPE_MORE = [
    "rot90(Tensor self, int k=1, int[] dims=[0,1]) -> Tensor",
    "rot90.out(Tensor self, int k=1, int[] dims=[0,1], *, Tensor(a!) out) -> Tensor(a!)",
    "trace(Tensor self) -> Tensor",
    "trace.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
    "take(Tensor self, Tensor index) -> Tensor",
    "take.out(Tensor self, Tensor index, *, Tensor(a!) out) -> Tensor(a!)",
    "vdot(Tensor self, Tensor other) -> Tensor",
    "vdot.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)",
]

# PyTorch's pointwise backward ops (kernels/pointwise_backward.py), as its formulas call them.
POINTWISE_BACKWARD = [
    "threshold_backward(Tensor grad_output, Tensor self, Scalar threshold) -> Tensor",
    "gelu_backward(Tensor grad_output, Tensor self, *, str approximate='none') -> Tensor",
    "sigmoid_backward(Tensor grad_output, Tensor output) -> Tensor",
    "tanh_backward(Tensor grad_output, Tensor output) -> Tensor",
]

# Composite ops: decomposed into the ops above before the dispatch level (PyTorch's
# CompositeImplicitAutograd), so modes never see them.
COMPOSITE = [
    "reshape(Tensor(a) self, SymInt[] shape) -> Tensor(a)",
    "flatten.using_ints(Tensor(a) self, int start_dim=0, int end_dim=-1) -> Tensor(a)",
    "unflatten.int(Tensor(a) self, int dim, SymInt[] sizes) -> Tensor(a)",
    "view_as(Tensor(a) self, Tensor other) -> Tensor(a)",
    "expand_as(Tensor(a) self, Tensor other) -> Tensor(a)",
    "narrow(Tensor(a) self, int dim, SymInt start, SymInt length) -> Tensor(a)",
    "chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]",
    "movedim.intlist(Tensor(a) self, int[] source, int[] destination) -> Tensor(a)",
    "contiguous(Tensor(a) self, *, MemoryFormat memory_format=contiguous_format) -> Tensor(a)",
    "matmul(Tensor self, Tensor other) -> Tensor",
    "softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor",
    "log_softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor",
    "layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, Tensor? bias=None, float eps=1e-05, bool cudnn_enable=True) -> Tensor",
    "linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor",
    "einsum(str equation, Tensor[] tensors, *, int[]? path=None) -> Tensor",
    # sorting composites (lower to ``sort`` / ``sort.stable``)
    "argsort(Tensor self, int dim=-1, bool descending=False) -> Tensor",
    "argsort.stable(Tensor self, *, bool stable, int dim=-1, bool descending=False) -> Tensor",
    "tile(Tensor self, SymInt[] dims) -> Tensor",
    "diag(Tensor self, int diagonal=0) -> Tensor",
    "outer(Tensor self, Tensor vec2) -> Tensor",
    "kron(Tensor self, Tensor other) -> Tensor",
    "meshgrid(Tensor[] tensors) -> Tensor[]",
    "meshgrid.indexing(Tensor[] tensors, *, str indexing) -> Tensor[]",
    # more shape composites (PyTorch's CompositeImplicitAutograd bodies)
    "broadcast_to(Tensor(a) self, SymInt[] size) -> Tensor(a)",
    "ravel(Tensor(a) self) -> Tensor(a)",
    "atleast_1d(Tensor self) -> Tensor",
    "atleast_2d(Tensor self) -> Tensor",
    "atleast_3d(Tensor self) -> Tensor",
    "hstack(Tensor[] tensors) -> Tensor",
    "hstack.out(Tensor[] tensors, *, Tensor(a!) out) -> Tensor(a!)",
    "vstack(Tensor[] tensors) -> Tensor",
    "vstack.out(Tensor[] tensors, *, Tensor(a!) out) -> Tensor(a!)",
    "dstack(Tensor[] tensors) -> Tensor",
    "dstack.out(Tensor[] tensors, *, Tensor(a!) out) -> Tensor(a!)",
    "tensor_split.sections(Tensor(a -> *) self, SymInt sections, int dim=0) -> Tensor(a)[]",
    "tensor_split.indices(Tensor(a -> *) self, SymInt[] indices, int dim=0) -> Tensor(a)[]",
    "tensor_split.tensor_indices_or_sections(Tensor(a -> *) self, Tensor tensor_indices_or_sections, int dim=0) -> Tensor(a)[]",
    "hsplit.int(Tensor(a -> *) self, int sections) -> Tensor(a)[]",
    "hsplit.array(Tensor(a -> *) self, int[] indices) -> Tensor(a)[]",
    "vsplit.int(Tensor(a -> *) self, int sections) -> Tensor(a)[]",
    "vsplit.array(Tensor(a -> *) self, int[] indices) -> Tensor(a)[]",
    "dsplit.int(Tensor(a -> *) self, int sections) -> Tensor(a)[]",
    "dsplit.array(Tensor(a -> *) self, int[] indices) -> Tensor(a)[]",
    "fliplr(Tensor self) -> Tensor",
    "flipud(Tensor self) -> Tensor",
    "diff(Tensor self, int n=1, int dim=-1, Tensor? prepend=None, Tensor? append=None) -> Tensor",
    "diff.out(Tensor self, int n=1, int dim=-1, Tensor? prepend=None, Tensor? append=None, *, Tensor(a!) out) -> Tensor(a!)",
    # reduction composites (decompositions_reductions.py)
    "nanmean(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
    "nanmean.out(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)",
    "isclose(Tensor self, Tensor other, float rtol=1e-05, float atol=1e-08, bool equal_nan=False) -> Tensor",
    # pointwise composites (api/math_more.py): square -> pow, fix -> trunc, isfinite ->
    # abs/ne/eq/mul (floating) or ones_like (integral)
    "square(Tensor self) -> Tensor",
    "square_(Tensor(a!) self) -> Tensor(a!)",
    "square.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
    "fix(Tensor self) -> Tensor",
    "fix_(Tensor(a!) self) -> Tensor(a!)",
    "fix.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
    "isfinite(Tensor self) -> Tensor",
    # float_power -> _to_copy(float64) + pow (one overload: Python numbers in Tensor positions)
    "float_power.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor",
    "float_power_.Tensor(Tensor(a!) self, Tensor exponent) -> Tensor(a!)",
    "float_power.Tensor_Tensor_out(Tensor self, Tensor exponent, *, Tensor(a!) out) -> Tensor(a!)",
]

# Pointwise ops WITHOUT a derived ``name_`` in-place overload (as in native_functions.yaml).
NO_INPLACE = {"where.self", "maximum", "minimum", "masked_fill.Scalar", "masked_fill.Tensor",
              # more pointwise ops (kernels/pointwise_more.py)
              "isnan", "isinf", "isposinf", "isneginf", "signbit", "logaddexp", "logaddexp2", "fmax", "fmin",
              # bit shifts: a Scalar self has no in-place form; the operators use __ilshift__
              "bitwise_left_shift.Scalar_Tensor", "bitwise_right_shift.Scalar_Tensor",
              "__lshift__.Tensor", "__lshift__.Scalar", "__rshift__.Tensor", "__rshift__.Scalar",
              # no rsub_; floor_divide's in-place overload is ``floor_divide_.Tensor``
              "rsub.Tensor", "rsub.Scalar", "floor_divide",
              # a Scalar self has no in-place form; pow.Tensor_Scalar's is pow_.Scalar
              "pow.Tensor_Scalar", "pow.Scalar", "remainder.Scalar_Tensor",
              "bitwise_and.Scalar_Tensor", "bitwise_or.Scalar_Tensor",
              "bitwise_xor.Scalar_Tensor"}


ALL = (FACTORIES + VIEWS + INPLACE_VIEWS + SCATTERS + VIEW_COPIES + COPIES + POINTWISE_UNARY
       + POINTWISE_BINARY + REDUCTIONS + REDUCTIONS_ALL + OTHER + LOSSES + WITH_INPLACE_AND_OUT
       + SORTING + SHAPE_MORE + REDUCTIONS_MORE + POINTWISE_BACKWARD + COMPOSITE + SHIFT_INPLACE
       + RANDOM + SELECTION + METADATA_QUERIES)
