// fork_control_tab.js — 分叉控件的页面脚本（fork_control_tab.py 读进 JS；lesson_tab.py 把它交给 app.py，
// 页面载入时运行一次，两页共用）。只有这段代码，从不执行会话里的文字。
// 点了对话（.s11-fork-chat，elem_id 为 <前缀>-path）里的一条消息：服务器把「已选中第 k 条」和按钮上的字写回来，
// 这里把同一页的分叉说明和按钮（<前缀>-picked … <前缀>-fork-buttons）移进视野——读者看着消息，就看得见分叉按钮。
() => {
  if (window.s11ForkScript) return;
  window.s11ForkScript = true;
  const bringControl = (prefix) => {
    const buttons = document.getElementById(`${prefix}-fork-buttons`);
    if (!buttons) return;
    // 手风琴收着时先打开它：说明和按钮就在对话下面
    const accordion = document.querySelector(`#${prefix}-fork-tab > button.label-wrap:not(.open)`);
    if (accordion && buttons.offsetParent === null) accordion.click();
    const show = () => window.requestAnimationFrame(() => buttons.scrollIntoView({ block: "nearest" }));
    show();
    // 服务器写回「已选中第 k 条」之后说明变长、按钮往下挪：再移一次（只看这一次变化，最多等 5 秒）
    const picked = document.getElementById(`${prefix}-picked`);
    if (!picked) return;
    const watch = new MutationObserver(() => { watch.disconnect(); show(); });
    watch.observe(picked, { childList: true, subtree: true, characterData: true });
    window.setTimeout(() => watch.disconnect(), 5000);
  };
  document.addEventListener("click", (event) => {
    if (event.button !== 0 || !event.target || !event.target.closest) return;
    const chat = event.target.closest(".s11-fork-chat");
    if (!chat || !chat.id || !event.target.closest(".message, .message-row")) return;
    if (event.target.closest("button, a, textarea, input, summary")) return;   // 复制、✏️ 改写、折叠块：不是选位置
    bringControl(chat.id.replace(/-path$/, ""));
  }, true);   // 捕获阶段：对话框自己的点击处理不会挡住它
}
