"""The fixed Arrow schemas of the three tables (docs/TABLES.md): nothing is inferred,
so every session, damaged or not, gives the same columns and types."""

from __future__ import annotations

import pyarrow as pa

__all__ = ["SESSIONS", "ENTRIES", "TOOL_CALLS", "IMAGE", "SCHEMAS", "TIMESTAMP"]

TIMESTAMP = pa.timestamp("ms", tz="UTC")
IMAGE = pa.struct([("sha256", pa.string()), ("bytes", pa.int64()), ("mime", pa.string()), ("problem", pa.string())])
"""A base64 image, reduced to the hash and length of its bytes and its MIME type;
``problem`` names why its data gave no bytes (null when it did: ``_fields.image_stub``)."""

SESSIONS = pa.schema([
    ("session_id", pa.string()),
    ("path", pa.string()),
    ("cwd", pa.string()),
    ("name", pa.string()),
    ("parent_session", pa.string()),
    ("created", TIMESTAMP),
    ("modified", TIMESTAMP),
    ("entry_count", pa.int64()),
    ("leaf_id", pa.string()),
    ("bytes", pa.int64()),
    ("version", pa.int64()),
    ("load_issues", pa.int64()),
    ("bad_blocks", pa.int64()),
])  # fmt: skip

ENTRIES = pa.schema([
    ("session_id", pa.string()),
    ("entry_id", pa.string()),
    ("parent_id", pa.string()),
    ("line", pa.int64()),
    ("byte_offset", pa.int64()),
    ("byte_length", pa.int64()),
    ("type", pa.string()),
    ("timestamp", TIMESTAMP),
    ("depth", pa.int32()),
    ("on_current_path", pa.bool_()),
    ("role", pa.string()),
    ("provider", pa.string()),
    ("model", pa.string()),
    ("stop_reason", pa.string()),
    ("text", pa.string()),
    ("text_bytes", pa.int64()),
    ("images", pa.list_(IMAGE)),
    ("input_tokens", pa.int64()),
    ("output_tokens", pa.int64()),
    ("cache_read_tokens", pa.int64()),
    ("cache_write_tokens", pa.int64()),
    ("total_tokens", pa.int64()),
    ("cost", pa.float64()),
    ("custom_type", pa.string()),
    ("label", pa.string()),
    ("target_id", pa.string()),
    ("first_kept_entry_id", pa.string()),
    ("tokens_before", pa.int64()),
    ("is_error", pa.bool_()),
])  # fmt: skip

TOOL_CALLS = pa.schema([
    ("session_id", pa.string()),
    ("call_id", pa.string()),
    ("tool_name", pa.string()),
    ("arguments", pa.string()),
    ("arguments_bytes", pa.int64()),
    ("call_entry_id", pa.string()),
    ("call_timestamp", TIMESTAMP),
    ("on_current_path", pa.bool_()),
    ("result_entry_id", pa.string()),
    ("is_error", pa.bool_()),
    ("result_text", pa.string()),
    ("result_bytes", pa.int64()),
    ("result_images", pa.list_(IMAGE)),
])  # fmt: skip

SCHEMAS = {"sessions": SESSIONS, "entries": ENTRIES, "tool_calls": TOOL_CALLS}
"""Table name -> schema."""
