"""``no_grad`` / ``enable_grad`` / ``set_grad_enabled`` / ``inference_mode`` as decorators and
context managers, run as the same program on subclass_kit and on torch (the oracle) and compared
observation by observation: decorated generators (the mode is on only while the body runs),
``set_grad_enabled`` as a decorator, the bare forms ``@no_grad`` / ``@inference_mode``, and what
``with ... as r`` binds."""

import contextlib

import pytest

import subclass_kit as sk

torch = pytest.importorskip("torch", reason="the oracle (torch==2.13.0) is not installed")
hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies


def state(L):
    """What we compare about the thread's switches: grad mode, inference mode, and whether a new
    tensor is an inference tensor."""
    return (L.is_grad_enabled(), L.is_inference_mode_enabled(), L.ones(1).is_inference())


def reset(L):
    if L is sk:
        sk.set_grad_state(sk.GradState(grad_enabled=True, inference=False))
    else:
        torch.set_grad_enabled(True)


@pytest.fixture(autouse=True)
def default_state():
    """Every test starts from grad on / inference off, whatever an earlier failure leaked."""
    reset(sk)
    reset(torch)
    yield
    reset(sk)
    reset(torch)


def run(L, program, *args):
    """Run ``program(L, log, *args)`` from the default state; exceptions become log entries, and
    the state afterwards is the last entry (a leaked mode shows there)."""
    assert state(L) == (True, False, False)
    log = []
    try:
        program(L, log, *args)
    except Exception as e:  # noqa: BLE001 - the exception is the observation
        log.append(("raised", type(e).__name__, str(e)))
    finally:
        log.append(("after", state(L)))
        reset(L)
    return log


def same(program, *args):
    ours, theirs = run(sk, program, *args), run(torch, program, *args)
    assert ours == theirs, f"\nsk:    {ours}\ntorch: {theirs}"


# The decorators under test, built inside the program (``set_grad_enabled`` acts on construction).
DECORATORS = {
    "no_grad()": lambda L: L.no_grad(),
    "no_grad": lambda L: L.no_grad,
    "enable_grad()": lambda L: L.enable_grad(),
    "enable_grad": lambda L: L.enable_grad,
    "inference_mode()": lambda L: L.inference_mode(),
    "inference_mode": lambda L: L.inference_mode,
    "inference_mode(False)": lambda L: L.inference_mode(False),
    "set_grad_enabled(False)": lambda L: L.set_grad_enabled(False),
    "set_grad_enabled(True)": lambda L: L.set_grad_enabled(True),
}

# Where the caller stands when it resumes the generator.
OUTERS = {
    "none": lambda L: contextlib.nullcontext(),
    "no_grad": lambda L: L.no_grad(),
    "inference_mode": lambda L: L.inference_mode(),
}


# -- decorated generators: the mode is on only while the body runs ------------------------------
def body(L, log, n):
    """A generator that logs the switches at every resume, catches ValueError, and logs them in
    its ``finally`` (run by exhaustion, an uncaught throw, or ``close``)."""
    try:
        log.append(("started", state(L)))
        for i in range(n):
            try:
                got = yield i
                log.append(("resumed", got, state(L)))
            except ValueError as e:
                log.append(("caught", str(e), state(L)))
    finally:
        log.append(("finally", state(L)))
    return "done"


def act(L, log, it, action):
    kind, k = action
    try:
        if kind == "next":
            log.append(("yielded", next(it)))
        elif kind == "send":
            log.append(("yielded", it.send(k)))
        elif kind == "throw_caught":
            log.append(("yielded", it.throw(ValueError(f"v{k}"))))
        elif kind == "throw_uncaught":
            log.append(("yielded", it.throw(KeyError(f"k{k}"))))
        else:
            log.append(("closed", it.close()))
    except StopIteration as e:
        log.append(("stop", e.value))
    except Exception as e:  # noqa: BLE001 - the exception is the observation
        log.append(("raised", type(e).__name__, str(e)))


def p_decorated_generator(L, log, decorator, n, actions):
    decorate = DECORATORS[decorator](L)
    log.append(("decorated", state(L)))

    @decorate
    def gen(n):
        """doc"""
        return (yield from body(L, log, n))

    log.append((gen.__name__, gen.__doc__))
    it = gen(n)
    for outer, action in actions:
        with OUTERS[outer](L):
            act(L, log, it, action)
            log.append(("caller", state(L)))
        log.append(("caller", state(L)))
    it.close()


ACTIONS = st.tuples(st.sampled_from(["next", "send", "throw_caught", "throw_uncaught", "close"]),
                    st.integers(0, 3))


@hypothesis.given(decorator=st.sampled_from(sorted(DECORATORS)), n=st.integers(0, 3),
                  actions=st.lists(st.tuples(st.sampled_from(sorted(OUTERS)), ACTIONS),
                                   max_size=7))
def test_decorated_generator_mode_only_while_body_runs(decorator, n, actions):
    same(p_decorated_generator, decorator, n, actions)


@pytest.mark.parametrize("decorator", ["inference_mode()", "no_grad()", "no_grad"])
def test_decorated_generator_does_not_leak_after_first_next(decorator):
    def program(L, log):
        @DECORATORS[decorator](L)
        def g():
            log.append(("body", state(L)))
            yield 1
            log.append(("body", state(L)))
            yield 2

        it = g()
        log.append(next(it))
        log.append(("caller", state(L)))
        log.append(next(it))
        log.append(("caller", state(L)))

    same(program)


def test_enable_grad_generator_under_no_grad():
    def program(L, log):
        @L.enable_grad()
        def g():
            while True:
                log.append(("body", state(L)))
                yield

        with L.no_grad():
            it = g()
            next(it)
            log.append(("caller", state(L)))
            next(it)
            log.append(("caller", state(L)))
            it.close()

    same(program)


# -- set_grad_enabled as a decorator restores the state at once --------------------------------
def p_set_grad_enabled_decorator(L, log, mode, start, generator):
    L.set_grad_enabled(start)  # a plain call: takes effect immediately, as in torch
    log.append(("start", state(L)))
    decorate = L.set_grad_enabled(mode)
    log.append(("constructed", state(L)))
    @decorate
    def gen():
        yield L.is_grad_enabled()

    @decorate
    def fn():
        return L.is_grad_enabled()

    def call():
        return list(gen()) if generator else fn()

    log.append(("decorated", state(L)))
    log.append(("call", call()))
    log.append(("called", state(L)))
    with L.no_grad():
        log.append(("call under no_grad", call()))
    log.append(("called", state(L)))


@hypothesis.given(mode=st.booleans(), start=st.booleans(), generator=st.booleans())
def test_set_grad_enabled_decorator_restores_previous_state(mode, start, generator):
    same(p_set_grad_enabled_decorator, mode, start, generator)


def test_set_grad_enabled_decorator_repro():
    @sk.set_grad_enabled(False)
    def f():
        return sk.is_grad_enabled()

    assert (sk.is_grad_enabled(), f(), sk.is_grad_enabled()) == (True, False, True)


# -- bare decorator forms --------------------------------------------------------------------
def p_bare_decorator(L, log, decorator, outer):
    @DECORATORS[decorator](L)
    def f(x, *, y=0):
        """doc"""
        return (x + y, state(L))

    log.append((f.__name__, f.__doc__, callable(f)))
    with OUTERS[outer](L):
        log.append(("call", f(1, y=2)))
        log.append(("caller", state(L)))


@pytest.mark.parametrize("outer", sorted(OUTERS))
@pytest.mark.parametrize("decorator", ["no_grad", "enable_grad", "inference_mode"])
def test_bare_decorator_forms(decorator, outer):
    same(p_bare_decorator, decorator, outer)


def test_inference_mode_keyword_callable():
    def program(L, log):
        f = L.inference_mode(mode=lambda: state(L))
        log.append(f())
        log.append(state(L))

    same(program)


# -- what ``with ... as r`` binds --------------------------------------------------------------
CONTEXTS = {
    "no_grad()": lambda L: L.no_grad(),
    "enable_grad()": lambda L: L.enable_grad(),
    "inference_mode()": lambda L: L.inference_mode(),
    "inference_mode(False)": lambda L: L.inference_mode(False),
    "set_grad_enabled(False)": lambda L: L.set_grad_enabled(False),
    "set_grad_enabled(True)": lambda L: L.set_grad_enabled(True),
}


@pytest.mark.parametrize("context", sorted(CONTEXTS))
def test_with_as_binds_what_torch_binds(context):
    def program(L, log):
        with CONTEXTS[context](L) as r:
            log.append(("bound", None if r is None else type(r).__name__, state(L)))

    same(program)


# -- one inference_mode instance entered again while it is active -----------------------------
def p_reentered_instance(L, log, nesting, raise_inside, reuse):
    """Enter ``inference_mode(mode)`` for each mode of ``nesting``, innermost last, logging the
    switches after every enter and every exit; with ``reuse`` one instance per mode is entered
    at every level it appears (torch's instances do not restore their own state when entered
    again, so torch runs the program with a fresh instance per level)."""
    instances = {mode: L.inference_mode(mode) for mode in (True, False)}

    def enter(depth):
        if depth == len(nesting):
            if raise_inside:
                raise ValueError("inside")
            return
        mode = nesting[depth]
        with instances[mode] if reuse else L.inference_mode(mode):
            log.append(("entered", depth, state(L)))
            try:
                enter(depth + 1)
            finally:
                log.append(("leaving", depth, state(L)))
        log.append(("left", depth, state(L)))

    enter(0)


@hypothesis.given(nesting=st.lists(st.booleans(), max_size=6), raise_inside=st.booleans())
def test_reentered_inference_mode_instance_restores_each_level(nesting, raise_inside):
    ours = run(sk, p_reentered_instance, nesting, raise_inside, True)
    theirs = run(torch, p_reentered_instance, nesting, raise_inside, False)
    assert ours == theirs, f"\nsk:    {ours}\ntorch: {theirs}"


def test_inference_mode_rejects_non_bool_mode():
    for mode in (1, None, "yes", 0.0):
        with pytest.raises(TypeError, match=f"inference_mode\\(\\): argument 'mode' must be "
                                            f"bool, not {type(mode).__name__}"):
            sk.inference_mode(mode)
    assert state(sk) == (True, False, False)
