"""search_index.py — 一个空间的搜索索引：每个会话自己新增的消息正文存在一个文件里，冷搜索只读它一个

    <空间目录>/.search/index.json
    {"format": "s11-search-index", "version": 1, "folder": [目录的 st_dev, st_ino],
     "entries": {"<会话 ID>": [[inode, 大小, 修改时间], [第几条, "正文", 第几条, "正文", …]], …}}

    entries = search_index.read(folder)   # 任何可疑之处 -> {}：调用方照常读会话文件
    texts = search_index.texts_for(entries, session_id, stamp, first, last)
        # stamp = 文件的 (inode, 大小, 修改时间)；对得上、编号在 first…last 之内 -> [(第几条, 小写正文, 正文)]，否则 None
    search_index.write(folder, [(会话 ID, stamp, [(第几条, 小写正文, 正文), …]), …])

Key insight: 没有缓存时，全文搜索的代价随会话文件的个数增长（2,000 个文件各打开、解析、校验一遍）；索引把它变成
读一个文件。每一条都带着它那个会话文件的戳（inode、大小、修改时间：与内存里的正文缓存、store 的摘要缓存同一个戳），
戳对不上的那一条就当没有：改过的会话照样从它自己的文件读，结果与不用索引时一字不差。

不可信：文件是服务器自己写的，读时仍当外来输入——大小有上限，不跟随符号链接，形状逐项检查，folder 必须就是这个目录
（从别的空间复制进来的索引整份不用），任何一处不对就整份不用。写：同目录临时文件 + os.replace（原子），
不 fsync（丢了、坏了都只是下一次搜索慢一些）；刚改过（bounded.is_racy）的会话不写进去。

放在哪：空间目录下的 .search/ 子目录。仓库只认不以点开头的 *.json，体检不看它；空间的限额与“最后活动”跳过这个名字
（spaces.py 用这里的 INDEX_DIR）：它是服务器算出来的、有上限的副本，不该让一次搜索把同学挤出限额。删除、移走空间时随目录一起走。
不做：跨空间共享；索引里的正文只在搜索这个空间时读。
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import tempfile

from s11_storage import read_regular_file
from s11_workbench.bounded import is_racy

INDEX_DIR = ".search"
INDEX_NAME = "index.json"
FORMAT, VERSION = "s11-search-index", 1
MAX_CHARS = 2 * 1024 * 1024     # 最多存多少字正文（与 explorer 的正文缓存一样大：存得再多也缓存不住）
MAX_BYTES = 16 * 1024 * 1024    # 读、写的文件上限：MAX_CHARS 个字最坏（四字节的字、转义的控制字符）也放得下
MIN_FREE_BYTES = 256 * 1024 * 1024   # 磁盘剩余少于这些时不写（与空间限额的 min_free_bytes 同一个数）


def index_path(folder: str) -> str:
    return os.path.join(folder, INDEX_DIR, INDEX_NAME)


def _real_folder(path: str) -> bool:
    """path 是一个真的目录（不是指向目录的符号链接）。"""
    return stat.S_ISDIR(os.lstat(path).st_mode)


def _folder_identity(folder: str) -> list:
    info = os.stat(folder)
    return [info.st_dev, info.st_ino]


def folded(text: str) -> str:
    """搜索比对用的小写正文（casefold：'Straße' -> 'strasse'）；与原文相同（中文、本来就是小写）时就是原文那个对象，
    缓存里只存一份。"""
    lower = text.casefold()
    return text if lower == text else lower


def read(folder: str) -> dict:
    """索引里的 {会话 ID: ((戳), [(第几条, 小写正文, 正文)])}；没有索引、读不了、太大、形状不对、属于别的目录 -> {}。"""
    try:
        if not _real_folder(os.path.join(folder, INDEX_DIR)):   # .search 被换成了链接：不跟着它去别处读
            return {}
        info = os.lstat(index_path(folder))
        if info.st_size > MAX_BYTES:   # 先看大小：太大的不读进内存
            return {}
        data, _ = read_regular_file(index_path(folder), info=info)
        if len(data) > MAX_BYTES:      # 看过之后又长了
            return {}
        document = json.loads(data.decode("utf-8", "surrogatepass"))
        identity = _folder_identity(folder)
    except (OSError, ValueError, RecursionError):   # NotRegularFile 是 OSError；UnicodeDecodeError 是 ValueError
        return {}
    if not isinstance(document, dict) or document.get("format") != FORMAT or document.get("version") != VERSION \
            or document.get("folder") != identity or not isinstance(document.get("entries"), dict):
        return {}
    entries = {}
    for session_id, entry in document["entries"].items():
        texts = _texts_of(entry)
        if texts is None:
            return {}   # 有一处不对，整份都不信
        entries[session_id] = (tuple(entry[0]), texts)   # 戳换成元组：texts_for 直接与文件的戳比
    return entries


def _texts_of(entry) -> list | None:
    """[[戳], [1, "Ab", 3, "…"]] -> [(1, "ab", "Ab"), (3, "…", "…")]：第几条与正文交替排成一层（比每条一个小列表
    读得快）。编号必须递增、正文非空，否则 None。"""
    if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], list) and isinstance(entry[1], list)
            and len(entry[1]) % 2 == 0):
        return None
    texts, last = [], 0
    for number, text in zip(entry[1][::2], entry[1][1::2]):
        if not (type(number) is int and last < number and isinstance(text, str) and text):
            return None
        texts.append((number, folded(text), text))
        last = number
    return texts


def texts_for(entries: dict, session_id: str, stamp, first: int, last: int) -> list | None:
    """这个会话在索引里的 [(第几条, 小写正文, 正文)]：戳对得上、编号都在 first…last（它自己新增的那几条）之内
    才给，否则 None。"""
    entry = entries.get(session_id)
    if entry is None or stamp is None or entry[0] != tuple(stamp):
        return None
    texts = entry[1]
    if texts and not (first <= texts[0][0] and texts[-1][0] <= last):
        return None
    return texts


def discard(folder: str) -> None:
    """删掉这个空间的整个 .search/（永久删除了会话：它的正文不该还留在索引里，也不该留在进程被杀时没写完的临时文件里）；
    下一次从会话文件读过之后再写。"""
    target = os.path.join(folder, INDEX_DIR)
    with contextlib.suppress(OSError):   # 删不掉（没有了、没有权限）也不让删除会话的那个动作报错
        if _real_folder(target):
            shutil.rmtree(target, ignore_errors=True)
        else:
            os.unlink(target)   # 同名的文件或符号链接：只删这个名字，不跟过去


def write(folder: str, items: list) -> bool:
    """把 [(会话 ID, 戳, [(第几条, 小写正文, 正文)])] 原子地写成索引（戳的修改时间太新的跳过，正文总共最多 MAX_CHARS 字）。
    -> 写了没有。写不了（磁盘快满、目录没了、没有权限）只是不写：搜索照样能从会话文件读。"""
    entries, chars = {}, 0
    for session_id, stamp, texts in items:
        size = sum(len(text) for _, _, text in texts)
        if stamp is None or is_racy(stamp[2]) or chars + size > MAX_CHARS:
            continue
        entries[session_id] = [list(stamp), [value for number, _, text in texts for value in (number, text)]]
        chars += size
    try:
        document = {"format": FORMAT, "version": VERSION, "folder": _folder_identity(folder), "entries": entries}
        data = json.dumps(document, ensure_ascii=False).encode("utf-8", "surrogatepass")
        if len(data) > MAX_BYTES or shutil.disk_usage(folder).free < MIN_FREE_BYTES + len(data):
            return False
        target = os.path.join(folder, INDEX_DIR)
        with contextlib.suppress(FileExistsError):
            os.mkdir(target)   # 不用 makedirs：空间刚被移走时不能凭空再建出它的目录
        if not _real_folder(target):   # 同名的文件或符号链接（手工放的）：删掉这个名字本身，换成目录
            os.unlink(target)
            os.mkdir(target)
        handle, temp = tempfile.mkstemp(prefix=".index-", suffix=".part", dir=target)
    except OSError:
        return False
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temp, index_path(folder))   # 读的一方要么看到旧的一份，要么看到新的一份，从不看到一半
        return True
    except OSError:
        return False
    finally:
        with contextlib.suppress(OSError):   # 写成了，临时文件已经改了名；没写成，别留下半份
            os.unlink(temp)
