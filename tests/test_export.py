"""Export: the chapter's Markdown layout, hostile text kept inert, blocks rendered, a safe offline page."""

import copy
import doctest
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

import s11_export
from s11_export import render_html, render_markdown

try:
    from markdown_it import MarkdownIt
except ImportError:   # gradio brings markdown-it-py; without it the parser-based checks are skipped
    MarkdownIt = None

needs_commonmark = pytest.mark.skipif(MarkdownIt is None, reason="markdown-it-py not installed: no CommonMark parser")
SAMPLES = Path(__file__).resolve().parents[1].parent / "shared" / "samples"   # ../shared/samples from the repo

# ── the chapter's demo, branch B (5 inherited messages + 4 of its own) ──────────────────────

MAIN_MESSAGES = [
    {"role": "system", "content": "你是一名资深 Python 后端工程师，负责诊断并修复 Web 服务内存泄漏。"},
    {"role": "user", "content": "服务连续运行 3 天后，内存占用从 200MB 一路涨到 3GB，帮我定位根因。"},
    {"role": "assistant", "content": "已初步检查日志：怀疑全局缓存未清理 + 长连接未释放，先深入阅读代码确认。"},
    {"role": "user", "content": "我怀疑是 event_listener 注册表无限增长，帮忙重点排查。"},
    {"role": "assistant", "content": "已 grep 全局注册表，定位到 cache_store 与 ws_pool 两处高度可疑的点。"},
]
BRANCH_B_MESSAGES = MAIN_MESSAGES + [
    {"role": "assistant", "content": "方案 B：改用 WeakValueDictionary 弱引用缓存，让 GC 自动回收。"},
    {"role": "user", "content": "先别改代码，我要先对比 A/B 两套方案的压测数据再拍板。"},
    {"role": "user", "content": "压测完成：方案 B 峰值内存更低、吞吐更稳，决定采用方案 B。"},
    {"role": "assistant", "content": "✅ 已按弱引用方案完成重构，内存曲线回归平稳，问题闭环。"},
]
ROOT = {"session_id": "5d38f60f4c00", "title": "修复登录服务内存泄漏", "parent_id": None,
        "messages": MAIN_MESSAGES, "created_at": "2026-08-25 18:46:40", "fork_point": None}
BRANCH_B = {"session_id": "0994dd416b46", "title": "修复登录服务内存泄漏 · 分支", "parent_id": "5d38f60f4c00",
            "messages": BRANCH_B_MESSAGES, "created_at": "2026-08-25 18:46:40", "fork_point": 5}
BRANCH_B_LINEAGE = [
    {"session_id": "5d38f60f4c00", "title": "修复登录服务内存泄漏", "message_count": 5, "fork_point": None, "parent_id": None},
    {"session_id": "0994dd416b46", "title": "修复登录服务内存泄漏 · 分支", "message_count": 9, "fork_point": 5,
     "parent_id": "5d38f60f4c00"},
]
CHAPTER_ICONS = {"system": "🧠", "user": "👤", "assistant": "🤖"}


def chapter_export_lines(session):
    """The chapter's export_markdown, line for line (written out here, not imported)."""
    lines = [f"# 🗂️ 会话导出：{session['title']}", "",
             f"- **会话 ID**：`{session['session_id']}`",
             f"- **父分支**：`{session['parent_id'] or '无（根会话）'}`",
             f"- **创建时间**：{session['created_at']}",
             f"- **消息条数**：{len(session['messages'])}", "", "---", ""]
    for i, msg in enumerate(session["messages"], 1):
        role = msg.get("role", "unknown")
        lines += [f"### {i}. {CHAPTER_ICONS.get(role, '📄')} `{role}`", "", str(msg.get("content", "")), ""]
    return lines


def is_ordered_subsequence(wanted, lines):
    remaining = iter(lines)
    return all(any(line == want for line in remaining) for want in wanted)


def commonmark_headings(markdown):
    tokens = MarkdownIt("commonmark").parse(markdown)
    return [(token.tag, tokens[index + 1].content) for index, token in enumerate(tokens) if token.type == "heading_open"]


def commonmark_raw_html(markdown):
    tokens = MarkdownIt("commonmark").parse(markdown)
    children = [child for token in tokens for child in token.children or []]
    return [token.content for token in tokens + children if token.type in ("html_block", "html_inline")]


def expected_headings(session):
    roles = [message["role"] for message in session["messages"]]
    return [("h1", f"🗂️ 会话导出：{session['title']}")] + [
        ("h3", f"{number}. {s11_export.ROLE_ICONS.get(role, '📄')} `{role}`") for number, role in enumerate(roles, 1)]


# ── Markdown: the chapter's layout ──────────────────────────────────────────────────────────


def test_a_plain_root_session_renders_byte_identical_to_the_chapter():
    assert render_markdown(ROOT) == "\n".join(chapter_export_lines(ROOT))


def test_branch_b_keeps_every_chapter_line_in_the_chapters_order():
    lines = render_markdown(BRANCH_B, BRANCH_B_LINEAGE).split("\n")
    assert is_ordered_subsequence(chapter_export_lines(BRANCH_B), lines)


def test_the_subsequence_check_can_fail():
    lines = render_markdown(BRANCH_B, BRANCH_B_LINEAGE).split("\n")
    assert not is_ordered_subsequence(list(reversed(chapter_export_lines(BRANCH_B))), lines)


def test_a_fork_shows_its_branch_path_and_fork_point_in_the_header():
    lines = render_markdown(BRANCH_B, BRANCH_B_LINEAGE).split("\n")
    header = lines[:lines.index("---")]
    path_line = next(line for line in header if line.startswith("- **分支路径**："))
    assert path_line.index("5d38f60f4c00") < path_line.index("0994dd416b46")
    assert "- **分叉点**：第 5 条消息（前 5 条继承自父分支，其后 4 条为本分支新增）" in header


def test_a_fork_marks_where_its_own_messages_begin():
    markdown = render_markdown(BRANCH_B, BRANCH_B_LINEAGE)
    divider = markdown.index("> 🌿 以上 5 条继承自父分支")
    assert markdown.index("### 5. ") < divider < markdown.index("### 6. ")


@pytest.mark.parametrize("lineage", [None, []])
def test_without_lineage_only_this_session_is_shown(lineage):
    markdown = render_markdown(BRANCH_B, lineage)
    assert "分支路径" not in markdown and "- **分叉点**：第 5 条消息" in markdown
    page = render_html(BRANCH_B, lineage)
    crumbs = re.search(r'<nav class="breadcrumb" aria-label="分支路径"><ol>(.*?)</ol></nav>', page).group(1)
    assert crumbs.count("<li") == 1 and 'aria-current="page"' in crumbs


@needs_commonmark
def test_header_labels_render_bold_with_the_full_width_colon_outside():
    secret_session = dict(BRANCH_B, title="联系 ops@example.com")
    rendered = MarkdownIt("commonmark").render(render_markdown(secret_session, BRANCH_B_LINEAGE))
    for label in ["会话 ID", "父分支", "创建时间", "消息条数", "分支路径", "分叉点", "脱敏"]:
        assert f"<strong>{label}</strong>：" in rendered


# ── hostile text stays inert and in place ───────────────────────────────────────────────────

HOSTILE = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "看代码：\n```python\nprint('unclosed')",
    "### 99. fake\n伪造的标题",
    "第一行\n---",
    "第一行\n=",
    "<pre>没有闭合",
    "<!-- 没有闭合的注释",
    "- 列表\n  ```\n  缩进的围栏\n```",
    "   ```\n缩进三格的围栏没有闭合",
    "```\n缩进四格的不是结束围栏\n    ```",
    "> ### 引用里的标题",
    "~~~\n波浪线围栏没有闭合",
    "`````反引号很长",
    "[点我](javascript:alert(1))",
    "回车\r### 99. fake",
]


def hostile_session():
    messages = []
    for text in HOSTILE:
        messages += [{"role": "user", "content": text}, {"role": "assistant", "content": "下一条正常消息"}]
    return {"session_id": "badbadbad000", "title": "恶意内容", "parent_id": None, "messages": messages,
            "created_at": "2026-08-25 18:46:40", "fork_point": None}


def test_hostile_markdown_text_appears_verbatim_between_its_own_heading_and_the_next():
    markdown = render_markdown(hostile_session(), redact=False)
    for number, text in enumerate(HOSTILE, 1):
        own, following = markdown.index(f"### {2 * number - 1}. "), markdown.index(f"### {2 * number}. ")
        assert own < markdown.index(text, own) < following


@needs_commonmark
def test_hostile_markdown_cannot_add_swallow_or_fake_headings():
    session = hostile_session()
    assert commonmark_headings(render_markdown(session)) == expected_headings(session)


@needs_commonmark
def test_hostile_markdown_leaves_no_raw_html_for_a_renderer():
    markdown = render_markdown(hostile_session())
    assert commonmark_raw_html(markdown) == []
    rendered = MarkdownIt("commonmark").render(markdown)
    assert not re.search(r"<(script|img)\b", rendered) and "javascript:" not in re.findall(r'href="([^"]*)"', rendered)


def test_a_script_url_link_is_fenced_rather_than_left_to_the_renderers_judgement():
    markdown = render_markdown(hostile_session(), redact=False)
    assert "\n```\n[点我](javascript:alert(1))\n```\n" in markdown


def test_a_closed_code_fence_stays_markdown_instead_of_being_fenced_again():
    text = "改成这样：\n```python\ncache = WeakValueDictionary()\n```"
    markdown = render_markdown({"session_id": "s", "title": "t", "messages": [{"role": "assistant", "content": text}]})
    assert f"`\n\n{text}\n" in markdown and "````" not in markdown


def test_the_fence_around_risky_text_is_longer_than_any_backtick_run_inside():
    markdown = render_markdown({"session_id": "s", "title": "t", "messages": [{"role": "user", "content": "``````\n### x"}]})
    assert "\n```````\n``````\n### x\n```````\n" in markdown


def test_titles_ids_and_roles_cannot_break_their_line():
    session = {"session_id": "a`b", "title": "标题\n### 2. 👤 `user`", "created_at": "<img src=x>",
               "messages": [{"role": "us`er\n# h", "content": "正文"}]}
    lines = render_markdown(session).split("\n")
    assert lines[0] == "# 🗂️ 会话导出：标题 \\#\\#\\# 2. 👤 \\`user\\`"
    assert lines[2] == "- **会话 ID**：``a`b``" and lines[4] == "- **创建时间**：\\<img src=x\\>"
    assert "### 1. 📄 ``us`er # h``" in lines


# ── content blocks from real Claude Code and Pi sessions ────────────────────────────────────


def sample_messages(file_name):
    path = SAMPLES / file_name
    if not path.exists():
        pytest.skip(f"sample {path} is not present")
    messages = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue   # the Pi demo file ends with a torn line on purpose
        if isinstance(entry, dict) and isinstance(entry.get("message"), dict) and "role" in entry["message"]:
            messages.append(entry["message"])
    return messages


def as_session(messages):
    return {"session_id": "sample", "title": "样例", "parent_id": None, "messages": messages, "created_at": ""}


SAMPLE_FILES = ["claude_real_rewind_branch_03eb5929.jsonl", "claude_edge_cases_malformed_lines.jsonl",
                "claude_dag_cross_session_fork.jsonl", "pi_v1_real_large_session_prefix32.jsonl",
                "pi_v3_branching_compaction_unknown_entry.jsonl", "pi_v3_demo_branch_label_torn_tail.jsonl"]


def test_pi_thinking_text_and_tool_calls_render_readably():
    assistant = next(m for m in sample_messages("pi_v3_demo_branch_label_torn_tail.jsonl")
                     if isinstance(m["content"], list) and any(b.get("type") == "thinking" for b in m["content"]))
    markdown = render_markdown(as_session([assistant]))
    assert "> 💭 **思考**\n>\n> 需要先运行测试。" in markdown
    assert "我先检查测试结果。" in markdown
    assert '**🔧 调用工具** `bash`\n\n```json\n{\n  "command": "npm test"\n}\n```' in markdown
    page = render_html(as_session([assistant]))
    assert 'class="thinking"' in page and "需要先运行测试。" in page and "&quot;npm run build&quot;" in page


def test_pi_tool_results_render_as_fenced_output_with_the_tool_name():
    result = next(m for m in sample_messages("pi_v3_demo_branch_label_torn_tail.jsonl") if m["role"] == "toolResult")
    output = result["content"][0]["text"]
    markdown = render_markdown(as_session([result]))
    assert f"**📤 工具结果** `bash`\n\n```\n{output}\n```" in markdown


def test_claude_tool_use_and_its_result_are_paired_by_tool_name():
    messages = sample_messages("claude_real_rewind_branch_03eb5929.jsonl")
    call_index = next(i for i, m in enumerate(messages)
                      if isinstance(m["content"], list) and m["content"] and m["content"][0].get("type") == "tool_use")
    call, result = messages[call_index]["content"][0], messages[call_index + 1]["content"][0]
    markdown = render_markdown(as_session(messages[call_index:call_index + 2]))
    assert f"**🔧 调用工具** `{call['name']}`" in markdown
    assert json.dumps(call["input"], ensure_ascii=False, indent=2) in markdown
    assert f"**📤 工具结果** `{call['name']}`" in markdown and result["content"] in markdown


def test_claude_error_results_are_flagged():
    messages = sample_messages("claude_edge_cases_malformed_lines.jsonl")
    failed = next(m for m in messages if isinstance(m["content"], list)
                  and any(isinstance(b, dict) and b.get("is_error") for b in m["content"]))
    assert "❌ 出错" in render_markdown(as_session([failed]))
    assert 'class="tool-output error"' in render_html(as_session([failed]))


def test_claude_thinking_shows_its_text_but_not_its_signature():
    thinking = next(b for m in sample_messages("claude_real_rewind_branch_03eb5929.jsonl") if isinstance(m["content"], list)
                    for b in m["content"] if b.get("type") == "thinking")
    for output in (render_markdown(as_session([{"role": "assistant", "content": [thinking]}])),
                   render_html(as_session([{"role": "assistant", "content": [thinking]}]))):
        assert thinking["thinking"][:60] in output.replace("&#x27;", "'") and thinking["signature"] not in output


@pytest.mark.parametrize("file_name", SAMPLE_FILES)
def test_every_sample_renders_without_python_reprs(file_name):
    session = as_session(sample_messages(file_name))
    for output in (render_markdown(session), render_html(session)):
        assert "{'type'" not in output and "'type':" not in output


@needs_commonmark
@pytest.mark.parametrize("file_name", SAMPLE_FILES)
def test_every_sample_keeps_exactly_one_heading_per_message(file_name):
    session = as_session(sample_messages(file_name))
    markdown = render_markdown(session)
    assert commonmark_headings(markdown) == expected_headings(session)
    assert commonmark_raw_html(markdown) == []


def test_a_claude_tool_result_with_a_list_of_blocks_is_flattened_into_one_output():
    message = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_9", "content": [
        {"type": "text", "text": "第一段输出"}, {"type": "image", "source": {"media_type": "image/jpeg", "data": "/9j/"}}]}]}
    markdown = render_markdown(as_session([message]))
    assert "**📤 工具结果** `toolu_9`\n\n```\n第一段输出\n图片（image/jpeg，未随导出保存）\n```" in markdown


def test_images_and_unknown_blocks_get_a_placeholder_and_pretty_json():
    message = {"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
        {"type": "future_block", "payload": {"键": [1, 2]}}]}
    markdown = render_markdown(as_session([message]))
    assert "🖼️ 图片（image/png，未随导出保存）" in markdown and "iVBORw0KGgo" not in markdown
    assert '**📦 未知内容块** `future_block`\n\n```json\n{\n  "type": "future_block",\n  "payload": {\n    "键": [' in markdown


# ── redaction ───────────────────────────────────────────────────────────────────────────────

KEY = "sk-" + "proj-" + "Xy7Qm2Lp9Rt4Vn8Kc3Hs6Jd1"   # fake; glued so secret scanners stay quiet


def secret_session():
    return {"session_id": "5ec7e7000001", "title": f"排查 {KEY} 泄漏", "parent_id": None, "created_at": "2026-08-25 18:46:40",
            "messages": [{"role": "user", "content": f"key 是 {KEY}，发到 ops@example.com"},
                         {"role": "assistant", "content": [{"type": "toolCall", "id": "c1", "name": "bash",
                                                            "arguments": {"command": f"export OPENAI_API_KEY={KEY}"}}]}]}


def test_redaction_masks_title_and_messages_and_counts_each_kind_in_the_header():
    session = secret_session()
    markdown, page = render_markdown(session), render_html(session)
    assert KEY not in markdown and "ops@example.com" not in markdown
    assert KEY not in page and "ops@example.com" not in page
    assert "- **脱敏**：API密钥 ×3、邮箱 ×1" in markdown.split("\n")   # title, message, tool argument
    assert "<dt>脱敏</dt><dd>API密钥 ×3、邮箱 ×1</dd>" in page


def test_redact_false_keeps_the_original_text_verbatim():
    session = secret_session()
    markdown, page = render_markdown(session, redact=False), render_html(session, redact=False)
    assert f"# 🗂️ 会话导出：排查 {KEY} 泄漏" in markdown and f"key 是 {KEY}，发到 ops@example.com" in markdown
    assert f"export OPENAI_API_KEY={KEY}" in markdown and "脱敏" not in markdown
    assert f"key 是 {KEY}，发到 ops@example.com" in page and "已脱敏" not in page


@pytest.mark.parametrize("redact", [True, False])
def test_rendering_never_mutates_the_session_or_the_lineage(redact):
    session, lineage = secret_session(), copy.deepcopy(BRANCH_B_LINEAGE)
    session_before, lineage_before = copy.deepcopy(session), copy.deepcopy(lineage)
    render_markdown(session, lineage, redact=redact)
    render_html(session, lineage, redact=redact)
    assert session == session_before and lineage == lineage_before


# ── HTML: one standalone, offline, inert page ───────────────────────────────────────────────


class PageAudit(HTMLParser):
    """Collects tags, attributes and the text inside each <section>, checking sections balance."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags, self.attributes, self.section_texts, self.depth = [], [], [], 0

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attributes += [(tag, name, value or "") for name, value in attrs]
        if tag == "section":
            assert self.depth == 0, "sections must not nest"
            self.depth, self.section_texts = 1, [*self.section_texts, ""]

    def handle_endtag(self, tag):
        if tag == "section":
            assert self.depth == 1, "</section> without <section>"
            self.depth = 0

    def handle_data(self, data):
        if self.depth:
            self.section_texts[-1] += data


def audit(page):
    parser = PageAudit()
    parser.feed(page)
    parser.close()
    assert parser.depth == 0, "unclosed <section>"
    return parser


def test_page_is_a_standalone_offline_document():
    page = render_html(BRANCH_B, BRANCH_B_LINEAGE)
    assert page.startswith("<!doctype html>") and '<meta charset="utf-8">' in page and '<meta name="viewport"' in page
    assert ('<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
            "style-src 'unsafe-inline'; img-src data:\">") in page
    assert "color-scheme: light dark" in page and "@media (prefers-color-scheme: dark)" in page
    assert '"PingFang SC"' in page and '"Noto Sans CJK SC"' in page
    for outside_world in ("http:", "https:", "//", "url(", "@import", "<script", "<link"):
        assert outside_world not in page


def test_page_has_breadcrumb_definition_list_and_one_section_per_message():
    page = render_html(BRANCH_B, BRANCH_B_LINEAGE)
    parser = audit(page)
    assert ("nav", "aria-label", "分支路径") in parser.attributes
    assert parser.tags.count("section") == len(BRANCH_B_MESSAGES)
    assert parser.tags.count("dt") == parser.tags.count("dd") >= 5
    crumbs = re.search(r"<ol>(.*?)</ol>", page).group(1)
    assert crumbs.index("修复登录服务内存泄漏 <code>5d38f60f4c00</code>") < crumbs.index('aria-current="page"')
    for message, text in zip(BRANCH_B_MESSAGES, parser.section_texts):
        assert message["content"] in text


def test_page_marks_inherited_messages_and_the_fork_point():
    page = render_html(BRANCH_B, BRANCH_B_LINEAGE)
    classes = re.findall(r'<section class="([^"]*)"', page)
    assert classes == ["message inherited"] * 5 + ["message"] * 4
    assert page.index('id="m5"') < page.index('class="fork"') < page.index('id="m6"')


def test_hostile_text_is_escaped_inert_and_stays_in_its_own_section():
    session = hostile_session()
    page = render_html(session, redact=False)
    parser = audit(page)
    assert parser.tags.count("section") == len(session["messages"])
    assert not {"script", "img", "iframe", "object", "embed", "a", "link", "form"} & set(parser.tags)
    assert not [attr for attr in parser.attributes if attr[1].startswith("on") or attr[1] in ("src", "href")]
    for number, text in enumerate(HOSTILE):
        # HTML turns a lone \r into \n, so compare the text as the browser will show it.
        assert text.replace("\r", "\n") in parser.section_texts[2 * number].replace("\r", "\n")
    assert "<script" not in page


def test_attribute_values_from_the_session_cannot_break_out():
    session = {"session_id": 'x" onmouseover="alert(1)', "title": "t",
               "messages": [{"role": 'user" onclick="alert(1)', "content": "hi"}]}
    parser = audit(render_html(session))
    assert not [attr for attr in parser.attributes if attr[1].startswith("on")]


def test_a_leading_newline_in_tool_output_survives_the_pre_element():
    message = {"role": "toolResult", "toolName": "bash", "content": [{"type": "text", "text": "\n空行开头"}]}
    parser = audit(render_html(as_session([message])))
    assert "\n\n空行开头" in parser.section_texts[0]   # the first newline after <pre> is dropped by HTML


def test_docstring_examples_hold():
    assert doctest.testmod(s11_export).failed == 0
