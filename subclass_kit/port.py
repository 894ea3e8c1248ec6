"""``subclass-kit port``: rewrite PyTorch subclass and mode code to subclass_kit.

``port_source(text)`` returns the rewritten text and the warnings; the rename table is data in
``port_table.py`` and is explained in ``docs/porting.md``. The rewrite works on tokens
(``tokenize``), so only names change: comments, strings, blank lines and formatting stay as they
were (an import statement that changes is written anew, on the lines it occupied). What it does:

- import statements: ``import torch`` -> ``import subclass_kit as sk``, ``from
  torch.utils._python_dispatch import TorchDispatchMode`` -> ``from subclass_kit import
  DispatchMode``, ``from torch.utils import _pytree as pytree`` -> ``from subclass_kit import
  pytree``; every later use of a name bound by such an import is respelled (``torch.ops.aten.add``
  -> ``sk.ops.add``, ``TorchDispatchMode`` -> ``DispatchMode``);
- attribute names anywhere: ``__torch_dispatch__`` -> ``__tensor_dispatch__``, ``func._schema`` ->
  ``func.schema``; ``cls._make_wrapper_subclass(cls, ...)`` -> ``sk.make_wrapper_subclass(cls,
  ...)``, ``_make_subclass(..., require_grad=)`` -> ``make_subclass(..., requires_grad=)``;
- ``torch.Tag.inplace_view`` -> ``"inplace_view"``; ``torch.library.define("ns::f", "(...) ->
  T")`` -> ``sk.library.define("ns::f(...) -> T")``;
- imports the rewritten names need and the file lacks (``import subclass_kit as sk``, ``import
  subclass_kit.modes``) go before the first rewritten import.

A name with no counterpart (``torch.compile``, ``torch.cuda``, ``_push_mode``...) is left as
written and reported as a warning ``(line, message)``; so is a rewritten name that the installed
subclass_kit does not have (yet). Not rewritten: names inside f-strings and other strings, and
names reached through values (``x = torch; x.foo``) rather than import bindings.
"""

from __future__ import annotations

import ast
import functools
import importlib
import io
import re
import tokenize
from typing import NamedTuple

from . import port_table as table

__all__ = ["port_source", "PortWarning", "lookup"]

_OPEN, _CLOSE = "([{", ")]}"
_STMT_END = (tokenize.NEWLINE, tokenize.ENDMARKER)
_SKIP = (tokenize.NL, tokenize.COMMENT)
# a torch name inside the braces of an f-string (tokenize keeps f-strings whole before 3.12)
_TORCH_IN_FSTRING = re.compile(r"^[rRbB]*[fF][rRbB]*['\"].*\{[^}]*\b(torch\.|__torch_)", re.S)


class PortWarning(NamedTuple):
    line: int
    message: str


def lookup(name: str):
    """How the dotted PyTorch ``name`` ports, by the longest matching prefix of the table:
    ``("rename", prefix, target)``, ``("cannot", prefix, reason)``, ``("literal", prefix,
    None)``, ``("method", prefix, method name)`` or None (not a PyTorch name)."""
    parts = name.split(".")
    for k in range(len(parts), 0, -1):
        prefix = ".".join(parts[:k])
        rest = parts[k:]
        if prefix in table.METHOD_CALLS:
            return ("method", prefix, table.METHOD_CALLS[prefix])
        if prefix in table.CANNOT_PORT:
            return ("cannot", prefix, table.CANNOT_PORT[prefix])
        if prefix in table.LITERALS:
            return ("literal", prefix, None)
        if prefix in table.RENAMES:
            if prefix == "torch" and rest and rest[0].startswith("_"):
                return ("cannot", f"torch.{rest[0]}", "a private PyTorch name the table does "
                        "not map (docs/porting.md lists the ones subclass code uses)")
            rest = [table.MEMBERS.get(p, p) for p in rest]
            return ("rename", prefix, ".".join([table.RENAMES[prefix], *rest]))
    return None


@functools.lru_cache(maxsize=None)
def _exists(path: str) -> bool:
    """Whether the dotted ``path`` names something importable (module, then attributes)."""
    parts = path.split(".")
    for k in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:k]))
            break
        except ImportError:
            continue
    else:
        return False
    for p in parts[k:]:
        try:
            obj = getattr(obj, p)
        except Exception:      # a property raising, a missing attribute: not there
            return False
    return True


@functools.lru_cache(maxsize=None)
def _is_module(path: str) -> bool:
    """Whether ``import path`` works (``from path import x`` needs a module, not an attribute)."""
    try:
        importlib.import_module(path)
    except ImportError:
        return False
    return True


def port_source(source: str) -> tuple[str, list[PortWarning]]:
    """Rewrite the PyTorch Python ``source`` to subclass_kit; returns ``(new source,
    warnings)``. Raises SyntaxError when ``source`` does not tokenize."""
    return _Porter(source).run()


class _Porter:
    def __init__(self, source: str):
        self.source = source
        # Lines as tokenize counts them: split at "\n" only (str.splitlines also splits at form
        # feeds and other separators, which would shift every offset after them).
        self.lines = io.StringIO(source).readlines()
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line))
        try:
            self.toks = list(tokenize.generate_tokens(io.StringIO(source).readline))
        except (tokenize.TokenError, IndentationError) as e:
            raise SyntaxError(f"cannot tokenize: {e}") from None
        self.edits: list = []            # (start offset, end offset, text)
        self.warnings: list = []
        self.in_bind: dict = {}          # name bound by an import -> the PyTorch dotted name
        self.out_name: dict = {}         # that name -> the name it is spelled as afterwards
        self.out_bind: dict = {}         # names bound in the output -> our dotted path
        self.needs: set = set()          # import lines to add
        self.emitted: set = set()        # module-level import lines so far (no duplicates)
        self.seen: set = self.emitted    # the set the current import statement dedupes against
        self.in_import: set = set()      # indices of tokens inside import statements
        self.first_import = None         # offset of the first rewritten import at column 0
        self.checked: set = set()        # targets whose existence was checked
        self.defined_ops = _defined_ops(self.toks)   # ("ns", "name") of "ns::name" literals

    # -- helpers ---------------------------------------------------------------------------------
    def off(self, pos) -> int:
        return self.starts[pos[0] - 1] + pos[1]

    def warn(self, line: int, message: str) -> None:
        w = PortWarning(line, message)
        if w not in self.warnings:
            self.warnings.append(w)

    def edit(self, start_tok, end_tok, text: str) -> None:
        self.edits.append((self.off(start_tok.start), self.off(end_tok.end), text))

    def check_exists(self, line: int, target: str, spelled: str, torch_name: str) -> None:
        """Warn (once per target) when the installed subclass_kit lacks ``target``."""
        if target not in self.checked and not _exists(target):
            self.warn(line, f"{torch_name} -> {spelled}: not in the installed subclass_kit "
                            "(docs/porting.md lists what has no counterpart)")
        self.checked.add(target)

    def run(self):
        self.scan_imports()
        self.scan_names()
        self.add_needed_imports()
        out = self.source
        for start, end, text in sorted(self.edits, reverse=True):
            out = out[:start] + text + out[end:]
        return out, sorted(self.warnings)

    # -- pass 1: import statements ---------------------------------------------------------------
    def scan_imports(self) -> None:
        at_start, depth = True, 0
        for i, tok in enumerate(self.toks):
            if tok.type in _SKIP:
                continue
            if at_start and tok.type == tokenize.NAME and tok.string in ("import", "from"):
                self.import_statement(i)
            if tok.type == tokenize.OP and tok.string in _OPEN:
                depth += 1
            elif tok.type == tokenize.OP and tok.string in _CLOSE:
                depth -= 1
            at_start = tok.type in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT) or (
                tok.type == tokenize.OP and tok.string == ";" and depth == 0)

    def import_statement(self, i: int) -> None:
        j, sig = i, []
        while self.toks[j].type not in _STMT_END and self.toks[j].string != ";":
            if self.toks[j].type not in _SKIP:
                sig.append(self.toks[j])
            j += 1
        self.in_import.update(range(i, j))
        words = [t.string for t in sig if t.string not in "()"]
        first, last = sig[0], sig[-1]
        line = first.start[0]
        # Duplicates are dropped only at module level (an import in a function body binds a
        # local name that the function needs) and only without comments (which would go too).
        comments = [t for t in self.toks[i:j] if t.type == tokenize.COMMENT]
        self.seen = self.emitted if first.start[1] == 0 and not comments else set()
        if words[0] == "import":
            items = _items(words[1:])
            new, changed = self.plain_import(items, line)
            text = "import " + ", ".join(new) if new else ""
        else:
            if "import" not in words:   # ``from x`` alone: what compile() would refuse
                raise SyntaxError("invalid syntax: 'from' without 'import'",
                                  ("<source>", line, first.start[1] + 1, self.lines[line - 1]))
            k = words.index("import")
            module = "".join(words[1:k])
            new, changed = self.from_import(module, _items(words[k + 1:]), line)
            indent = self.lines[line - 1][:first.start[1]]
            sep = "\n" + indent if not indent.strip() else "; "
            text = sep.join(new)
        if not changed:
            return
        if first.start[1] == 0 and self.first_import is None:
            self.first_import = self.off(first.start)
        end = self.toks[j]
        inner = [t.string for t in comments if t.start < last.end]
        if text:
            # comments between the old statement's lines follow the new one
            self.edit(first, last, "  ".join([text, *inner]))
        elif first.start[1] == 0 and end.type == tokenize.NEWLINE:
            # a duplicate import on lines of its own: drop them
            self.edits.append((self.off((line, 0)), self.off(end.end), ""))
        else:            # `import torch; import torch.nn`: the statement must stay a statement
            self.edit(first, last, "pass")

    def plain_import(self, items, line):
        out, changed = [], False
        for dotted, alias in items:
            root = dotted.split(".")[0]
            bound = alias or root
            if root != "torch":
                self.out_bind[bound] = dotted if alias else root
                self.seen.add("import " + _item(dotted, alias))
                out.append(_item(dotted, alias))
                continue
            self.in_bind[bound] = dotted if alias else root
            how = lookup(dotted)
            if how[0] != "rename":
                self.warn(line, _cannot(dotted, how))
                out.append(_item(dotted, alias))
                continue
            changed = True
            target = how[2]
            if alias:
                self.check_exists(line, target, target, dotted)
                text = _item(target, alias)
                self.out_bind[alias], self.out_name[alias] = target, alias
            else:
                if target != "subclass_kit":    # ``import torch.autograd.functional``
                    self.check_exists(line, target, target, dotted)
                text = "subclass_kit as sk"
                self.out_bind["sk"], self.out_name["torch"] = "subclass_kit", "sk"
                self.need_lazy(target, "subclass_kit")
            if text not in self.seen and text not in out:
                self.seen.add(text)
                out.append(text)
        return out, changed

    def from_import(self, module, items, line):
        if module.split(".")[0] == "subclass_kit":
            for name, alias in items:
                self.out_bind[alias or name] = f"{module}.{name}"
        if module.split(".")[0] != "torch":
            return [], False
        kept, groups, dropped = [], {}, False
        for name, alias in items:
            full = f"{module}.{name}"
            how = lookup(full) if name != "*" else ("cannot", full, "star imports are not ported")
            bound = alias or name
            if how is not None and how[0] == "method" and how[1] == full:
                self.in_bind[bound], dropped = full, True      # its calls become method calls
                continue
            if how is None or how[0] != "rename":
                self.warn(line, _cannot(full, how))
                kept.append(_item(name, alias))
                continue
            self.in_bind[bound] = full
            target = how[2]
            mod, attr = target.rsplit(".", 1)
            new_name = alias or attr
            self.out_name[bound], self.out_bind[new_name] = new_name, target
            if _is_module(mod):
                self.check_exists(line, target, target, full)
            else:                   # ``from X import`` needs X importable, not an attribute
                self.check_exists(line, mod, mod, module)
            groups.setdefault(mod, []).append(_item(attr, alias if alias != attr else None))
        if not groups and not dropped:
            return [], False
        out = [f"from {module} import {', '.join(kept)}"] if kept else []
        for mod, names in groups.items():
            text = f"from {mod} import {', '.join(names)}"
            if text not in self.seen:
                self.seen.add(text)
                out.append(text)
        return out, True

    def need_lazy(self, target: str, via: str) -> None:
        for lazy in table.LAZY_MODULES:
            if (target == lazy or target.startswith(lazy + ".")) and not via.startswith(lazy):
                self.needs.add(f"import {lazy}")

    # -- pass 2: names -----------------------------------------------------------------------------
    def scan_names(self) -> None:
        toks, i = self.toks, 0
        while i < len(toks):
            tok = toks[i]
            if tok.type == tokenize.STRING and _TORCH_IN_FSTRING.search(tok.string):
                self.warn(tok.start[0], "a PyTorch name inside an f-string is not rewritten: "
                          "edit it by hand")
            if tok.type != tokenize.NAME or i in self.in_import:
                i += 1
                continue
            j = i
            while (j + 2 < len(toks) and toks[j + 1].type == tokenize.OP
                   and toks[j + 1].string == "." and toks[j + 2].type == tokenize.NAME):
                j += 2
            prev = toks[i - 1] if i else None
            after_dot = prev is not None and prev.type == tokenize.OP and prev.string == "."
            self.chain(i, j, after_dot)
            i = j + 1

    def chain(self, i: int, j: int, after_dot: bool) -> None:
        toks = self.toks[i:j + 1:2]
        names = [t.string for t in toks]
        line = toks[0].start[0]
        head = names[0]
        if not after_dot and (head in self.in_bind or head == "torch"):
            full = ".".join([self.in_bind.get(head, head), *names[1:]])
            how = lookup(full)
            if how is None:
                return
            if how[0] == "cannot":
                self.warn(line, _cannot(full, how))
                return
            if how[0] == "method":
                if how[1] == full:
                    self.method_call(j, full, how[2])
                else:
                    self.warn(line, _cannot(full, None))
                return
            if how[0] == "literal":
                rest = full[len(how[1]) + 1:]
                if rest and "." not in rest:
                    self.edit(toks[0], toks[-1], '"' + rest + '"')
                else:
                    self.warn(line, f"{full}: members of {how[1]} become strings; write one")
                return
            spelled = self.spell(head, how[2])
            if not self.custom_op(full):
                self.check_exists(line, how[2], spelled, full)
            if spelled != ".".join(names):
                self.edit(toks[0], toks[-1], spelled)
            self.fix_call(j, how[2])
            return
        new = [table.MEMBERS.get(n, n) if (k or after_dot or n.startswith("__torch")) else n
               for k, n in enumerate(names)]
        for k, n in enumerate(names):
            if (k or after_dot) and n in table.MEMBER_WARNINGS:
                self.warn(line, f".{n}: {table.MEMBER_WARNINGS[n]}")
        for k in range(0 if after_dot else 1, len(names)):
            if names[k] in table.RECEIVERLESS:
                target = table.RECEIVERLESS[names[k]]
                if after_dot or k != len(names) - 1:
                    self.warn(line, f".{names[k]}: write {target.replace('subclass_kit', 'sk')}"
                                    "(cls, ...) (the receiver is not an argument)")
                    break
                self.edit(toks[0], toks[-1], self.spell(None, target))
                self.fix_call(j, target)
                return
        if new != names:
            for tok, old, n in zip(toks, names, new):
                if old != n:
                    self.edit(tok, tok, n)

    def custom_op(self, full: str) -> bool:
        """Whether ``full`` is ``torch.ops.<ns>...`` of an op defined at run time: a namespace
        PyTorch does not register itself, or an ``"ns::name"`` the file spells out (its
        ``sk.ops`` counterpart exists only once the file has run)."""
        parts = full.split(".")
        k = 2 if parts[:2] == ["torch", "ops"] else 3 if parts[:3] == ["torch", "_ops", "ops"] \
            else None
        if k is None or len(parts) <= k:
            return False
        ns = parts[k]
        return ns not in table.TORCH_OP_NAMESPACES or (
            len(parts) > k + 1 and (ns, parts[k + 1]) in self.defined_ops)

    def method_call(self, j: int, full: str, method: str) -> None:
        """``f(x)`` -> ``x.method()`` for the chain ending at token j (``f`` is ``full``). Two
        edits, around the argument, so names inside it are still ported on their own."""
        toks = self.toks
        close = self.closing(j + 1)
        args = [t for t in toks[j + 2:close] if t.type not in _SKIP]
        if args and args[-1].string == ",":
            args.pop()
        line = toks[j].start[0]
        depth, commas = 0, 0
        for t in args:
            depth += (t.string in _OPEN) - (t.string in _CLOSE)
            commas += depth == 0 and t.string == ","
        if close is None or not args or commas:
            self.warn(line, f"{full}: call it as {full.rsplit('.', 1)[-1]}(mode) to port it to "
                            f"mode.{method}()")
            return
        # A name, a dotted name or a call of one needs no parentheses before ".__enter__()".
        a = toks.index(args[0], j + 2)
        b = a
        while args[0].type == tokenize.NAME and toks[b + 1].string == "." \
                and toks[b + 2].type == tokenize.NAME:
            b += 2
        last = toks.index(args[-1], b)
        simple = args[0].type == tokenize.NAME and (b == last or self.closing(b + 1) == last)
        head = self.chain_start(j)
        self.edits.append((self.off(head.start), self.off(args[0].start), "" if simple else "("))
        self.edits.append((self.off(args[-1].end), self.off(toks[close].end),
                           ("" if simple else ")") + f".{method}()"))

    def chain_start(self, j: int):
        """The first token of the dotted name that ends at token j."""
        while j >= 2 and self.toks[j - 1].string == "." and self.toks[j - 2].type == tokenize.NAME:
            j -= 2
        return self.toks[j]

    def closing(self, k: int):
        """Index of the bracket closing the one at token k (None if token k is not "(")."""
        if k >= len(self.toks) or self.toks[k].string != "(":
            return None
        depth = 0
        for m in range(k, len(self.toks)):
            t = self.toks[m]
            if t.type == tokenize.OP and t.string in _OPEN:
                depth += 1
            elif t.type == tokenize.OP and t.string in _CLOSE:
                depth -= 1
                if depth == 0:
                    return m
        return None

    def spell(self, head, target: str) -> str:
        """``target`` written with the output's names: through ``head``'s new name when that
        covers it, else through a module binding (adding ``import subclass_kit as sk`` etc.)."""
        name = self.out_name.get(head)
        if name is not None:
            path = self.out_bind[name]
            if target == path or target.startswith(path + "."):
                self.need_lazy(target, path)
                return name + target[len(path):]
        root = target.split(".")[0]
        for name, path in self.out_bind.items():
            if path == root:
                break
        else:
            name = "sk" if root == "subclass_kit" else root
            self.needs.add("import subclass_kit as sk" if root == "subclass_kit"
                           else f"import {root}")
            self.out_bind[name] = root
        self.need_lazy(target, root)
        return name + target[len(root):]

    def fix_call(self, j: int, target: str) -> None:
        """Rename keyword arguments / fix the arguments of a call of ``target`` at token j+1."""
        toks = self.toks
        if j + 1 >= len(toks) or toks[j + 1].string != "(":
            return
        renames = table.KEYWORDS.get(target, {})
        args, depth, k = [], 0, j + 1
        positional, starts_arg = 0, True
        while k < len(toks):
            t = toks[k]
            if t.type == tokenize.OP and t.string in _OPEN:
                depth += 1
            elif t.type == tokenize.OP and t.string in _CLOSE:
                depth -= 1
                if depth == 0:
                    break
            elif depth == 1 and t.type not in _SKIP:
                args.append(t)
                if starts_arg and t.string != ",":
                    keyword = t.type == tokenize.NAME and toks[k + 1].string == "="
                    positional += not keyword and t.string not in ("*", "**")
                starts_arg = t.string == ","
                if (t.type == tokenize.NAME and t.string in renames
                        and toks[k + 1].string == "=" and toks[k - 1].string in "(,"):
                    self.edit(t, t, renames[t.string])
            k += 1
        limit, advice = table.POSITIONAL.get(target, (None, ""))
        if limit is not None and positional > limit:
            self.warn(toks[j].start[0], f"{target.replace('subclass_kit', 'sk')}: {positional} "
                                        f"positional arguments; {advice}")
        fixer = table.CALL_FIXERS.get(target)
        if fixer == "join_name_and_schema":
            self.join_name_and_schema(args)

    def join_name_and_schema(self, args) -> None:
        if len(args) < 3 or args[1].string != "," or not all(
                t.type == tokenize.STRING and t.string[0] in "'\"" for t in (args[0], args[2])):
            return
        name, schema = ast.literal_eval(args[0].string), ast.literal_eval(args[2].string)
        if "(" in name:        # already one string
            return
        q = args[0].string[0]
        text = name + schema
        literal = q + text + q if q not in text and "\\" not in text else repr(text)
        self.edit(args[0], args[2], literal)

    def add_needed_imports(self) -> None:
        lines = sorted(self.needs - self.emitted)
        if not lines:
            return
        at = self.first_import if self.first_import is not None else self.top_offset()
        self.edits.append((at, at, "".join(line + "\n" for line in lines)))

    def top_offset(self) -> int:
        """Offset of the first statement after the module docstring and __future__ imports."""
        try:
            body = ast.parse(self.source).body
        except SyntaxError:
            return 0
        for k, node in enumerate(body):
            if k == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
                continue
            if isinstance(node, ast.ImportFrom) and node.module == "__future__":
                continue
            decorators = getattr(node, "decorator_list", None)
            return self.off((decorators[0].lineno if decorators else node.lineno, 0))
        return len(self.source)


_OP_NAME = re.compile(r"(\w+)::(\w+)")


def _defined_ops(toks) -> set:
    """``(ns, name)`` for each string literal starting ``"ns::name"`` (``torch.library.define``,
    ``impl``, ``custom_op`` and ``Library`` registrations all spell the op so)."""
    found = set()
    for tok in toks:
        if tok.type != tokenize.STRING or "::" not in tok.string:
            continue
        try:
            value = ast.literal_eval(tok.string)
        except (ValueError, SyntaxError):     # f-strings and the like
            continue
        if isinstance(value, str):
            m = _OP_NAME.match(value)
            if m:
                found.add((m.group(1), m.group(2)))
    return found


def _items(words: list) -> list:
    """``["a", ".", "b", "as", "c", ",", "d"]`` -> ``[("a.b", "c"), ("d", None)]``."""
    items, cur, alias, in_alias = [], "", None, False
    for w in [*words, ","]:
        if w == ",":
            if cur:
                items.append((cur, alias))
            cur, alias, in_alias = "", None, False
        elif w == "as":
            in_alias = True
        elif in_alias:
            alias = w
        else:
            cur += w
    return items


def _item(name: str, alias) -> str:
    return f"{name} as {alias}" if alias and alias != name else name


def _cannot(name: str, how) -> str:
    if how is None:
        return f"{name}: not a PyTorch name the table knows; left as written"
    if how[0] == "literal":
        return f"{name}: {how[1]} members become strings here; left as written"
    return f"{name}: cannot be ported: {how[2]}; left as written"
