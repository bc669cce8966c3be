"""s11_tree_export — 把一整棵会话树（或一棵子树、一条路径）导出成一张离线 HTML 页面和一份 Markdown

    prepare(store, 节点, scope="tree" | "subtree" | "path", redact=True, added=(), unmask=())
      ├─ gather()     s11_tree.walk 先序走一遍；每个节点只留“它自己的”消息：继承来的前缀与父节点逐条相同的部分
      │               算在父节点（祖先）头上——每条消息在页面里只印一次；只有当前路径上的祖先留在内存里
      ├─ units()      要写出的每段文字（标题、来源、每条自己的消息）→ s11_review.scan：复核表
      └─ apply()      默认全部遮住；读者揭开的编号、自己加的字符串只对这一次导出生效 → Manifest（页面顶部的清单）

    html_chunks(prepared)                                  markdown_chunks(prepared)
    ┌ 🌳 侧栏：每个节点一行（缩进 = 深度）·········┐        # 标题 / 清单 / 目录（带链接的列表）
    │  标题 [id] 7 条 · +2：方案 A… · 🔀 收敛自 …  │        ## 每个节点：路径、继承了谁的哪几条、分支
    │  🏷️ 标签 → #<节点>-<k>                      │        ### <节点>-<k>：它自己的每条消息
    └ 正文：每个节点一节（id = 节点 ID，:target 高亮），消息 id = <节点>-<k>（k 按这个节点的路径编号）

关键洞察：树的每个节点都是一份完整历史，但分享时每条消息只该出现一次——继承的前缀折叠成
“前 5 条继承自 父节点（#父-1 … #父-5）”的链接，页面大小就随不同的内容、而不是随节点数 × 历史长度增长。

安全：与 s11_export 的单节点页面相同——CSP 只允许内联样式和 data: 图片，没有 <script>，没有外链；
每一段会话文字（标题、标签、消息、来源、ID）都经 html.escape；选中节点只靠 #锚点 与 CSS :target。
消息各部分的画法直接用 s11_export 的渲染函数，所以两种页面显示同一条消息的方式相同。

锚点：#<节点> 是节点的一节；#<节点>-<k> 是最先有第 k 条消息的那个节点里的它（继承来的消息在祖先那里）。
不做：页面之间的链接、JavaScript 的折叠与搜索（用浏览器的页内查找）、嵌入图片、工作区快照（别人机器上的路径）。
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

import s11_export
import s11_review
from s11_export import _HTML_RENDERERS, _escape, _inline, _markdown_part, message_marks, message_parts
from s11_format import SessionError, SessionNotFound, validate_session_id
from s11_text import shorten
from s11_tree import Forest, content_text, root_of, walk

__all__ = ["SCOPES", "SCOPE_NAMES", "TreeNode", "Gathered", "Prepared", "gather", "units", "prepare", "review_of",
           "html_chunks", "render_html", "markdown_chunks", "render_markdown"]

SCOPES = ("path", "tree", "subtree")
SCOPE_NAMES = {"path": "这条路径（根 → 节点）", "tree": "它所在的整棵树", "subtree": "以它为根的子树"}
MAX_INDENT = 12          # 侧栏最多缩进几层；更深的节点写出层数
PATH_SHOWN = 6           # 每个节点的路径最多列几段（根、…、最近的几段）
SEGMENTS_SHOWN = 4       # 继承来的前缀最多列几段来源
LABELS_SHOWN = 6         # 侧栏里每个节点最多列几个消息标签
ADDED_CHARS = 40


class TreeNode(NamedTuple):
    session_id: str
    title: str
    parent_id: str | None          # 文件里的 parent_id（可能不在这次导出里）
    fork_point: int | None
    created_at: str
    created_ns: int
    message_count: int             # 完整历史的条数
    own_from: int                  # 前 own_from 条继承自（导出里的）父节点，与它逐条相同
    depth: int
    last: bool                     # 是父节点的最后一个孩子
    messages: list                 # 自己的消息：完整历史的 [own_from:]
    source: Any
    workspace: Any
    converged_from: tuple          # 收敛节点：被收敛的其它分支（见 issue 21；没有这个字段的节点为空）
    segments: tuple                # 继承的前缀来自谁：((祖先, 第一条, 最后一条), …)，近的在前
    extra: dict                    # to_dict() 里本模块不认识的字段（JSONL 原样带上）


class Gathered(NamedTuple):
    scope: str
    focus: str                     # 读者选中的节点
    nodes: list[TreeNode]          # 先序：父在子前
    above: list[dict]              # 导出的根之上的祖先摘要（子树导出时的路径开头）


class Prepared(NamedTuple):
    gathered: Gathered
    titles: list[str]              # 与 gathered.nodes 一一对应，已按复核遮好
    sources: list[Any]
    messages: list[list]
    review: s11_review.Review | None
    manifest: s11_review.Manifest
    omitted: list[str]


# ── 收集：每条消息只属于最先有它的节点 ───────────────────────────────────────────────────────────
def _converged(node: Any) -> tuple:
    """节点的 converged_from（另一位同学正在加的字段）：ID 列表，或带 session_id 的字典列表；没有就是 ()。"""
    value = getattr(node, "converged_from", None)
    if not isinstance(value, (list, tuple)):
        return ()
    ids = [item.get("session_id") if isinstance(item, dict) else item for item in value]
    return tuple(str(item) for item in ids if isinstance(item, str) and item)


_KNOWN = {"session_id", "title", "parent_id", "messages", "created_at", "fork_point", "workspace", "source",
          "converged_from"}


def gather(store, node_id: str, scope: str = "tree") -> Gathered:
    """按 scope 走一遍要导出的节点，逐个 load；找不到节点抛 SessionNotFound，scope 不对抛 SessionError。"""
    if scope not in SCOPES:
        raise SessionError(f"导出范围 {scope!r} 无效：可选 {'、'.join(SCOPES)}")
    validate_session_id(node_id)
    if scope == "path":
        lineage = store.lineage(node_id)
        if not lineage or lineage[-1]["session_id"] != node_id:
            raise SessionNotFound(f"未找到会话: {node_id}")
        forest, start, above = Forest(lineage), lineage[0]["session_id"], []
    else:
        forest = Forest(store.list_sessions())
        if node_id not in forest.by_id:
            raise SessionNotFound(f"未找到会话: {node_id}")
        start = root_of(node_id, forest.by_id) if scope == "tree" else node_id
        above = store.lineage(node_id)[:-1] if scope == "subtree" else []
    nodes: list[TreeNode] = []
    stack: list[tuple] = []   # 当前路径上的祖先：(节点, 它的块名, 读到的消息, 读到的消息从第几条起)
    for step in walk(forest, start):
        del stack[step.depth:]
        above_node = stack[-1] if stack and stack[-1][0] is not None and \
            stack[-1][0].session_id == step.node["parent_id"] else None
        loaded = store.load_after(step.node["session_id"], above_node[1] if above_node else [])
        if loaded is None:   # 走到一半被删掉了：它的分支挂不上，也一并跳过
            stack.append((None, [], [], 0))
            continue
        node, skipped, chunk_names = loaded
        part = [item if isinstance(item, dict) else {"content": item} for item in node.messages]
        own_from = _own_from(store, node, skipped, part, above_node)
        extra = {key: value for key, value in node.to_dict().items() if key not in _KNOWN}
        record = TreeNode(node.session_id, str(node.title), node.parent_id, node.fork_point, str(node.created_at or ""),
                          int(getattr(node, "created_ns", 0) or 0), skipped + len(part), own_from, step.depth,
                          step.last, part[own_from - skipped:], node.source, node.workspace, _converged(node),
                          _segments(own_from, stack), extra)
        nodes.append(record)
        stack.append((record, chunk_names, part, skipped))
    return Gathered(scope, node_id, nodes, above)


def _own_from(store, node, skipped: int, part: list, above_node) -> int:
    """前几条与父节点逐条相同（算在祖先头上）。没读的 skipped 条在父节点相同的块里，一定相同；其后逐条比到
    fork_point 为止（不到一块）。父节点读到的消息不够靠前（它分叉得更早）时，整份读一次父节点来比。"""
    if above_node is None or not isinstance(node.fork_point, int) or isinstance(node.fork_point, bool):
        return 0
    parent, _, parent_part, parent_from = above_node
    if parent_from > skipped:
        loaded = store.load(parent.session_id)
        parent_part, parent_from = (list(loaded.messages) if loaded is not None else []), 0
    limit = max(0, min(node.fork_point, parent_from + len(parent_part), skipped + len(part)))
    own_from = skipped
    while own_from < limit and part[own_from - skipped] == parent_part[own_from - parent_from]:
        own_from += 1
    return own_from


def _segments(own_from: int, stack: list) -> tuple:
    """前 own_from 条分别印在哪个祖先那里：沿路径往上，每个祖先自己的那一段。"""
    found, bound = [], own_from
    for ancestor, *_ in reversed(stack):
        if bound <= 0 or ancestor is None or len(found) >= SEGMENTS_SHOWN:
            break
        if ancestor.own_from < bound:
            found.append((ancestor.session_id, ancestor.own_from + 1, bound))
            bound = ancestor.own_from
    if bound > 0:
        found.append(("", 1, bound))   # 更上层：列不下了
    return tuple(found)


def units(gathered: Gathered) -> list[s11_review.Unit]:
    """要写出的每段文字：每个节点的标题、来源信息、它自己的每条消息（编号按它的路径数）。"""
    found = []
    for node in gathered.nodes:
        found.append(s11_review.Unit(node.session_id, 0, node.title))
        if node.source is not None:
            found.append(s11_review.Unit(node.session_id, -1, node.source))
        found += [s11_review.Unit(node.session_id, node.own_from + index + 1, message)
                  for index, message in enumerate(node.messages)]
    return found


def review_of(gathered: Gathered, added=()) -> s11_review.Review:
    """这次导出的复核表（默认：表里找到的全部遮住）。"""
    return s11_review.scan(units(gathered), added)


def prepare(store, node_id: str, scope: str = "tree", *, redact: bool = True, added=(), unmask=(),
            gathered: Gathered | None = None, review: s11_review.Review | None = None) -> Prepared:
    """收集、复核、遮好：之后的 HTML / Markdown / JSONL 都从这一份写出。gathered / review 可以传入已算好的。"""
    gathered = gathered or gather(store, node_id, scope)
    pieces = units(gathered)
    if redact:
        review = review if review is not None and review.added == s11_review.clean_added(added) else \
            s11_review.scan(pieces, added)
        values, manifest = s11_review.apply(pieces, review, unmask)
    else:
        review = None
        values, manifest = s11_review.unredacted(pieces)
    titles, sources, messages = [], [], []
    position = 0
    for node in gathered.nodes:
        titles.append(values[position])
        position += 1
        if node.source is not None:
            sources.append(values[position])
            position += 1
        else:
            sources.append(None)
        count = len(node.messages)
        messages.append(values[position:position + count])
        position += count
    return Prepared(gathered, titles, sources, messages, review, manifest, _omitted(gathered, redact))


def _omitted(gathered: Gathered, redact: bool) -> list[str]:
    """清单的“没有随导出保存的”：图片、加密的思考、截断的文字、系统提示与工作区。"""
    images = truncated = hidden = system = 0
    for node in gathered.nodes:
        for message in node.messages:
            system += message.get("role") == "system"
            for part in message_parts(message):
                images += part.kind == "image"
                truncated += part.truncated_from > 0
                hidden += part.kind == "thinking" and part.text.startswith("（加密的思考内容")
    lines = []
    if images:
        lines.append(f"🚫 没有导出：图片 {images} 张（没有嵌入，只留一行占位说明）")
    if truncated:
        lines.append(f"✂️ 不完整：{truncated} 段文字在导入时被截断，只留了开头（页面上写着原长）")
    if hidden:
        lines.append(f"🚫 没有导出：加密的思考 {hidden} 段（没有内容可导出）")
    if any(isinstance(node.source, dict) and node.source for node in gathered.nodes):
        lines.append("🚫 没有导出：Agent 自带的系统提示快照、思考签名（导入时就没有保存）")
    if system:
        lines.append(f"🧠 包含 {system} 条 system 消息（系统提示，原样导出、已按规则脱敏）")
    lines.append("🚫 没有导出：工作区快照（保存时的代码状态、别人机器上的路径）")
    return lines


# ── 共用的小块 ──────────────────────────────────────────────────────────────────────────────────
def _title(prepared: Prepared, index: int) -> str:
    return prepared.titles[index] or "未命名会话"


def _first_added(messages: list) -> str:
    if not messages:
        return ""
    return shorten(content_text(messages[0].get("content")), ADDED_CHARS)


def _relations(prepared: Prepared) -> tuple[dict, dict, dict]:
    """(id → 下标, id → 导出里的孩子, 被收敛的分支 id → 收敛节点 id 列表)。"""
    index = {node.session_id: i for i, node in enumerate(prepared.gathered.nodes)}
    kids: dict[str, list[str]] = {}
    into: dict[str, list[str]] = {}
    for node in prepared.gathered.nodes:
        if node.parent_id in index:
            kids.setdefault(node.parent_id, []).append(node.session_id)
        for other in node.converged_from:
            into.setdefault(other, []).append(node.session_id)
    return index, kids, into


def _labels(messages: list, node: TreeNode) -> list[tuple[int, str]]:
    found = []
    for offset, message in enumerate(messages):
        label = message.get("label")
        if label not in (None, "", False):
            found.append((node.own_from + offset + 1, " ".join(str(label).split())))
    return found


def _summary_line(prepared: Prepared, position: int, kids: dict) -> str:
    node = prepared.gathered.nodes[position]
    text = f"{node.message_count} 条"
    if node.own_from < node.message_count and node.depth:
        text += f" · +{node.message_count - node.own_from}：{_first_added(prepared.messages[position])}"
    if len(kids.get(node.session_id, [])) > 1:
        text += f" · 🔀 分岔 ×{len(kids[node.session_id])}"
    return text


def _path(prepared: Prepared, position: int, index: dict) -> list[tuple[str, str, bool]]:
    """这个节点的路径：[(id, 标题, 在不在导出里)]，根在前；太长时中间写 (“”, “…”, False)。"""
    nodes = prepared.gathered.nodes
    chain, current, seen = [], nodes[position], set()
    while current is not None and current.session_id not in seen:
        seen.add(current.session_id)
        chain.append((current.session_id, _title(prepared, index[current.session_id]), True))
        current = nodes[index[current.parent_id]] if current.parent_id in index else None
    if chain and prepared.gathered.above and chain[-1][0] == nodes[0].session_id:
        chain += [(item["session_id"], "", False) for item in reversed(prepared.gathered.above)]
    chain.reverse()
    if len(chain) > PATH_SHOWN:
        chain = chain[:1] + [("", "…", False)] + chain[-(PATH_SHOWN - 2):]
    return chain


# ── HTML ───────────────────────────────────────────────────────────────────────────────────────
_TREE_CSS = """
.layout { display: grid; grid-template-columns: minmax(15rem, 24rem) minmax(0, 1fr); gap: 1.5rem;
  max-width: 96rem; margin: 0 auto; padding: 1rem; }
.layout > main { max-width: none; margin: 0; padding: 0 0 4rem; min-width: 0; }
.top { max-width: 96rem; margin: 0 auto; padding: 1rem 1rem 0; }
.manifest { margin: 0 0 1rem; padding: .75rem 1rem; background: var(--card); border: 1px solid var(--line);
  border-left: 4px solid #bf8700; border-radius: 8px; }
.manifest h2 { margin: 0 0 .3rem; font-size: 1rem; }
.manifest ul { margin: 0; padding-left: 1.2rem; }
nav.tree { position: sticky; top: 0; align-self: start; max-height: 100vh; overflow: auto; padding: .5rem 0;
  font-size: .85rem; line-height: 1.45; }
nav.tree h2 { font-size: 1rem; margin: 0 0 .5rem; }
nav.tree ol { list-style: none; margin: 0; padding: 0; }
nav.tree li { padding: .2rem 0 .2rem calc(min(var(--d, 0), 12) * .7rem); border-left: 2px solid transparent; }
nav.tree li.branchpoint > a::after { content: " 🔀"; }
nav.tree a { color: inherit; font-weight: 600; text-decoration: none; }
nav.tree a:hover, nav.tree a:focus { text-decoration: underline; }
nav.tree .meta, nav.tree .rel { display: block; color: var(--muted); font-size: .78rem; }
nav.tree .rel a { font-weight: 400; text-decoration: underline; }
.depth { color: var(--muted); font-weight: 400; }
section.node { margin: 0 0 2rem; padding: .75rem 1rem 1rem; border: 1px solid var(--line); border-radius: 10px;
  content-visibility: auto; contain-intrinsic-size: auto 40rem; }
section.node:target { outline: 3px solid #d97706; outline-offset: 2px; }
section.node > h2 { margin: 0 0 .25rem; font-size: 1.15rem; line-height: 1.4; }
.crumbs { color: var(--muted); font-size: .82rem; margin: 0 0 .4rem; }
.crumbs a { color: inherit; }
.relations { margin: .25rem 0 .5rem; padding: 0; list-style: none; font-size: .85rem; color: var(--muted); }
.relations a { color: inherit; }
.message h3 { margin: 0 0 .4rem; font-size: .9rem; color: var(--muted); }
.message h3 a { color: inherit; text-decoration: none; }
.message:target { outline: 3px solid #d97706; outline-offset: 1px; }
a { color: #0969da; }
@media (prefers-color-scheme: dark) { a { color: #6cb6ff; } }
@media (max-width: 900px) {
  .layout { grid-template-columns: minmax(0, 1fr); padding: .5rem; gap: .75rem; }
  .top { padding: .75rem .5rem 0; }
  nav.tree { position: static; max-height: 60vh; border: 1px solid var(--line); border-radius: 8px;
    padding: .5rem .75rem; }
  nav.tree li { padding-left: calc(min(var(--d, 0), 6) * .6rem); }
  section.node { padding: .5rem .6rem .75rem; }
  .message { padding: .6rem .7rem; }
}
"""


def _href(session_id: str, number: int | None = None) -> str:
    target = session_id if number is None else f"{session_id}-{number}"
    return f'href="#{_escape(target)}"'


def html_chunks(prepared: Prepared) -> Iterator[str]:
    """整页 HTML 的片段（可逐个写进文件）。"""
    gathered = prepared.gathered
    index, kids, into = _relations(prepared)
    root_title = _title(prepared, 0) if gathered.nodes else "（空）"
    count = sum(len(messages) for messages in prepared.messages)
    yield "\n".join([
        "<!doctype html>", '<html lang="zh-CN">', "<head>", '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f'<meta http-equiv="Content-Security-Policy" content="{s11_export.CONTENT_SECURITY_POLICY}">',
        '<meta name="referrer" content="no-referrer">',
        f"<title>会话树导出：{_escape(root_title)}</title>",
        f"<style>{s11_export._CSS}{_TREE_CSS}</style>", "</head>", "<body>", '<div class="top">',
        f"<header><h1>🌳 会话树导出：{_escape(root_title)}</h1>",
        f'<p class="note">范围：{_escape(SCOPE_NAMES[gathered.scope])}（选中的节点 <a {_href(gathered.focus)}>'
        f"<code>{_escape(gathered.focus)}</code></a>）· {len(gathered.nodes)} 个节点 · {count} 条不同的消息"
        "（继承的前缀只印一次）</p></header>",
        _html_manifest(prepared), "</div>", '<div class="layout">', _html_sidebar(prepared, index, kids, into),
        "<main>", ""])
    for position in range(len(gathered.nodes)):
        yield from _html_node(prepared, position, index, kids, into)
    yield "</main>\n</div>\n</body>\n</html>\n"


def render_html(prepared: Prepared) -> str:
    return "".join(html_chunks(prepared))


def _html_manifest(prepared: Prepared) -> str:
    items = "".join(f"<li>{_escape(line)}</li>" for line in s11_review.manifest_lines(prepared.manifest,
                                                                                      prepared.omitted))
    return (f'<section class="manifest" id="manifest" aria-label="脱敏清单"><h2>🔒 脱敏清单</h2>'
            f"<ul>{items}</ul></section>")


def _html_sidebar(prepared: Prepared, index: dict, kids: dict, into: dict) -> str:
    rows = []
    for position, node in enumerate(prepared.gathered.nodes):
        deep = f'<span class="depth">（第 {node.depth} 层）</span> ' if node.depth > MAX_INDENT else ""
        icon = "🌱" if node.depth == 0 else "🌿"
        fork = ' class="branchpoint"' if len(kids.get(node.session_id, [])) > 1 else ""
        relations = _html_relations(node, index, into)
        labels = _labels(prepared.messages[position], node)[:LABELS_SHOWN]
        relations += "".join(f'<span class="rel">🏷️ <a {_href(node.session_id, number)}>'
                             f"{_escape(shorten(label, 40))}</a>（第 {number} 条）</span>" for number, label in labels)
        rows.append(f'<li style="--d:{min(node.depth, MAX_INDENT)}"{fork}>{deep}<a {_href(node.session_id)}>{icon} '
                    f"{_escape(shorten(_title(prepared, position), 60))}</a>"
                    f'<span class="meta"><code>{_escape(node.session_id)}</code> · '
                    f"{_escape(_summary_line(prepared, position, kids))}</span>{relations}</li>")
    return (f'<nav class="tree" aria-label="会话树"><h2>🌳 会话树（{len(rows)} 个节点）</h2>'
            f"<ol>{''.join(rows)}</ol></nav>")


def _html_relations(node: TreeNode, index: dict, into: dict) -> str:
    parts = []
    if node.converged_from:
        links = "、".join(_html_ref(other, index) for other in node.converged_from)
        parts.append(f'<span class="rel">🔀 收敛自 {links}</span>')
    if node.session_id in into:
        links = "、".join(_html_ref(other, index) for other in into[node.session_id])
        parts.append(f'<span class="rel">↪ 已收敛到 {links}</span>')
    return "".join(parts)


def _html_ref(session_id: str, index: dict) -> str:
    if session_id in index:
        return f"<a {_href(session_id)}><code>{_escape(session_id)}</code></a>"
    return f"<code>{_escape(session_id)}</code>（不在本次导出中）"


def _html_node(prepared: Prepared, position: int, index: dict, kids: dict, into: dict) -> Iterator[str]:
    node = prepared.gathered.nodes[position]
    title = _title(prepared, position)
    crumbs = []
    for session_id, crumb_title, inside in _path(prepared, position, index):
        if not session_id:
            crumbs.append("…")
        elif session_id == node.session_id:
            crumbs.append(f"<b>{_escape(shorten(crumb_title, 40))}</b>")
        elif inside:
            crumbs.append(f"<a {_href(session_id)}>{_escape(shorten(crumb_title, 40))}</a>")
        else:
            crumbs.append(f"<code>{_escape(session_id)}</code>（不在本次导出中）")
    facts = [f"<code>{_escape(node.session_id)}</code>", f"{node.message_count} 条",
             f"创建于 {_escape(node.created_at)}"]
    if node.parent_id and node.fork_point is not None:
        facts.append(f"自第 {_escape(node.fork_point)} 条分叉")
    source = s11_export._source_sentence(prepared.sources[position])
    if source:
        facts.append(f"来源：{_escape(source)}")
    yield (f'<section class="node" id="{_escape(node.session_id)}">\n'
           f"<h2>{'🌱' if node.depth == 0 else '🌿'} {_escape(title)}</h2>\n"
           f'<nav class="crumbs" aria-label="路径">路径：{" → ".join(crumbs)}</nav>\n'
           f'<p class="crumbs">{" · ".join(facts)}</p>\n')
    relations = []
    if node.own_from:
        spans = "；".join(_html_segment(session_id, first, last, index) for session_id, first, last in node.segments)
        relations.append(f"<li>⤴ 前 {node.own_from} 条继承自上面的节点，这里不再重复：{spans}</li>")
    elif node.parent_id and node.parent_id not in index:
        relations.append(f"<li>⤴ 父节点 <code>{_escape(node.parent_id)}</code> 不在本次导出中："
                         "它的完整历史都印在这里</li>")
    children = kids.get(node.session_id, [])
    if children:
        links = "、".join(f"<a {_href(child)}>{_escape(shorten(_title(prepared, index[child]), 30))}</a>"
                          for child in children[:30])
        more = f" 等 {len(children)} 个" if len(children) > 30 else ""
        relations.append(f"<li>🌿 分支：{links}{more}</li>")
    converge = _html_relations(node, index, into).replace('<span class="rel">', "<li>").replace("</span>", "</li>")
    if converge:
        relations.append(converge)
    if relations:
        yield f'<ul class="relations">{"".join(relations)}</ul>\n'
    card = _converge_card(node, prepared.messages[position])
    if card is not None:
        yield s11_export._html_converge_card(card) + "\n"
    if not prepared.messages[position]:
        yield '<p class="note">（这个节点没有自己的新消息）</p>\n'
    names = s11_export.tool_call_names(prepared.messages[position])
    for offset, message in enumerate(prepared.messages[position]):
        yield from _html_message(node.session_id, node.own_from + offset + 1, message, names)
    yield "</section>\n"


def _converge_card(node: TreeNode, messages: list):
    """收敛节点的 🔀 卡片（s11_export.converge_card；决定和带过来的消息是它自己的消息，编号加上继承的条数）。"""
    card_of = getattr(s11_export, "converge_card", None)
    card = card_of(messages) if card_of is not None else None
    if card is None:
        return None
    return card._replace(number=card.number + node.own_from,
                         carried=[(number + node.own_from, text) for number, text in card.carried])


def _html_segment(session_id: str, first: int, last: int, index: dict) -> str:
    span = f"第 {first}–{last} 条" if first != last else f"第 {first} 条"
    if not session_id:
        return f"{span}（更上层的节点，见路径）"
    if session_id not in index:
        return f"{span}（<code>{_escape(session_id)}</code>）"
    return f"<a {_href(session_id, first)}>{span}</a>（<code>{_escape(session_id)}</code>）"


def _html_message(session_id: str, number: int, message: dict, names: dict) -> Iterator[str]:
    role = str(message.get("role", "unknown"))
    marks = message_marks(message)
    classes = ["message", *(kind for kind, _ in marks if kind in ("summary", "meta", "subagent"))]
    anchor = f"{session_id}-{number}"
    yield (f'<section class="{" ".join(classes)}" data-role="{_escape(role)}" id="{_escape(anchor)}">\n'
           f'<h3><a {_href(session_id, number)}>#{number}</a> {s11_export.ROLE_ICONS.get(role, s11_export.DEFAULT_ICON)}'
           f" <code>{_escape(role)}</code></h3>\n")
    if marks:
        items = "".join(f'<li class="mark-{kind}">{_escape(text)}</li>' for kind, text in marks)
        yield f'<ul class="marks" aria-label="消息标记">{items}</ul>\n'
    for part in message_parts(message, names):
        yield from _HTML_RENDERERS[part.kind](part)
        if part.truncated_from:
            yield f'<p class="note">✂️ {_escape(s11_export.truncation_note(part.truncated_from))}</p>'
        yield "\n"
    yield "</section>\n"


# ── Markdown ───────────────────────────────────────────────────────────────────────────────────
def markdown_chunks(prepared: Prepared) -> Iterator[str]:
    """Markdown 版：清单、目录（链接到每个节点）、每个节点一节；会话文字的写法与 s11_export 相同。"""
    gathered = prepared.gathered
    index, kids, into = _relations(prepared)
    root_title = _title(prepared, 0) if gathered.nodes else "（空）"
    lines = [f"# 🌳 会话树导出：{_inline(root_title)}", "",
             f"- **范围**：{_inline(SCOPE_NAMES[gathered.scope])}（选中的节点 `{gathered.focus}`）",
             f"- **节点**：{len(gathered.nodes)} 个；**不同的消息**：{sum(map(len, prepared.messages))} 条"
             "（继承的前缀只印一次）", "", "## 🔒 脱敏清单", ""]
    lines += [f"- {_inline(line)}" for line in s11_review.manifest_lines(prepared.manifest, prepared.omitted)]
    lines += ["", "## 🌳 会话树", ""]
    for position, node in enumerate(gathered.nodes):
        indent = "  " * min(node.depth, 8)
        deep = f"（第 {node.depth} 层）" if node.depth > 8 else ""
        extra = []
        if node.converged_from:
            extra.append("🔀 收敛自 " + "、".join(f"`{other}`" for other in node.converged_from))
        if node.session_id in into:
            extra.append("↪ 已收敛到 " + "、".join(f"`{other}`" for other in into[node.session_id]))
        extra += [f"🏷️ [{_inline(shorten(label, 40))}](#{node.session_id}-{number})"
                  for number, label in _labels(prepared.messages[position], node)[:LABELS_SHOWN]]
        tail = f" · {' · '.join(extra)}" if extra else ""
        lines.append(f"{indent}- {deep}[{_inline(shorten(_title(prepared, position), 60))}](#{node.session_id}) "
                     f"`{node.session_id}` · {_inline(_summary_line(prepared, position, kids))}{tail}")
    yield "\n".join(lines) + "\n\n---\n"
    for position in range(len(gathered.nodes)):
        yield from _markdown_node(prepared, position, index, kids)


def render_markdown(prepared: Prepared) -> str:
    return "".join(markdown_chunks(prepared))


def _markdown_node(prepared: Prepared, position: int, index: dict, kids: dict) -> Iterator[str]:
    node = prepared.gathered.nodes[position]
    crumbs = " → ".join("…" if not session_id else (f"[{_inline(shorten(title, 30))}](#{session_id})" if inside
                                                   else f"`{session_id}`")
                        for session_id, title, inside in _path(prepared, position, index))
    lines = ["", f'<a id="{node.session_id}"></a>', "",
             f"## {'🌱' if node.depth == 0 else '🌿'} {_inline(_title(prepared, position))}", "",
             f"- **ID**：`{node.session_id}` · {node.message_count} 条 · 创建于 {_inline(node.created_at)}",
             f"- **路径**：{crumbs}"]
    source = s11_export._source_sentence(prepared.sources[position])
    if source:
        lines.append(f"- **来源**：{_inline(source)}")
    if node.own_from:
        spans = "；".join(f"第 {first}–{last} 条" + (f"（[`{sid}`](#{sid}-{first})）" if sid in index else "")
                         for sid, first, last in node.segments)
        lines.append(f"- **继承**：前 {node.own_from} 条印在上面的节点里：{spans}")
    children = kids.get(node.session_id, [])
    if children:
        lines.append("- **分支**：" + "、".join(f"[`{child}`](#{child})" for child in children[:30]))
    card = _converge_card(node, prepared.messages[position])
    if card is not None:
        lines.append(s11_export._markdown_converge_card(card))
    yield "\n".join(lines) + "\n"
    names = s11_export.tool_call_names(prepared.messages[position])
    for offset, message in enumerate(prepared.messages[position]):
        number = node.own_from + offset + 1
        role = str(message.get("role", "unknown"))
        yield (f'\n<a id="{node.session_id}-{number}"></a>\n\n### {number}. '
               f"{s11_export.ROLE_ICONS.get(role, s11_export.DEFAULT_ICON)} {s11_export._code_span(role)}\n\n")
        marks = message_marks(message)
        bodies = [[" · ".join(_inline(text) for _, text in marks)]] if marks else []
        bodies += [_markdown_part(part) for part in message_parts(message, names)]
        for number_in, pieces in enumerate(bodies):
            yield from ["\n\n", *pieces] if number_in else pieces
        yield "\n"
