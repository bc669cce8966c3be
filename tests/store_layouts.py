"""The two on-disk layouts the store tests run on, and hand edits of a session file that work on both.

    "small"  the default store: every session in these tests is a version-3 file (one JSON document)
    "big"    chunk_threshold=0, chunk_bytes=1: every session with a message is a version-4 file
             (head line, index line, tail lines) whose messages live in .chunks/, one chunk per message

A test that edits a file by hand (a field of the wrong type, a newer version) goes through read_fields /
rewrite_fields, which keep a version-4 file's body_bytes consistent, so the test sees the damage it meant
and not a length mismatch.
"""

from __future__ import annotations

import json
from pathlib import Path

from s11_session import SessionStore

LAYOUTS = {"small": {}, "big": {"chunk_threshold": 0, "chunk_bytes": 1}}
INDEX_KEYS = ("workspace", "chunks", "tail")


def make_store(folder, layout: str, **options) -> SessionStore:
    return SessionStore(folder, **LAYOUTS[layout], **options)


def is_chunked(path) -> bool:
    return Path(path).read_bytes().startswith(b'{"version":4,')


def read_fields(path) -> dict:
    """Every field of a session file but the messages (version 4: head and index together)."""
    raw = Path(path).read_bytes()
    if not is_chunked(path):
        return json.loads(raw)
    head, index, _ = raw.split(b"\n", 2)
    return {**json.loads(head), **json.loads(index)}


def rewrite_fields(path, **changes) -> None:
    """Change fields in place (version 3: the JSON document; version 4: the head or the index line)."""
    path = Path(path)
    if not is_chunked(path):
        data = json.loads(path.read_text("utf-8"))
        data.update(changes)
        path.write_text(json.dumps(data, ensure_ascii=False), "utf-8")
        return
    head_line, index_line, tail = path.read_bytes().split(b"\n", 2)
    head, index = json.loads(head_line), json.loads(index_line)
    for key, value in changes.items():
        (index if key in INDEX_KEYS else head)[key] = value
    body = json.dumps(index, ensure_ascii=False).encode() + b"\n" + tail
    head["body_bytes"] = len(body)
    path.write_bytes(json.dumps(head, ensure_ascii=False).encode() + b"\n" + body)


def append_bad_message(path) -> None:
    """A message that is not an object, with every count kept consistent (only the message is wrong)."""
    path = Path(path)
    if not is_chunked(path):
        data = json.loads(path.read_text("utf-8"))
        data["messages"].insert(0, "just a string")
        path.write_text(json.dumps(data, ensure_ascii=False), "utf-8")
        return
    head_line, index_line, tail = path.read_bytes().split(b"\n", 2)
    head, index = json.loads(head_line), json.loads(index_line)
    index["tail"] += 1
    head["message_count"] += 1
    body = json.dumps(index).encode() + b"\n" + tail + b'"just a string"\n'
    head["body_bytes"] = len(body)
    path.write_bytes(json.dumps(head, ensure_ascii=False).encode() + b"\n" + body)


def chunk_files(store) -> list:
    folder = Path(store.storage_dir, ".chunks")
    return sorted(p for p in folder.iterdir() if p.name.endswith(".jsonl")) if folder.exists() else []
