"""``-t dot``: the Graphviz text of graph-level IR, fusion groups as clusters.

Graphviz is not installed here, so the text is read back by `read_dot`, a small reader of
the DOT subset the target writes that fails on unbalanced braces, an invalid id, a
statement it does not know, or an edge endpoint never declared as a node. The tests check
the structure it reads (which nodes each cluster holds, the edges, the anchor highlight),
not the layout, on hand-written IR and on the partitioned ResNet of ``examples/models``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from io import StringIO
from pathlib import Path

import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from tmlir.backends.dot import DotEmitError, DotTarget, emit_dot, quote
from tmlir.passes.convert_graph_to_tm import ConvertGraphToTm
from tmlir.registry import make_context
from tmlir.tools.tm_opt import main as tm_opt

RESNET = Path(__file__).resolve().parents[2] / "examples" / "models" / "resnet.onnx"
PARTITION = "graph-canonicalize,graph-fold-batchnorm,graph-partition"
ANCHOR_FILL = "#f6c177"

GROUP = """
func.func @main(%x: tensor<4x8xf32>, %b: tensor<4x16xf32>) -> tensor<4x16xf32> attributes {tm.inputs = ["x", "b"], tm.outputs = ["y"]} {
  %w = graph.weight "fc.weight" : tensor<16x8xf32>
  %r = graph.fused -> tensor<4x16xf32> {
    %h = graph.matmul %x, %w {transpose_rhs} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    %s = graph.add %h, %b : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    %t = graph.relu %s : tensor<4x16xf32>
    graph.yield %t : tensor<4x16xf32>
  }
  %y = graph.tanh %r : tensor<4x16xf32>
  func.return %y : tensor<4x16xf32>
}
"""


# -- a reader of the DOT the target writes ----------------------------------------------------

_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|->|[{}\[\];=,]|[^\s{}\[\];=,"]+')
_BARE_ID = re.compile(r"[A-Za-z_][A-Za-z_0-9]*|-?(\.[0-9]+|[0-9]+(\.[0-9]*)?)")
_KEYWORDS = {"node", "edge", "graph", "digraph", "subgraph", "strict"}


@dataclass
class Dot:
    """What a DOT text declares: nodes with attributes, clusters with the nodes declared
    directly in them, cluster labels, edges in order."""

    nodes: dict[str, dict[str, str]] = field(default_factory=dict)
    clusters: dict[str, list[str]] = field(default_factory=dict)
    cluster_labels: dict[str, str] = field(default_factory=dict)
    edges: list[tuple[str, str]] = field(default_factory=list)

    def label(self, node: str) -> str:
        return self.nodes[node]["label"]

    def kind(self, node: str) -> str:
        return self.label(node).split("\n")[0]


def read_dot(text: str) -> Dot:
    text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))
    tokens, end = [], 0
    for match in _TOKEN.finditer(text):
        assert not text[end:match.start()].strip(), "characters outside any token (an open quote?)"
        tokens.append(match[0])
        end = match.end()
    assert not text[end:].strip(), "characters outside any token (an open quote?)"
    dot, pos = Dot(), 0

    def take(expected: str | None = None) -> str:
        nonlocal pos
        assert pos < len(tokens), "unexpected end of the text (unbalanced braces?)"
        token = tokens[pos]
        pos += 1
        assert expected is None or token == expected, f"expected {expected!r}, got {token!r}"
        return token

    def ident() -> str:
        token = take()
        if token.startswith('"'):
            return re.sub(r"\\(.)", lambda m: "\n" if m[1] == "n" else m[1], token[1:-1])
        assert _BARE_ID.fullmatch(token) and token.lower() not in _KEYWORDS, f"bad id {token!r}"
        return token

    def attributes() -> dict[str, str]:
        take("[")
        attrs = {}
        while tokens[pos] != "]":
            key = ident()
            take("=")
            attrs[key] = ident()
            if tokens[pos] in (",", ";"):
                take()
        take("]")
        return attrs

    def statements(cluster: str | None) -> None:
        while tokens[pos] != "}":
            head = tokens[pos]
            if head == "subgraph":
                take()
                name = ident()
                take("{")
                dot.clusters[name] = []
                statements(name)
                take("}")
                continue
            if head in ("node", "edge", "graph"):
                take()
                attributes()
            elif tokens[pos + 1] == "=":
                key = ident()
                take("=")
                value = ident()
                if key == "label" and cluster is not None:
                    dot.cluster_labels[cluster] = value
            elif tokens[pos + 1] == "->":
                source = ident()
                take("->")
                dot.edges.append((source, ident()))
            else:
                node = ident()
                assert node not in dot.nodes, f"node {node} declared twice"
                dot.nodes[node] = attributes()
                if cluster is not None:
                    dot.clusters[cluster].append(node)
            take(";")

    take("digraph")
    ident()
    take("{")
    statements(None)
    take("}")
    assert pos == len(tokens), "text after the graph"
    for source, target in dot.edges:
        assert source in dot.nodes and target in dot.nodes, f"edge {source} -> {target} to an undeclared node"
    return dot


@pytest.mark.parametrize("text", [
    'digraph g { "a"; subgraph cluster_0 { "b"; }',  # unbalanced braces
    'digraph g { "a"; "a" -> "b"; }',  # an edge to an undeclared node
    'digraph g { "a" [label = "x]; }',  # an open quote
    'digraph g { 1a; }',  # not an id
    'digraph g { "a"; "a"; }',  # declared twice
])
def test_the_reader_rejects_broken_dot(text: str) -> None:
    with pytest.raises(AssertionError):
        read_dot(text)


# -- helpers ----------------------------------------------------------------------------------

def parse(text: str) -> ModuleOp:
    module = Parser(make_context(), text).parse_module()
    module.verify()
    return module


def kind_edges(dot: Dot) -> list[tuple[str, str]]:
    return [(dot.kind(s), dot.kind(t)) for s, t in dot.edges]


def highlighted(dot: Dot) -> list[str]:
    return [n for n, attrs in dot.nodes.items() if attrs.get("fillcolor") == ANCHOR_FILL]


def run_tm_opt(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = tm_opt(list(args))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


# -- hand-written IR --------------------------------------------------------------------------

def test_cluster_holds_exactly_the_group_members_and_highlights_the_anchor() -> None:
    dot = read_dot(emit_dot(parse(GROUP)))
    assert list(dot.clusters) == ["cluster_0"]
    assert [dot.kind(n) for n in dot.clusters["cluster_0"]] == ["matmul", "add", "relu"]
    assert dot.cluster_labels["cluster_0"] == "matmul group"
    assert [dot.kind(n) for n in highlighted(dot)] == ["matmul"]
    assert "bold" in dot.nodes[highlighted(dot)[0]]["style"]
    assert sorted(dot.label(n) for n in dot.nodes) == [
        "add\n4x16", "input b\n4x16", "input x\n4x8", "matmul\n4x16", "output y\n4x16",
        "relu\n4x16", "tanh\n4x16"]  # no weight, no graph.fused / graph.yield node


def test_edges_connect_inner_ops_directly() -> None:
    dot = read_dot(emit_dot(parse(GROUP)))
    assert kind_edges(dot) == [
        ("input x", "matmul"), ("matmul", "add"), ("input b", "add"), ("add", "relu"),
        ("relu", "tanh"),  # the use of the group's result starts at the op yielding it
        ("tanh", "output y")]


def test_weights_are_drawn_on_request() -> None:
    module = parse(GROUP)
    assert not any(n.startswith("w") for n in read_dot(emit_dot(module)).nodes)
    dot = read_dot(emit_dot(module, weights=True))
    assert dot.label("w0") == "fc.weight\n16x8"
    assert "w0" not in dot.clusters["cluster_0"]
    assert ("fc.weight", "matmul") in kind_edges(dot)
    out = StringIO()
    DotTarget(weights=True).emit(make_context(), module, out)
    assert out.getvalue() == emit_dot(module, weights=True)


def test_identical_input_gives_identical_text() -> None:
    assert emit_dot(parse(GROUP)) == emit_dot(parse(GROUP))
    assert emit_dot(parse(GROUP), weights=True) == emit_dot(parse(GROUP), weights=True)


def test_malformed_group_is_labelled_group_without_anchor() -> None:
    two_anchors = """
    func.func @f(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
      %r = graph.fused -> tensor<4x4xf32> {
        %a = graph.matmul %x, %x : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
        %b = graph.matmul %a, %x : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
        graph.yield %b : tensor<4x4xf32>
      }
      func.return %r : tensor<4x4xf32>
    }
    """
    dot = read_dot(emit_dot(parse(two_anchors)))
    assert dot.cluster_labels["cluster_0"] == "group"
    assert highlighted(dot) == []
    # one edge per use: %x is used twice by the first matmul; names from the IR without tm.inputs
    assert kind_edges(dot) == [("input x", "matmul"), ("input x", "matmul"), ("matmul", "matmul"),
                               ("input x", "matmul"), ("matmul", "output r")]


def test_element_types_other_than_f32_and_escaped_names() -> None:
    text = r"""
    func.func @f(%ids: tensor<2x3xi64>) -> tensor<2x3xi1> {
      %w = graph.weight "odd \"name\"" : tensor<2x3xi64>
      %m = graph.less %ids, %w : (tensor<2x3xi64>, tensor<2x3xi64>) -> tensor<2x3xi1>
      func.return %m : tensor<2x3xi1>
    }
    """
    dot = read_dot(emit_dot(parse(text), weights=True))
    assert dot.label("in0") == "input ids\n2x3 i64"
    assert dot.label("op0") == "less\n2x3 i1"
    assert dot.label("w0") == 'odd "name"\n2x3 i64'
    assert quote('a"b\\c\nd') == r'"a\"b\\c\nd"'


def test_each_function_is_a_cluster_when_there_are_several() -> None:
    text = GROUP + GROUP.replace("@main", "@second")
    dot = read_dot(emit_dot(parse(text)))
    assert dot.cluster_labels == {"cluster_fn0": "@main", "cluster_0": "matmul group",
                                  "cluster_fn1": "@second", "cluster_1": "matmul group"}
    assert len(dot.nodes) == 14 and len(dot.edges) == 12
    assert [dot.kind(n) for n in dot.clusters["cluster_1"]] == ["matmul", "add", "relu"]


def test_below_graph_level_is_one_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "group.mlir"
    source.write_text(GROUP)
    status, out, err = run_tm_opt(capsys, str(source), "-p", "lower-to-cuda", "-t", "dot")
    assert (status, out) == (1, "")
    assert err == ("tm-opt: error: -t dot draws graph-level IR, but 'tmgpu.kernel' is below it; "
                   "run -t dot before convert-graph-to-tm\n")
    module = parse(GROUP)
    ConvertGraphToTm().apply(make_context(), module)
    with pytest.raises(DotEmitError, match="'tm.kernel' is below it"):
        emit_dot(module)


# -- a model ----------------------------------------------------------------------------------

def test_resnet_has_a_cluster_per_fusion_group(capsys: pytest.CaptureFixture[str]) -> None:
    status, ir, _ = run_tm_opt(capsys, str(RESNET), "-p", PARTITION)
    assert status == 0
    groups = len(re.findall(r"= graph\.fused ", ir))
    assert groups > 5
    status, text, err = run_tm_opt(capsys, str(RESNET), "-p", PARTITION, "-t", "dot")
    assert (status, err) == (0, "")
    dot = read_dot(text)
    assert len(dot.clusters) == groups
    members_in_ir = len(re.findall(r"^ {6}%\S+ = graph\.", ir, re.MULTILINE))  # ops inside groups
    assert sum(len(members) for members in dot.clusters.values()) == members_in_ir
    for cluster, members in dot.clusters.items():  # each group has one anchor, named in its label
        anchors = [n for n in members if n in highlighted(dot)]
        assert len(anchors) == 1 and dot.cluster_labels[cluster] == f"{dot.kind(anchors[0])} group"
    assert [dot.kind(n) for n in dot.nodes if n.startswith(("in", "out"))] == [
        "input pixel_values", "output linear"]
    assert run_tm_opt(capsys, str(RESNET), "-p", PARTITION, "-t", "dot")[1] == text
    status, with_weights, _ = run_tm_opt(capsys, str(RESNET), "-p", PARTITION, "-t", "dot{weights=true}")
    assert len(read_dot(with_weights).nodes) == len(dot.nodes) + ir.count("graph.weight ")
