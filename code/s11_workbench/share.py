"""share.py — 会话树浏览器里「🔗 分享」面板的逻辑（不 import gradio，测试直接驱动）

    浏览器 ──token──> Share.review(token, view, 范围, 自己加的字符串, teacher=…)
                        │ spaces.open(token) 每次重新验令牌；view.source 决定读哪个空间（自己的 / 书架 / 老师查看）
                        │ s11_tree_export.gather()：这条路径 / 整棵树 / 子树
                        ▼ s11_review.scan()：每处命中一行 [规则, 上下文, 位置, 编号] + 每条规则几处 + 每处一个“揭开”勾选框
                 Share.download(token, view, 范围, 自己加的字符串, 勾选的编号, teacher=…)
                        │ 勾选的编号 = 揭开（只对这一次下载生效）；重新收集、重新复核（仓库可能刚变过）
                        ▼ HTML + Markdown + JSONL 写进本进程私有的下载目录（downloads.offer_run：与 📤 导出同一个，
                          按访客的空间最多 EXPORTS_PER_OWNER 份，内容没变就用上次的文件）

Key insight: 复核表是这一次导出的参数，不是状态：下载时按勾选重新算一遍，
没有被勾选的（新出现的、超出显示行数的、浏览器伪造的编号）命中一律遮住——默认永远是“表里找到的全部遮住”。

Safety: 命中的上下文是会话原文（含被遮住的那段，读者要靠它判断是不是误报），只进 gr.Dataframe 的纯文本单元格、
勾选框的纯文本标签和转义过的 Markdown，从不进 gr.HTML；只有令牌的主人（或老师）看得到。分享面板永远脱敏，没有“不脱敏”的按钮。
"""

from __future__ import annotations

from dataclasses import dataclass, field

import s11_review
import s11_tree_export
from s11_import import tree_jsonl
from s11_session import SessionError
from s11_text import shorten
from s11_workbench import downloads
from s11_workbench.explorer import MINE, SHELF, SPACE_PREFIX, View, explain
from s11_workbench.markdown import literal_inline

SCOPE_CHOICES = [("这条路径", "path"), ("它的整棵树", "tree"), ("它的子树", "subtree")]
TABLE_HEADERS = ["规则", "上下文（«» 里是会被遮住的原文）", "位置", "编号"]
MAX_ROWS = 300          # 表格和勾选框最多列多少处；其余照样遮住，说明里写明
CHOICE_CHARS = 30       # 勾选框标签里原文最多显示几个字


@dataclass
class Panel:
    """分享面板上的全部内容。"""
    notice: str = ""
    rows: list = field(default_factory=list)
    choices: list = field(default_factory=list)   # “揭开”勾选框：(标签, 编号)
    unmask: list = field(default_factory=list)    # 其中已勾选的编号
    summary: str = ""
    manifest: str = ""
    files: tuple = (None, None, None)     # (.html, .md, .jsonl)


def _space(spaces, token, view: View, teacher):
    own = spaces.open(token)
    if view.source == MINE:
        return own
    if view.source == SHELF:
        return spaces.shelf()
    if str(view.source).startswith(SPACE_PREFIX) and teacher and spaces.is_teacher(teacher):
        return spaces.view(teacher, view.source[len(SPACE_PREFIX):])
    raise SessionError("只有老师能导出别人的空间")


def _scope(scope) -> str:
    value = str(scope or "tree")
    if value not in s11_tree_export.SCOPES:
        raise SessionError(f"未知的导出范围 {literal_inline(value, 40)}")
    return value


def _summary(review: s11_review.Review, scope: str, nodes: int) -> str:
    counts = "、".join(f"{literal_inline(label)} ×{count}" for label, count in review.counts.items())
    head = (f"**{literal_inline(s11_tree_export.SCOPE_NAMES[scope])}**：{nodes} 个节点，"
            f"找到 **{len(review.hits)}** 处要遮住的内容" + (f"（{counts}）" if counts else ""))
    more = (f"\n\n表格只列出前 {MAX_ROWS} 处；其余的下载时照样遮住。" if len(review.hits) > MAX_ROWS else "")
    return head + "。默认全部遮住：在下面勾选误报 = 下载时保留原文。" + more


def _rows(review: s11_review.Review) -> list:
    return [[hit.rule, hit.context, s11_review.where_text(hit), hit.hit_id] for hit in review.hits[:MAX_ROWS]]


def _choices(review: s11_review.Review) -> list:
    return [(f"{hit.hit_id} · {hit.rule} · {shorten(hit.found, CHOICE_CHARS)}", hit.hit_id)
            for hit in review.hits[:MAX_ROWS]]


class Share:
    """分享面板的两个动作。只持有 Spaces 和下载目录；按访客区分的数据都在参数里。"""

    def __init__(self, spaces, *, export_root: str | None = None):
        self.spaces = spaces
        self.export_root = export_root or downloads.private_export_root()

    def review(self, token, view: View, scope: str = "tree", added: str = "", teacher: str | None = None) -> Panel:
        """列出这次导出会遮住的每一处。"""
        try:
            session_id = _selected(view)
            space = _space(self.spaces, token, view, teacher)
            scope = _scope(scope)
            gathered = s11_tree_export.gather(space.store, session_id, scope)
            review = s11_tree_export.review_of(gathered, added)
        except (SessionError, OSError, s11_review.AddedMaskError) as error:
            return Panel(notice=_explain(error))
        return Panel(rows=_rows(review), choices=_choices(review), summary=_summary(review, scope, len(gathered.nodes)))

    def download(self, token, view: View, scope: str = "tree", added: str = "", unmask=None,
                 teacher: str | None = None) -> Panel:
        """按勾选的“揭开”编号（和自己加的字符串）写出 HTML、Markdown、JSONL 三个下载。"""
        try:
            session_id = _selected(view)
            own = self.spaces.open(token)
            space = _space(self.spaces, token, view, teacher)
            scope = _scope(scope)
            gathered = s11_tree_export.gather(space.store, session_id, scope)
            review = s11_tree_export.review_of(gathered, added)
            picked = {str(item) for item in unmask} if isinstance(unmask, (list, tuple, set)) else set()
            unmask = picked & {hit.hit_id for hit in review.hits[:MAX_ROWS]}   # 只认表里列出的编号
            prepared = s11_tree_export.prepare(space.store, session_id, scope, added=added, unmask=unmask,
                                               gathered=gathered, review=review)
            files = self._write(own, space, session_id, scope, prepared)
        except (SessionError, OSError, s11_review.AddedMaskError) as error:
            return Panel(notice=_explain(error))
        manifest = "\n".join(f"- {literal_inline(line)}" for line in
                             s11_review.manifest_lines(prepared.manifest, prepared.omitted))
        done = (f"✅ 已生成 {len(gathered.nodes)} 个节点的分享文件（{prepared.manifest.total} 处已遮住"
                + (f"，揭开 {prepared.manifest.unmasked} 处" if prepared.manifest.unmasked else "") + "）：点下面的按钮下载")
        return Panel(notice=done, rows=_rows(review), choices=_choices(review), unmask=sorted(unmask), summary=_summary(review, scope, len(gathered.nodes)),
                     manifest="#### 🔒 页面顶部的脱敏清单\n\n" + manifest, files=files)

    def _write(self, own, space, session_id: str, scope: str, prepared) -> tuple[str, str, str]:
        """三个下载走 📤 导出的同一个下载目录（downloads.offer_run）：按访客的空间计数、每个空间最多
        downloads.EXPORTS_PER_OWNER 份；内容没变（同一份 prepared）就直接用上次的文件，不再渲染、不写新字节。"""
        # 指纹 = 渲染的全部输入（复核表除外：它只决定了遮哪些，结果已经在 prepared 的文字里）
        key = downloads.content_key([space.space_id, prepared._replace(review=None)])
        base = f"tree-{session_id}-{scope}"
        files = [(f"{base}.html", s11_tree_export.html_chunks(prepared)),
                 (f"{base}.md", s11_tree_export.markdown_chunks(prepared)),
                 (f"{base}.jsonl", tree_jsonl.jsonl_lines(prepared))]
        return downloads.offer_run(own.space_id, key, files, export_root=self.export_root)


def _selected(view) -> str:
    session_id = getattr(view, "session_id", None)
    if not session_id:
        raise SessionError("请先在列表或会话树里选一个会话")
    return session_id


def _explain(error: BaseException) -> str:
    if isinstance(error, s11_review.AddedMaskError):
        return f"⚠️ {literal_inline(str(error), 200)}"
    return literal_inline(explain(error), 320)   # 错误消息里可能带着读者输入的文字：只当纯文字显示
