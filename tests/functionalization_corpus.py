"""The view/mutation program corpus of the functionalization tests.

Each program is ``fn(L, *inputs)`` where ``L`` is ``torch`` or ``subclass_kit``: the same source
runs eagerly under torch (the oracle) and functionalized under ours. ``CORPUS`` maps a name to
``(fn, input shapes)``; inputs are float32 ``arange`` values (+1) of those shapes, or an int64
tensor for shapes given as ``("i64", shape)``.
"""

from __future__ import annotations

import numpy as np


def make_inputs(L, specs, offset=1.0):
    """Fresh tensors of library ``L`` for ``specs`` (same values for both libraries)."""
    out = []
    for spec in specs:
        dtype, shape = ("f32", spec) if not (spec and isinstance(spec[0], str)) else spec
        n = int(np.prod(shape)) if shape else 1
        a = (np.arange(n) + offset).reshape(shape)
        a = a.astype(np.int64 if dtype == "i64" else np.float32)
        out.append(L.tensor(a.tolist(), dtype=L.int64 if dtype == "i64" else L.float32))
    return out


CORPUS: dict = {}


def program(*shapes):
    def deco(fn):
        CORPUS[fn.__name__] = (fn, shapes)
        return fn
    return deco


# -- the seed examples and SEMANTICS.md §6.4 -------------------------------------------------------
@program((4, 2))
def view_add_return_base(L, x):
    y = x.view(-1)
    y.add_(1)
    return x


@program((8,))
def intermediate_mutation(L, x):
    tmp = L.ones(4, 2)
    y = tmp.view(8)
    y.add_(x)
    return tmp


@program((4, 2))
def input_mutation(L, x):
    x.add_(1)
    return x * 2


@program((4, 2))
def select_mul(L, x):
    a = x[0]
    a.mul_(2)
    return x


@program((4, 2))
def transpose_inplace_then_add(L, x):
    y = x.clone()
    y.transpose_(0, 1)
    y.add_(1)
    return y


@program((4, 2))
def split_add(L, x):
    a, b = x.split(2)
    a.add_(1)
    return x


@program((4, 2))
def setitem_row_scalar(L, x):
    y = x.clone()
    y[0, :] = 5
    return y


@program((2, 2))
def view_of_view(L, x):
    y = x.view(4)
    z = y[1:3]
    z.mul_(3)
    return y, z


@program((4, 2))
def two_views_then_base_mutation(L, x):
    a = x.view(-1)
    b = x.view(-1)
    x.add_(1)
    return a * 1, b * 1


@program((4, 2))
def copy_into_view(L, x):
    y = x.view(-1)
    y.copy_(x.view(-1) * 2)
    return x


@program((4, 2))
def out_into_empty(L, x):
    o = L.empty(0)
    L.add(x, 1, out=o)
    return o


@program((4, 2))
def resize_smaller_then_add(L, x):
    c = x.clone()
    c.resize_(2)
    c.add_(1)
    return c


# -- every view op, mutated through ---------------------------------------------------------------
@program((3, 4))
def mutate_through_t(L, x):
    x.t().mul_(2)
    return x


@program((3, 4))
def mutate_through_transpose(L, x):
    x.transpose(0, 1)[1].add_(10)
    return x


@program((2, 3, 4))
def mutate_through_permute(L, x):
    x.permute(2, 0, 1)[0].fill_(-1)
    return x


@program((3, 3))
def mutate_through_diagonal(L, x):
    x.diagonal().add_(1)
    return x


@program((3, 3))
def mutate_through_offset_diagonal(L, x):
    x.diagonal(1).zero_()
    return x


@program((4, 3))
def mutate_through_narrow(L, x):
    x.narrow(0, 1, 2).mul_(-1)
    return x


@program((6,))
def mutate_through_step_slice(L, x):
    x[::2].add_(100)
    return x


@program((4, 2))
def mutate_through_unbind(L, x):
    for i, v in enumerate(x.unbind(1)):
        v.mul_(i + 1)
    return x


@program((6, 2))
def mutate_through_chunk(L, x):
    a, b, c = x.chunk(3)
    b.sub_(1)
    c.fill_(7)
    return x, a


@program((5, 2))
def mutate_through_split_with_sizes(L, x):
    a, b = x.split([2, 3])
    b.mul_(3)
    return x, a, b


@program((3, 1, 2))
def mutate_through_squeeze(L, x):
    x.squeeze(1).add_(1)
    return x


@program((3, 2))
def mutate_through_unsqueeze(L, x):
    x.unsqueeze(1).mul_(5)
    return x


@program((2, 6))
def mutate_through_reshape_view(L, x):
    x.reshape(3, 4)[1].add_(1)
    return x


@program((2, 3))
def mutate_through_flatten(L, x):
    x.flatten().mul_(2)
    return x


@program((6,))
def mutate_through_unflatten(L, x):
    x.unflatten(0, (2, 3))[1].fill_(0)
    return x


@program((2, 3, 4))
def mutate_through_movedim(L, x):
    x.movedim(0, 2)[0].add_(1)
    return x


@program((3,))
def mutate_through_alias_view_as(L, x):
    x.view_as(x).mul_(3)
    return x


@program((3, 4))
def mutate_through_detach(L, x):
    x.detach().add_(1)
    return x


@program((10,))
def mutate_through_as_strided(L, x):
    x.as_strided((2, 2), (3, 1), 1).mul_(10)
    return x


@program((8,))
def mutate_through_unfold(L, x):
    x.unfold(0, 2, 2).add_(1)
    return x


@program((2, 4))
def mutate_through_view_dtype(L, x):
    x.view(L.int32).bitwise_and_(0)
    return x


@program((1, 3))
def fill_through_expand(L, x):
    x.expand(1, 3).fill_(2)
    return x


@program((4, 4))
def view_chain_three(L, x):
    y = x.t()[1:3]
    z = y.transpose(0, 1).unsqueeze(0)
    z.add_(1)
    return x, y, z


@program((4, 4))
def views_of_views_mutate_base_use_views(L, x):
    a = x[1]
    b = a[1:3]
    c = x.t()[2]
    x.mul_(2)
    return a + 0, b + 0, c + 0


@program((4, 4))
def mutate_one_view_read_sibling(L, x):
    a = x[0:2]
    b = x[1:3]
    a.fill_(0)
    return b * 1


# -- __setitem__ forms ----------------------------------------------------------------------------
@program((4, 3))
def setitem_int(L, x):
    x[1] = 9
    return x


@program((4, 3))
def setitem_slice_tensor(L, x):
    x[1:3] = L.ones(2, 3)
    return x


@program((4, 3))
def setitem_column_from_column(L, x):
    x[:, 1] = x[:, 2]
    return x


@program((4, 3))
def setitem_int_index_tensor(L, x):
    x[L.tensor([0, 2])] = 2.0
    return x


@program((4, 3))
def setitem_bool_mask(L, x):
    x[x > 5] = 0
    return x


@program((4, 3))
def setitem_ellipsis_none(L, x):
    x[..., 0] = -1
    return x


@program((4, 3))
def setitem_broadcast_row(L, x):
    x[1:] = L.tensor([1.0, 2.0, 3.0])
    return x


@program((4, 3))
def setitem_on_view(L, x):
    y = x[1:]
    y[0, 0] = 42
    return x, y


# -- mutating ops ---------------------------------------------------------------------------------
@program((3, 4))
def fill_zero_ops(L, x):
    x[0].fill_(3)
    x[1].zero_()
    return x


@program((3, 4), (4,))
def copy_broadcast(L, x, y):
    x.copy_(y)
    return x


@program((3, 4), ("i64", (3, 4)))
def copy_dtype_change(L, x, y):
    x.copy_(y)
    y.copy_(x * 2)
    return x, y


@program((3, 4))
def index_put_accumulate(L, x):
    x.index_put_((L.tensor([0, 0, 2]),), L.tensor(1.0), accumulate=True)
    return x


@program((3, 4))
def masked_fill_inplace(L, x):
    x.masked_fill_(x > 6, -1)
    return x


@program((3, 4))
def clamp_relu_neg_inplace(L, x):
    x.sub_(6).clamp_(-3, 3)
    x.relu_()
    x[0].neg_()
    return x


@program((3, 4), (3, 4))
def two_inputs_mutated(L, x, y):
    x.add_(y)
    y.mul_(x)
    return x + y


@program((3, 4))
def out_into_input(L, x):
    L.mul(x, 2, out=x)
    return x


@program((3, 4), (3, 4))
def out_into_view(L, x, y):
    L.add(x[0], y[0], out=y[1])
    return y


@program((3, 4))
def reduction_out(L, x):
    o = L.empty(3)
    L.sum(x, 1, out=o)
    return o


@program((3, 4))
def promoted_inplace(L, x):
    x.add_(L.tensor([1.0, 2.0, 3.0, 4.0], dtype=L.float64))
    return x


@program((3, 4))
def scatter_inplace(L, x):
    x.scatter_(1, L.tensor([[0], [1], [2]]), L.ones(3, 1))
    return x


@program((3, 4))
def index_add_inplace(L, x):
    x.index_add_(0, L.tensor([0, 2]), L.ones(2, 4))
    return x


# -- metadata mutations ---------------------------------------------------------------------------
@program((2, 3))
def input_t_(L, x):
    x.t_()
    return x * 1


@program((2, 3))
def input_unsqueeze_then_add(L, x):
    x.unsqueeze_(0)
    x.add_(1)
    return x


@program((1, 3))
def squeeze_inplace_then_mul(L, x):
    y = x.clone()
    y.squeeze_(0)
    y.mul_(2)
    return y


@program((2, 3))
def as_strided_inplace(L, x):
    y = x.clone()
    y.as_strided_((3,), (2,))
    y.add_(1)
    return y


@program((2, 3))
def resize_larger_fresh(L, x):
    y = x.clone()
    y.resize_(10)
    y[:6].copy_(x.view(-1))
    y[6:].fill_(0)
    return y


@program((2, 3), (3, 2))
def resize_as_smaller(L, x, y):
    z = x.clone()
    z.resize_as_(y[:2])
    return z + 0


@program((2, 3))
def set_to_other(L, x):
    y = L.zeros(5)
    y.set_(x.clone())
    y.add_(1)
    return y


# -- outputs that are views, dtype changes, intermediates -----------------------------------------
@program((2, 3))
def return_view_of_input(L, x):
    return x.t()


@program((2, 3))
def return_input_unchanged(L, x):
    return x, x[0]


@program((2, 3))
def mutate_then_return_view(L, x):
    x.mul_(2)
    return x.view(-1)


@program((2, 3))
def dtype_change_chain(L, x):
    y = x.to(L.float64)
    y.mul_(1.5)
    z = y.to(L.int64)
    z.add_(1)
    return y, z


@program((2, 3))
def item_read_after_mutation(L, x):
    x[0, 0] = 100
    return x.sum() + x[0, 0].item()


@program((4,))
def many_mutations_same_view(L, x):
    y = x[1:3]
    for i in range(5):
        y.add_(i)
    return x


@program((3, 3))
def random_fill_shape(L, x):
    y = L.empty(3, 3)
    y.uniform_()
    return x + y.shape[0]


@program((2, 3))
def in_place_on_clone_keeps_input(L, x):
    y = x.clone()
    y.mul_(2)
    return x, y


@program((4, 4))
def stack_of_mutations(L, x):
    a = x[:2]
    b = x[2:]
    a.add_(b)
    b.mul_(a)
    return x, a, b


@program((3, 4))
def cat_of_mutated_views(L, x):
    a = x[0]
    a.add_(1)
    return L.cat([a, x[1], x[2]])


# -- many writes into one base: after the first (a scatter), functionalization writes them in
# place into its private copy of the base when no mode below observes it (wrapper.py) -----------
@program((4, 6))
def unbind_loop(L, x):
    for i, v in enumerate(x.unbind(1)):
        v.mul_(i + 1)
    return x


@program((4, 4))
def writes_through_several_views(L, x):
    x[0].add_(1)
    x[1:][0].mul_(2)                # slice, select
    x.t()[2].sub_(3)                # a transpose first: scattered
    x[:, 1:3].t()[0].add_(10)       # slice, t, select
    x.diagonal().neg_()
    x.unbind(0)[3].fill_(5)
    a, b = x.split(2, 1)
    b[1].mul_(3)
    x[2, 1:].view(3, 1)[1].add_(a[0, :1])
    return x, a.sum(), x[2].clone()


@program((3, 4))
def writes_into_a_transposed_intermediate(L, x):
    z = x.t().clone()               # a base with strides (1, 4)
    z[0].add_(1)
    z[1].mul_(2)
    z[:, 1].sub_(1)
    z[2:].t()[1].add_(100)
    return z * 1, x


@program((3, 4))
def writes_through_as_strided(L, x):
    w = x.as_strided((2, 2), (4, 1), 1)
    w.add_(100)
    w[1].mul_(-1)
    w[:, 1].sub_(3)
    return x


@program((2, 5))
def writes_then_read_a_sibling_each_step(L, x):
    outs = []
    for i, v in enumerate(x.unbind(1)):
        v.add_(i)
        outs.append(x.sum(1))
    return L.stack(outs), x


@program((3, 4))
def writes_through_rearranged_views(L, x):
    x[0].add_(1)
    y = x.t()
    for i in range(4):
        y[i].add_(i)                        # t, select
    x.permute(1, 0)[:, 1].mul_(2)           # permute, slice, select
    x.unsqueeze(0)[0, 2].sub_(1)            # unsqueeze, select, select
    x.transpose(0, 1)[2:].neg_()            # transpose, slice
    x.view(12)[3:5].add_(7)                 # a view first: scattered
    z = x.t().clone()                       # an intermediate with strides (1, 4)
    z[1].mul_(3)
    z.t()[2, :3].add_(z[3])                 # t, select, slice; z[3] is disjoint
    return x, z * 1


# -- as_strided of intermediates laid out otherwise than contiguously -------------------------------
# ``as_strided`` addresses the storage, so its values depend on how eager mode lays the
# intermediate out; without views the ``*_copy`` ops return contiguous tensors (Note [as_strided
# addresses the eager storage], modes/functionalization/wrapper.py).
@program((3, 4))
def as_strided_of_a_transposed_view(L, x):
    return x.t().as_strided((2, 2), (4, 1), 1) * 1


@program((3, 4))
def as_strided_of_a_slice_of_an_intermediate(L, x):
    y = x * 2
    return y[:, 1:].as_strided((2, 3), (3, 1), 2) + 0, y[1:].t().as_strided((3,), (5,), 0) * 1


@program((3, 4))
def as_strided_of_a_transposed_intermediate(L, x):
    y = (x + 1).t()
    return y.as_strided((2, 2), (4, 1), 1) + 0


@program((3, 4))
def writes_through_as_strided_of_a_computed_transposed_base(L, x):
    z = x.t() * 1                           # eager strides (1, 4): a base laid out transposed
    w = z.as_strided((2, 2), (4, 1), 1)
    w.add_(100)
    w[1].mul_(-1)
    x[:, 1:].add_(z[1:].as_strided((3, 3), (1, 3), 0))
    return z + 0, w * 2, x


@program((3, 4))
def writes_through_as_strided_of_a_transposed_clone(L, x):
    z = x[:, 1:].t().clone()                # strides (1, 3) in eager mode
    z.as_strided((3,), (2,), 1).mul_(-1)
    z.as_strided((2, 2), (1, 3), 2).sub_(5)
    z.t_()                                  # a metadata mutation: read through it only
    return z * 1, z.as_strided((9,), (1,), 0) * 1, z.as_strided((2, 2), (3, 1), 1) * 1


PROGRAM_NAMES = sorted(CORPUS)
