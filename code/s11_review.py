"""s11_review — 分享之前的脱敏复核：列出规则表的每一处命中，读者逐条决定，只对这一次导出生效

    一次导出要写出的文字：Unit(node_id, number, value)   number：0 = 标题，-1 = 来源信息，k = 第 k 条消息
         │  （每条消息只出现一次：继承来的前缀算在最先有它的那个节点上）
         ▼
    scan(units, added=("内部主机名", "ORD-*"))
         │  每个 unit 走一趟 s11_redact.scan_value（导出用的同一趟：字符串、键、长数字、凭据名字下的值），
         │  再在同样那些位置上找读者自己加的字符串 / 模式（"*" = 一段字母、数字或 _ . -）
         ▼
    Review：hits = [Hit(编号, 规则, 原文, 上下文, 节点, 第几条)]，counts = {规则: 处数}
         │  读者：保留遮盖（默认，全部） / 揭开误报（unmask={编号…}） / 加一个自己的字符串再 scan
         ▼
    apply(units, review, unmask) ──► s11_redact.mask_value：遮好的深拷贝（输入从不修改） + Manifest（每条规则遮了几处、
                                      手动加了什么遮了几处、揭开了几处；导出页面顶部的清单就是它）

关键洞察：规则表只回答“长得像”，只有读者知道“在这里是不是”：把每一处命中连同上下文摆出来，
决定权交给读者，但默认仍然是“表里找到的全部遮住”；决定只活在这一次导出的参数里，从不写回仓库或规则表。

保证：不揭开也不添加时，遮盖结果与 s11_redact.redact_value 逐字相同（同一趟扫描、同一个遮盖函数），
每一处被遮的地方都在表里列着（工具调用里的 {"phone": 13812345678, "passwd": "…"} 也一样）；
揭开一处只改这一处，添加一个字符串只改它命中的那些地方（已被规则遮住的地方不重复遮，也不重复计数）；
Manifest 里的数字就是页面里标记的个数。编号只由节点、第几条和命中在这一条里的序号决定，
所以读者加了字符串重新检查后，已揭开的编号仍指同一处。

不做：读者写的正则（服务器上跑任意正则有回溯风险：模式只支持 "*"，代表一段字母、数字或 _ . -）。和 s11_redact 一样，这是尽力而为。
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import s11_redact

ADDED_LABEL = "手动"            # 读者自己加的字符串的标记：[已脱敏:手动]
CONTEXT_CHARS = 24              # 上下文：命中前后各取多少字
FOUND_CHARS = 60                # 命中的原文最多显示多少字
MAX_ADDED = 50                  # 一次导出最多加多少个字符串
MIN_ADDED_CHARS = 2             # 太短的字符串（"a"）会把整页遮烂
MAX_ADDED_CHARS = 200
WHERE_NAMES = {0: "标题", -1: "来源"}


class Unit(NamedTuple):
    """导出里的一段内容：node_id 的标题（number=0）、来源信息（-1）或第 number 条消息（1 起）。"""
    node_id: str
    number: int
    value: Any


class Hit(NamedTuple):
    hit_id: str        # "<节点>-<第几条>.<序号>"（规则命中）或 "<节点>-<第几条>+<序号>"（手动添加的）
    rule: str          # 规则的中文标签（"邮箱"、"银行卡号"）或 ADDED_LABEL
    found: str         # 被遮住的原文（过长时截短）
    context: str       # 原文前后各 CONTEXT_CHARS 字，命中处写成 «…»，压成一行
    node_id: str
    number: int
    added: str = ""    # 手动命中：读者加的哪一个字符串


class Review(NamedTuple):
    hits: list[Hit]                    # 给读者看的命中（不含已被规则遮住的手动命中）
    counts: dict[str, int]             # 规则标签 → 命中数（按规则表顺序，手动的在最后）
    added: tuple[str, ...]             # 读者加的字符串（清理过的）
    spans: dict[tuple[str, int], list[tuple[s11_redact.Finding, str]]]   # 内部：每个 unit 的每处 (Finding, 编号)
    added_items: dict[s11_redact.Finding, str]                         # 内部：手动命中 → 读者加的哪一个字符串


class Manifest(NamedTuple):
    """导出页面顶部的清单：实际写进页面的标记数。"""
    masked: dict[str, int]             # 规则标签 → 遮了几处（揭开的不算）
    added: dict[str, int]              # 读者加的字符串 → 遮了几处（只在内存里：页面和文件只写第几个、几个字、几处）
    unmasked: int                      # 读者揭开了几处
    redacted: bool                     # False = 读者选择了不脱敏

    @property
    def total(self) -> int:
        return sum(self.masked.values()) + sum(self.added.values())


class AddedMaskError(ValueError):
    """读者加的字符串不能用（太短、太长、太多）。消息是给读者看的中文。"""


# ── 读者加的字符串 ─────────────────────────────────────────────────────────────────────────────
def clean_added(added: Iterable[str] | str | None) -> tuple[str, ...]:
    """读者输入（多行文本或列表）→ 去掉空行和重复的字符串元组；太短、太长、太多时抛 AddedMaskError。

    >>> clean_added("db01.corp.example\\n\\n  ORD-*  \\ndb01.corp.example")
    ('db01.corp.example', 'ORD-*')
    """
    if added is None:
        return ()
    items = added.splitlines() if isinstance(added, str) else [str(item) for item in added]
    cleaned = tuple(dict.fromkeys(item.strip() for item in items if item.strip()))
    if len(cleaned) > MAX_ADDED:
        raise AddedMaskError(f"最多添加 {MAX_ADDED} 个要遮住的字符串，收到 {len(cleaned)} 个")
    for item in cleaned:
        core = item.replace("*", "")
        if len(core) < MIN_ADDED_CHARS:
            raise AddedMaskError(f"要遮住的字符串 {item[:40]!r} 太短：除 * 以外至少 {MIN_ADDED_CHARS} 个字符")
        if len(item) > MAX_ADDED_CHARS:
            raise AddedMaskError(f"要遮住的字符串太长（{len(item)} 字符，最多 {MAX_ADDED_CHARS}）")
    return cleaned


_WILD = r"[A-Za-z0-9_.\-]"   # "*" 代表一段字母、数字或 _ . -（主机名、订单号、内部 ID 的写法）


def _added_pattern(item: str) -> re.Pattern[str]:
    """'ORD-*' -> ORD-[A-Za-z0-9_.-]*；'*.corp.example' 从那一段的开头匹配起。只有 * 是通配符，其余按字面。

    >>> [m.group() for m in _added_pattern("*.corp.example").finditer("db01.corp.example；x.corp.example")]
    ['db01.corp.example', 'x.corp.example']
    """
    pieces = [re.escape(piece) for piece in item.split("*")]
    body = (_WILD + "*?").join(pieces)
    if item.endswith("*"):
        body = body[: -len(_WILD + "*?")] + _WILD + "*"
    if item.startswith("*"):
        body = f"(?<!{_WILD})" + body
    return re.compile(body)


def _added_spans(text: str, items: Sequence[tuple[str, Any]]) -> list[tuple[int, int, str]]:
    spans = []
    for item, pattern in items:
        if pattern is None:
            position = text.find(item)
            while position != -1:
                spans.append((position, position + len(item), item))
                position = text.find(item, position + len(item))
        else:
            spans += [(match.start(), match.end(), item) for match in pattern.finditer(text) if match.end() > match.start()]
    return sorted(spans)


# ── 扫描 ────────────────────────────────────────────────────────────────────────────────────
def _context(text: str, start: int, end: int) -> str:
    found = text[start:end]
    if len(found) > FOUND_CHARS:
        found = found[: FOUND_CHARS - 1] + "…"
    before = text[max(0, start - CONTEXT_CHARS):start]
    after = text[end:end + CONTEXT_CHARS]
    lead = "…" if start > CONTEXT_CHARS else ""
    tail = "…" if end + CONTEXT_CHARS < len(text) else ""
    return " ".join(f"{lead}{before}«{found}»{after}{tail}".split())


def _hit(finding: s11_redact.Finding, hit_id: str, rule: str, unit: Unit, added: str = "") -> Hit:
    return Hit(hit_id, rule, _clip(finding.found), _context(finding.text, finding.start, finding.end), unit.node_id,
               unit.number, added)


def scan(units: Sequence[Unit], added: Iterable[str] | str | None = ()) -> Review:
    """列出 units 里规则表的每一处命中（s11_redact.scan_value：字符串、键、长数字、凭据名字下的值——导出遮的正是这些），
    以及读者加的每个字符串在同样那些位置上的命中（已被规则遮住的不列）。

    >>> review = scan([Unit("n1", 1, {"role": "user", "content": "mail a@example.com, order ORD-77"})], ["ORD-*"])
    >>> [(hit.hit_id, hit.rule, hit.found) for hit in review.hits], review.counts
    ([('n1-1.1', '邮箱', 'a@example.com'), ('n1-1+1', '手动', 'ORD-77')], {'邮箱': 1, '手动': 1})
    >>> [(hit.rule, hit.found) for hit in scan([Unit("n1", 2, {"input": {"phone": 13812345678, "passwd": "x"}})]).hits]
    [('手机号', '13812345678'), ('凭据', 'x')]
    """
    items = clean_added(added)
    patterns = [(item, _added_pattern(item) if "*" in item else None) for item in items]
    hits: list[Hit] = []
    spans: dict[tuple[str, int], list[tuple[s11_redact.Finding, str]]] = {}
    added_items: dict[s11_redact.Finding, str] = {}
    for unit in units:
        where = spans.setdefault((unit.node_id, unit.number), [])
        ruled = s11_redact.scan_value(unit.value)
        for number, finding in enumerate(ruled, 1):
            hit_id = f"{unit.node_id}-{unit.number}.{number}"
            where.append((finding, hit_id))
            hits.append(_hit(finding, hit_id, finding.label, unit))
        if patterns:
            hits += _added_hits(unit, ruled, patterns, where, added_items)
    return Review(hits, count_hits(hits), items, spans, added_items)


def _added_hits(unit: Unit, ruled: list[s11_redact.Finding], patterns, where: list, added_items: dict) -> list[Hit]:
    """读者加的字符串在规则看的同一批位置上的命中；与规则命中重叠的记下（规则那一处被揭开时由它来遮），但不列出。"""
    taken: dict[tuple, list[tuple[int, int]]] = {}
    for finding in ruled:
        taken.setdefault((finding.path, finding.part), []).append((finding.start, finding.end))
    hits, number = [], 0
    for path, part, text, _ in s11_redact.places(unit.value):
        for start, end, item in _added_spans(text, patterns):
            number += 1
            hit_id = f"{unit.node_id}-{unit.number}+{number}"
            finding = s11_redact.Finding(path, part, start, end, ADDED_LABEL, text)
            where.append((finding, hit_id))
            added_items.setdefault(finding, item)
            if not any(s < end and start < e for s, e in taken.get((path, part), ())):
                hits.append(_hit(finding, hit_id, ADDED_LABEL, unit, item))
    return hits


def _clip(text: str) -> str:
    return text if len(text) <= FOUND_CHARS else text[: FOUND_CHARS - 1] + "…"


def count_hits(hits: Iterable[Hit]) -> dict[str, int]:
    """每条规则的命中数，按规则表的顺序，手动添加的在最后。"""
    counts: dict[str, int] = {}
    for hit in hits:
        counts[hit.rule] = counts.get(hit.rule, 0) + 1
    return _in_order(counts)


def _in_order(counts: dict[str, int]) -> dict[str, int]:
    order = list(dict.fromkeys(rule.label for rule in s11_redact.RULES)) + [ADDED_LABEL]
    return {label: counts[label] for label in order if counts.get(label)}


def where_text(hit: Hit) -> str:
    """'节点 abc123 · 第 5 条' / '节点 abc123 · 标题'。"""
    place = WHERE_NAMES.get(hit.number, f"第 {hit.number} 条")
    return f"节点 {hit.node_id} · {place}"


# ── 遮盖 ────────────────────────────────────────────────────────────────────────────────────
def apply(units: Sequence[Unit], review: Review, unmask: Iterable[str] = ()) -> tuple[list[Any], Manifest]:
    """按 review 遮好每个 unit（s11_redact.mask_value：深拷贝，输入不变）：除了 unmask 里的编号，规则命中全部遮住；
    手动命中在没有被（仍然遮着的）规则命中覆盖时遮住。返回 (遮好的值, 清单)。"""
    unmasked = set(unmask)
    masked_counts: dict[str, int] = {}
    added_counts: dict[str, int] = {}
    out = []
    released = 0
    for unit in units:
        chosen = []
        for finding, hit_id in review.spans.get((unit.node_id, unit.number), []):
            if hit_id in unmasked:
                released += 1
            else:
                chosen.append(finding)
        # 规则的命中排在手动的前面：同一处重叠时规则胜出（mask_value 的规矩）
        chosen.sort(key=lambda finding: finding.label == ADDED_LABEL)
        value, applied = s11_redact.mask_value(unit.value, chosen)
        for finding in applied:
            if finding.label == ADDED_LABEL:
                item = review.added_items[finding]
                added_counts[item] = added_counts.get(item, 0) + 1
            else:
                masked_counts[finding.label] = masked_counts.get(finding.label, 0) + 1
        out.append(value)
    return out, Manifest(_in_order(masked_counts), added_counts, released, True)


def unredacted(units: Sequence[Unit]) -> tuple[list[Any], Manifest]:
    """读者选择不脱敏：原样的深拷贝，清单写明“未脱敏”。"""
    return [s11_redact.mask_value(unit.value, [])[0] for unit in units], Manifest({}, {}, 0, False)


def added_summary(manifest: Manifest) -> list[tuple[int, int, int]]:
    """读者加的每个字符串：(第几个, 几个字符, 遮了几处)。导出里只写这些，不写字符串本身。"""
    return [(number, len(item), count) for number, (item, count) in enumerate(manifest.added.items(), 1)]


def manifest_lines(manifest: Manifest, omitted: Sequence[str] = ()) -> list[str]:
    """清单的几行中文（HTML 与 Markdown 共用；每行都是纯文字，由调用方转义）。"""
    if not manifest.redacted:
        lines = ["⚠️ 本文件没有脱敏（导出时选择了不脱敏）：只给自己看，不要分享。"]
    else:
        rules = "、".join(f"{label} ×{count}" for label, count in manifest.masked.items()) or "没有命中"
        lines = [f"🔒 按规则遮住：{rules}"]
        if manifest.added:   # 不写出字符串本身：读者要遮的正是它
            lines.append("✍️ 手动添加并遮住（内容不写出）：" + "、".join(
                f"第 {number} 个（{chars} 个字符）×{count}" for number, chars, count in added_summary(manifest)))
        if manifest.unmasked:
            lines.append(f"👁️ 读者复核后揭开（判定为误报）：{manifest.unmasked} 处")
        lines.append(f"共 {manifest.total} 处标记为 [已脱敏:…]。脱敏是尽力而为：规则表认不出人名、地址和"
                     "自由形式的秘密，分享前请自己再读一遍。")
    lines += list(omitted)
    return lines
