"""The layout rules of check_layout.py, on a graph of folders.

An edge is (from_folder, to_folder, why): `from_folder` depends on
`to_folder`, and `why` names a rule dependency that makes it so. Folders
are paths such as "backends/redis/client"; "" is not a folder.
"""

import collections


def _parts(folder):
    return folder.split("/")


def _is_ancestor(a, b):
    """Whether folder a contains folder b."""
    pa, pb = _parts(a), _parts(b)
    return len(pa) < len(pb) and pb[:len(pa)] == pa


def sibling_edges(edges):
    """{parent: {(a, b): why}}: each edge lifted to the level where its two
    ends part, as an edge between two folders of one parent ("" for the
    top). Edges between a folder and one it contains are left out."""
    out = collections.defaultdict(dict)
    for a, b, why in edges:
        if a == b or _is_ancestor(a, b) or _is_ancestor(b, a):
            continue
        pa, pb = _parts(a), _parts(b)
        i = 0
        while pa[i] == pb[i]:
            i += 1
        parent = "/".join(pa[:i])
        key = ("/".join(pa[:i + 1]), "/".join(pb[:i + 1]))
        out[parent].setdefault(key, why)
    return out


def _loops(nodes_edges):
    """The strongly connected groups of more than one folder (Tarjan)."""
    graph = collections.defaultdict(list)
    nodes = set()
    for a, b in nodes_edges:
        graph[a].append(b)
        nodes.update((a, b))
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return groups


def violations(edges):
    """What breaks the rules, one message each, sorted."""
    problems = []
    for a, b, why in edges:
        if _is_ancestor(b, a):
            problems.append(f"{a} depends on {b}, which contains it ({why})")
    for parent, pairs in sibling_edges(edges).items():
        for group in _loops(pairs):
            members = set(group)
            inside = sorted((k, why) for k, why in pairs.items()
                            if k[0] in members and k[1] in members)
            detail = "; ".join(f"{a} -> {b} ({why})" for (a, b), why in inside)
            problems.append(f"{' and '.join(group)} depend on each other: "
                            f"{detail}")
    return sorted(problems)


def describe(edges):
    """The folder graph, one line per folder and level: what it uses."""
    lines = []
    for parent, pairs in sorted(sibling_edges(edges).items()):
        uses = collections.defaultdict(set)
        for a, b in pairs:
            uses[a].add(b)
        lines.append(f"in {parent or 'the top folder'}:")
        for a in sorted(uses):
            lines.append(f"  {a} -> {', '.join(sorted(uses[a]))}")
    return "\n".join(lines)
