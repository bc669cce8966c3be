"""archive.py — 一个 .zip 里的一个会话（连同它的子代理文件夹）：浏览器一次只能上传一个文件，子代理就装进 zip 带来

    3f1c.zip ─┬─ 3f1c.jsonl                         会话文件（恰好一个）
              └─ 3f1c/subagents/agent-a7e3c91.jsonl  子代理（+ .meta.json、workflows/…），照常随会话文件读进来
    unpacked(zip, max_bytes) ──► 临时文件夹（with 块结束就删掉）── the_session() ──► 其中唯一的会话文件

Key insight: zip 里的名字、大小都是上传的人写的：名字只当文字（带 ..、绝对路径、反斜杠、符号链接的成员一律拒绝），
大小边解边数（真正解出来的字节超过 max_bytes 就停，不信目录里写的 file_size），只解会话记录（.jsonl / .json）。

保证：出错时临时文件夹照样删掉，仓库一个字节都不变；拒绝的原因是一句中文，写明 zip 的名字。
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import zipfile
from contextlib import contextmanager
from typing import Iterator

from s11_text import human_size, printable

from .report import TranscriptTooLarge, UnsupportedFormat

MAX_MEMBERS = 5_000        # 一个 zip 里最多这么多个成员（子代理再多也够）
KEPT_SUFFIXES = (".jsonl", ".json")   # 只解会话记录和子代理的 meta.json；别的成员跳过
CHUNK = 1024 * 1024


def is_archive(path: str) -> bool:
    return str(path).lower().endswith(".zip")


@contextmanager
def unpacked(path: str, max_bytes: int) -> Iterator[str]:
    """把 zip 里的会话记录解进一个临时文件夹，交出这个文件夹（找其中的会话文件由调用方做：pipeline.find_transcripts）。"""
    name = printable(os.path.basename(path))
    folder = tempfile.mkdtemp(prefix="s11-zip-")
    try:
        try:
            with zipfile.ZipFile(path) as archive:
                _extract(archive, folder, max_bytes, name)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError) as error:
            raise UnsupportedFormat(f"{name} 不是能读的 .zip 文件（{printable(str(error))[:120]}）；仓库没有任何改动") from None
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def the_session(found: list, folder: str, name: str) -> str:
    """解开的文件夹里找到的会话文件（子代理文件不算）-> 唯一的那个；没有或不止一个时拒绝。"""
    if len(found) != 1:
        listed = "、".join(printable(os.path.relpath(path, folder)) for path in found[:5])
        what = f"有 {len(found)} 个会话文件（{listed}）" if found else "没有会话记录（.jsonl / .json）"
        raise UnsupportedFormat(f"{name} 里{what}：一个 zip 装一个会话文件和它旁边的同名文件夹（子代理在 "
                                "<会话ID>/subagents/ 里）；仓库没有任何改动")
    return found[0]


def _extract(archive: zipfile.ZipFile, folder: str, max_bytes: int, name: str) -> None:
    members = archive.infolist()
    if len(members) > MAX_MEMBERS:
        raise UnsupportedFormat(f"{name} 里有 {len(members):,} 个成员，超过 {MAX_MEMBERS:,} 个；仓库没有任何改动")
    total = 0
    for member in members:
        if member.is_dir() or not member.filename.lower().endswith(KEPT_SUFFIXES):
            continue
        parts = _safe_parts(member, name)
        target = os.path.join(folder, *parts)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if os.path.exists(target):
            raise UnsupportedFormat(f"{name} 里的成员 {printable(member.filename)[:120]} 出现了两次；仓库没有任何改动")
        with archive.open(member) as source, open(target, "xb") as out:
            while True:
                chunk = source.read(CHUNK)
                if not chunk:
                    break
                total += len(chunk)   # 数真正解出来的字节：目录里写的 file_size 可以是假的
                if total > max_bytes:
                    raise TranscriptTooLarge(f"{name} 解开后超过 {human_size(max_bytes)} 的上限；仓库没有任何改动")
                out.write(chunk)


def _safe_parts(member: zipfile.ZipInfo, name: str) -> list:
    """成员名 -> 路径的各段；绝对路径、..、反斜杠、盘符、符号链接都拒绝（它们只可能是想写到临时文件夹外面去）。"""
    raw = member.filename
    parts = raw.split("/")
    mode = member.external_attr >> 16
    if (raw.startswith("/") or "\\" in raw or ":" in parts[0] or any(p in ("", ".", "..") for p in parts)
            or stat.S_ISLNK(mode)):
        raise UnsupportedFormat(f"{name} 里的成员 {printable(raw)[:120]} 的名字不安全（绝对路径、..、反斜杠或符号链接）；"
                                "仓库没有任何改动")
    return parts
