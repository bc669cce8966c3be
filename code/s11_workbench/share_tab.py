"""share_tab.py — 「🔗 分享」面板的控件（放在会话树浏览器的动作标签里）；逻辑全在 share.py

    范围：○ 这条路径  ● 它的整棵树  ○ 它的子树        [🔍 检查要遮住的内容]
    另外要遮住的字符串（一行一个）[________]
    ┌ 规则 │ 上下文 │ 位置 │ 编号 ┐   ☐ 揭开：每处一个勾选框，勾上 = 误报，下载时保留原文（只对这一次下载生效）
    [📦 按上面的选择生成下载]   ⬇️ HTML  ⬇️ Markdown  ⬇️ JSONL（可在别处「📥 导入」复原）

Key insight: 面板不存任何东西：每次点击都带着 (令牌, 视图, 老师密钥) 和表格本身进来，由 share.py 重新收集、
重新复核；会话文字只进 Dataframe 的纯文本单元格、勾选框的纯文本标签和转义过的 Markdown，从不进 gr.HTML。
"""

from __future__ import annotations

import gradio as gr

from s11_workbench.share import SCOPE_CHOICES, TABLE_HEADERS, Panel, Share

CSS = """
#s11s-table { contain: inline-size; }
#s11s-unmask .wrap { max-height: 320px; overflow-y: auto; }
#s11s-notice:empty, #s11s-manifest:empty { display: none; }
"""


def outputs_of(panel: Panel, with_files: bool) -> list:
    files = [gr.DownloadButton(value=path, interactive=path is not None) for path in panel.files] if with_files \
        else [gr.DownloadButton(value=None, interactive=False)] * 3
    return [panel.notice, panel.summary, panel.rows, gr.CheckboxGroup(choices=panel.choices, value=panel.unmask),
            panel.manifest, *files]


def build(ctx, view) -> None:
    """在当前位置（浏览器的一个动作标签里）搭好分享面板。view：浏览器的 gr.State(View)。"""
    share = Share(ctx.spaces)
    gr.Markdown("把选中的节点连同它的分支分享出去：**先检查要遮住的内容**，把误报取消勾选、"
                "把规则漏掉的内部名字加进来，再生成下载。选择只对这一次下载生效，默认全部遮住。"
                "JSONL 可以在任何一个工作台的「📥 导入」里上传（或 `s11_cli.py import`），复原同一棵树。")
    scope = gr.Radio(SCOPE_CHOICES, value="tree", label="分享的范围", elem_id="s11s-scope")
    added = gr.Textbox(label="另外要遮住的字符串（一行一个；* 代表一段字母、数字或 _ . -，如 *.corp.example）",
                       lines=2, max_lines=8, max_length=12_000, elem_id="s11s-added")
    review_button = gr.Button("🔍 检查要遮住的内容", elem_id="s11s-review")
    notice = gr.Markdown("", elem_id="s11s-notice")
    summary = gr.Markdown("", elem_id="s11s-summary")
    table = gr.Dataframe(headers=TABLE_HEADERS, datatype="str", value=[], interactive=False, wrap=True,
                         max_height=360, column_widths=["13%", "47%", "22%", "18%"], label="复核表：会遮住的每一处",
                         elem_id="s11s-table")
    unmask = gr.CheckboxGroup([], label="☐ 揭开（勾上 = 这是误报，下载时保留原文；只对这一次下载生效）",
                              elem_id="s11s-unmask")
    build_button = gr.Button("📦 按上面的选择生成下载", variant="primary", elem_id="s11s-build")
    with gr.Row():
        html_file = gr.DownloadButton("⬇️ HTML（一页，离线可看）", value=None, interactive=False, elem_id="s11s-html")
        md_file = gr.DownloadButton("⬇️ Markdown", value=None, interactive=False, elem_id="s11s-md")
        jsonl_file = gr.DownloadButton("⬇️ JSONL（可再导入）", value=None, interactive=False, elem_id="s11s-jsonl")
    manifest = gr.Markdown("", elem_id="s11s-manifest")
    outputs = [notice, summary, table, unmask, manifest, html_file, md_file, jsonl_file]

    def on_review(token, current, secret, chosen, extra):
        return outputs_of(share.review(token, current, chosen, extra, teacher=secret), False)

    def on_download(token, current, secret, chosen, extra, picked):
        return outputs_of(share.download(token, current, chosen, extra, picked, teacher=secret), True)

    review_button.click(on_review, inputs=[ctx.visitor, view, ctx.teacher, scope, added], outputs=outputs,
                        api_name="share_review", concurrency_limit=4)
    build_button.click(on_download, inputs=[ctx.visitor, view, ctx.teacher, scope, added, unmask], outputs=outputs,
                       api_name="share_download", concurrency_limit=4)
