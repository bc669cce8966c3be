// explorer_tab.js — 「🌳 会话树浏览器」页面自己的脚本（explorer_tab.py 读进 JS，app.py 把各页的 JS 合在一起交给
// launch(js=...)，页面载入时运行一次）。只有这段代码，从不执行会话里的文字。
//  1. 点分支图里的节点（mermaid 画成 <a href="?session=<id>">）：不跳转，把 '<id>#<序号>' 写进隐藏的点选框、
//     触发它的 input 事件，服务器照样核对令牌和 ID。Enter 键激活链接时浏览器也发 click，同样拦下；
//     按着 Ctrl / ⌘ / Shift / 中键点的（新标签页打开）和复制出去的链接照旧是 ?session= 链接。
//     点完把对话移进视野：读者看着图点了一个节点，它的对话就在眼前（以前在上面 1,600 px 处）。
//     （?session= 链接一打开就切到本页的那段在 explorer_tab_head.html 里：它得在 <head> 里早早运行。）
//  2. 选了 / 拖进来的文件太大或后缀不对：在 gradio 上传之前拦下（它的弹窗是英文的），交给服务器写一句中文。
//     限额和后缀从隐藏的规则框里读（服务器填的），服务器上的检查（check_upload、UploadGuard）照旧都在。
//  3. 点用户消息上的 ✏️：gradio 把气泡的 Markdown 原文（“**#9** 👤 用户”一行和转义）放进改写框；这里改成读者
//     打的那句纯文字（与服务器的 explorer._edited_text 同一规则；服务器收到没有那一行的文字就原样当作纯文字）。
() => {
  if (window.s11xScript) return;
  window.s11xScript = true;
  let serial = 0;
  const send = (id, text) => {
    const box = document.querySelector(`#${id} textarea, #${id} input`);
    if (!box) return false;
    serial += 1;
    box.value = `${text}#${serial}`;
    box.dispatchEvent(new Event("input", { bubbles: true }));
    return true;
  };
  const mapLink = (target) => {
    const link = target && target.closest ? target.closest("#s11x-map a") : null;
    if (!link) return null;
    const href = link.getAttribute("href") || link.getAttribute("xlink:href") || "";
    const found = /^\?session=([A-Za-z0-9_-]{1,64})$/.exec(href);
    return found ? found[1] : null;
  };
  const pickFromMap = (event) => {
    const id = mapLink(event.target);
    if (!id || !send("s11x-map-pick", id)) return;
    event.preventDefault();
    const chat = document.getElementById("s11x-path");
    if (chat) chat.scrollIntoView({ block: "start", behavior: "smooth" });
  };
  document.addEventListener("click", (event) => {
    if (event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey || event.altKey) return;
    pickFromMap(event);
  }, true);
  document.addEventListener("keydown", (event) => {
    if (event.key !== "Enter" || event.ctrlKey || event.metaKey || event.shiftKey || event.altKey) return;
    pickFromMap(event);
  }, true);
  const rules = () => {
    const box = document.querySelector("#s11x-upload-rules textarea, #s11x-upload-rules input");
    try { return JSON.parse(box ? box.value : ""); } catch (error) { return null; }
  };
  const refusal = (files) => {
    const limits = rules();
    if (!limits || !files) return null;
    for (const file of Array.from(files)) {
      const name = String(file.name || "");
      if (!limits.suffixes.some((suffix) => name.toLowerCase().endsWith(suffix))) {
        return { kind: "type", name: name.slice(0, 255), size: file.size };
      }
      if (file.size > limits.max) return { kind: "size", name: name.slice(0, 255), size: file.size };
    }
    return null;
  };
  const guard = (event, files) => {
    const problem = refusal(files);
    if (!problem || !send("s11x-upload-refused", JSON.stringify(problem))) return false;
    event.stopImmediatePropagation();
    event.preventDefault();
    return true;
  };
  document.addEventListener("change", (event) => {
    const input = event.target;
    if (!(input instanceof HTMLInputElement) || input.type !== "file" || !input.closest("#s11x-upload")) return;
    if (guard(event, input.files)) input.value = "";
  }, true);
  const plainEdit = (text) => {
    const header = /^(?:📍 )?\*\*#\d+\*\*[^\n]*\n+/;
    if (!header.test(text)) return text;
    const body = text.replace(header, "");
    const fence = /^(`{3,}|~{3,})[^\n]*\n([\s\S]*)\n\1\s*$/.exec(body);
    return fence ? fence[2] : body.replace(/\\([!-/:-@[-`{-~])/g, "$1");
  };
  document.addEventListener("focusin", (event) => {
    const box = event.target;
    if (!(box instanceof HTMLTextAreaElement) || !box.closest("#s11x-path") || box.dataset.s11xPlain) return;
    box.dataset.s11xPlain = "1";
    const plain = plainEdit(box.value);
    if (plain === box.value) return;
    box.value = plain;
    box.dispatchEvent(new Event("input", { bubbles: true }));
  }, true);
  document.addEventListener("drop", (event) => {
    if (!event.target || !event.target.closest || !event.target.closest("#s11x-upload")) return;
    guard(event, event.dataTransfer ? event.dataTransfer.files : null);
  }, true);
}
