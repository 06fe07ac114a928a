"""PowerShell syntax checks with tree-sitter-powershell (no PowerShell needed).

:func:`syntax_errors` parses a script and lists each syntax error as
``file:line:column: ...`` (1-based, as PowerShell's own parser reports them).
"""

from __future__ import annotations

import tree_sitter
import tree_sitter_powershell

_PARSER = tree_sitter.Parser(tree_sitter.Language(tree_sitter_powershell.language()))
_SHOWN = 40


def syntax_errors(source: str | bytes, where: str, first_line: int = 1) -> list[str]:
    """Every syntax error in ``source``, named ``where:line:column`` (``first_line`` is
    the line of ``where`` the source starts at, for a script inside another file)."""
    data = source.encode("utf-8") if isinstance(source, str) else source
    root = _PARSER.parse(data).root_node
    found: list[str] = []
    pending = [root] if root.has_error else []
    while pending:
        node = pending.pop()
        line, column = node.start_point
        place = f"{where}:{line + first_line}:{column + 1}"
        if node.is_missing:
            found.append(f"{place}: missing {node.type!r}")
        elif node.is_error:
            text = data[node.start_byte:node.end_byte].decode("utf-8", "replace")
            text = " ".join(text.split())
            shown = text if len(text) <= _SHOWN else text[:_SHOWN] + "..."
            found.append(f"{place}: syntax error at {shown!r}")
        else:
            pending.extend(reversed([c for c in node.children if c.has_error or c.is_missing]))
    return found
