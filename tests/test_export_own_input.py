"""``export FILE --out F`` replaces F whole: it refuses an F that is the session being
exported (also through a symlink), which stays byte-identical.
"""
import os
import subprocess
import sys
import pytest

CLI = os.path.join(os.path.dirname(sys.executable), "sessiontree")
H = '{"type":"session","version":3,"id":"x","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/p"}'
A = ('{"type":"message","id":"a1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z",'
     '"message":{"role":"user","content":"hi"}}')


@pytest.mark.parametrize("fmt", ["markdown", "html"])
@pytest.mark.parametrize("backend", ["native", "python"])
def test_export_does_not_replace_its_input(tmp_path, backend, fmt):
    p = tmp_path / "s.jsonl"
    data = (H + "\n" + A + "\n").encode()
    p.write_bytes(data)
    r = subprocess.run([CLI, "--backend", backend, "export", str(p), "--format", fmt, "--out", str(p)],
                       capture_output=True, text=True, timeout=120)
    assert p.read_bytes() == data, f"session replaced by the export (exit {r.returncode}): {r.stdout}"
    assert r.returncode != 0
