"""sessiontree: Pi coding-agent sessions (JSONL v3) as append-only trees."""
