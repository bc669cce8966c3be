// demo_tab.js — 8.11 页的两个下载按钮可不可点只看状态行（✅ 开头 = 两个文件都在）：这一步只在浏览器里算，
// 不回服务器——服务器每处理一个带属性的按钮更新，要在事件循环里新建一个组件（每个约 6 ms），全班同时点时
// 别的页面都在等。看状态行而不是把两个下载按钮当输入：按钮作输入时 gradio 每次都要把文件再复制进缓存。
(status) => {
  const ready = String(status || "").startsWith("✅");
  return [{ __type__: "update", interactive: ready }, { __type__: "update", interactive: ready }];
}
