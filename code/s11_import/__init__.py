"""s11_import — 把真实 Agent 的会话记录（Claude Code / Pi / Codex CLI / Gemini CLI）导入成 8.11 的会话树

    <session>.jsonl ──► lines.py     一行一个 JSON；坏行、空行 → skipped（行号从 1 开始，只留前 200 行，其余计数）；
         │                           两个对象粘在一行 → 都读出来；排版过的 JSON 文档（Gemini 的 .json）整个读
         │          ──► formats.py   按对象的形状认格式（格式表每行一个 sniff，互斥），再把每个对象交给那种格式的
         │                           读取函数（claude.py / pi.py / codex.py / gemini.py）；元数据行 → dropped
         │                           按 uuid / id 建索引（transcript.py），重复的留第一次；内容有界（convert.py）
         ├─ Claude Code 的子代理文件（<session>/subagents/、Workflow 运行、2.0 版放在旁边的 agent-*.jsonl）随主文件一起读
         ▼
    graph.py   修复：缺父节点 → 根（警告）；compact_boundary 接到 logicalParentUuid；环 → 断开（警告）
               接线：先把每条消息接到最近的“留下的”祖先消息，再丢掉 progress / hook / model_change……
               整形：同一次回复的流式分段 → 一条消息；钩子行、并行工具结果造成的“假分叉” → 串成一条线
               活动端：Pi 是最后一个有效条目；Claude Code 是最新的 last-prompt.leafUuid，否则最新的叶子；
                       Codex / Gemini 是重放（含回滚、rewind）结束时的位置
    plan.py    根 → 活动端是一个节点（主干），其余每条分支一个子节点（fork_point = 分叉处）
         ▼
    pipeline.py  SessionNode(id = sha256(格式, 会话文件名, 会话 ID, 分支第一条消息)[:12]) ─► store.save()
                 import_folder：一个 Claude Code 项目文件夹里续接 / 分叉同一段历史的文件读进同一棵树
    report.py    ImportReport：写了哪些节点、跳过了哪几行、为什么（describe() 是中文报告）
    rescue.py    快要被 Agent 删掉的会话（Claude Code / Gemini CLI 的保留期限、Codex 压缩和归档的）：列出、全部保留
    usage.py     每条消息的 token / 工具调用 / 耗时，按节点、按分支加总（compressed.py：Codex 的 .jsonl.zst）
    agents.py    本机的 Agent 文件夹（~/.claude/projects、~/.pi/agent/sessions、~/.codex/sessions、
                 ~/.gemini/tmp/*/chats）里有哪些会话：只读开头、有上限、不跟符号链接；“跟随”一个会话

    真实记录                                   导入后（store.render_tree）
    u1─a1─u2─a2─┬─u3─a3   ← /rewind 之前       标题 [5f0c…] 8 条
                └─u3'─a3' ← 活动端             └── 标题 · 分支 1 [91ab…] 6 条（自第 4 条分叉，+2）

关键洞察：Agent 记录的是“事件流”，会话树要的是“用户做过的选择”——先按 id 还原完整的图
（没有 id 的格式按文件顺序串起来，再重放回滚 / rewind），再把录制产生的假分叉（钩子行、流式分段）拉直，
只有用户亲手造成的分叉才变成 fork。

保证：源文件只读不改；全部解析和规划完成后才写仓库，格式不对 / 太大 / 没有对话时仓库一个字节都不变；
节点按“父先子后”逐个原子保存，导入进程中途被杀只会少写几个完整节点（check() 只可能报告 store 自己的临时文件）；
节点 ID 由来源决定，同一文件再导入一次什么都不写，Agent 追加了对话后再导入只更新变化的节点
（在仓库里续写过的导入节点不会被覆盖，只给出警告）。

有界、线性：每个阶段对行数是线性的（排序的那步 n log n），坏行再多也只留前 SKIPPED_KEPT 条记录；
工具输出超过 TOOL_OUTPUT_LIMIT 字符、其它文本超过 TEXT_LIMIT 字符截断并记下原长（truncated_from）；
图片只留占位（媒体类型 + base64 长度）；不保存思考签名、加密的推理、Pi 的系统提示词快照、Claude 的 toolUseResult；
单个文件上限 DEFAULT_MAX_BYTES（200 MB）；分叉复制的消息总数上限 MAX_COPIED_MESSAGES。

加一种格式 = 一个新文件（照 claude.py / pi.py / codex.py / gemini.py 的样子）+ formats.FORMATS 里的一行。

不做：Codex 的分叉文件和子代理线程（session_meta 里的 forked_from_id / parent_thread_id）、Gemini 的子代理文件
不挂到父会话下（各自一棵树，来源里记着 forked_from / parent_thread；rollout_reference / fork_reference 指着的文件
会读进来）；Claude Code 的 queue-operation（工作中插入的输入）不当消息；
活动端移动到另一条旧分支后，上一次导入时那条分支的旧节点保留不动（警告里会点名）。
本包不打印、不读命令行参数（命令行是 s11_cli 的 import / agents 子命令）；只依赖仓库和它下面的模块
（s11_session、s11_format、s11_text）。包里的引用只朝下、没有环，自上而下是：
rescue；agents；pipeline；tree_jsonl（本项目自己的会话树 JSONL：原样复原，不走格式表）；plan、lines；report；formats；claude、pi、codex、gemini、graph；transcript；convert。
"""

from .agents import (
    AGENT_FOLDERS,
    AgentListing,
    AgentSession,
    FollowState,
    agent_roots,
    follow,
    import_agent_session,
    list_agent_sessions,
    list_folder_sessions,
)
from .convert import TEXT_LIMIT, TOOL_OUTPUT_LIMIT
from .formats import CLAUDE, CODEX, FORMAT_NAMES, GEMINI, PI
from .lines import DEFAULT_MAX_BYTES
from .pipeline import (
    EXAMPLES_DIR,
    NO_BUDGET,
    WriteBudget,
    find_transcripts,
    import_file,
    import_folder,
    list_examples,
)
from .plan import MAX_COPIED_MESSAGES
from .report import (
    CompanionFile,
    FolderReport,
    ImportReport,
    NoConversation,
    TooManyBranches,
    TranscriptTooLarge,
    UnsupportedFormat,
)
from .rescue import AtRisk, KeepSummary, RiskListing, at_risk, keep
from .transcript import SKIPPED_KEPT

__all__ = ["import_file", "WriteBudget", "NO_BUDGET", "import_folder", "find_transcripts", "list_examples", "ImportReport", "FolderReport",
           "UnsupportedFormat", "NoConversation", "TranscriptTooLarge", "CompanionFile", "TooManyBranches",
           "EXAMPLES_DIR", "DEFAULT_MAX_BYTES", "TOOL_OUTPUT_LIMIT", "TEXT_LIMIT", "SKIPPED_KEPT",
           "MAX_COPIED_MESSAGES", "FORMAT_NAMES", "CLAUDE", "PI", "CODEX", "GEMINI",
           "AGENT_FOLDERS", "AgentSession", "AgentListing", "FollowState", "agent_roots", "list_agent_sessions",
           "list_folder_sessions", "import_agent_session", "follow", "at_risk", "keep", "AtRisk", "RiskListing",
           "KeepSummary"]
