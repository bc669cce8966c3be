"""agent_folders.py — 浏览器里的「💻 本机 Agent 文件夹」：列出本机各个 Agent 的会话，一键导入，跟随还在长的那个

    python app.py --agent-folders            只有一个人用（只对本机开放）时才有这块面板
        │
        ├─ 列出 ──> s11_import.list_agent_sessions()（+ 读者自己指定的文件夹）
        │           表格的每一行只是文字；行号 → 路径的对照表留在服务器端（gr.State），浏览器只送回行号
        ├─ 导入 ──> Explorer 的导入（同一套配额、同一份报告），导进这个浏览器自己的空间
        ├─ 快要被删的 ──> s11_import.at_risk()：Claude Code / Gemini CLI 离删除不到 5 天的、Codex 压缩 / 归档的；
        │                 「🛟 全部保留」把它们都导进这个空间（再点一次什么都不写）
        └─ 跟随 ──> 每隔几秒 s11_import.follow()：文件（或它的子代理文件）变了才再导入，同一组节点更新

关键洞察：这些文件夹里是读者真实的会话。课堂上别的同学的浏览器不能打开老师电脑上的 ~/.claude，
所以面板只在服务器只对本机开放时存在（available_for），每次点击还会再核对请求来自本机、叫的是本机的名字、
来自工作台自己的页面、带着启动时打印的钥匙（access_problem）。
这些文件夹只读：列表只 stat、只读每个文件开头；导入读全文，写的只是访客自己的空间。
"""

from __future__ import annotations

import dataclasses
import hmac
import os
import time
from dataclasses import dataclass
from typing import Mapping, Optional

from s11_format import SessionError
from s11_text import human_size, printable, shorten
from s11_workbench.explorer import MINE, Explorer, ExplorerError, Page, View, _space_budget, explain
from s11_workbench.host_guard import host_allowed, is_loopback
from s11_workbench.markdown import literal_inline

HEADERS = ["Agent", "项目", "标题", "大小", "最后修改"]
FOLLOW_SECONDS = 5          # 跟随时多久看一次文件
LIST_LIMIT = 200


@dataclass(frozen=True)
class Caller:
    """谁在点面板上的按钮（agent_folders_tab 从请求里读出来）：对端地址、Host 表头、这个连接进来的端口、
    页面的 Origin 表头，和浏览器带来的面板钥匙（启动时只打印在终端里的那一个）。"""
    client: Optional[str] = None
    host: Optional[str] = None
    port: int = 0
    origin: Optional[str] = None
    key: Optional[str] = None


def access_problem(caller, key: Optional[str]) -> Optional[str]:
    """这个请求能不能碰本机 Agent 文件夹：None = 能；否则是给读者看的一句中文。四道，缺一不可：
    1. 对端是本机（127.0.0.0/8、::1）——别的电脑不行；
    2. Host 正好是 127.0.0.1 / localhost / [::1] 加本服务器的端口——把自己的域名重新解析到 127.0.0.1 的网页不行
       （不论工作台是不是开给了全班）；
    3. Origin 也是这三个之一加这个端口——把请求转进来的隧道（会改写 Host，不会改写 Origin）不行；
    4. 带着启动时终端里打印的面板钥匙（key；None = 不要求）——本机的另一个账户、另一个浏览器不行。"""
    if not isinstance(caller, Caller) or not is_loopback(caller.client):
        return "本机 Agent 文件夹只对在这台电脑上打开的页面开放"
    if not host_allowed(caller.host, caller.port):
        return ("本机 Agent 文件夹只回答用 http://127.0.0.1:端口/（或 localhost、[::1]）打开的页面："
                f"这个请求把服务器叫作「{printable(str(caller.host or ''))[:80]}」")
    scheme, _, origin_host = (caller.origin or "").partition("://")
    if scheme != "http" or not host_allowed(origin_host, caller.port):
        return "本机 Agent 文件夹只回答这台电脑上、这个工作台自己的页面（请求的来源不是它）"
    if key is not None and not (isinstance(caller.key, str) and hmac.compare_digest(caller.key.encode(), key.encode())):
        return ("本机 Agent 文件夹要用启动时终端里打印的那个链接（带 ?agents=…）打开一次："
                "同一台电脑上的别的账户、别的浏览器看不到你的会话")
    return None


def available_for(host: Optional[str]) -> Optional[str]:
    """能不能开面板：None = 可以；否则是给读者看的中文原因（app.py 启动时拒绝并退出）。
    只认 127.0.0.1、localhost、::1：每次点击都要求页面用这三个名字之一打开（access_problem），
    监听 127.0.0.2 之类的地址时，页面用不了这三个名字，面板也就用不了。"""
    if (host or "").strip().lower().strip("[]") in ("127.0.0.1", "localhost", "::1"):
        return None
    if is_loopback(host):
        return (f"--agent-folders 要求 --host 是 127.0.0.1、localhost 或 ::1（现在是 {printable(str(host))[:80]}）："
                "面板只回答用这三个名字打开的页面")
    return (f"--agent-folders 只能在工作台只对本机开放时使用（现在监听 {printable(str(host or '所有网卡'))}）："
            "本机 Agent 文件夹里是你真实的会话，课堂上别的同学不能看到。去掉 --host，或用 --host 127.0.0.1")


@dataclass(frozen=True)
class Listing:
    """一次列出的结果（存在 gr.State 里）：rows 给表格，paths[i] 是第 i 行的文件。"""
    rows: tuple = ()
    paths: tuple = ()
    note: str = ""


@dataclass(frozen=True)
class AtRisk:
    """快要被 Agent 删掉的会话（存在 gr.State 里）：rows 给表格，paths 是要保留的文件。"""
    rows: tuple = ()
    paths: tuple = ()
    note: str = ""


RISK_HEADERS = ["Agent", "标题", "为什么列在这里", "最后修改"]


@dataclass(frozen=True)
class Followed:
    """正在跟随的会话（存在 gr.State 里）：文件、上次导入时的样子、它的标题。"""
    path: str = ""
    state: object = None
    title: str = ""


class AgentFolders:
    """面板的全部动作。home / env 是参数（测试给临时文件夹），默认是本机的家目录与环境变量。"""

    def __init__(self, explorer: Explorer, *, home: Optional[str] = None, env: Optional[Mapping[str, str]] = None,
                 key: Optional[str] = None):
        self.explorer = explorer
        self.home = home
        self.env = env
        self.key = key   # 面板钥匙（app.py 启动时生成、只打印在终端里）；None = 不要求（测试）

    # ── 列出 ──────────────────────────────────────────────────────────────────
    def list(self, client: Caller, folder: str = "") -> Listing:
        """各个 Agent 的标准文件夹，再加上读者指定的文件夹（可选）。最新的在前。"""
        import s11_import
        self._require_local(client)
        folder = (folder or "").strip()
        listing = s11_import.list_agent_sessions(self.home, env=self.env, limit=LIST_LIMIT)
        sessions, truncated = list(listing.sessions), listing.truncated
        looked = [root for _, root in listing.roots]
        if folder:
            folder = os.path.expanduser(folder)
            if not os.path.isdir(folder):
                raise ExplorerError(f"没有这个文件夹：{literal_inline(printable(folder), 200)}")
            extra = s11_import.list_folder_sessions(folder, limit=LIST_LIMIT)
            known = {item.path for item in sessions}
            sessions += [item for item in extra.sessions if item.path not in known]
            truncated = truncated or extra.truncated
            looked.append(folder)
        sessions.sort(key=lambda item: item.modified, reverse=True)
        sessions = sessions[:LIST_LIMIT]
        rows = tuple((item.agent, shorten(printable(item.project or ""), 40), shorten(printable(item.title), 60),
                      human_size(item.size), time.strftime("%Y-%m-%d %H:%M", time.localtime(item.modified)))
                     for item in sessions)
        where = "\n" + "\n".join(f"- {literal_inline(printable(path), 200)}" for path in looked)
        if not sessions:
            note = f"在这些文件夹里没找到会话：{where}"
        else:
            more = f"（只列了最新的 {len(sessions)} 个）" if truncated or len(sessions) == LIST_LIMIT else ""
            note = f"找到 {len(sessions)} 个会话{more}，点一行选中它。找过的文件夹：{where}"
        return Listing(rows, tuple(item.path for item in sessions), note)

    # ── 快要被删掉的：列出、全部保留 ──────────────────────────────────────────────────
    def at_risk(self, client: Caller) -> AtRisk:
        """各个 Agent 快要删掉的会话（见 s11_import.rescue）：Claude Code / Gemini CLI 离删除不到 5 天的，
        Codex 压缩和归档的。只 stat、只读开头。"""
        import s11_import
        self._require_local(client)
        listing = s11_import.at_risk(self.home, self.env)
        rows = tuple((item.session.agent, shorten(printable(item.session.title), 60), printable(item.reason),
                      time.strftime("%Y-%m-%d %H:%M", time.localtime(item.session.modified)))
                     for item in listing.sessions)
        rules = "；".join(f"{s11_import.FORMAT_NAMES.get(p.format, p.format)}：{literal_inline(printable(p.where), 200)}"
                         for p in listing.policies if p.format in (s11_import.CLAUDE, s11_import.GEMINI))
        if not rows:
            note = f"✅ 没有快要被删掉的会话（{rules}）"
        else:
            note = (f"⚠️ {len(rows)} 个会话快要被 Agent 删掉（或已被压缩、归档）：点「🛟 全部保留」把它们导入你的空间"
                    f"（已经保留过的不会再写）。期限：{rules}")
        return AtRisk(rows, tuple(item.session.path for item in listing.sessions), note)

    def keep_all(self, client: Caller, token, view: View, risk: AtRisk,
                 teacher: Optional[str] = None) -> Page:
        """把列出的快要被删掉的会话全部导入这个浏览器自己的空间（同一套配额）；再点一次什么都不写。"""
        def action(space, own):
            import s11_import
            self._require_local(client)
            if not risk.paths:
                raise ExplorerError("没有要保留的会话（先点「🔄 列出本机会话」）")
            target = own.writable()
            target.throttle()
            written = unchanged = 0
            problems, picked = [], None
            for path in risk.paths:
                try:
                    report = s11_import.import_file(path, target.store, max_bytes=target.limits.max_upload_bytes,
                                                    budget=_space_budget(s11_import.WriteBudget, target))
                except (SessionError, OSError) as error:   # 一个坏文件不拖累其余的
                    problems.append(f"{literal_inline(printable(os.path.basename(path)), 80)}：{explain(error)}")
                    continue
                written, unchanged = written + report.written, unchanged + report.unchanged
                picked = picked or report.active_id
            kept = len(risk.paths) - len(problems)
            notice = (f"🛟 保留了 {kept}/{len(risk.paths)} 个快要被删掉的会话：写入 {written} 个节点，"
                      f"{unchanged} 个节点早已保留")
            if problems:
                notice += f"；{len(problems)} 个没能导入：" + "；".join(problems[:3])
            return View(source=MINE, session_id=picked, revision=-1), notice, {"fork_reset": True}

        return self.explorer._act(token, view, teacher, action, check=True, area="import")

    # ── 导入与跟随 ────────────────────────────────────────────────────────────
    def import_row(self, client: Caller, token, view: View, listing: Listing, row,
                   follow: bool = False, teacher: Optional[str] = None) -> tuple[Page, Followed]:
        """导入表格里的第 row 行（行号来自浏览器，路径来自服务器端的对照表）。follow=True 时之后跟随它。"""
        picked: dict = {}

        def action(space, own):
            self._require_local(client)
            path = self._path_of(listing, row)
            if not os.path.isfile(path):
                raise ExplorerError(f"文件已不在了：{literal_inline(printable(path), 200)}（点「🔄 列出本机会话」）")
            state = _signature(path)   # 导入之前记下：导入途中文件又长了，下一次定时检查就会再导入
            new_view, notice, extra = self.explorer._import(own, path)
            picked["state"] = state
            picked["title"] = listing.rows[int(row)][2] if listing.rows else ""
            if follow:
                notice += f"；👀 正在跟随：文件变长后每 {FOLLOW_SECONDS} 秒内自动再导入"
            return new_view, notice, extra

        page = self.explorer._act(token, view, teacher, action, check=True, area="import")
        if "state" in picked and follow:
            return page, Followed(self._path_of(listing, row), picked["state"], picked["title"])
        return page, Followed()

    def tick(self, client: Caller, token, view: View, followed: Followed,
             teacher: Optional[str] = None) -> tuple[Optional[Page], Followed]:
        """跟随的定时检查：文件没变返回 (None, 原样)；变了就再导入，返回新的一页。"""
        if not followed.path or access_problem(client, self.key) is not None:
            return None, followed
        current = _signature(followed.path)
        if current == followed.state:
            return None, followed

        def action(space, own):
            new_view, notice, extra = self.explorer._import(own, followed.path)
            title = shorten(printable(followed.title), 40)
            # notice 里写着 Agent 的新对话落在哪里：更新了原节点，或（读者续写过时）放进了它的子节点
            return new_view, f"🔄 跟随的会话「{title}」变了，已重新导入：{notice.removeprefix('📥 ')}", extra

        page = self.explorer._act(token, view, teacher, action, check=True, area="import")
        return page, dataclasses.replace(followed, state=current)

    # ── 检查 ──────────────────────────────────────────────────────────────────
    def _require_local(self, client: Caller) -> None:
        problem = access_problem(client, self.key)
        if problem is not None:
            raise ExplorerError(problem)

    @staticmethod
    def _path_of(listing: Listing, row) -> str:
        if isinstance(row, bool) or not isinstance(row, int) or not 0 <= row < len(listing.paths):
            raise ExplorerError("请先在「💻 本机 Agent 文件夹」的表格里点一行")
        return listing.paths[row]


def _signature(path: str):
    """文件（和它的子代理文件）现在的样子：与 s11_import.follow 判断“变了没有”用的是同一个。"""
    from s11_import.agents import follow_state
    return follow_state(path)
