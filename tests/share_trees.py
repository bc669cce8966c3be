"""Trees for the share tests (whole-tree export, review, JSONL round trip), and an HTML reader for the pages.

Every builder goes through the store's public API (create_session / fork / save / delete), so each shape is
one the store can really make.
"""

from __future__ import annotations

import random
from html.parser import HTMLParser

HOSTILE_TITLE = '<img src=x onerror=alert(1)>"\'><script>alert(2)</script>'
HOSTILE_TEXT = ('<script>alert(3)</script> <a href="javascript:alert(4)">x</a> [y](javascript:alert(5)) '
                '<iframe src="https://evil.example/"></iframe> ![p](https://tracker.example/p.png) '
                '<style>body{display:none}</style> &lt;b&gt; \u202eevil \x1b[31m')
HOSTILE_LABEL = '"><svg onload=alert(6)> javascript:alert(7)'
SECRETS = {"email": "alice@example.com", "card": "4111 1111 1111 1111", "phone": "13812345678"}


def three_branches(store) -> dict:
    """A root with three branches (A, B, C); B has its own child; secrets and a label sit in known places."""
    root = store.create_session("修复登录服务内存泄漏", [
        {"role": "system", "content": "你是一名资深 Python 后端工程师。"},
        {"role": "user", "content": "服务内存一路上涨，帮我定位根因。联系 alice@example.com"},
        {"role": "assistant", "content": "怀疑全局缓存未清理。"},
    ])
    a = store.fork(root, [{"role": "assistant", "content": "方案 A：LRU 上限。订单号 2024113012345678 已下单"}],
                   title="方案 A")
    b = store.fork(root, [{"role": "assistant", "content": "方案 B：弱引用缓存。主机 db01.corp.example 上测"},
                          {"role": "user", "content": "卡号 4111 1111 1111 1111 付款，db01.corp.example 再测一次",
                           "label": "最终方案"}], title="方案 B")
    c = store.fork(root, [{"role": "assistant", "content": "方案 C：什么都不做。"}], at=2, title="方案 C")
    b1 = store.fork(b.session_id, [{"role": "user", "content": "电话 13812345678，db01.corp.example"}],
                    title="方案 B · 压测")
    return {"root": root, "a": a.session_id, "b": b.session_id, "c": c.session_id, "b1": b1.session_id}


def big_tree(store, count: int = 1000, seed: int = 7) -> list[str]:
    """`count` nodes: each new node forks a random earlier node at a random point and adds one message."""
    rng = random.Random(seed)
    root = store.create_session("大树", [{"role": "user", "content": "第 0 条"}])
    ids, lengths = [root], {root: 1}
    with store.batch():
        for number in range(1, count):
            parent = ids[rng.randrange(len(ids))] if rng.random() < 0.7 else ids[-1]
            at = rng.randint(0, lengths[parent])
            child = store.fork(parent, [{"role": "assistant" if number % 2 else "user",
                                         "content": f"节点 {number} 的消息 #{number}"}], at=at, title=f"节点 {number}")
            ids.append(child.session_id)
            lengths[child.session_id] = len(child.messages)
    return ids


def hostile_tree(store) -> dict:
    root = store.create_session(HOSTILE_TITLE, [{"role": "user", "content": HOSTILE_TEXT, "label": HOSTILE_LABEL},
                                                {"role": '"><b>', "content": [{"type": "text", "text": HOSTILE_TEXT},
                                                                             {"type": "tool_use", "name": "<b>x</b>",
                                                                              "id": "t1", "input": {"q": HOSTILE_TEXT}}]}])
    child = store.fork(root, [{"role": "assistant", "content": HOSTILE_TEXT, "label": HOSTILE_LABEL}],
                       title=HOSTILE_TITLE + " 分支")
    return {"root": root, "child": child.session_id}


class ConvergedStore:
    """The real store, with issue 21's `converged_from` on one node (until that field lands in SessionNode)."""

    def __init__(self, store, node_id, sources):
        self.store, self.node_id, self.sources = store, node_id, sources

    def __getattr__(self, name):
        return getattr(self.store, name)

    def load(self, session_id):
        node = self.store.load(session_id)
        if node is not None and session_id == self.node_id:
            node.converged_from = list(self.sources)
        return node

    def load_after(self, session_id, known_chunks):   # the whole-tree export reads each node's own part
        loaded = self.store.load_after(session_id, known_chunks)
        if loaded is not None and session_id == self.node_id:
            loaded[0].converged_from = list(self.sources)
        return loaded


class Page(HTMLParser):
    """Everything the tests need from an exported page: tags, ids, links, attributes, text per element id."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.ids: list[str] = []
        self.hrefs: list[str] = []
        self.attributes: list[tuple[str, str, str]] = []
        self.classes: dict[str, int] = {}
        self._open: list[tuple[str, str | None]] = []
        self.text_of: dict[str, list[str]] = {}
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        values = dict(attrs)
        for name, value in attrs:
            self.attributes.append((tag, name, value or ""))
        if "id" in values:
            self.ids.append(values["id"])
        if "href" in values:
            self.hrefs.append(values["href"])
        for name in (values.get("class") or "").split():
            self.classes[name] = self.classes.get(name, 0) + 1
        if tag not in ("meta", "br", "img", "input", "link"):
            self._open.append((tag, values.get("id")))

    def handle_endtag(self, tag):
        while self._open:
            name, _ = self._open.pop()
            if name == tag:
                break

    def handle_data(self, data):
        for _, element_id in self._open:
            if element_id:
                self.text_of.setdefault(element_id, []).append(data)

    def text(self, element_id: str) -> str:
        return "".join(self.text_of.get(element_id, []))
