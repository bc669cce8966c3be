"""lab.py — 🧪 为什么要这样写：同一个故障，书中原版与本仓库各跑一遍（不 import gradio）

    run_experiment("kill")
        │  tempfile.mkdtemp()  ← 每个实验一个临时文件夹，跑完即删，不碰别的地方
        ├─> 书中原版  s11_book.SessionStore     ──> Outcome(failed=True,  evidence="30 轮里 27 轮读不出来…")
        └─> 本仓库    s11_session.SessionStore  ──> Outcome(failed=False, evidence="30 轮全部完好…")

    EXPERIMENTS = {key: Experiment(标题, 问题, 说明, 源码引用, run)}   一行一个实验，按页面顺序
        kill      写到一半被杀          SIGKILL 落在保存途中：原地写入 vs 临时文件 + os.replace
        conflict  两个窗口同时续写      后保存的覆盖先保存的 vs 修订号冲突检测
        ids       危险的会话 ID         "../outside" 拼进路径 vs 先校验 ID
        versions  升级与迁移            旧文件迁移、新文件拒绝 vs 读到什么写回什么
        redact    导出前脱敏            明文导出 vs 规则表脱敏
        drift     会话 ≠ 代码           默默续跑 vs 恢复前对账

Key insight: 只讲道理，读者记不住；让书中原版真的在眼前坏掉（半截文件、丢掉的一轮、被删的文件），
旁边本仓库的代码挺过同一个故障，再指给他看是哪一个函数做到的——源码用 inspect 现场读取，永远不会过期。

Scope: 只在自己的临时文件夹里读写；"写到一半被杀"需要 os.fork 和 SIGKILL（Linux / macOS），
在一个单线程的子进程里 fork 写入进程（不在多线程的网页服务器里 fork）。

Stopping: 每个写入子进程在自己的进程组里（它 fork 的写入进程也在这一组），记在 _RUNNERS 里。服务器停下时
run_folder.remove() 先调 stop_writers()：整组先 SIGTERM，等 STOP_WAIT_SECONDS，还在的 SIGKILL——
写入者都停了，才删本次启动的临时目录（否则它们会接着往里写，目录删不掉）。服务器被 kill -9 时，
Linux 上子进程随之被杀（PR_SET_PDEATHSIG），写入进程最多再活 KILL_WRITER_SECONDS 秒。
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import inspect
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

import s11_book
import s11_session
from s11_export import fenced
from s11_format import CHUNKED_VERSION, PLAIN_VERSION
from s11_workbench import run_folder

BOOK, OURS = "book", "ours"
STORE_NAMES = {BOOK: "书中原版", OURS: "本仓库"}
STORE_CLASSES = {BOOK: s11_book.SessionStore, OURS: s11_session.SessionStore}
NODE_CLASSES = {BOOK: s11_book.SessionNode, OURS: s11_session.SessionNode}

# 写到一半被杀：1000 条消息 ≈ 1.1 MB 的会话。书中原版每次保存都先把文件截成 0 字节再一块块写进去，
# 文件越大，"磁盘上只有半截"的时间越长；本仓库写的是临时文件，原文件始终完整。
KILL_ROUNDS = 30
KILL_MESSAGES = 1000
KILL_MESSAGE_TEXT = "排查记录：cache_store 与 ws_pool 的引用计数、连接池回收与 GC 日志。" * 12
KILL_PAUSE_SECONDS = 0.005     # 两次保存之间停一下（真实的 Agent 在等模型回复，要等好几秒）
KILL_WRITER_SECONDS = 5.0      # 写入进程最多活这么久：万一没被杀掉也会自己退出
KILL_RUNNER_TIMEOUT = 60.0
TAIL_BYTES = 80
RUNNER_MODULE = "s11_workbench.lab"   # 写入实验的子进程：python -m RUNNER_MODULE kill-rounds …
CODE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # code/：子进程的 PYTHONPATH
PARENT_VARIABLE = "S11_LAB_PARENT"   # 写入子进程的环境里：服务器的 pid（子进程启动途中服务器就没了也认得出）
STOP_WAIT_SECONDS = 2.0        # 停下服务器时：SIGTERM 之后等写入子进程这么久，还在就 SIGKILL


class LabError(RuntimeError):
    """实验本身没能跑完（不是被测的仓库出错）：消息是给读者看的中文。"""


@dataclass(frozen=True)
class Outcome:
    """一个仓库在一个实验里的结果：failed = 这个故障伤到了它（丢数据、坏文件、碰了不该碰的文件）。"""
    failed: bool
    verdict: str                 # 一句话结论，如 "❌ 30 轮里 27 轮文件读不出来"
    evidence: str                # Markdown：字节数、异常原文、丢了什么；会话文字都在代码块里
    facts: Dict[str, Any] = field(default_factory=dict)   # 给测试核对的数字


@dataclass(frozen=True)
class LabResult:
    key: str
    book: Outcome
    ours: Outcome
    elapsed_ms: int


@dataclass(frozen=True)
class Experiment:
    key: str
    title: str
    question: str                # 按钮上方的一句话：这个实验做什么
    explanation: str             # 两三句：本仓库哪个函数造成了差别（反引号里写真实的名字）
    code_refs: Tuple[str, ...]   # "模块.名字"：本仓库里造成差别的函数 / 表，页面上展示它们的源码
    book_refs: Tuple[str, ...]   # 书中原版里对应的函数，放在旁边对照
    run: Callable[[str], Tuple[Outcome, Outcome]]


# ── 小工具：把不可信的文字放进代码块 ──────────────────────────────────────────────────────────
def short_error(exc: BaseException, limit: int = 300) -> str:
    """'CorruptSession: 会话文件已损坏…'：异常类名 + 原文，超过 limit 个字符截断。"""
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= limit else text[:limit] + "…"


def hide_folder(text: str, folder: str) -> str:
    """临时文件夹的绝对路径对读者没有意义：'/tmp/s11_lab_x/sessions/a.json' -> 'sessions/a.json'。"""
    return text.replace(folder + os.sep, "").replace(folder, ".")


def sha256_of(path: str) -> str:
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def folder_listing(root: str) -> str:
    """root 下所有文件及字节数，一行一个：'outside.json  98 字节'；空文件夹写明。"""
    lines = []
    for folder, dirs, files in sorted(os.walk(root)):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(folder, name)
            lines.append(f"{os.path.relpath(path, root)}  {os.path.getsize(path)} 字节")
    return "\n".join(lines) or "（空）"


def whole_characters(data: bytes) -> str:
    """从文件中间截下的字节：去掉开头被切断的半个汉字（UTF-8 续字节 0x80–0xBF），结尾的半个换成 �。"""
    start = 0
    while start < min(len(data), 3) and 0x80 <= data[start] <= 0xBF:
        start += 1
    return data[start:].decode("utf-8", "replace")


def message_lines(messages: List[Dict[str, Any]]) -> str:
    """[{"role": "user", "content": "hi"}] -> '1. user: hi'"""
    return "\n".join(f"{i}. {m.get('role')}: {m.get('content')}" for i, m in enumerate(messages, 1))


# ── 源码：现场读取真实函数，页面永远和代码一致 ───────────────────────────────────────────────────
def resolve(ref: str) -> Any:
    """'s11_session.SessionStore.save' -> 那个函数对象；找不到抛 LookupError。"""
    parts = ref.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            if not hasattr(obj, name):
                raise LookupError(f"找不到 {ref}（{name} 不存在）")
            obj = getattr(obj, name)
        return obj
    raise LookupError(f"找不到 {ref}：模块不存在")


def source_of(ref: str) -> Tuple[str, str]:
    """(标签, 源码)。函数和类用 inspect；MIGRATIONS、RULES 这样的表在模块源码里找它的赋值语句。"""
    obj = resolve(ref)
    if inspect.isfunction(obj) or inspect.isclass(obj) or inspect.ismethod(obj):
        obj = inspect.unwrap(obj)
        lines, start = inspect.getsourcelines(obj)
        where = os.path.basename(inspect.getsourcefile(obj) or "?")
        return f"{where}:{start} · {obj.__qualname__}", textwrap.dedent("".join(lines)).rstrip()
    module_name, name = ref.rsplit(".", 1)
    return _assignment_source(module_name, name, obj)


def _assignment_source(module_name: str, name: str, obj: Any) -> Tuple[str, str]:
    """模块里 `NAME = ...` 的整段源码；表被别的模块导入再导出时，去定义它的 s11_ 模块里找。"""
    candidates = [module_name] + sorted(m for m in sys.modules if m.startswith("s11_") and m != module_name)
    for candidate in candidates:
        module = sys.modules.get(candidate) or importlib.import_module(candidate)
        if getattr(module, name, None) is not obj:
            continue
        source = inspect.getsource(module)
        for node in ast.parse(source).body:
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, ast.AnnAssign) else []
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                where = os.path.basename(inspect.getsourcefile(module) or "?")
                return f"{where}:{node.lineno} · {name}", ast.get_source_segment(source, node) or ""
    raise LookupError(f"找不到 {module_name}.{name} 的定义")


def sources_text(refs: Tuple[str, ...]) -> str:
    """几段源码拼成一块 Python 文本，每段前面一行注释写明文件和行号。"""
    parts = []
    for ref in refs:
        label, code = source_of(ref)
        parts.append(f"# ── {label}\n{code}")
    return "\n\n\n".join(parts)


# ── 实验 1：写到一半被杀 ─────────────────────────────────────────────────────────────────────
def kill_messages(count: int) -> List[Dict[str, Any]]:
    return [{"role": "assistant" if i % 2 else "user", "content": f"第 {i + 1} 条。{KILL_MESSAGE_TEXT}"}
            for i in range(count)]


def run_kill_rounds(kind: str, folder: str, rounds: int, messages: int, seed: int) -> Dict[str, Any]:
    """（在单线程的子进程里运行）fork 一个写入进程，等它完整保存一次后在随机时刻 SIGKILL，再用同一个仓库读档。"""
    os.makedirs(folder, exist_ok=True)
    rng, base = random.Random(seed), kill_messages(messages)
    results = [_kill_one_round(kind, folder, f"kill{n:02d}", base, rng) for n in range(rounds)]
    full = len(json.dumps({"messages": base}, ensure_ascii=False, indent=2).encode("utf-8"))
    return {"kind": kind, "rounds": results, "session_bytes": full}


def _kill_one_round(kind: str, folder: str, session_id: str, base: List[Dict[str, Any]],
                    rng: random.Random) -> Dict[str, Any]:
    read_end, write_end = os.pipe()
    started, parent = time.perf_counter(), os.getpid()
    pid = os.fork()
    if pid == 0:   # 写入进程：被 SIGKILL 之前不会返回
        _die_with_parent(parent)
        os.close(read_end)
        _write_until_killed(kind, folder, session_id, base, write_end)
    os.close(write_end)
    try:
        if os.read(read_end, 1) != b".":   # 第一次保存完成：此刻磁盘上有一份完整的存档
            raise LabError("写入进程没能完成第一次保存")
        first_save = time.perf_counter() - started
        time.sleep(rng.uniform(0, 2 * (first_save + KILL_PAUSE_SECONDS)))   # 可能在保存中途，也可能在两次保存之间
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        completed = 1 + len(_read_all(read_end))
    finally:
        os.close(read_end)
        _reap(pid)
    return _inspect_round(kind, folder, session_id, len(base) + completed - 1, first_save)


def _write_until_killed(kind: str, folder: str, session_id: str, base: List[Dict[str, Any]], pipe: int) -> None:
    """追加一条、保存一次、报一个 '.'，循环到被杀（或到 KILL_WRITER_SECONDS 自己退出）。"""
    try:
        store = STORE_CLASSES[kind](folder)
        node = NODE_CLASSES[kind](session_id=session_id, title="被 kill 的会话", messages=list(base))
        deadline = time.monotonic() + KILL_WRITER_SECONDS
        while time.monotonic() < deadline:
            store.save(node)
            os.write(pipe, b".")
            time.sleep(KILL_PAUSE_SECONDS)
            node.messages.append({"role": "user", "content": f"第 {len(node.messages) + 1} 条。{KILL_MESSAGE_TEXT}"})
    finally:
        os._exit(0)


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    return b"".join(chunks)


def _reap(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


def _inspect_round(kind: str, folder: str, session_id: str, saved: int, first_save: float) -> Dict[str, Any]:
    """用被测仓库自己的 load() 读档：读得出来几条，读不出来时记下异常原文和文件尾巴，然后删掉本轮文件。"""
    path = os.path.join(folder, f"{session_id}.json")
    size = os.path.getsize(path) if os.path.exists(path) else -1
    round_result = {"saved": saved, "size": size, "first_save_ms": round(first_save * 1000, 1),
                    "readable": None, "error": None, "tail": None}
    try:
        node = STORE_CLASSES[kind](folder).load(session_id)
        round_result["readable"] = len(node.messages) if node is not None else 0
    except Exception as exc:   # 原版 json.load 抛什么都算"读不出来"
        round_result["error"] = hide_folder(short_error(exc), folder)
        with open(path, "rb") as handle:
            handle.seek(max(size - TAIL_BYTES, 0))
            round_result["tail"] = whole_characters(handle.read())
    leftovers = [name for name in os.listdir(folder) if name.startswith(f".{session_id}.json.")]
    round_result["temp_files"] = len(leftovers)
    for name in leftovers + [f"{session_id}.json"]:
        if os.path.exists(os.path.join(folder, name)):
            os.remove(os.path.join(folder, name))
    return round_result


def kill_rounds_in_subprocess(folder: str, rounds: int = KILL_ROUNDS, messages: int = KILL_MESSAGES,
                              seed: Optional[int] = None) -> Dict[str, Dict[str, Any]]:
    """两个仓库各起一个单线程子进程同时跑 rounds 轮，返回 {"book": {...}, "ours": {...}}。"""
    if not hasattr(os, "fork"):
        raise LabError("这个实验需要 os.fork 和 SIGKILL（Linux / macOS）；当前系统不支持")
    seed = random.randrange(2 ** 32) if seed is None else seed
    runners = {}
    try:
        for kind in (BOOK, OURS):
            runners[kind] = start_runner([kind, os.path.join(folder, kind), str(rounds), str(messages), str(seed)])
        return {kind: _collect(runner) for kind, runner in runners.items()}
    finally:
        for runner in runners.values():   # 出错返回时另一个也不留着；正常结束的什么都不做
            _stop(runner, STOP_WAIT_SECONDS)
            with _RUNNERS_LOCK:
                _RUNNERS.discard(runner)


# ── 写入子进程：登记在案，服务器停下时 stop_writers() 先结束它们 ──────────────────────────────
_RUNNERS: set = set()          # 正在跑的写入子进程（进程级的资源，不是访客数据）
_RUNNERS_LOCK = threading.Lock()


def start_runner(arguments: List[str]) -> subprocess.Popen:
    """python -m RUNNER_MODULE kill-rounds …：在自己的进程组里（连同它 fork 的写入进程一起停），登记在 _RUNNERS。"""
    with _RUNNERS_LOCK:   # 登记和启动在同一把锁里：stop_writers() 不会漏掉一个刚启动的
        environment = {**runner_environment(), PARENT_VARIABLE: str(os.getpid())}
        runner = subprocess.Popen([sys.executable, "-m", RUNNER_MODULE, "kill-rounds", *arguments], env=environment,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        _RUNNERS.add(runner)
    return runner


def stop_writers(wait: float = STOP_WAIT_SECONDS) -> int:
    """结束所有还在跑的写入子进程（连同它们的写入进程）：先 SIGTERM，等 wait 秒，还在的 SIGKILL。
    返回停了几个。服务器停下时 run_folder.remove() 在删临时目录之前调它。"""
    with _RUNNERS_LOCK:
        runners = [runner for runner in _RUNNERS if runner.poll() is None]
    for runner in runners:
        _signal_group(runner, signal.SIGTERM)
    deadline = time.monotonic() + wait
    for runner in runners:
        _stop(runner, max(0.0, deadline - time.monotonic()))
    return len(runners)


def _stop(runner: subprocess.Popen, wait: float) -> None:
    """整组先 SIGTERM，最多等 wait 秒，还在就整组 SIGKILL。只在子进程还活着（没收尸）时发：那时组号一定还是它的。
    组里它 fork 的写入进程同时收到；子进程先死了的话，写入进程由 PR_SET_PDEATHSIG 跟着结束。"""
    for signum, seconds in ((signal.SIGTERM, wait), (signal.SIGKILL, wait + 1)):
        if runner.poll() is not None:
            return
        _signal_group(runner, signum)
        try:
            runner.wait(timeout=seconds)
            return
        except subprocess.TimeoutExpired:
            continue   # 卡在内核里的进程：不让停服务器卡在这里


def _signal_group(runner: subprocess.Popen, signum: int) -> None:
    try:
        os.killpg(runner.pid, signum)      # start_new_session：进程组号就是子进程的 pid
    except (ProcessLookupError, PermissionError):
        pass


run_folder.before_remove(stop_writers)


def _die_with_parent(parent: int) -> None:
    """Linux：父进程 parent 不在了，本进程就收到 SIGKILL（PR_SET_PDEATHSIG）；设上之前它就已经走了的话现在退出。
    别的系统什么都不做（写入进程最多再活 KILL_WRITER_SECONDS 秒）。"""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)   # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:
        os._exit(1)


def runner_environment() -> Dict[str, str]:
    """子进程的环境：code/ 排在 PYTHONPATH 最前面，`python -m s11_workbench.lab` 才找得到本包和 s11_book 等模块。"""
    inherited = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([CODE_DIR, inherited] if inherited else [CODE_DIR])}


def _collect(runner: subprocess.Popen) -> Dict[str, Any]:
    try:
        out, err = runner.communicate(timeout=KILL_RUNNER_TIMEOUT)
    except subprocess.TimeoutExpired:
        _signal_group(runner, signal.SIGKILL)   # 连同它 fork 的写入进程
        runner.communicate()
        raise LabError(f"写入实验超过 {KILL_RUNNER_TIMEOUT:.0f} 秒还没结束，已终止") from None
    if runner.returncode < 0:
        raise LabError("写入实验的子进程被中止了（服务器正在停下？）")
    if runner.returncode != 0:
        raise LabError(f"写入实验的子进程出错（退出码 {runner.returncode}）：{err.strip()[-300:]}")
    return json.loads(out)


def experiment_kill(folder: str, rounds: int = KILL_ROUNDS, messages: int = KILL_MESSAGES,
                    seed: Optional[int] = None) -> Tuple[Outcome, Outcome]:
    results = kill_rounds_in_subprocess(folder, rounds, messages, seed)
    return _kill_outcome(**results[BOOK]), _kill_outcome(**results[OURS])


def _kill_outcome(kind: str, rounds: List[Dict[str, Any]], session_bytes: int) -> Outcome:
    """一个仓库的 rounds 轮（run_kill_rounds 的输出）-> 结论与证据。"""
    torn = [r for r in rounds if r["error"] is not None]
    lost = [r for r in rounds if r["error"] is None and r["readable"] < r["saved"]]
    temp_rounds = sum(1 for r in rounds if r["temp_files"])
    facts = {"rounds": len(rounds), "torn": len(torn), "lost_turns": len(lost), "temp_file_rounds": temp_rounds,
             "readable_at_least_saved": all(r["error"] is None and r["readable"] >= r["saved"] for r in rounds)}
    failed = bool(torn or lost)
    verdict = (f"❌ {len(rounds)} 轮里 {len(torn)} 轮文件读不出来" if torn else
               f"✅ {len(rounds)} 轮全部读得出来，没有丢掉任何已保存的消息")
    return Outcome(failed, verdict, _kill_evidence(rounds, torn, temp_rounds, session_bytes), facts)


def _kill_evidence(rounds: List[Dict[str, Any]], torn: List[Dict[str, Any]], temp_rounds: int,
                   session_bytes: int) -> str:
    first_save = sorted(r["first_save_ms"] for r in rounds)[len(rounds) // 2]
    marks = " ".join("✗" if r["error"] is not None else "✓" for r in rounds)
    lines = [f"- 轮数：**{len(rounds)}**（每轮一个新会话，完整保存约 {session_bytes / 1e6:.1f} MB，"
             f"第一次保存约 {first_save:.0f} ms）",
             f"- 读不出来：**{len(torn)}** 轮；读得出来：**{len(rounds) - len(torn)}** 轮", "",
             "逐轮结果（✓ 读得出来，✗ 读不出来）：", "", fenced(marks, "text"), ""]
    if torn:
        example = torn[0]
        lines += [f"- 例如第 {rounds.index(example) + 1} 轮：kill 之前已完整保存 {example['saved']} 条消息，"
                  f"kill 之后文件只剩 **{example['size']:,} 字节**，一条都读不出来：",
                  "", fenced(example["error"], "text"), "", "文件最后几十个字节（写到这里就被杀了）：", "",
                  fenced(example["tail"] or "（空文件）", "text")]
    else:
        example = next((r for r in rounds if r["temp_files"]), rounds[0])
        lines += [f"- 每一轮读出的消息都不少于 kill 之前已完整保存的条数。例如第 {rounds.index(example) + 1} 轮："
                  f"kill 之前已保存 {example['saved']} 条，kill 之后文件 {example['size']:,} 字节，"
                  f"读出 **{example['readable']}** 条（大会话的历史在 `.chunks/` 的块里，文件本身只有头、索引和"
                  "最后一段，所以字节数比消息少得多）"]
        if temp_rounds:
            lines.append(f"- 其中 **{temp_rounds}** 轮 kill 正好落在写临时文件的途中：留下一个 `.tmp` 文件"
                         "（只有 kill -9 才会留下它，`check()` 稍后会把它列为残留，可以删除），正式文件完好")
    return "\n".join(lines)


# ── 实验 2：两个窗口同时续写 ──────────────────────────────────────────────────────────────────
CONFLICT_BASE = [{"role": "user", "content": "服务内存一路上涨，帮我定位根因。"},
                 {"role": "assistant", "content": "定位到 cache_store 里的全局缓存只增不删。"}]
TURN_WINDOW_1 = {"role": "user", "content": "窗口 1：先给 cache_store 加 LRU 上限。"}
TURN_WINDOW_2 = {"role": "user", "content": "窗口 2：顺便看看 ws_pool 的长连接。"}


def experiment_conflict(folder: str) -> Tuple[Outcome, Outcome]:
    return _conflict_book(os.path.join(folder, BOOK)), _conflict_ours(os.path.join(folder, OURS))


def _two_windows(store, session_id: str):
    window_1, window_2 = store.load(session_id), store.load(session_id)   # 两个窗口读入同一个会话
    window_1.messages.append(dict(TURN_WINDOW_1))
    window_2.messages.append(dict(TURN_WINDOW_2))
    return window_1, window_2


def _conflict_book(folder: str) -> Outcome:
    store = s11_book.SessionStore(folder)
    session_id = store.create_session("两个窗口", [dict(m) for m in CONFLICT_BASE])
    window_1, window_2 = _two_windows(store, session_id)
    store.save(window_1)
    store.save(window_2)   # 不报错：整个文件被窗口 2 的版本覆盖
    final = store.load(session_id).messages
    lost = [m for m in (TURN_WINDOW_1, TURN_WINDOW_2) if m not in final]
    evidence = ["1. 窗口 1 `save()`：不报错", "2. 窗口 2 `save()`：不报错，整个文件换成窗口 2 的版本", "",
                f"磁盘上最后的会话（{len(final)} 条）：", "", fenced(message_lines(final), "text")]
    if lost:
        evidence += ["", "**悄悄丢掉的一轮：**", "", fenced(message_lines(lost), "text")]
    verdict = f"❌ 两个窗口各追加一轮，文件里只剩 {len(final) - len(CONFLICT_BASE)} 轮，谁也没收到提示"
    return Outcome(bool(lost), verdict, "\n".join(evidence), {"final": len(final), "lost": len(lost)})


def _conflict_ours(folder: str) -> Outcome:
    store = s11_session.SessionStore(folder)
    session_id = store.create_session("两个窗口", [dict(m) for m in CONFLICT_BASE])
    window_1, window_2 = _two_windows(store, session_id)
    store.save(window_1)
    try:
        store.save(window_2)
        error = None
    except s11_session.ConflictError as exc:
        error = exc
        window_2 = store.load(session_id)             # 重新读档：拿到窗口 1 刚存的那一轮
        window_2.messages.append(dict(TURN_WINDOW_2))  # 再追加自己的一轮
        store.save(window_2)
    final = store.load(session_id).messages
    lost = [m for m in (TURN_WINDOW_1, TURN_WINDOW_2) if m not in final]
    evidence = ["1. 窗口 1 `save()`：成功（修订号 1 → 2）",
                "2. 窗口 2 `save()`：" + ("被拒绝，磁盘上的文件没动：" if error else "**没有报错**（不应该）"), ""]
    if error:
        evidence += [fenced(short_error(error), "text"), "",
                     "3. 窗口 2 重新 `load()`，再追加自己的一轮，`save()` 成功", ""]
    evidence += [f"磁盘上最后的会话（{len(final)} 条，两轮都在）：" if not lost else f"磁盘上最后的会话（{len(final)} 条）：",
                 "", fenced(message_lines(final), "text")]
    verdict = ("✅ 第二次保存抛出 ConflictError，重新读档后两轮都保住了" if error and not lost
               else "❌ 有一轮丢了")
    return Outcome(bool(lost) or error is None, verdict, "\n".join(evidence),
                   {"final": len(final), "lost": len(lost), "conflict": error is not None})


# ── 实验 3：危险的会话 ID ────────────────────────────────────────────────────────────────────
DANGEROUS_ID = "../outside"
OUTSIDE_FILE = {"session_id": "outside", "title": "隔壁项目的会话：数据库密码轮换",
                "parent_id": None, "messages": [{"role": "user", "content": "这是会话文件夹之外的文件，谁都不该碰它。"}],
                "created_at": "2026-08-25 09:00:00"}


def experiment_ids(folder: str) -> Tuple[Outcome, Outcome]:
    return _ids_run(BOOK, os.path.join(folder, BOOK)), _ids_run(OURS, os.path.join(folder, OURS))


def _ids_sandbox(sandbox: str) -> Tuple[str, str]:
    """sandbox/sessions/ 是仓库目录，sandbox/outside.json 在它外面。"""
    sessions = os.path.join(sandbox, "sessions")
    os.makedirs(sessions)
    outside = os.path.join(sandbox, "outside.json")
    with open(outside, "w", encoding="utf-8") as handle:
        json.dump(OUTSIDE_FILE, handle, ensure_ascii=False, indent=2)
    return sessions, outside


def _try(action: Callable[[], Any]) -> Tuple[Any, Optional[BaseException]]:
    try:
        return action(), None
    except Exception as exc:
        return None, exc


def _ids_run(kind: str, sandbox: str) -> Outcome:
    sessions, outside = _ids_sandbox(sandbox)
    before, digest = folder_listing(sandbox), sha256_of(outside)
    store = STORE_CLASSES[kind](sessions)
    loaded, load_error = _try(lambda: store.load(DANGEROUS_ID))
    deleted, delete_error = _try(lambda: store.delete(DANGEROUS_ID))
    after = folder_listing(sandbox)
    intact = os.path.exists(outside) and sha256_of(outside) == digest
    evidence = ["仓库目录是 `sessions/`，`outside.json` 在它外面。调用前的沙箱：", "", fenced(before, "text"), "",
                f"1. `load({DANGEROUS_ID!r})`：" + _describe_call(loaded, load_error), "",
                f"2. `delete({DANGEROUS_ID!r})`：" + _describe_call(deleted, delete_error), "",
                "调用后的沙箱：", "", fenced(after, "text")]
    touched = load_error is None and loaded is not None
    failed = touched or not intact
    verdict = ("❌ 读到了会话文件夹外的文件，又把它删掉了" if failed and not intact else
               "❌ 读到了会话文件夹外的文件" if failed else "✅ 两次调用都被拒绝，文件夹外的文件一个字节没变")
    return Outcome(failed, verdict, "\n".join(evidence),
                   {"read_outside": touched, "outside_intact": intact,
                    "errors": [type(e).__name__ for e in (load_error, delete_error) if e]})


def _describe_call(result: Any, error: Optional[BaseException]) -> str:
    if error is not None:
        return "拒绝 ——\n\n" + fenced(short_error(error), "text")
    if hasattr(result, "messages"):
        return "读到了会话文件夹**之外**的文件，标题是：\n\n" + fenced(str(result.title), "text")
    return f"返回 `{result!r}`" + ("，**文件被删除了**" if result is True else "")


# ── 实验 4：升级与迁移 ───────────────────────────────────────────────────────────────────────
NEWER_FIELDS = {"attachments": [{"name": "heap.png", "sha256": "9f2c…"}],
                "branch_summary": "方案 B 的压测结论：峰值内存降到 420MB"}


def newer_file(session_id: str) -> Dict[str, Any]:
    """一个"未来版本"的会话文件：版本号比本仓库认识的大 1，多了两个本仓库不认识的字段。"""
    return {"version": s11_session.FORMAT_VERSION + 1, "session_id": session_id, "title": "来自新版本的会话",
            "parent_id": None, "messages": [{"role": "user", "content": "新版本写下的一条消息"}],
            "created_at": "2026-09-01 10:00:00", "revision": 4, **NEWER_FIELDS}


def _write_json(path: str, data: Dict[str, Any]) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(data, handle, ensure_ascii=False, indent=2)


def _keys_of(path: str) -> List[str]:
    with open(path, encoding="utf-8") as handle:
        return list(json.load(handle))


def experiment_versions(folder: str) -> Tuple[Outcome, Outcome]:
    return _versions_book(os.path.join(folder, BOOK)), _versions_ours(os.path.join(folder, OURS))


def _versions_book(folder: str) -> Outcome:
    store = s11_book.SessionStore(folder)
    path = store._path("future")
    _write_json(path, newer_file("future"))
    keys_before, size_before = _keys_of(path), os.path.getsize(path)
    node = store.load("future")                       # 不看版本号，照单全收
    node.messages.append({"role": "assistant", "content": "旧程序续写了一条"})
    store.save(node)                                  # 只写回它认识的 5 个键
    keys_after = _keys_of(path)
    dropped = [key for key in keys_before if key not in keys_after]
    evidence = [f"新版本写的文件（{size_before} 字节）的键：", "", fenced(", ".join(keys_before), "text"), "",
                "原版 `load()` 不看版本号，续写一条后 `save()`，文件变成（"
                f"{os.path.getsize(path)} 字节）：", "", fenced(", ".join(keys_after), "text"), "",
                "**丢掉的字段：**", "", fenced(", ".join(dropped) or "（无）", "text")]
    return Outcome(bool(dropped), f"❌ 读了看不懂的新版本文件，存回时丢掉 {len(dropped)} 个字段",
                   "\n".join(evidence), {"dropped": dropped})


def _versions_ours(folder: str) -> Outcome:
    old_ok, old_lines = _migrate_chapter_file(folder)
    new_ok, new_lines = _refuse_newer_file(folder)
    big_ok, big_lines = _big_file_for_the_book(folder)
    verdict = ("✅ 章节格式的旧文件迁移后照常读写，新版本文件被拒绝且一个字节没变，书中原版从不读到截短的历史"
               if old_ok and new_ok and big_ok else "❌ 迁移、拒绝或大会话没有按预期发生")
    return Outcome(not (old_ok and new_ok and big_ok), verdict,
                   "\n".join(old_lines + [""] + new_lines + [""] + big_lines),
                   {"old_migrated": old_ok, "newer_untouched": new_ok, "big_never_short": big_ok})


def _migrate_chapter_file(folder: str) -> Tuple[bool, List[str]]:
    """书中原版写的文件（没有 version）→ 本仓库读入并存回 → 书中原版还能读。"""
    book = s11_book.SessionStore(folder)
    session_id = book.create_session("章节格式的旧会话", [{"role": "user", "content": "用书里的代码存的"}])
    path = book._path(session_id)
    keys_before = _keys_of(path)
    node = s11_session.SessionStore(folder).load(session_id)   # MIGRATIONS 逐级升级
    node.messages.append({"role": "assistant", "content": "本仓库续写了一条"})
    s11_session.SessionStore(folder).save(node)
    with open(path, encoding="utf-8") as handle:
        saved = json.load(handle)
    reread = s11_book.SessionStore(folder).load(session_id)
    ok = saved.get("version") == PLAIN_VERSION and len(reread.messages) == 2
    return ok, ["**① 章节格式的旧文件**（书中原版写的，没有 version）：", "", fenced(", ".join(keys_before), "text"),
                "", f"本仓库 `load()` 迁移、续写一条、`save()` 后是 version {saved.get('version')}：", "",
                fenced(", ".join(saved), "text"), "",
                f"书中原版再读这个文件：✅ 读得出来，{len(reread.messages)} 条消息（它只取自己认识的键）"]


def _big_file_for_the_book(folder: str) -> Tuple[bool, List[str]]:
    """大会话（version 4：头 + 索引 + 尾部，历史在共享的块里）：书中原版要么读不了，要么跳过，绝不读到一半。"""
    store = s11_session.SessionStore(folder)
    text = "压测日志：cache_store 命中率、ws_pool 连接数、GC 暂停时间。" * 40
    messages = [{"role": "user" if i % 2 else "assistant", "content": f"第 {i + 1} 轮 {text}"} for i in range(60)]
    session_id = store.create_session("很长的排查记录", messages)
    with open(store.path_of(session_id), encoding="utf-8") as handle:
        version = json.loads(handle.readline()).get("version")
    book = s11_book.SessionStore(folder)
    _, book_error = _try(lambda: book.load(session_id))
    listed = [s["session_id"] for s in book.list_sessions()]
    ok = version == CHUNKED_VERSION and book_error is not None and session_id not in listed \
        and len(store.load(session_id).messages) == len(messages)
    return ok, [f"**③ 大会话**（{len(messages)} 条消息，本仓库写成 version {version}：第一行是头，"
                "历史在 `.chunks/` 里按内容命名的块中，分叉和续写只写新的部分）：", "",
                "书中原版 `load()`：\n\n" + (fenced(hide_folder(short_error(book_error), folder), "text")
                                           if book_error else "读出来了（不该发生）"), "",
                f"书中原版 `list_sessions()`：{'跳过了它' if session_id not in listed else '列出了它（不该发生）'}。"
                "它要么读到全部历史（小会话仍是 version 3），要么根本读不了——绝不会悄悄读到截短的历史；"
                f"本仓库 `load()` 拿回全部 {len(messages)} 条。"]


def _refuse_newer_file(folder: str) -> Tuple[bool, List[str]]:
    """更新版本的文件：load() 和 save() 都拒绝，文件逐字节不变。"""
    store = s11_session.SessionStore(folder)
    path = store.path_of("future")
    _write_json(path, newer_file("future"))
    digest, size = sha256_of(path), os.path.getsize(path)
    _, load_error = _try(lambda: store.load("future"))
    stale = s11_session.SessionNode(session_id="future", title="旧程序以为的会话")
    _, save_error = _try(lambda: store.save(stale))
    same = sha256_of(path) == digest
    ok = same and isinstance(load_error, s11_session.UnsupportedVersion) and save_error is not None
    return ok, [f"**② 新版本的文件**（version {s11_session.FORMAT_VERSION + 1}，{size} 字节）：", "",
                "`load()`：\n\n" + (fenced(hide_folder(short_error(load_error), folder), "text") if load_error else "没有拒绝"),
                "", "`save()` 同名会话：\n\n" + (fenced(hide_folder(short_error(save_error), folder), "text")
                                        if save_error else "没有拒绝"), "",
                f"之后文件 {os.path.getsize(path)} 字节，SHA-256 " + ("**与之前完全相同**" if same else "**变了**")]


# ── 实验 5：导出前脱敏 ──────────────────────────────────────────────────────────────────────
SECRETS = {"API密钥": "sk-proj-Ab3dE5fG7hJ9kL1mN3pQ5rS7", "AWS密钥": "AKIAIOSFODNN7EXAMPLE",
           "手机号": "13812345678", "身份证号": "11010519491231002X"}
REDACT_MESSAGES = [
    {"role": "user", "content": f"线上读不到配置，OPENAI_API_KEY={SECRETS['API密钥']}，"
                                f"AWS_ACCESS_KEY_ID={SECRETS['AWS密钥']}，帮我看看 config.py。"},
    {"role": "assistant", "content": "两个变量都读到了，问题出在 config.py 把空字符串当成了缺省值。"},
    {"role": "user", "content": f"顺便登记一下报障用户：手机 {SECRETS['手机号']}，身份证 {SECRETS['身份证号']}。"},
]


def experiment_redact(folder: str) -> Tuple[Outcome, Outcome]:
    outcomes = []
    for kind in (BOOK, OURS):
        store = STORE_CLASSES[kind](os.path.join(folder, kind))
        session_id = store.create_session("排查配置读取失败", [dict(m) for m in REDACT_MESSAGES])
        outcomes.append(_redact_outcome(kind, store.export_markdown(session_id)))
    return outcomes[0], outcomes[1]


def _redact_outcome(kind: str, export: str) -> Outcome:
    leaked = [label for label, secret in SECRETS.items() if secret in export]
    counts = _marker_counts(export)
    lines = ["导出的 Markdown 里：", ""]
    lines += [f"- {label}：" + ("**明文**" if label in leaked else "已遮住") for label in SECRETS]
    if kind == OURS:
        lines.append("- 脱敏标记：" + ("、".join(f"`[已脱敏:{label}]` ×{n}" for label, n in counts.items()) or "无"))
    lines += ["", "导出全文：", "", fenced(export, "markdown")]
    verdict = (f"❌ {len(leaked)} 个秘密原样出现在导出里" if leaked else
               f"✅ {sum(counts.values())} 处秘密换成了 [已脱敏:…] 标记")
    return Outcome(bool(leaked), verdict, "\n".join(lines), {"leaked": leaked, "markers": counts})


def _marker_counts(text: str) -> Dict[str, int]:
    """'[已脱敏:手机号] … [已脱敏:手机号]' -> {'手机号': 2}"""
    counts: Dict[str, int] = {}
    for label in SECRETS:
        if text.count(f"[已脱敏:{label}]"):
            counts[label] = text.count(f"[已脱敏:{label}]")
    return counts


# ── 实验 6：会话 ≠ 代码 ──────────────────────────────────────────────────────────────────────
CODE_BEFORE = "cache_store = {}   # 全局缓存：只增不删\n"
CODE_AFTER = "from weakref import WeakValueDictionary\n\ncache_store = WeakValueDictionary()   # 方案 B\n"


def experiment_drift(folder: str) -> Tuple[Outcome, Outcome]:
    return _drift_book(os.path.join(folder, BOOK)), _drift_ours(os.path.join(folder, OURS))


def _drift_book(folder: str) -> Outcome:
    """同一个故事用书中原版跑：分支 A 存档 → 分支 B 改了代码 → 恢复分支 A。"""
    workspace = os.path.join(folder, "workspace")
    os.makedirs(workspace)
    _write_text(os.path.join(workspace, "cache_store.py"), CODE_BEFORE)
    store = s11_book.SessionStore(os.path.join(folder, "sessions"))
    main_id = store.create_session("修复登录服务内存泄漏", [
        {"role": "user", "content": "服务内存一路上涨，帮我定位根因。"},
        {"role": "assistant", "content": "定位到 cache_store.py 里的全局缓存只增不删。"}])
    branch_a = store.fork(main_id, [{"role": "assistant", "content": "方案 A：给 cache_store 加 LRU 上限。"}])
    store.fork(main_id, [{"role": "assistant", "content": "方案 B：改用弱引用缓存。"}])
    _write_text(os.path.join(workspace, "cache_store.py"), CODE_AFTER)       # 分支 B 动手改了代码……
    resumed = store.load(branch_a.session_id)                                # ……再回到分支 A
    keys = _keys_of(store._path(branch_a.session_id))
    evidence = ["分支 A 存档后，分支 B 改写了 `cache_store.py`。现在 `load()` 恢复分支 A：", "",
                f"- 返回 {len(resumed.messages)} 条消息，没有任何提示；最后一条是：", "",
                fenced(str(resumed.messages[-1]["content"]), "text"), "",
                "- 会话文件里只有这些键，没有记录代码状态，想对账也无从对起：", "",
                fenced(", ".join(keys), "text"), "", "- 而 `cache_store.py` 此刻已经是：", "",
                fenced(CODE_AFTER.rstrip(), "python")]
    return Outcome(True, "❌ 代码已经变了，恢复分支 A 时一声不吭", "\n".join(evidence),
                   {"drift": [], "recorded_workspace": "workspace" in keys})


# ── 演示：会话 ≠ 代码，恢复前先对账 ──────────────────────────────────────────────────────────
_DEMO_CACHE_BEFORE = "cache_store = {}   # 全局缓存：只增不删（内存泄漏的元凶）\n"
_DEMO_CACHE_AFTER = ("from weakref import WeakValueDictionary\n\n"
                     "cache_store = WeakValueDictionary()   # 方案 B：弱引用，GC 自动回收\n")


def demo_code_drift(base_dir: str) -> Dict[str, Any]:
    """🎬 主会话对着工作区存档 → 分支 B 重构了 cache_store.py → 恢复分支 A 时先对账。

    Returns {"workspace", "main_id", "branch_a_id", "branch_b_id", "drift", "saved"}: drift lists what
    changed since branch A was saved, e.g. ["文件已修改：cache_store.py", "新增文件：weak_cache_test.py"].
    """
    workspace = os.path.join(base_dir, "workspace")
    os.makedirs(workspace, exist_ok=True)
    _write_text(os.path.join(workspace, "cache_store.py"), _DEMO_CACHE_BEFORE)
    _write_text(os.path.join(workspace, "server.py"), "from cache_store import cache_store\n")
    store = s11_session.SessionStore(os.path.join(base_dir, "sessions"), workspace=workspace)
    main_id = store.create_session("修复登录服务内存泄漏", [
        {"role": "user", "content": "服务内存一路上涨，帮我定位根因。"},
        {"role": "assistant", "content": "定位到 cache_store.py 里的全局缓存只增不删。"}])
    branch_a = store.fork(main_id, [{"role": "assistant", "content": "方案 A：给 cache_store 加 LRU 上限。"}])
    branch_b = store.fork(main_id, [{"role": "assistant", "content": "方案 B：改用弱引用缓存。"}])
    _write_text(os.path.join(workspace, "cache_store.py"), _DEMO_CACHE_AFTER)      # 分支 B 动手改了代码……
    _write_text(os.path.join(workspace, "weak_cache_test.py"), "def test_gc(): ...\n")
    resumed_b = store.load(branch_b.session_id)
    resumed_b.messages.append({"role": "assistant", "content": "✅ 已按弱引用方案重构 cache_store.py。"})
    store.save(resumed_b)
    node, changes = store.resume(branch_a.session_id)                       # ……再回到分支 A
    return {"workspace": workspace, "main_id": main_id, "branch_a_id": branch_a.session_id,
            "branch_b_id": branch_b.session_id, "drift": changes, "saved": node.workspace}


def _drift_ours(folder: str) -> Outcome:
    result = demo_code_drift(folder)
    saved = result["saved"] or {}
    drift = [hide_folder(line, folder) for line in result["drift"]]
    evidence = ["同一个故事：分支 A 存档 → 分支 B 改写 `cache_store.py`、新增测试文件 → 恢复分支 A。", "",
                f"- 分支 A 存档时记下的代码状态：{saved.get('kind', '无')} 快照，文件 "
                f"{', '.join(sorted(saved.get('files', {}))) or '（无）'}",
                "- `resume()` 恢复前先把快照和工作区对比，报告：", "",
                fenced("\n".join(drift) or "（没有差异）", "text")]
    verdict = f"✅ 恢复前报告了 {len(drift)} 处代码变化" if drift else "❌ 没有发现代码变化"
    return Outcome(not drift, verdict, "\n".join(evidence), {"drift": drift})


def _write_text(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


# ── 实验表：一行一个，页面按这个顺序排 ───────────────────────────────────────────────────────────
EXPERIMENTS: Dict[str, Experiment] = {e.key: e for e in [
    Experiment(
        "kill", "💥 写到一半被杀",
        f"一个写入进程不停地给 {KILL_MESSAGES} 条消息（约 1 MB）的会话追加一条、保存一次；"
        f"在它完整保存过一次之后的随机时刻 `kill -9`，然后读档。每个仓库 {KILL_ROUNDS} 轮，轮数和结果每次略有不同。",
        "书中原版的 `save()` 用 `open(path, \"w\")` 先把文件截成 0 字节再写，被杀时磁盘上只剩半截。"
        "本仓库的 `PendingWrite` 把全部内容写进同目录的临时文件并 fsync，`commit()` 再用 `os.replace` "
        "一步换上：任何时刻被杀，文件要么是上一次的，要么是这一次的。",
        ("s11_storage.PendingWrite",), ("s11_book.SessionStore.save",), experiment_kill),
    Experiment(
        "conflict", "👥 两个窗口同时续写",
        "两个窗口读入同一个会话，各追加一轮，先后保存。",
        "书中原版谁后保存谁赢，先保存的那一轮被整个覆盖。本仓库的 `SessionStore.save()` 在文件锁里调用 "
        "`_check_revision()`：节点读入时的修订号必须等于磁盘上现在的修订号，对不上就抛 `ConflictError`，"
        "磁盘不动；调用方重新 `load()` 再追加即可。",
        ("s11_session.SessionStore._check_revision", "s11_session.SessionStore.save"), ("s11_book.SessionStore.save",),
        experiment_conflict),
    Experiment(
        "ids", "🚪 危险的会话 ID",
        f"在一个沙箱里，对仓库调用 `load({DANGEROUS_ID!r})` 和 `delete({DANGEROUS_ID!r})`。",
        "书中原版把 ID 直接拼进路径，`../` 就走出了会话文件夹。本仓库的 `SessionStore._path()` 在拼路径之前先调用 "
        "`validate_session_id()`：只放行字母、数字、`-` 和 `_`，其余一律抛 `InvalidSessionId`，磁盘上什么都不碰。",
        ("s11_format.validate_session_id", "s11_session.SessionStore._path"),
        ("s11_book.SessionStore._path", "s11_book.SessionStore.delete"), experiment_ids),
    Experiment(
        "versions", "🔢 升级与迁移",
        "① 书中原版写的旧文件交给本仓库读写；② 一个来自更新版本、带着陌生字段的文件交给两边读写。",
        "本仓库的文件带 `version`：`migrate()` 按 `MIGRATIONS` 表一步一步把旧文件升上来，"
        "遇到比自己新的版本就抛 `UnsupportedVersion`，绝不改写看不懂的文件。书中原版没有版本号，只写回自己认识的键。",
        ("s11_format.migrate", "s11_format.MIGRATIONS"), ("s11_book.SessionNode.to_dict",), experiment_versions),
    Experiment(
        "redact", "🙈 导出前脱敏",
        "同一个会话里有 API 密钥、AWS 密钥、手机号和身份证号，两边各导出一份 Markdown。",
        "书中原版原样导出。本仓库的导出默认先过 `RULES` 规则表：正则找“长得像”的，校验函数（身份证校验位、"
        "银行卡 Luhn）否决“其实不是”的，`redact_with_counts()` 把命中处换成 `[已脱敏:…]` 并计数；存档本身不变。",
        ("s11_redact.RULES", "s11_redact.redact_with_counts"), ("s11_book.SessionStore.export_markdown",),
        experiment_redact),
    Experiment(
        "drift", "🧭 会话 ≠ 代码",
        "主会话对着一个临时工作区存档 → 分支 B 改写了代码 → 恢复分支 A。",
        "书中原版的会话文件不知道代码是什么样子。本仓库的 `SessionStore(..., workspace=项目目录)` 每次保存都用 "
        "`snapshot()` 记下工作区（git 提交或文件摘要），`SessionStore.resume()` 恢复前用 `compare()` 对账，"
        "把变化逐条列出来。",
        ("s11_session.SessionStore.resume", "s11_workspace.snapshot", "s11_workspace.compare"),
        ("s11_book.SessionStore.load",), experiment_drift),
]}


# ── 运行：每个实验一个临时文件夹，跑完即删 ─────────────────────────────────────────────────────
def run_experiment(key: str, **options) -> LabResult:
    """在一个新的临时文件夹里跑一个实验并删掉它；options 传给实验函数（测试用来固定种子或轮数）。"""
    experiment = EXPERIMENTS[key]
    folder = tempfile.mkdtemp(prefix=f"s11_lab_{key}_")
    started = time.perf_counter()
    try:
        book, ours = experiment.run(folder, **options)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return LabResult(key, book, ours, round((time.perf_counter() - started) * 1000))


def column_markdown(kind: str, outcome: Outcome) -> str:
    return f"#### {'📖' if kind == BOOK else '🛡️'} {STORE_NAMES[kind]}\n\n**{outcome.verdict}**\n\n{outcome.evidence}"


def run_experiment_safely(key: str) -> Tuple[str, str]:
    """页面用：(书中原版一栏, 本仓库一栏) 的 Markdown。出错时两栏都是一句中文说明，不抛异常。"""
    if key not in EXPERIMENTS:
        message = f"⚠️ 没有名为 {key!r} 的实验"
        return message, message
    try:
        result = run_experiment(key)
    except Exception as exc:   # 实验本身失败（磁盘满、子进程超时……）：告诉读者，不让页面报错
        message = f"⚠️ 实验「{EXPERIMENTS[key].title}」没能跑完：{short_error(exc)}（临时文件夹已删除）"
        return message, message
    return column_markdown(BOOK, result.book), column_markdown(OURS, result.ours)


def experiment_sources(key: str) -> Tuple[str, str]:
    """(书中原版的对应函数, 本仓库造成差别的函数) 的源码，现场读取；找不到时是一句说明（页面不报错）。"""
    def read(refs: Tuple[str, ...]) -> str:
        try:
            return sources_text(refs)
        except (LookupError, OSError, TypeError) as exc:
            return f"# 源码暂时读不到：{exc}"
    experiment = EXPERIMENTS[key]
    return read(experiment.book_refs), read(experiment.code_refs)


def _runner_main(argv: List[str]) -> int:
    """python -m s11_workbench.lab kill-rounds KIND FOLDER ROUNDS MESSAGES SEED  → 标准输出一行 JSON。

    这是 kill_rounds_in_subprocess 起的辅助进程，不是给人用的命令行（人用的命令行是 s11_cli）。"""
    command, kind, folder, rounds, messages, seed = argv
    if command != "kill-rounds" or kind not in STORE_CLASSES:
        print(f"用法：python -m {RUNNER_MODULE} kill-rounds book|ours FOLDER ROUNDS MESSAGES SEED（收到 {argv}）",
              file=sys.stderr)
        return 2
    _die_with_parent(int(os.environ.get(PARENT_VARIABLE) or os.getppid()))
    print(json.dumps(run_kill_rounds(kind, folder, int(rounds), int(messages), int(seed)), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(_runner_main(sys.argv[1:]))
