// story_tab.js — 「👣 一步一步看磁盘」翻页之后：这一页的开头已经滚出屏幕（手机上按钮在长长一页的底下）时，
// 把分步区的开头滚回屏幕顶上；开头还在屏幕里时什么都不做（宽屏上页面不跳）。
() => {
  const walk = document.querySelector("#s11s-walk");
  if (walk && walk.getBoundingClientRect().top < 0) walk.scrollIntoView({ block: "start" });
}
