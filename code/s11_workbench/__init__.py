"""s11_workbench — 本节的 Gradio 工作台：每个标签页一对模块，逻辑（不 import gradio）与布局（*_tab）名字成对

    app.py ──> demo_tab      ──> demo        8.11：一次点击跑完 存档 · 读档 · 分叉 · 恢复 · 导出
           ├─> story_tab     ──> story       👣 一步一步看磁盘：同一个演示一步一停，每一步之后的会话目录
           ├─> explorer_tab  ──> explorer    🌳 会话树浏览器：列表、树、对话路径、分支图，分叉 / 续写 / 导出 / 回收站
           └─> lab_tab       ──> lab         🧪 实验室：同一个故障，书中原版与本仓库各跑一遍
                    几个标签页共用的，各有一个家：
                                  spaces        课堂：每个浏览器一个私有空间（签名令牌）、限额、老师的只读视图与书架
                                  downloads     唯一的下载目录：本进程私有（0700），旧的导出自动清理
                                  markdown      会话文字进 Markdown / mermaid 之前的转义
                                  upload_guard  ASGI 中间件：上传和过大的请求体在 gradio 读它们之前就被挡住

    每个 *_tab 模块有 LABEL、CSS（只有它自己的样式）和 build(ctx)；app.tabs() 按页面顺序列出它们。
    文字、系统错误、会话树、回收站这些仓库也用的东西不在这里：s11_text、s11_tree、s11_trash。

Key insight: 只有 *_tab 模块（和 app.py）import gradio；测试直接驱动逻辑模块，导入它们不花 gradio 的 ~5 秒。
本文件故意什么都不导入：`import s11_workbench.explorer` 只加载它自己需要的东西。
"""
