// aria_zh.js — gradio 6 自己写死的英文（读屏软件念的 aria-label、鼠标悬停的 title、上传框里的字、页脚）换成中文。
// app.py 把它和各页的脚本一起交给 launch(js=...)，页面载入时运行一次。我们自己的控件在 Python 里就写了中文 label；
// 这里只管 gradio 不让我们设的那些。只改属性和 gradio 自己的几处文字，从不碰会话内容（.prose、代码、表格、输入框）。
//   1. 属性：WORDS 里逐字相同的英文 -> 中文（aria-label、title、placeholder、alt、aria-roledescription）
//   2. 文字：CHROME 选择器选中的 gradio 外壳元素里，整段逐字相同的英文 -> 中文（上传框、页脚、提示框标题……）
//   3. 对话里每条消息的 aria-label：gradio 写成 "user's message: " + 原始 Markdown（读屏软件会念出 ** 和 \_），
//      换成「用户消息：」+ 去掉标记的纯文字，最长 MESSAGE_CHARS 字
// 工作量有界：一开始扫一遍整页；之后只看 MutationObserver 报告的新节点（各查一次选择器）和改了的那个属性。
() => {
  if (window.s11AriaZh) return;
  window.s11AriaZh = true;
  const WORDS = {
    "Clear": "清空", "Copy": "复制", "copy": "复制", "Copied": "已复制", "Copy message": "复制这条消息",
    "Copy conversation": "复制整段对话", "Edit": "编辑", "Undo": "撤销", "Retry": "重试", "Like": "有用",
    "Dislike": "没用", "Delete": "删除", "Download": "下载", "Share": "分享", "Fullscreen": "全屏",
    "Exit fullscreen mode": "退出全屏", "Exit fullscreen": "退出全屏", "Close": "关闭", "Remove": "移除",
    "chatbot conversation": "对话", "Scroll down": "滚到最新", "Scroll to bottom": "滚到最新",
    "Textbox": "文本框", "Number": "数字", "Dropdown": "下拉框", "Checkbox": "勾选框", "Radio": "单选",
    "Checkbox Group": "勾选组", "Slider": "滑块", "File": "文件", "Code": "代码", "Chatbot": "对话",
    "Dataframe": "表格", "Button": "按钮", "Upload": "上传",
    "File upload": "上传文件", "Click to upload or drop files": "点这里上传，或把文件拖进来",
    "Drop File Here": "把文件拖到这里", "Drop Files Here": "把文件拖到这里", "- or -": "或者",
    "Click to Upload": "点这里选文件", "Uploading...": "正在上传…", "Loading...": "正在加载…",
    "Table actions": "表格操作", "Copy table data": "复制表格", "Open cell menu": "单元格菜单",
    "Sort ascending": "升序", "Sort descending": "降序", "Clear sort": "取消排序", "Search": "搜索",
    "Code input container": "代码", "Fold line": "折叠这几行", "Unfold line": "展开这几行",
    "More tabs": "更多页签", "Gradio footer navigation": "页脚", "Use via API": "通过 API 使用",
    "logo": "标志", "Stop Recording": "停止录制", "flowchart-v2": "流程图", "flowchart": "流程图",
    "Error": "出错了", "Warning": "注意", "Info": "提示", "Success": "完成", "common.complete": "完成",
    "Select all": "全选", "Remove All": "全部移除", "Clear all": "全部清空", "Settings": "设置",
    "processing": "处理中", "Submit": "提交", "Stop": "停止", "Empty value": "空",
  };
  const ATTRIBUTES = ["aria-label", "title", "placeholder", "alt", "aria-roledescription"];
  // gradio 的外壳里放英文字的地方（都不含会话内容）
  const CHROME = "footer, footer *, .sr-only, [data-testid='block-info'], .toast-title, .toast-close, " +
    "button.upload-button, .upload-container .wrap, .upload-container .wrap *, .wrap .or, .progress-text, .meta-text";
  const SESSION_TEXT = ".prose, .md, .message-content, pre, code, textarea, input, .cm-editor, table";
  const MESSAGE = /^(user|bot|assistant)'s message: ([\s\S]*)$/;
  const ROLES = { user: "用户", bot: "助手", assistant: "助手" };
  const MESSAGE_CHARS = 160;

  // Markdown -> 读得出来的纯文字：'**#2** 👤 用户\n\n在 `a\_b` 里 [看](x)' -> '#2 👤 用户 在 a_b 里 看'
  const plain = (markdown) => {
    const text = String(markdown)
      .replace(/```[^\n]*\n?/g, " ")                 // 代码围栏的开头和结尾
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")     // 链接和图片只留文字
      .replace(/<[^>]{0,200}>/g, " ")                // 标签
      .replace(/\\([!-\/:-@\[-`{-~])/g, "$1")      // 转义的 ASCII 标点（\_ \/ \* …）
      .replace(/(\*\*|__|~~|`)/g, "")                // 粗体、删除线、行内代码
      .replace(/^\s{0,3}(#{1,6}\s+|>\s?|[-*+]\s+)/gm, "") // 标题、引用、列表的记号
      .replace(/\s+/g, " ")
      .trim();
    return text.length > MESSAGE_CHARS ? `${text.slice(0, MESSAGE_CHARS)}…` : text;
  };

  const translateAttribute = (element, name) => {
    const value = element.getAttribute(name);
    if (!value) return;
    const found = name === "aria-label" ? MESSAGE.exec(value) : null;
    const wanted = found ? `${ROLES[found[1]]}消息：${plain(found[2]) || "（空）"}` : WORDS[value.trim()];
    if (wanted !== undefined && wanted !== value) element.setAttribute(name, wanted);
  };
  const translateText = (element) => {
    if (element.closest(SESSION_TEXT)) return;
    for (const node of element.childNodes) {
      if (node.nodeType !== Node.TEXT_NODE) continue;
      const wanted = WORDS[node.nodeValue.trim()];
      if (wanted !== undefined) node.nodeValue = node.nodeValue.replace(node.nodeValue.trim(), wanted);
    }
  };
  const selector = ATTRIBUTES.map((name) => `[${name}]`).join(",");
  const visit = (root) => {
    if (!(root instanceof Element)) return;
    for (const element of [root, ...root.querySelectorAll(selector)]) {
      for (const name of ATTRIBUTES) if (element.hasAttribute(name)) translateAttribute(element, name);
    }
    for (const element of [root, ...root.querySelectorAll(CHROME)]) {
      if (element.matches(CHROME)) translateText(element);
    }
  };

  visit(document.body);
  new MutationObserver((records) => {
    for (const record of records) {
      if (record.type === "attributes") translateAttribute(record.target, record.attributeName);
      else if (record.type === "characterData") {
        const parent = record.target.parentElement;
        if (parent && parent.matches(CHROME)) translateText(parent);
      } else for (const node of record.addedNodes) {
        if (node.nodeType === Node.TEXT_NODE && node.parentElement && node.parentElement.matches(CHROME)) {
          translateText(node.parentElement);
        } else visit(node);
      }
    }
  }).observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true,
    attributeFilter: ATTRIBUTES });
}
