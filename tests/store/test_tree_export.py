"""Whole-tree export and the redaction review: every node reachable from the sidebar, every anchor resolving,
each message printed once, hostile text inert, the review's choices changing exactly the hits they name,
and the manifest's counts equal to the marks in the page."""

from __future__ import annotations

import doctest
import re
import sys
from pathlib import Path

import pytest

import s11_redact
import s11_review
import s11_tree_export as te
from s11_format import SessionError, SessionNotFound
from s11_session import SessionStore

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from share_trees import (  # noqa: E402
    HOSTILE_LABEL,
    HOSTILE_TITLE,
    ConvergedStore,
    Page,
    big_tree,
    hostile_tree,
    three_branches,
)

MARK = re.compile(r"\[已脱敏:([^\]]+)\]")
SAFE_TAGS = {"html", "head", "meta", "title", "style", "body", "div", "header", "h1", "h2", "h3", "p", "a", "code",
             "section", "nav", "ol", "ul", "li", "span", "b", "main", "figure", "figcaption", "pre", "details",
             "summary"}


@pytest.fixture
def store(tmp_path):
    return SessionStore(str(tmp_path / "sessions"), durable=False)


def page_of(store, node, scope="tree", **options):
    prepared = te.prepare(store, node, scope, **options)
    return prepared, te.render_html(prepared), te.render_markdown(prepared)


def message_ids(page: Page) -> list[str]:
    return [i for i in page.ids if re.fullmatch(r"[0-9a-f]{12}-\d+", i)]


def test_doctests():
    assert doctest.testmod(s11_review).failed == 0


def test_three_branches_every_node_reachable_and_every_anchor_resolves(store):
    ids = three_branches(store)
    prepared, html_text, _ = page_of(store, ids["b1"])
    page = Page(html_text)
    nodes = {ids[key] for key in ("root", "a", "b", "c", "b1")}
    assert {node.session_id for node in prepared.gathered.nodes} == nodes
    assert nodes <= set(page.ids)
    assert {f"#{node}" for node in nodes} <= set(page.hrefs)      # the sidebar links each one
    assert all(href.startswith("#") for href in page.hrefs)
    assert set(h[1:] for h in page.hrefs) <= set(page.ids)       # every anchor resolves
    assert len(page.ids) == len(set(page.ids))                    # no duplicate id


def test_each_message_is_printed_once_and_anchored_at_its_first_owner(store):
    ids = three_branches(store)
    prepared, html_text, markdown = page_of(store, ids["root"])
    page = Page(html_text)
    # root 3 + A 1 + B 2 + C 1 (forked at 2) + B1 1
    assert sorted(message_ids(page)) == sorted([f"{ids['root']}-1", f"{ids['root']}-2", f"{ids['root']}-3",
                                                f"{ids['a']}-4", f"{ids['b']}-4", f"{ids['b']}-5",
                                                f"{ids['c']}-3", f"{ids['b1']}-6"])
    assert html_text.count("怀疑全局缓存未清理。") == 1
    assert markdown.count("怀疑全局缓存未清理。") == 1
    # B1's section says where its first 5 messages are and links there
    assert f'href="#{ids["b"]}-4"' in html_text and f'href="#{ids["root"]}-1"' in html_text
    assert f'<a id="{ids["b1"]}-6"></a>' in markdown


def test_sidebar_shows_branch_points_what_each_branch_adds_and_labels(store):
    ids = three_branches(store)
    _, html_text, markdown = page_of(store, ids["root"])
    page = Page(html_text)
    assert page.classes.get("branchpoint") == 1                   # the root forks three ways
    assert "分岔 ×3" in html_text and "分岔 ×3" in markdown
    assert "+1：方案 C：什么都不做。" in html_text
    assert f'href="#{ids["b"]}-5"' in html_text and "最终方案" in html_text   # the label links to its message


def test_subtree_and_path_scopes(store):
    ids = three_branches(store)
    sub, html_text, _ = page_of(store, ids["b"], "subtree")
    assert [n.session_id for n in sub.gathered.nodes] == [ids["b"], ids["b1"]]
    assert sub.gathered.nodes[0].own_from == 0                     # the subtree root prints its whole history
    assert f"{ids['b']}-1" in Page(html_text).ids
    assert ids["root"] in html_text and "不在本次导出中" in html_text   # its path still names the root
    path, _, _ = page_of(store, ids["b1"], "path")
    assert [n.session_id for n in path.gathered.nodes] == [ids["root"], ids["b"], ids["b1"]]


def test_a_branch_that_edited_its_inherited_prefix_prints_its_own_version(store):
    ids = three_branches(store)
    node = store.load(ids["a"])
    node.messages[1] = {"role": "user", "content": "改过的第 2 条"}
    store.save(node)
    prepared, html_text, _ = page_of(store, ids["root"])
    a = next(n for n in prepared.gathered.nodes if n.session_id == ids["a"])
    assert a.own_from == 1 and f"{ids['a']}-2" in Page(html_text).ids and "改过的第 2 条" in html_text


def test_hostile_titles_labels_and_messages_stay_inert(store):
    ids = hostile_tree(store)
    for scope in ("tree", "subtree", "path"):
        _, html_text, markdown = page_of(store, ids["child"] if scope != "subtree" else ids["root"], scope)
        page = Page(html_text)
        assert set(page.tags) <= SAFE_TAGS, set(page.tags) - SAFE_TAGS
        assert page.tags.count("style") == 1 and page.tags.count("a") == len(page.hrefs)
        assert not [a for a in page.attributes if a[1].startswith("on")]
        assert all(href.startswith("#") for href in page.hrefs)
        assert "javascript:" not in " ".join(value for _, _, value in page.attributes)
        assert "<script" not in html_text and "<img" not in html_text and "<svg" not in html_text
        assert "&lt;img src=x onerror=alert(1)&gt;" in html_text
        assert "Content-Security-Policy" in html_text and "https://" not in html_text.split("<body>")[0]
        # Markdown: the title is escaped inline, the hostile message fenced
        assert "\\<img src=x onerror=alert(1)\\>" in markdown
        assert "<script>alert(3)</script>" not in markdown.replace("```", "").split("\n")[0]
    assert HOSTILE_TITLE and HOSTILE_LABEL


def marks_in_messages(page: Page) -> dict[str, int]:
    counts: dict[str, int] = {}
    for element_id in message_ids(page):
        for label in MARK.findall(page.text(element_id)):
            counts[label] = counts.get(label, 0) + 1
    return counts


def test_default_review_masks_what_redact_value_masks(store):
    ids = three_branches(store)
    prepared = te.prepare(store, ids["root"])
    for node, messages in zip(prepared.gathered.nodes, prepared.messages):
        expected, _ = s11_redact.redact_value(node.messages)
        assert messages == expected


def test_manifest_counts_equal_the_marks_in_the_page(store):
    ids = three_branches(store)
    prepared, html_text, markdown = page_of(store, ids["root"], added=["db01.corp.example"])
    page = Page(html_text)
    in_page = marks_in_messages(page)
    assert prepared.manifest.masked == {label: n for label, n in in_page.items() if label != "手动"}
    assert prepared.manifest.added == {"db01.corp.example": in_page["手动"]} == {"db01.corp.example": 3}
    assert prepared.manifest.masked == {"邮箱": 1, "银行卡号": 1, "手机号": 1}
    manifest_text = page.text("manifest")
    assert "邮箱 ×1" in manifest_text and "第 1 个（17 个字符）×3" in manifest_text and "尽力而为" in manifest_text
    assert "邮箱 ×1" in markdown and "尽力而为" in markdown
    assert "db01.corp.example" not in html_text and "db01.corp.example" not in markdown   # not even in the manifest


def test_unmask_changes_exactly_the_hit_it_names(store):
    ids = three_branches(store)
    gathered = te.gather(store, ids["root"])
    review = te.review_of(gathered)
    card = next(hit for hit in review.hits if hit.rule == "银行卡号")
    assert card.found == "4111 1111 1111 1111" and card.node_id == ids["b"] and card.number == 5
    assert "«4111 1111 1111 1111»" in card.context
    before = te.prepare(store, ids["root"], gathered=gathered, review=review)
    after = te.prepare(store, ids["root"], gathered=gathered, review=review, unmask=[card.hit_id])
    changed = [(i, j) for i, (x, y) in enumerate(zip(before.messages, after.messages))
               for j, (m, n) in enumerate(zip(x, y)) if m != n]
    assert len(changed) == 1
    i, j = changed[0]
    assert after.messages[i][j]["content"] == before.messages[i][j]["content"].replace(
        "[已脱敏:银行卡号]", "4111 1111 1111 1111")
    assert after.manifest.masked == {"邮箱": 1, "手机号": 1} and after.manifest.unmasked == 1
    assert "4111 1111 1111 1111" in te.render_html(after) and "4111 1111 1111 1111" not in te.render_html(before)


def test_an_added_string_changes_exactly_the_places_it_names(store):
    ids = three_branches(store)
    plain = te.prepare(store, ids["root"])
    added = te.prepare(store, ids["root"], added=["db01.corp.example"])
    def without_manifest(text):
        return re.sub(r'<section class="manifest".*?</section>', "", text, count=1, flags=re.S)

    assert without_manifest(te.render_html(added)) == without_manifest(te.render_html(plain)).replace(
        "db01.corp.example", "[已脱敏:手动]")
    for x, y in zip(plain.messages, added.messages):
        for m, n in zip(x, y):
            assert n == {**m, "content": m["content"].replace("db01.corp.example", "[已脱敏:手动]")}
    hits = [hit for hit in te.review_of(te.gather(store, ids["root"]), ["db01.corp.example"]).hits if hit.added]
    assert len(hits) == 3 and {hit.node_id for hit in hits} == {ids["b"], ids["b1"]}


def test_wildcard_and_masks_already_covered_by_a_rule(store):
    root = store.create_session("t", [{"role": "user", "content": "ORD-1234 与 ORD-99；mail a@example.com"}])
    review = te.review_of(te.gather(store, root), ["ORD-*", "a@example.com"])
    assert [(h.rule, h.found) for h in review.hits] == [("邮箱", "a@example.com"), ("手动", "ORD-1234"),
                                                        ("手动", "ORD-99")]
    email = review.hits[0]
    prepared = te.prepare(store, root, gathered=te.gather(store, root), review=review, added=["ORD-*", "a@example.com"],
                          unmask=[email.hit_id])
    # the rule's hit is released, so the reader's own string now masks it
    assert prepared.messages[0][0]["content"] == "[已脱敏:手动] 与 [已脱敏:手动]；mail [已脱敏:手动]"
    assert prepared.manifest.masked == {} and prepared.manifest.added == {"ORD-*": 2, "a@example.com": 1}


@pytest.mark.parametrize("bad", ["a", "*", "x" * 300, ["ab"] * 1 + [f"s{i}" * 2 for i in range(60)]])
def test_unusable_added_strings_are_refused(store, bad):
    root = store.create_session("t", [{"role": "user", "content": "x"}])
    with pytest.raises(s11_review.AddedMaskError):
        te.prepare(store, root, added=bad)


def test_no_redact_says_so(store):
    ids = three_branches(store)
    prepared, html_text, _ = page_of(store, ids["root"], redact=False)
    assert "alice@example.com" in html_text and "没有脱敏" in html_text and prepared.review is None


def test_bad_scope_and_unknown_node(store):
    ids = three_branches(store)
    with pytest.raises(SessionError):
        te.gather(store, ids["root"], "everything")
    with pytest.raises(SessionNotFound):
        te.gather(store, "0123456789ab")


def test_a_1000_node_tree_exports_with_every_node_and_anchor(store):
    ids = big_tree(store, 1000)
    prepared, html_text, markdown = page_of(store, ids[500])
    page = Page(html_text)
    assert len(prepared.gathered.nodes) == 1000
    assert set(ids) <= set(page.ids) and {f"#{i}" for i in ids} <= set(page.hrefs)
    assert set(h[1:] for h in page.hrefs) <= set(page.ids)
    # every message once: 1 + one per node
    assert len(message_ids(page)) == sum(len(m) for m in prepared.messages) == 1000
    assert len(html_text) < 3_000_000 and len(markdown) < 1_500_000


def test_converge_edges_are_drawn_both_ways_and_resolve(store):
    ids = three_branches(store)
    decided = store.fork(ids["b"], [{"role": "user", "content": "🔀 收敛：选 B，带上 A 的 LRU"}], title="收敛")
    converged = ConvergedStore(store, decided.session_id, [ids["a"], ids["c"], "0123456789ab"])
    prepared = te.prepare(converged, ids["root"])
    html_text, markdown = te.render_html(prepared), te.render_markdown(prepared)
    page = Page(html_text)
    assert set(h[1:] for h in page.hrefs) <= set(page.ids)
    node = next(n for n in prepared.gathered.nodes if n.session_id == decided.session_id)
    assert node.converged_from == (ids["a"], ids["c"], "0123456789ab")
    assert f'收敛自 <a href="#{ids["a"]}">' in html_text and "0123456789ab</code>（不在本次导出中）" in html_text
    assert html_text.count(f'已收敛到 <a href="#{decided.session_id}">') == 4   # A and C: sidebar + section
    assert f"🔀 收敛自 `{ids['a']}`" in markdown and f"↪ 已收敛到 `{decided.session_id}`" in markdown


def test_a_real_converge_node_gets_its_card_and_its_dashed_relations(store):
    ids = three_branches(store)
    decided = store.converge(ids["b"], [ids["a"]], "选 B <script>alert(9)</script> 邮件 bob@example.com",
                             carry=[(ids["a"], 4)])
    prepared, html_text, markdown = page_of(store, ids["root"])
    page = Page(html_text)
    assert set(h[1:] for h in page.hrefs) <= set(page.ids) and "script" not in page.tags[1:]
    assert page.classes.get("converge-card") == 1 and "决定（第 7 条）" in html_text   # numbered along its path
    assert f'收敛自 <a href="#{ids["a"]}">' in html_text and f'已收敛到 <a href="#{decided.session_id}">' in html_text
    assert "bob@example.com" not in html_text and "bob@example.com" not in markdown
    assert "> **🔀 收敛**" in markdown and "第 6 条 ↪️ 带自" in markdown
