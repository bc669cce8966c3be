// forget_link_secrets.js — 页面载入后把链接里的密钥从地址栏抹掉（app.py 在页面加载事件之后运行它）：
// ?teacher=<教师密钥> 已记在服务器端、?agents=<本机 Agent 文件夹钥匙> 已记进本浏览器，
// 投屏、截图、浏览器历史里都不再带着它们。
() => {
  const url = new URL(window.location.href);
  let changed = false;
  for (const name of ["teacher", "agents"]) {
    if (url.searchParams.has(name)) {
      url.searchParams.delete(name);
      changed = true;
    }
  }
  if (changed) window.history.replaceState(window.history.state, "", url);
}
