"""compressed.py — Codex CLI 的 rollout-*.jsonl.zst：流式解压到临时文件，再按普通的 .jsonl 读

    rollout-….jsonl.zst ──► unpacked(path, max_bytes)   一小块一小块地解压，解出的字节超过 max_bytes 就停下拒绝
                         │                             （和任何上传用同一个导入上限：几 KB 的“压缩炸弹”也解不出 200 MB 以上）
                         └─► 临时文件夹里的 rollout-….jsonl（名字去掉 .zst）──► lines.read_lines，之后照常
    head(path, limit)   只解出开头 limit 字节：列会话、认格式时用

Codex 0.137 起，闲置 7 天的 rollout 被压成 .jsonl.zst（同名、同内容）。导入时会话文件名按去掉 .zst 的名字记
（logical_name），节点 ID 由它决定：压缩过的和没压缩的同一份记录导入成同一棵树，再导入什么都不写。

解压用标准库的 compression.zstd（Python 3.14 起有），没有时用 zstandard 包（requirements.txt 里只为这个加的）；
两条路一样：都按块解压、都数解出的字节、流在中途断了都只留解出来的完整部分并在报告里说明。源文件只读。
"""

from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
from typing import Iterator, Tuple

from s11_text import human_size, printable

from .report import TranscriptTooLarge, UnsupportedFormat

__all__ = ["ZST_SUFFIX", "is_compressed", "logical_name", "unpacked", "head", "backend"]

ZST_SUFFIX = ".zst"
_MAGIC = b"\x28\xb5\x2f\xfd"
_INPUT_STEP = 512            # 每次只喂这么多压缩字节：zstd 最多约 3 万倍，一步最多解出约 16 MB
_OUTPUT_STEP = 1 << 20       # 标准库的解压器可以直接限制每步解出的字节


def stdlib_zstd():
    """标准库的 compression.zstd（Python 3.14 起有）；没有时是 None，改用 zstandard 包。"""
    try:
        from compression import zstd
    except ImportError:
        return None
    return zstd


def backend() -> str:
    """用的是哪个解压器：'compression.zstd'（标准库）或 'zstandard'（包）。"""
    return "compression.zstd" if stdlib_zstd() is not None else "zstandard"


def is_compressed(path: str) -> bool:
    """名字以 .zst 结尾，或开头是 zstd 的魔数（改了名字的也认得）。"""
    if path.endswith(ZST_SUFFIX):
        return True
    try:
        with open(path, "rb") as handle:
            return handle.read(4) == _MAGIC
    except OSError:
        return False


def logical_name(path: str) -> str:
    """rollout-x.jsonl.zst → rollout-x.jsonl：节点 ID、来源里记的会话文件名都用它。"""
    name = os.path.basename(path)
    return name[:-len(ZST_SUFFIX)] if name.endswith(ZST_SUFFIX) else name


class _Stream:
    """一个 zstd 流的解压：chunks() 按块给出解出的字节；读完后 complete 说明流是不是完整结束的。"""

    def __init__(self, handle):
        self.handle = handle
        self.complete = False

    def chunks(self) -> Iterator[bytes]:
        module = stdlib_zstd()
        if module is not None:
            return self._stdlib(module)
        return self._package()

    def _stdlib(self, zstd) -> Iterator[bytes]:
        """标准库：decompress(data, max_length) 每步最多解出 _OUTPUT_STEP 字节；needs_input 时才再读。"""
        decompressor, pending, data = None, False, b""
        while True:
            if (decompressor is None or decompressor.needs_input) and not data:
                data = self.handle.read(_INPUT_STEP)
                if not data:
                    self.complete = not pending
                    return
            if decompressor is None:
                decompressor = zstd.ZstdDecompressor()
            pending = True
            out = _checked(decompressor.decompress, data, _OUTPUT_STEP)
            data = b""
            if out:
                yield out
            if decompressor.eof:   # 一帧结束：剩下的字节是下一帧（zstd 允许几帧首尾相接）
                data, decompressor, pending = decompressor.unused_data, None, False

    def _package(self) -> Iterator[bytes]:
        """zstandard 包：decompressobj 一步解出喂进去的全部，所以每步只喂 _INPUT_STEP 字节。"""
        import zstandard
        decompressor, pending = None, False
        while True:
            data = self.handle.read(_INPUT_STEP)
            if not data:
                self.complete = not pending
                return
            while data:
                if decompressor is None:
                    decompressor = zstandard.ZstdDecompressor().decompressobj()
                pending = True
                out = _checked(decompressor.decompress, data)
                if out:
                    yield out
                data = b""
                if decompressor.eof:
                    data, decompressor, pending = decompressor.unused_data, None, False


def _checked(decompress, *arguments) -> bytes:
    try:
        return decompress(*arguments)
    except Exception as exc:   # 两个解压器的错误类型不同（zstd.ZstdError、zstandard.ZstdError）：都是“不是 zstd 数据”
        raise _NotZstd(str(exc)) from None


class _NotZstd(Exception):
    pass


@contextmanager
def unpacked(path: str, max_bytes: int) -> Iterator[Tuple[str, bool]]:
    """(临时的 .jsonl 路径, 流是否完整)：解出的字节超过 max_bytes 时抛 TranscriptTooLarge，
    不是 zstd 数据时抛 UnsupportedFormat；临时文件夹在离开时删掉。"""
    name = printable(os.path.basename(path))
    folder = tempfile.mkdtemp(prefix="s11-zst-")
    try:
        target = os.path.join(folder, logical_name(path) or "rollout.jsonl")
        written = 0
        with open(path, "rb") as source, open(target, "wb") as sink:
            stream = _Stream(source)
            try:
                for chunk in stream.chunks():
                    written += len(chunk)
                    if written > max_bytes:
                        raise TranscriptTooLarge(f"{name} 解压后超过导入上限 {human_size(max_bytes)}（解到 "
                                                 f"{human_size(written)} 时停下）；仓库没有任何改动")
                    sink.write(chunk)
            except _NotZstd as exc:
                raise UnsupportedFormat(f"{name} 不是有效的 zstd 压缩文件（{printable(str(exc))[:120]}）；"
                                        f"仓库没有任何改动") from None
        yield target, stream.complete
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def head(path: str, limit: int) -> bytes:
    """只解出开头 limit 字节（列会话、认格式）；读不了或不是 zstd 数据时返回已解出的部分（可能是空的）。"""
    out = bytearray()
    try:
        with open(path, "rb") as source:
            for chunk in _Stream(source).chunks():
                out += chunk
                if len(out) >= limit:
                    break
    except (OSError, _NotZstd):
        pass
    return bytes(out[:limit])
